package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Taking a partition over (issue 26, "Taking over a partition"): its state is the changelog's
// committed records of the partition, applied in order. A node keeps, with the state it applied,
// the offset after the last record it applied; restoring from that offset only catches up, so a
// node that owned the partition before reads what the owners since wrote, not the whole history.
// Records of aborted transactions (a fenced owner's, an owner that died mid-write) are never
// applied: the reader is read_committed and stops at the last stable offset.

// Restore applies partition p's committed changes from offset from (0: the start) to the end
// the partition has now, calling apply for each in order, and returns the offset after the last
// change read (to store with the state: the next Restore starts there) and how many it applied.
func (m *Member) Restore(ctx context.Context, p int, from int64, apply func(Change) error) (next int64, n int, err error) {
	if p < 0 || p >= m.parts {
		return from, 0, fmt.Errorf("cluster: no partition %d (of %d)", p, m.parts)
	}
	return m.restore(ctx, m.o.ChangelogTopic, p, from, apply)
}

// RestoreGlobal is Restore of the global table (every node holds all of it).
func (m *Member) RestoreGlobal(ctx context.Context, from int64, apply func(Change) error) (next int64, n int, err error) {
	return m.restore(ctx, m.o.GlobalTopic, 0, from, apply)
}

func (m *Member) restore(ctx context.Context, topic string, p int, from int64, apply func(Change) error) (next int64, n int, err error) {
	end, err := m.stableEnd(ctx, topic, p)
	if err != nil {
		return from, 0, err
	}
	if from >= end {
		return from, 0, nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(m.o.Brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(p): kgo.NewOffset().At(from)}}),
		kgo.FetchMaxBytes(64 << 20), kgo.FetchMaxPartitionBytes(16 << 20),
		// Transaction markers take offsets too: returned, they say how far the reading got.
		kgo.KeepControlRecords()}
	if m.o.dial != nil {
		opts = append(opts, kgo.Dialer(m.o.dial))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return from, 0, fmt.Errorf("cluster: %w", err)
	}
	defer cl.Close()
	next = from
	for next < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return next, n, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return next, n, fmt.Errorf("cluster: restore %s/%d: %w", topic, p, ferr)
		}
		var aerr error
		fs.EachRecord(func(r *kgo.Record) {
			if aerr != nil || r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				if aerr = apply(Change{Key: r.Key, Value: r.Value}); aerr != nil {
					return
				}
				n++
			}
			next = r.Offset + 1
		})
		if aerr != nil {
			return next, n, aerr
		}
	}
	return next, n, nil
}

// stableEnd is partition p's last stable offset: everything committed below it is readable.
func (m *Member) stableEnd(ctx context.Context, topic string, p int) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1 // read committed: the last stable offset
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	pt := kmsg.NewListOffsetsRequestTopicPartition()
	pt.Partition, pt.Timestamp = int32(p), -1 // latest
	t.Partitions = append(t.Partitions, pt)
	req.Topics = append(req.Topics, t)
	for {
		resp, err := req.RequestWith(ctx, m.group)
		if err != nil {
			return 0, fmt.Errorf("cluster: end of partition %d: %w", p, err)
		}
		if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			rp := resp.Topics[0].Partitions[0]
			if rp.ErrorCode == 0 {
				return rp.Offset, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
