package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"flipbook/errs"
	"flipbook/storage"
)

// Standby replicas (issue 26, "Optional standby replicas make takeover faster"): a node started
// with standby follows the changelog of every partition it does not own, applying it to its own
// store as it comes, with the offset reached (OffsetKey, as a takeover writes it). A takeover
// then restores only what was written since the standby's last chunk, not the partition's whole
// history. The data of a partition this node does not own is never answered from: requests for
// it are forwarded to its owner, its supervisors skip it.
//
// A partition's standby applies and its takeover never overlap: both hold the partition's lock
// (Node.partLock), and the standby applies nothing of a partition the node owns, which the group
// marks before it queues the takeover.

// standbyPoll bounds one wait for changelog records (a partition gained or lost is seen after it).
const standbyPoll = 250 * time.Millisecond

// partLock is partition p's lock between its standby applies and its takeover.
func (n *Node) partLock(p int) *sync.Mutex {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.plocks == nil {
		n.plocks = map[int]*sync.Mutex{}
	}
	l := n.plocks[p]
	if l == nil {
		l = &sync.Mutex{}
		n.plocks[p] = l
	}
	return l
}

// storedOffset is where this node's copy of partition p stands in the changelog.
func (n *Node) storedOffset(p int) (int64, error) {
	v, err := n.store.Local(OffsetKey(p))
	if errors.Is(err, errs.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("cluster: the stored offset of partition %d is %d bytes", p, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// standby follows the partitions this node does not own until ctx ends.
func (n *Node) standby(ctx context.Context) {
	defer close(n.standbyDone)
	m := n.m
	opts := []kgo.Opt{kgo.SeedBrokers(m.o.Brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(standbyPoll), kgo.FetchMaxBytes(16 << 20)}
	if m.o.dial != nil {
		opts = append(opts, kgo.Dialer(m.o.dial))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		n.log.Error("standby: client", "err", err)
		return
	}
	defer cl.Close()
	following := map[int]bool{}
	for ctx.Err() == nil {
		// Follow what is not owned, from where this node's copy stands; stop following what is.
		add := map[int32]kgo.Offset{}
		var remove []int32
		for p := 0; p < m.parts; p++ {
			owned := m.Owns(p)
			switch {
			case !owned && !following[p]:
				off, err := n.storedOffset(p)
				if err != nil {
					n.log.Error("standby: stored offset", "partition", p, "err", err)
					continue
				}
				add[int32(p)] = kgo.NewOffset().At(off)
				following[p] = true
			case owned && following[p]:
				remove = append(remove, int32(p))
				delete(following, p)
			}
		}
		if len(remove) > 0 {
			cl.RemoveConsumePartitions(map[string][]int32{m.o.ChangelogTopic: remove})
		}
		if len(add) > 0 {
			cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{m.o.ChangelogTopic: add})
		}
		pctx, cancel := context.WithTimeout(ctx, 2*standbyPoll)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Err != nil || len(fp.Records) == 0 {
				return
			}
			if err := n.standbyApply(int(fp.Partition), fp.Records); err != nil {
				n.log.Error("standby: apply", "partition", fp.Partition, "err", err)
			}
		})
	}
}

// standbyApply applies records of partition p (in offset order) unless the node owns p now.
func (n *Node) standbyApply(p int, recs []*kgo.Record) error {
	l := n.partLock(p)
	l.Lock()
	defer l.Unlock()
	if n.m.Owns(p) {
		return nil // taken over meanwhile: the takeover restores from the stored offset
	}
	from, err := n.storedOffset(p)
	if err != nil {
		return err
	}
	var muts []storage.Mutation
	next := from
	for _, r := range recs {
		if r.Offset < from {
			continue // applied already (a fetch that began before the offset moved)
		}
		next = r.Offset + 1
		if r.Attrs.IsControl() {
			continue
		}
		mu, err := DecodeChange(Change{Key: r.Key, Value: r.Value})
		if err != nil {
			return err
		}
		muts = append(muts, mu)
	}
	if next == from {
		return nil
	}
	if err := n.store.ApplyChanges(muts, storage.Mutation{Key: OffsetKey(p), Value: binary.BigEndian.AppendUint64(nil, uint64(next))}); err != nil {
		return err
	}
	n.standbyApplied.Add(int64(len(muts)))
	return nil
}
