package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// seqLease is how many ids a sequence reserves per synced write. Ids are unique and increasing;
// a crash leaves a gap of at most seqLease ids.
const seqLease = 1000

// sequences hands out integer ids. Each sequence persists a high-water mark before handing out
// ids below it, so ids are never reused after a restart.
type sequences struct {
	s  *Store
	mu sync.Mutex
	m  map[string]*seqState
}

type seqState struct {
	next, limit uint64
	key         []byte // where its high-water mark is stored
}

func newSequences(s *Store) *sequences {
	return &sequences{s: s, m: map[string]*seqState{}}
}

// NextID returns the next id of the named sequence (starting at 1). Objects of a workspace take
// theirs from NextIDFor, new workspaces from NextHomeID: in cluster mode those ids are unique
// across nodes; NextID is for what only one node ever allocates.
func (s *Store) NextID(name string) (int64, error) { return s.seqs.next(name, seqKey(name)) }

// ErrNoHome refuses a new workspace on a node that owns no partition yet (cluster mode).
var ErrNoHome = errors.New("storage: this node owns no partition to place a new workspace in")

// NextIDFor returns the next id of the named sequence for an object of workspace ws. In cluster
// mode (Options.Partitions) it comes from the workspace's partition (NextIDIn), so it is unique
// across nodes and says its partition (id mod n); otherwise it is NextID(name).
func (s *Store) NextIDFor(ws int64, name string) (int64, error) {
	if s.parts <= 0 {
		return s.NextID(name)
	}
	return s.NextIDIn(int(uint64(ws)%uint64(s.parts)), s.parts, name)
}

// NextHomeID returns the id of a new workspace: in cluster mode from a partition this node owns
// (Options.Home), so the new workspace is this node's and its first writes need no hop.
func (s *Store) NextHomeID(name string) (int64, error) {
	if s.parts <= 0 {
		return s.NextID(name)
	}
	p, ok := -1, false
	if s.home != nil {
		p, ok = s.home()
	}
	if !ok {
		return 0, ErrNoHome
	}
	return s.NextIDIn(p, s.parts, name)
}

// NextIDIn returns the next id of the named sequence of partition p of n (cluster mode; issue
// 26 item 5): k×n + p for the partition's k = 1, 2, ..., so ids of different partitions never
// meet, and id mod n is p. The sequence is partition state (partSeqKey): it moves with the
// partition to its next owner through the changelog, which continues after the ids handed out.
func (s *Store) NextIDIn(p, n int, name string) (int64, error) {
	if p < 0 || p >= n || n > 1<<16 {
		return 0, fmt.Errorf("storage: no partition %d of %d", p, n)
	}
	k, err := s.seqs.next(fmt.Sprintf("p%d/%s", p, name), partSeqKey(p, name))
	if err != nil {
		return 0, err
	}
	return k*int64(n) + int64(p), nil
}

// partSeqKey holds partition p's sequence: "p/" + the 2-byte partition + "/seq/" + name (the
// changelog sends "p/" keys to their partition: cluster.KeyPartition).
func partSeqKey(p int, name string) []byte {
	return cat([]byte("p/"), []byte{byte(p >> 8), byte(p)}, []byte("/seq/"+name))
}

func (q *sequences) next(name string, key []byte) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st, ok := q.m[name]
	if !ok {
		st = &seqState{next: 1, key: key}
		v, err := q.s.get(key)
		switch {
		case err == nil && len(v) == 8:
			st.next = binary.BigEndian.Uint64(v)
			st.limit = st.next
		case err != nil && !errors.Is(err, errs.ErrNotFound):
			return 0, err
		}
		q.m[name] = st
	}
	if st.next >= st.limit {
		limit := st.next + seqLease
		b := q.s.db.NewBatch()
		_ = b.Set(st.key, u64(limit), nil)
		err := q.s.commit(b, pebble.Sync)
		_ = b.Close()
		if err != nil {
			return 0, err
		}
		st.limit = limit
	}
	id := st.next
	st.next++
	return int64(id), nil
}

// close records the exact high-water marks so a clean restart leaves no gaps.
func (q *sequences) close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.s.sink != nil {
		// Cluster mode: the node has left the group when its store closes, so its partitions'
		// sequences are another node's now; the rest of its leases is skipped, not given back.
		return nil
	}
	b := q.s.db.NewBatch()
	defer b.Close()
	for _, st := range q.m {
		_ = b.Set(st.key, u64(st.next), nil)
	}
	return q.s.commit(b, pebble.Sync)
}
