package ingest

import "context"

// Log is the durable event log between the collector and the analytics consumer.
//
// Events are partitioned by workspace (all events of a workspace are in one partition, in the
// order appended). Offsets within a partition start at 0 and are dense.
type Log interface {
	// Append stores events durably: when it returns nil every event will be read by Read,
	// also after a crash of the process at any moment. Concurrent Appends are allowed (an
	// implementation may group them into one durable write).
	Append(ctx context.Context, events []Event) error
	// Read returns up to max records of partition p starting at offset from, in offset
	// order. It returns an empty slice (not an error) when nothing is there yet; it does not
	// wait.
	Read(ctx context.Context, p int, from uint64, max int) ([]Record, error)
	// Partitions is the number of partitions (fixed for the life of the log).
	Partitions() int
	// Trim tells the log that records of partition p below offset `before` are stored
	// downstream and may be deleted. Implementations that cannot delete ignore it.
	Trim(ctx context.Context, p int, before uint64) error
	Close() error
}

// EndOffsets is implemented by logs that can tell where each partition ends: element p is the
// offset the next event of partition p will get, so every event acknowledged by Append before
// the call is below it. Operators compare it with the consumer's stored offsets (the ingest
// lag, GET /admin/v1/ingest).
type EndOffsets interface {
	EndOffsets(ctx context.Context) ([]uint64, error)
}

// PartitionOf is the partition of a workspace's events.
func PartitionOf(workspace int64, partitions int) int {
	return int(uint64(workspace) % uint64(partitions))
}
