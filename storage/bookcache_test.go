package storage

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// cached returns what the book cache holds for a book (nil when nothing).
func cached(s *Store, tn Tenant, rid string) *Book {
	b, _ := s.books.get(string(bookKey(tn, rid)))
	return b
}

// A committed write fills the cache with a copy of what it wrote (write-through): the first
// read after a write is served from memory, and the writer's later changes to its own record
// do not reach readers.
func TestBookCacheWriteThrough(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 1, Mode: ModeLive}
	v1 := mkBook(tn, 1, "v1", StatusDraft, t0, t0)
	putBooks(t, s, v1)
	c := cached(s, tn, v1.RandomID)
	require.NotNil(t, c, "a committed write fills the cache")
	require.NotSame(t, v1, c, "the cache holds a copy decoded from the bytes written")
	require.NotNil(t, c.Memo)
	v1.Name = "changed after the commit"
	r, err := s.GetBook(tn, v1.RandomID)
	require.NoError(t, err)
	require.Same(t, c, r)
	require.Equal(t, "v1", r.Name)

	// A closed (uncommitted) batch fills nothing and leaves the cached version.
	v2 := cloneB(r)
	v2.Name = "v2"
	b := s.NewBatch()
	require.NoError(t, b.PutBook(r, v2))
	b.Close()
	require.Same(t, c, cached(s, tn, v1.RandomID))

	// A delete in the same batch after the write: nothing is cached, the book is gone.
	b = s.NewBatch()
	require.NoError(t, b.PutBook(r, v2))
	require.NoError(t, b.DeleteBook(v2))
	require.NoError(t, b.Commit())
	require.Nil(t, cached(s, tn, v1.RandomID))
	_, err = s.GetBook(tn, v1.RandomID)
	require.Error(t, err)
}

// Writes of one book that overlap do not fill the cache (which committed last is not known
// to either), so what readers get after them is what Pebble holds.
func TestBookCacheOverlappingWritesDoNotFill(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 1, Mode: ModeLive}
	base := mkBook(tn, 1, "v0", StatusDraft, t0, t0)
	putBooks(t, s, base)
	k := string(bookKey(tn, base.RandomID))

	// Deterministic overlap: two begins before the ends.
	s.books.begin(k)
	s.books.begin(k)
	s.books.end(k, mkBook(tn, 1, "first", StatusDraft, t0, t0))
	s.books.end(k, mkBook(tn, 1, "second", StatusDraft, t0, t0))
	require.Nil(t, cached(s, tn, base.RandomID), "overlapping writes leave the entry empty")
	// The next write alone fills again.
	s.books.begin(k)
	s.books.end(k, mkBook(tn, 1, "third", StatusDraft, t0, t0))
	require.Equal(t, "third", cached(s, tn, base.RandomID).Name)

	// Concurrent writers of one book: whatever the interleaving, a read after they are done
	// returns what Pebble holds.
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				next := cloneB(base)
				next.Name = fmt.Sprintf("writer %d, write %d", w, i)
				b := s.NewBatch()
				if err := b.PutBook(nil, next); err != nil {
					panic(err)
				}
				if err := b.Commit(); err != nil {
					panic(err)
				}
			}
		}(w)
	}
	wg.Wait()
	var stored Book
	require.NoError(t, s.getJSON(bookKey(tn, base.RandomID), &stored))
	r, err := s.GetBook(tn, base.RandomID)
	require.NoError(t, err)
	require.Equal(t, stored.Name, r.Name)
}
