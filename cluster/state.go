package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"flipbook/errs"
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
var ErrNotOwner = fmt.Errorf("cluster: this node does not own the partition (%w)", errs.ErrMoved)

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
	if len(byPart) == 1 {
		for p, changes := range byPart {
			return s.grouped(p, changes, global)
		}
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
	// Each partition's transactions are serialized (mu), and this write is applied after the
	// partition's writes committed before it (their turns: commitGroup).
	var turns []chan struct{}
	var mine []chan struct{}
	for _, w := range writers {
		w.mu.Lock()
		prev, applied := w.group.next()
		turns, mine = append(turns, prev), append(mine, applied)
	}
	done := func() {
		for i, w := range writers {
			close(mine[i])
			w.mu.Unlock()
		}
	}
	// failed passes the turns on without applying anything (in order: once the writes before
	// have been applied).
	failed := func() {
		for i, w := range writers {
			go passTurn(turns[i], mine[i])
			w.mu.Unlock()
		}
	}
	if len(parts) == 0 {
		if _, err := writers[0].AppendWith(ctx, nil, global); err != nil {
			failed()
			return nil, nil, err
		}
		<-turns[0]
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
			failed()
			return nil, nil, err
		}
		if end >= 0 {
			local = append(local, storage.Mutation{Key: OffsetKey(p), Value: binary.BigEndian.AppendUint64(nil, uint64(end))})
		}
	}
	for _, t := range turns {
		<-t
	}
	return local, done, nil
}

// Group commit: writes of one partition that arrive while its transaction is in flight wait
// and go together in the next one (the first of them leads it), so a busy partition pays one
// transaction per group, not per write. The store applies them in the changelog's order: each
// write has a turn, given when the write before it (in the changelog) was applied, and it is
// applied only then (its Changes returns then, and the store applies right after).

// maxGroup bounds the writes of one transaction.
const maxGroup = 512

// commitGroup is a partition's writes waiting for the next transaction, and its apply turns.
type commitGroup struct {
	mu      sync.Mutex
	queue   []*pendingWrite
	leading bool
	last    chan struct{} // closed when the last write given a turn was applied (nil: none yet)
}

// next gives a write its turn (called in changelog order, under the writer's mu): prev is
// closed once the write before it was applied; the write closes applied once it was.
func (g *commitGroup) next() (prev, applied chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	prev = g.last
	if prev == nil {
		prev = make(chan struct{})
		close(prev)
	}
	applied = make(chan struct{})
	g.last = applied
	return prev, applied
}

// passTurn gives the next write its turn once the one before it was applied (for a write that
// applies nothing).
func passTurn(prev, applied chan struct{}) {
	<-prev
	close(applied)
}

// pendingWrite is one write of a group.
type pendingWrite struct {
	part, global  []Change
	committed     chan struct{} // closed when its transaction ended (err says how)
	end           int64
	err           error
	prev, applied chan struct{}
}

// grouped writes one partition's changes (and global ones) through the partition's group.
func (s *StateSink) grouped(p int, changes, global []Change) ([]storage.Mutation, func(), error) {
	s.mu.Lock()
	w := s.writers[p]
	s.mu.Unlock()
	if w == nil {
		return nil, nil, fmt.Errorf("%w %d", ErrNotOwner, p)
	}
	pw := &pendingWrite{part: changes, global: global, committed: make(chan struct{})}
	g := &w.group
	g.mu.Lock()
	g.queue = append(g.queue, pw)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if lead {
		s.lead(w)
	}
	<-pw.committed
	if pw.err != nil {
		go passTurn(pw.prev, pw.applied) // nothing to apply
		return nil, nil, pw.err
	}
	<-pw.prev
	var local []storage.Mutation
	if pw.end >= 0 {
		local = []storage.Mutation{{Key: OffsetKey(p), Value: binary.BigEndian.AppendUint64(nil, uint64(pw.end))}}
	}
	return local, func() { close(pw.applied) }, nil
}

// lead runs a partition's group transactions until no write waits.
func (s *StateSink) lead(w *Writer) {
	g := &w.group
	for {
		w.mu.Lock()
		g.mu.Lock()
		batch := g.queue
		if len(batch) > maxGroup {
			batch = batch[:maxGroup]
		}
		g.queue = g.queue[len(batch):]
		if len(batch) == 0 {
			g.leading = false
			g.mu.Unlock()
			w.mu.Unlock()
			return
		}
		g.mu.Unlock()
		parts := make([][]Change, len(batch))
		globals := make([][]Change, len(batch))
		for i, pw := range batch {
			pw.prev, pw.applied = g.next()
			parts[i], globals[i] = pw.part, pw.global
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		ends, err := w.appendGroup(ctx, parts, globals)
		cancel()
		w.mu.Unlock()
		for i, pw := range batch {
			pw.err = err
			if err == nil {
				pw.end = ends[i]
			}
			close(pw.committed)
		}
	}
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
