package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"flipbook/ingest"
	"flipbook/storage"
)

// The state's changelog (issue 26, "Writes"): StateSink is the store's storage.ChangeSink in
// cluster mode. Each write's mutations are split by key: a tenant's keys ("t/" + its 8-byte
// workspace id + mode + "/") belong to the workspace's partition, every other key ("g/...":
// workspaces, key hashes, lookups, sequences, timers) to the global table, which every node
// holds. A write's mutations of one partition and its global ones go in one transaction of that
// partition's Writer, so they commit together and only while this node owns the partition; a
// write spanning partitions (a sweep over all tenants' expired entries) is one transaction per
// partition; a write of global keys only goes through the node's global writer. The write is
// applied to Pebble only after the transactions committed (storage.Store.commit), so what a
// node acknowledged is in the changelog, and a node that lost a partition cannot write it.
//
// Records: the key is the Pebble key; the value is 1 followed by the Pebble value, or nil for a
// deletion (a tombstone, which compaction eventually removes). A set with an empty value is
// therefore never mistaken for a deletion.

// ErrNotOwner refuses a write to a partition this node has no open writer for.
var ErrNotOwner = fmt.Errorf("cluster: this node does not own the partition (%w)", storage.ErrMoved)

// KeyPartition is the partition of a state key (storage.ScopeOf: a workspace's keys, the global
// keys that carry its tenant, queue entries named by an id from NextIDIn, a partition's own
// "p/" keys), or global for the rest (a node's own bookkeeping, "l/...", is never given to the
// sink: ApplyChanges).
func KeyPartition(key []byte, parts int) (p int, global bool) {
	sc := storage.ScopeOf(key)
	switch sc.Kind {
	case storage.ScopeWorkspace:
		return ingest.PartitionOf(sc.Workspace, parts), false
	case storage.ScopeID:
		return ingest.PartitionOf(sc.ID, parts), false
	case storage.ScopePartition:
		if sc.Partition < parts {
			return sc.Partition, false
		}
	}
	return 0, true
}

// EncodeMutation is a mutation as a changelog record's value.
func EncodeMutation(m storage.Mutation) Change {
	if m.Delete {
		return Change{Key: m.Key}
	}
	v := make([]byte, 1+len(m.Value))
	v[0] = 1
	copy(v[1:], m.Value)
	return Change{Key: m.Key, Value: v}
}

// DecodeChange is a changelog record back as a mutation.
func DecodeChange(c Change) (storage.Mutation, error) {
	switch {
	case c.Value == nil:
		return storage.Mutation{Key: c.Key, Delete: true}, nil
	case len(c.Value) >= 1 && c.Value[0] == 1:
		return storage.Mutation{Key: c.Key, Value: c.Value[1:]}, nil
	}
	return storage.Mutation{}, fmt.Errorf("cluster: a changelog record of key %q has no known encoding", c.Key)
}

// StateSink sends a store's writes to the changelog (storage.Options.Changes).
type StateSink struct {
	m       *Member
	timeout time.Duration

	mu      sync.Mutex
	writers map[int]*Writer
	global  *Writer // this node's writer of global-only writes
}

// NewStateSink is the sink of m's writes; Open and Drop give it the partitions' writers as
// they are assigned and revoked.
func NewStateSink(m *Member) *StateSink {
	return &StateSink{m: m, timeout: 30 * time.Second, writers: map[int]*Writer{}}
}

