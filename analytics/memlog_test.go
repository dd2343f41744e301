package analytics

import (
	"context"
	"errors"
	"slices"
	"sync"

	"flipbook/ingest"
)

// memLog is an in-memory ingest.Log: a test double of our own interface for the consumer's
// unit tests (the real logs have their own tests in ingest/).
type memLog struct {
	mu      sync.Mutex
	parts   [][]ingest.Event // index = offset; Trim keeps records so a test can replay them
	trimmed []uint64         // highest Trim per partition
	// replay, when > 0, makes the next Read of a partition start that many records before
	// the asked offset (a log redelivering records, like a reset Kafka position).
	replay  int
	readErr error
	closed  bool
}

func newMemLog(partitions int) *memLog {
	return &memLog{
		parts:   make([][]ingest.Event, partitions),
		trimmed: make([]uint64, partitions),
	}
}

func (l *memLog) Append(_ context.Context, events []ingest.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("memlog closed")
	}
	for _, e := range events {
		p := ingest.PartitionOf(e.Workspace, len(l.parts))
		l.parts[p] = append(l.parts[p], e)
	}
	return nil
}

func (l *memLog) Read(_ context.Context, p int, from uint64, max int) ([]ingest.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readErr != nil {
		return nil, l.readErr
	}
	if l.replay > 0 && from > 0 {
		from -= min(uint64(l.replay), from)
		l.replay = 0
	}
	var out []ingest.Record
	for o := from; o < uint64(len(l.parts[p])) && len(out) < max; o++ {
		out = append(out, ingest.Record{Partition: p, Offset: o, Event: l.parts[p][o]})
	}
	return out, nil
}

func (l *memLog) Partitions() int { return len(l.parts) }

func (l *memLog) Trim(_ context.Context, p int, before uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if before > l.trimmed[p] {
		l.trimmed[p] = before
	}
	// Keep the records (a test may replay them); only note the trim point.
	return nil
}

func (l *memLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}

// ends is the next offset of every partition (what a caught-up consumer has stored).
func (l *memLog) ends() map[int]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int]uint64{}
	for p := range l.parts {
		out[p] = uint64(len(l.parts[p]))
	}
	return out
}

func (l *memLog) setReplay(n int) {
	l.mu.Lock()
	l.replay = n
	l.mu.Unlock()
}

func (l *memLog) setReadErr(err error) {
	l.mu.Lock()
	l.readErr = err
	l.mu.Unlock()
}

// ids is the id of every record appended so far, sorted.
func (l *memLog) ids() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for p := range l.parts {
		for o := range l.parts[p] {
			out = append(out, ingest.Record{Partition: p, Offset: uint64(o)}.ID())
		}
	}
	slices.Sort(out)
	return out
}
