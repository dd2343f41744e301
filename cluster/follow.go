package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"flipbook/storage"
)

// Every node holds the whole global table (issue 26, "Any node answers any request": key
// hashes, OAuth clients, book random_id → workspace, slugs, workspaces and plans): FollowGlobal
// applies the global topic's committed records to the node's store as they come, its own writes
// included, so every node's copy converges to the topic's order. The offset after the last record
// applied is stored in the same write as the records (globalOffsetKey, a local key that is not
// state: it is never sent to the changelog), so a restarted node continues where it stopped.

// globalOffsetKey holds the global topic's offset applied so far (local bookkeeping).
var globalOffsetKey = []byte("l/cluster/global-offset")

// FollowGlobal applies the global topic to st until ctx ends (then it returns ctx's error).
// ready, when set, is closed once everything committed when it started is applied.
func (m *Member) FollowGlobal(ctx context.Context, st *storage.Store, ready chan<- struct{}) error {
	from := int64(0)
	if v, err := st.Local(globalOffsetKey); err == nil && len(v) == 8 {
		from = int64(binary.BigEndian.Uint64(v))
	} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	end, err := m.stableEnd(ctx, m.o.GlobalTopic, 0)
	if err != nil {
		return err
	}
	if ready != nil && from >= end {
		close(ready)
		ready = nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(m.o.Brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{m.o.GlobalTopic: {0: kgo.NewOffset().At(from)}}),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(250 * time.Millisecond)}
	if m.o.dial != nil {
		opts = append(opts, kgo.Dialer(m.o.dial))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var muts []storage.Mutation
		next := from
		var derr error
		fs.EachRecord(func(r *kgo.Record) {
			if derr != nil {
				return
			}
			next = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			mu, err := DecodeChange(Change{Key: r.Key, Value: r.Value})
			if err != nil {
				derr = err
				return
			}
			muts = append(muts, mu)
		})
		if derr != nil {
			return derr
		}
		if next > from {
			if err := st.ApplyChanges(muts, storage.Mutation{Key: globalOffsetKey, Value: binary.BigEndian.AppendUint64(nil, uint64(next))}); err != nil {
				return err
			}
			from = next
		}
		if ready != nil && from >= end {
			close(ready)
			ready = nil
		}
	}
}