// Open opens partition p's writer (fencing its previous owner): from now on this node writes p.
func (s *StateSink) Open(ctx context.Context, p int) error {
	w, err := s.m.OpenWriter(ctx, p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.writers[p]
	s.writers[p] = w
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Drop closes partition p's writer: writes to p are refused from now on.
func (s *StateSink) Drop(p int) {
	s.mu.Lock()
	w := s.writers[p]
	delete(s.writers, p)
	s.mu.Unlock()
	if w != nil {
		w.Close()
	}
}

// Close closes every writer.
func (s *StateSink) Close() {
	s.mu.Lock()
	ws := s.writers
	g := s.global
	s.writers, s.global = map[int]*Writer{}, nil
	s.mu.Unlock()
	for _, w := range ws {
		w.Close()
	}
	if g != nil {
		g.Close()
	}
}

// Changes writes one store write's mutations to the changelog (storage.ChangeSink). Each
// partition's writer is held from its transaction until the store applied the write (done), so
// writes of a partition reach its changelog and the store in the same order; writers are taken
// in partition order (no two writes can wait on each other), writes of other partitions go on.
// It returns, for each partition written, the offset its changelog reaches (OffsetKey), to be
// stored with the write: a node given the partition back later catches up from there.
func (s *StateSink) Changes(muts []storage.Mutation) ([]storage.Mutation, func(), error) {
	byPart := map[int][]Change{}
	var global []Change
	for _, m := range muts {
		p, g := KeyPartition(m.Key, s.m.parts)
		if g {
			global = append(global, EncodeMutation(m))
		} else {
			byPart[p] = append(byPart[p], EncodeMutation(m))
		}
	}
	if len(byPart) == 0 && len(global) == 0 {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	parts := make([]int, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	writers := make([]*Writer, 0, len(parts)+1)
	s.mu.Lock()
	for _, p := range parts {
		w := s.writers[p]
		if w == nil {
			s.mu.Unlock()
			return nil, nil, fmt.Errorf("%w %d", ErrNotOwner, p)
		}
		writers = append(writers, w)
	}
	if len(parts) == 0 {
		if s.global == nil {
			w, err := s.m.openWriter(ctx, s.m.o.Group+"-global-"+s.m.o.Node, -1)
			if err != nil {
				s.mu.Unlock()
				return nil, nil, err
			}
			s.global = w
		}
		writers = append(writers, s.global)
	}
	s.mu.Unlock()
	for _, w := range writers {
		w.mu.Lock()
	}
	done := func() {
		for _, w := range writers {
			w.mu.Unlock()
		}
	}
	if len(parts) == 0 {
		if _, err := writers[0].AppendWith(ctx, nil, global); err != nil {
			done()
			return nil, nil, err
		}
		return nil, done, nil
	}
	var local []storage.Mutation
	for i, p := range parts {
		var g []Change
		if i == 0 {
			g = global // with the first partition's changes, in its transaction
		}
		end, err := writers[i].AppendWith(ctx, byPart[p], g)
		if err != nil {
			done()
			return nil, nil, err
		}
		if end >= 0 {
			local = append(local, storage.Mutation{Key: OffsetKey(p), Value: binary.BigEndian.AppendUint64(nil, uint64(end))})
		}
	}
	return local, done, nil
}

// OffsetKey holds, in a node's store, how far partition p's changelog is applied there (the
// node's own bookkeeping, never sent to a changelog).
func OffsetKey(p int) []byte { return []byte("l/cluster/offset/" + strconv.Itoa(p)) }

// ApplyTo restores a store from the changelog: the global table and the given partitions, each
// from the offset in from (missing: the start); it returns the offsets to store for the next
// catch-up.
func (m *Member) ApplyTo(ctx context.Context, st *storage.Store, partitions []int, from map[string]int64) (map[string]int64, error) {
	next := map[string]int64{}
	a := &applier{st: st}
	off, _, err := m.RestoreGlobal(ctx, from["global"], a.add)
	if err != nil {
		return nil, err
	}
	next["global"] = off
	for _, p := range partitions {
		name := fmt.Sprint(p)
		if off, _, err = m.Restore(ctx, p, from[name], a.add); err != nil {
			return nil, err
		}
		next[name] = off
	}
	return next, a.flush()
}

// applier applies restored changes to a store in writes of applyChunk, each with the local
// mutations local gives (the offset reached, for a partition's takeover).
type applier struct {
	st    *storage.Store
	buf   []storage.Mutation
	local func() []storage.Mutation
}

const applyChunk = 10_000

func (a *applier) add(c Change) error {
	mu, err := DecodeChange(c)
	if err != nil {
		return err
	}
	a.buf = append(a.buf, mu)
	if len(a.buf) >= applyChunk {
		return a.flush()
	}
	return nil
}

func (a *applier) flush() error {
	var local []storage.Mutation
	if a.local != nil {
		local = a.local()
	}
	if len(a.buf) == 0 && len(local) == 0 {
		return nil
	}
	err := a.st.ApplyChanges(a.buf, local...)
	a.buf = a.buf[:0]
	return err
}
