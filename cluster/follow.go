package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"flipbook/errs"
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
// ready, when set, is closed once everything committed when it started is applied; applied,
// when set, is given each chunk of records once it is in the store (a node's caches of global
// state: credentials, workspaces).
func (m *Member) FollowGlobal(ctx context.Context, st *storage.Store, ready chan<- struct{}, applied func([]storage.Mutation)) error {
	from := int64(0)
	if v, err := st.Local(globalOffsetKey); err == nil && len(v) == 8 {
		from = int64(binary.BigEndian.Uint64(v))
	} else if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return err
	}
	end, err := m.stableEnd(ctx, m.o.GlobalTopic, 0)
	if err != nil {
		return err
	}
	m.globalApplied(from)
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
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Err == nil && fp.LastStableOffset > 0 {
				m.globalSeen(fp.LastStableOffset)
			}
		})
		if next > from {
			if err := st.ApplyChanges(muts, storage.Mutation{Key: globalOffsetKey, Value: binary.BigEndian.AppendUint64(nil, uint64(next))}); err != nil {
				return err
			}
			from = next
			m.globalApplied(next)
			if applied != nil && len(muts) > 0 {
				applied(muts)
			}
		}
		if ready != nil && from >= end {
			close(ready)
			ready = nil
		}
	}
}

// globalSeen records the global topic's last stable offset as a fetch reported it.
func (m *Member) globalSeen(end int64) {
	m.gmu.Lock()
	m.gend = max(m.gend, end)
	m.gmu.Unlock()
}

// GlobalLag is how many records of the global topic this node's copy lacks, as of the last
// fetch (no request to Kafka: cheap enough for /health).
func (m *Member) GlobalLag() int64 {
	m.gmu.Lock()
	defer m.gmu.Unlock()
	return max(m.gend-m.gnext, 0)
}

// globalApplied records that the global topic is applied up to offset next.
func (m *Member) globalApplied(next int64) {
	m.gmu.Lock()
	if next > m.gnext {
		m.gnext = next
		close(m.gmoved)
		m.gmoved = make(chan struct{})
	}
	m.gmu.Unlock()
}

// SyncGlobal waits until this node's copy of the global table holds everything committed to the
// global topic when it was called (FollowGlobal must be running): a node that does not know a
// credential or a book another node has just created reads again after it (read your writes
// across nodes).
func (m *Member) SyncGlobal(ctx context.Context) error {
	end, err := m.stableEnd(ctx, m.o.GlobalTopic, 0)
	if err != nil {
		return err
	}
	for {
		m.gmu.Lock()
		next, moved := m.gnext, m.gmoved
		m.gmu.Unlock()
		if next >= end {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// GlobalApplied is the global topic's offset this node's copy holds up to (GlobalEnd: where
// the topic ends; their difference is the node's global lag).
func (m *Member) GlobalApplied() int64 {
	m.gmu.Lock()
	defer m.gmu.Unlock()
	return m.gnext
}

// GlobalEnd is the global topic's last stable offset.
func (m *Member) GlobalEnd(ctx context.Context) (int64, error) {
	return m.stableEnd(ctx, m.o.GlobalTopic, 0)
}
