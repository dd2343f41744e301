package storage

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/cockroachdb/pebble/v2"
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
}

func newSequences(s *Store) *sequences {
	return &sequences{s: s, m: map[string]*seqState{}}
}

// NextID returns the next id of the named sequence (starting at 1).
func (s *Store) NextID(name string) (int64, error) { return s.seqs.next(name) }

func (q *sequences) next(name string) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st, ok := q.m[name]
	if !ok {
		st = &seqState{next: 1}
		v, err := q.s.get(seqKey(name))
		switch {
		case err == nil && len(v) == 8:
			st.next = binary.BigEndian.Uint64(v)
			st.limit = st.next
		case err != nil && !errors.Is(err, ErrNotFound):
			return 0, err
		}
		q.m[name] = st
	}
	if st.next >= st.limit {
		limit := st.next + seqLease
		b := q.s.db.NewBatch()
		_ = b.Set(seqKey(name), u64(limit), nil)
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
	b := q.s.db.NewBatch()
	defer b.Close()
	for name, st := range q.m {
		_ = b.Set(seqKey(name), u64(st.next), nil)
	}
	return q.s.commit(b, pebble.Sync)
}
