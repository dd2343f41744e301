package storage

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"flipbook/errs"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// openStore opens a store in a fresh temp dir, closed at the end of the test.
func openStore(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(tb.TempDir(), Options{CacheBytes: 8 << 20})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	return s
}

func mkBook(tn Tenant, id int64, name, status string, created, updated time.Time) *Book {
	return &Book{
		ID: id, RandomID: fmt.Sprintf("r%d%c%05d", tn.Workspace, tn.Mode, id),
		Workspace: tn.Workspace, Mode: tn.Mode, Name: name, Status: status,
		CreatedAt: created, UpdatedAt: updated,
	}
}

// putBooks writes new books in one batch.
func putBooks(tb testing.TB, s *Store, books ...*Book) {
	tb.Helper()
	b := s.NewBatch()
	for _, bk := range books {
		require.NoError(tb, b.PutBook(nil, bk))
	}
	require.NoError(tb, b.Commit())
}

// replaceBook writes next over old (both versions of one book).
func replaceBook(tb testing.TB, s *Store, old, next *Book) {
	tb.Helper()
	b := s.NewBatch()
	require.NoError(tb, b.PutBook(old, next))
	require.NoError(tb, b.Commit())
}

func cloneB(b *Book) *Book {
	c := *b
	c.Memo = nil
	return &c
}

// rawKeys lists every key under prefix straight from Pebble.
func rawKeys(tb testing.TB, s *Store, prefix []byte) [][]byte {
	tb.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	require.NoError(tb, err)
	defer it.Close()
	var out [][]byte
	for it.First(); it.Valid(); it.Next() {
		out = append(out, append([]byte(nil), it.Key()...))
	}
	require.NoError(tb, it.Error())
	return out
}

func ids(books []*Book) []int64 {
	out := make([]int64, len(books))
	for i, b := range books {
		out[i] = b.ID
	}
	return out
}

// walk pages through a query until HasMore is false and returns every row in order.
func walk(tb testing.TB, s *Store, tn Tenant, q BookQuery, fullPages bool) ([]*Book, int) {
	tb.Helper()
	var out []*Book
	pages := 0
	for {
		pages++
		require.Less(tb, pages, 2000, "paging does not terminate")
		p, err := s.ListBooks(tn, q)
		require.NoError(tb, err)
		require.LessOrEqual(tb, len(p.Books), q.Limit)
		out = append(out, p.Books...)
		if !p.HasMore {
			return out, pages
		}
		if fullPages {
			require.Len(tb, p.Books, q.Limit, "a page before the last must be full")
		}
		require.NotEmpty(tb, p.Last)
		q.After = append([]byte(nil), p.Last...)
	}
}

// expectedOrder sorts books the way the index for sort should (ties broken by id).
func expectedOrder(books []*Book, sortBy byte, desc bool) []*Book {
	out := append([]*Book(nil), books...)
	less := func(a, b *Book) bool {
		switch sortBy {
		case SortCreated:
			if !a.CreatedAt.Equal(b.CreatedAt) {
				return a.CreatedAt.Before(b.CreatedAt)
			}
		case SortUpdated:
			if !a.UpdatedAt.Equal(b.UpdatedAt) {
				return a.UpdatedAt.Before(b.UpdatedAt)
			}
		case SortName:
			if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
				return c < 0
			}
		case SortStatus:
			if a.Status != b.Status {
				return a.Status < b.Status
			}
		}
		return a.ID < b.ID
	}
	sort.Slice(out, func(i, j int) bool {
		if desc {
			return less(out[j], out[i])
		}
		return less(out[i], out[j])
	})
	return out
}

func filterBooks(books []*Book, keep func(*Book) bool) []*Book {
	var out []*Book
	for _, b := range books {
		if keep(b) {
			out = append(out, b)
		}
	}
	return out
}

// seedCatalog writes n books of tenant tn with repeated names (mixed case), repeated creation
// times and all statuses, plus books of neighbouring tenants that must never show up.
func seedCatalog(tb testing.TB, s *Store, tn Tenant, n int) []*Book {
	tb.Helper()
	names := []string{"alpha", "Beta", "gamma", "ALPHA beta", "delta", "Epsilon", "", "zeta Alpha",
		"Ärger", "beta", "a\x00b", "omega"}
	statuses := []string{StatusDraft, StatusPublish, StatusSchedule}
	books := make([]*Book, 0, n)
	for i := 0; i < n; i++ {
		name := names[i%len(names)]
		if i%5 == 0 {
			name = fmt.Sprintf("%s %03d", name, i)
		}
		created := t0.Add(time.Duration(i%37) * time.Second) // ties on purpose
		updated := t0.Add(time.Duration((i*7919)%n) * time.Millisecond)
		books = append(books, mkBook(tn, int64(i+1), name, statuses[i%3], created, updated))
	}
	putBooks(tb, s, books...)
	// Other tenants: the other mode of the same workspace and the next workspace ids.
	var others []*Book
	for j, o := range []Tenant{{tn.Workspace, otherMode(tn.Mode)}, {tn.Workspace + 1, tn.Mode}, {tn.Workspace + 256, tn.Mode}} {
		for i := 0; i < 5; i++ {
			others = append(others, mkBook(o, int64(10000+j*10+i), "alpha other", statuses[i%3], t0, t0))
		}
	}
	putBooks(tb, s, others...)
	return books
}

func otherMode(m Mode) Mode {
	if m == ModeLive {
		return ModeTest
	}
	return ModeLive
}

func TestListBooksPagingEverySortAndFilter(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 7, Mode: ModeLive}
	books := seedCatalog(t, s, tn, 250)

	sorts := map[string]byte{"created": SortCreated, "updated": SortUpdated, "name": SortName, "status": SortStatus}
	for sname, sortBy := range sorts {
		for _, desc := range []bool{false, true} {
			for _, status := range []string{"", StatusDraft, StatusPublish, StatusSchedule} {
				for _, limit := range []int{17, 25} {
					name := fmt.Sprintf("%s/desc=%v/status=%q/limit=%d", sname, desc, status, limit)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						want := books
						if status != "" {
							want = filterBooks(books, func(b *Book) bool { return b.Status == status })
						}
						want = expectedOrder(want, sortBy, desc)
						got, pages := walk(t, s, tn, BookQuery{Status: status, Sort: sortBy, Desc: desc, Limit: limit}, true)
						require.Equal(t, ids(want), ids(got))
						// No empty trailing page: the page count is exactly ceil(n/limit).
						require.Equal(t, (len(want)+limit-1)/limit, pages)
					})
				}
			}
		}
	}
}

func TestListBooksHasMoreOnExactMultiple(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 3, Mode: ModeTest}
	var books []*Book
	for i := 1; i <= 20; i++ {
		books = append(books, mkBook(tn, int64(i), fmt.Sprintf("b%02d", i), StatusDraft, t0.Add(time.Duration(i)), t0))
	}
	putBooks(t, s, books...)
	p, err := s.ListBooks(tn, BookQuery{Sort: SortCreated, Limit: 10})
	require.NoError(t, err)
	require.Len(t, p.Books, 10)
	require.True(t, p.HasMore)
	p, err = s.ListBooks(tn, BookQuery{Sort: SortCreated, Limit: 10, After: p.Last})
	require.NoError(t, err)
	require.Len(t, p.Books, 10)
	require.False(t, p.HasMore, "the last full page must not claim more")
	require.Equal(t, int64(20), p.Books[9].ID)

	// An empty tenant lists nothing.
	p, err = s.ListBooks(Tenant{Workspace: 4, Mode: ModeTest}, BookQuery{Sort: SortName, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, p.Books)
	require.False(t, p.HasMore)
}

func TestListBooksNameFilterWithScanBudget(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 11, Mode: ModeLive}
	books := seedCatalog(t, s, tn, 250)

	for _, tc := range []struct {
		needle string
		sortBy byte
		desc   bool
		status string
	}{
		{"ALPHA", SortName, false, ""},
		{"alPHa", SortCreated, true, ""},
		{"Beta", SortUpdated, false, StatusPublish},
		{"ärger", SortStatus, true, ""},
		{"a\x00B", SortName, true, ""},
	} {
		t.Run(fmt.Sprintf("%q/%c/%v/%s", tc.needle, tc.sortBy, tc.desc, tc.status), func(t *testing.T) {
			t.Parallel()
			needle := strings.ToLower(tc.needle)
			want := filterBooks(books, func(b *Book) bool {
				return strings.Contains(strings.ToLower(b.Name), needle) && (tc.status == "" || b.Status == tc.status)
			})
			require.NotEmpty(t, want)
			want = expectedOrder(want, tc.sortBy, tc.desc)
			q := BookQuery{Status: tc.status, Sort: tc.sortBy, Desc: tc.desc, Limit: 7, NameFilter: tc.needle, ScanBudget: 10}
			got, pages := walk(t, s, tn, q, false)
			require.Equal(t, ids(want), ids(got))
			// The budget (10 < 250) forces many pages; a page never examines more than 10 entries.
			require.GreaterOrEqual(t, pages, 250/10/3)
		})
	}

	// A filter that matches nothing still stops at the budget with HasMore set.
	p, err := s.ListBooks(tn, BookQuery{Sort: SortName, Limit: 5, NameFilter: "no such name", ScanBudget: 10})
	require.NoError(t, err)
	require.Empty(t, p.Books)
	require.True(t, p.HasMore)
	require.NotEmpty(t, p.Last)
	got, _ := walk(t, s, tn, BookQuery{Sort: SortName, Limit: 5, NameFilter: "no such name", ScanBudget: 10}, false)
	require.Empty(t, got)
}

func TestPutBookMovesIndexEntries(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 5, Mode: ModeLive}
	v1 := mkBook(tn, 1, "First Name", StatusDraft, t0, t0)
	other := mkBook(tn, 2, "Other", StatusDraft, t0.Add(time.Second), t0.Add(time.Second))
	putBooks(t, s, v1, other)

	idxPrefix := cat(tn.prefix(), []byte("bi/"))
	require.Len(t, rawKeys(t, s, idxPrefix), 2*2*len(bookSorts))

	v2 := cloneB(v1)
	v2.Name = "renamed"
	v2.Status = StatusPublish
	v2.UpdatedAt = t0.Add(time.Hour)
	replaceBook(t, s, v1, v2)

	// Exactly the new version's entries (and the other book's) remain.
	var want [][]byte
	want = append(want, bookIndexKeys(v2)...)
	want = append(want, bookIndexKeys(other)...)
	sort.Slice(want, func(i, j int) bool { return bytes.Compare(want[i], want[j]) < 0 })
	require.Equal(t, want, rawKeys(t, s, idxPrefix))

	drafts, err := s.ListBooks(tn, BookQuery{Status: StatusDraft, Sort: SortCreated, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []int64{2}, ids(drafts.Books), "the book must leave the old status filter")
	pubs, err := s.ListBooks(tn, BookQuery{Status: StatusPublish, Sort: SortName, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []int64{1}, ids(pubs.Books))
	require.Equal(t, "renamed", pubs.Books[0].Name)

	// Name order follows the new name: "Other" < "renamed".
	all, err := s.ListBooks(tn, BookQuery{Sort: SortName, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []int64{2, 1}, ids(all.Books))
	// Updated order follows the new time.
	all, err = s.ListBooks(tn, BookQuery{Sort: SortUpdated, Desc: true, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, ids(all.Books))

	n, err := s.CountBooks(tn, StatusDraft, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = s.CountBooks(tn, StatusPublish, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Rewriting a record with unchanged sort keys keeps exactly one entry per index.
	v3 := cloneB(v2)
	v3.Description = new(string)
	replaceBook(t, s, v2, v3)
	require.Len(t, rawKeys(t, s, idxPrefix), 2*2*len(bookSorts))
}

func TestDeleteBookRemovesEverything(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 9, Mode: ModeTest}
	exp := t0.Add(24 * time.Hour)
	b := mkBook(tn, 1, "Doomed", StatusPublish, t0, t0)
	b.ExpiresAt = &exp
	keep := mkBook(tn, 2, "Kept", StatusPublish, t0, t0)
	batch := s.NewBatch()
	require.NoError(t, batch.PutBook(nil, b))
	require.NoError(t, batch.PutPages(tn, b.RandomID, []Page{{Number: 1, File: "x.png", Width: 10, Height: 20}}))
	require.NoError(t, batch.PutBook(nil, keep))
	require.NoError(t, batch.PutPages(tn, keep.RandomID, nil))
	require.NoError(t, batch.Commit())

	got, err := s.BookTenant(b.RandomID)
	require.NoError(t, err)
	require.Equal(t, tn, got)
	ok, err := s.BookExists(b.RandomID)
	require.NoError(t, err)
	require.True(t, ok)
	pages, err := s.Pages(tn, b.RandomID)
	require.NoError(t, err)
	require.Equal(t, []Page{{Number: 1, File: "x.png", Width: 10, Height: 20}}, pages)
	pages, err = s.Pages(tn, keep.RandomID)
	require.NoError(t, err)
	require.NotNil(t, pages)
	require.Empty(t, pages)
	rec, err := s.GetBook(tn, b.RandomID) // cache it
	require.NoError(t, err)
	require.Equal(t, "Doomed", rec.Name)
	due, _, err := s.DueBooks(exp, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)

	batch = s.NewBatch()
	batch.DeleteBook(rec)
	require.NoError(t, batch.Commit())

	_, err = s.GetBook(tn, b.RandomID)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = s.BookTenant(b.RandomID)
	require.ErrorIs(t, err, errs.ErrNotFound)
	ok, err = s.BookExists(b.RandomID)
	require.NoError(t, err)
	require.False(t, ok)
	_, err = s.Pages(tn, b.RandomID)
	require.ErrorIs(t, err, errs.ErrNotFound)
	due, _, err = s.DueBooks(exp, 10)
	require.NoError(t, err)
	require.Empty(t, due)
	require.ElementsMatch(t, bookIndexKeys(keep), rawKeys(t, s, cat(tn.prefix(), []byte("bi/"))))
	// The other book is untouched.
	rec, err = s.GetBook(tn, keep.RandomID)
	require.NoError(t, err)
	require.Equal(t, "Kept", rec.Name)
}

func TestGetBookIsTenantScoped(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 1, Mode: ModeLive}
	b := mkBook(tn, 1, "Mine", StatusDraft, t0, t0)
	putBooks(t, s, b)
	_, err := s.GetBook(Tenant{Workspace: 1, Mode: ModeTest}, b.RandomID)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = s.GetBook(Tenant{Workspace: 2, Mode: ModeLive}, b.RandomID)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = s.BookTenant("nope")
	require.ErrorIs(t, err, errs.ErrNotFound)
}

func TestCountBooksCap(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 2, Mode: ModeLive}
	var books []*Book
	for i := 1; i <= 12; i++ {
		st := StatusDraft
		if i%3 == 0 {
			st = StatusPublish
		}
		books = append(books, mkBook(tn, int64(i), "b", st, t0, t0))
	}
	putBooks(t, s, books...)
	for _, tc := range []struct {
		status   string
		max, out int
	}{
		{"*", 0, 12}, {"*", 5, 5}, {"*", 12, 12}, {"*", 100, 12},
		{StatusPublish, 0, 4}, {StatusPublish, 3, 3}, {StatusPublish, 4, 4},
		{StatusDraft, 0, 8}, {StatusSchedule, 0, 0}, {StatusSchedule, 1, 0},
	} {
		n, err := s.CountBooks(tn, tc.status, tc.max)
		require.NoError(t, err)
		require.Equalf(t, tc.out, n, "CountBooks(%q, %d)", tc.status, tc.max)
	}
	n, err := s.CountBooks(Tenant{Workspace: 2, Mode: ModeTest}, "*", 0)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestNextTransition(t *testing.T) {
	t.Parallel()
	p, e := t0.Add(time.Hour), t0.Add(2*time.Hour)
	early := t0.Add(30 * time.Minute)
	for _, tc := range []struct {
		name      string
		status    string
		pub, exp  *time.Time
		want      time.Time
		wantFound bool
	}{
		{"draft with dates", StatusDraft, &p, &e, time.Time{}, false},
		{"schedule publishes", StatusSchedule, &p, nil, p, true},
		{"schedule expiring first", StatusSchedule, &p, &early, early, true},
		{"schedule publish before expiry", StatusSchedule, &p, &e, p, true},
		{"publish expires", StatusPublish, &p, &e, e, true},
		{"publish without expiry", StatusPublish, &p, nil, time.Time{}, false},
		{"schedule without date", StatusSchedule, nil, nil, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at, ok := NextTransition(&Book{Status: tc.status, PublishedDate: tc.pub, ExpiresAt: tc.exp})
			require.Equal(t, tc.wantFound, ok)
			require.True(t, tc.want.Equal(at), "got %v want %v", at, tc.want)
		})
	}
}

func TestDueBooks(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 4, Mode: ModeLive}
	tn2 := Tenant{Workspace: 5, Mode: ModeTest}
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }

	a := mkBook(tn, 1, "a", StatusSchedule, t0, t0)
	a.PublishedDate = at(time.Second)
	b := mkBook(tn2, 2, "b", StatusPublish, t0, t0)
	b.ExpiresAt = at(2 * time.Second)
	c := mkBook(tn, 3, "c", StatusSchedule, t0, t0)
	c.PublishedDate, c.ExpiresAt = at(3*time.Second), at(2500*time.Millisecond)
	d := mkBook(tn, 4, "d", StatusDraft, t0, t0)
	d.PublishedDate, d.ExpiresAt = at(time.Millisecond), at(time.Millisecond) // drafts never move
	e := mkBook(tn, 5, "e", StatusPublish, t0, t0)                            // no expiry
	f := mkBook(tn2, 6, "f", StatusSchedule, t0, t0)
	f.PublishedDate = at(10 * time.Second)
	// Written in an order unrelated to due time.
	putBooks(t, s, f, c, e, d, b, a)

	due, later, err := s.DueBooks(t0, 100)
	require.NoError(t, err)
	require.Empty(t, due)
	require.True(t, later.Equal(*a.PublishedDate), "later = %v", later)

	due, later, err = s.DueBooks(t0.Add(2600*time.Millisecond), 100)
	require.NoError(t, err)
	require.Len(t, due, 3)
	want := []Due{
		{Tenant: tn, RandomID: a.RandomID, At: *a.PublishedDate},
		{Tenant: tn2, RandomID: b.RandomID, At: *b.ExpiresAt},
		{Tenant: tn, RandomID: c.RandomID, At: *c.ExpiresAt},
	}
	for i := range want {
		require.Equal(t, want[i].Tenant, due[i].Tenant)
		require.Equal(t, want[i].RandomID, due[i].RandomID)
		require.True(t, want[i].At.Equal(due[i].At))
	}
	require.True(t, later.Equal(*f.PublishedDate), "later = %v", later)

	// A transition exactly at now is due.
	due, _, err = s.DueBooks(*b.ExpiresAt, 100)
	require.NoError(t, err)
	require.Len(t, due, 2)

	// The limit cuts the list, earliest first; a non-zero time tells the caller there is more.
	due, later, err = s.DueBooks(t0.Add(time.Minute), 2)
	require.NoError(t, err)
	require.Len(t, due, 2)
	require.Equal(t, a.RandomID, due[0].RandomID)
	require.Equal(t, b.RandomID, due[1].RandomID)
	require.False(t, later.IsZero())

	// Nothing after the last entry.
	due, later, err = s.DueBooks(t0.Add(time.Minute), 100)
	require.NoError(t, err)
	require.Len(t, due, 4)
	require.True(t, later.IsZero())

	// DropDue removes exactly one entry.
	require.NoError(t, s.DropDue(due[0]))
	due2, _, err := s.DueBooks(t0.Add(time.Minute), 100)
	require.NoError(t, err)
	require.Len(t, due2, 3)
	require.Equal(t, b.RandomID, due2[0].RandomID)
	// The book itself is not touched by DropDue.
	rec, err := s.GetBook(tn, a.RandomID)
	require.NoError(t, err)
	require.Equal(t, StatusSchedule, rec.Status)

	// Rewriting a book moves its due entry; unscheduling removes it.
	c2 := cloneB(c)
	c2.Status = StatusDraft
	replaceBook(t, s, c, c2)
	f2 := cloneB(f)
	f2.PublishedDate = at(20 * time.Second)
	replaceBook(t, s, f, f2)
	due2, later, err = s.DueBooks(t0.Add(15*time.Second), 100)
	require.NoError(t, err)
	require.Len(t, due2, 1)
	require.Equal(t, b.RandomID, due2[0].RandomID)
	require.True(t, later.Equal(*f2.PublishedDate))
}

func TestBookCacheSeesCommittedUpdate(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 1, Mode: ModeLive}
	v1 := mkBook(tn, 1, "v1", StatusDraft, t0, t0)
	putBooks(t, s, v1)

	r1, err := s.GetBook(tn, v1.RandomID)
	require.NoError(t, err)
	require.NotNil(t, r1.Memo)
	r1b, err := s.GetBook(tn, v1.RandomID)
	require.NoError(t, err)
	require.Same(t, r1, r1b, "a second read is served from the cache")

	v2 := cloneB(r1)
	v2.Name = "v2"
	replaceBook(t, s, r1, v2)
	r2, err := s.GetBook(tn, v1.RandomID)
	require.NoError(t, err)
	require.Equal(t, "v2", r2.Name)
	require.Equal(t, "v1", r1.Name, "the old shared record is not modified")

	// An uncommitted (closed) batch changes nothing.
	v3 := cloneB(r2)
	v3.Name = "v3"
	batch := s.NewBatch()
	require.NoError(t, batch.PutBook(r2, v3))
	batch.Close()
	r3, err := s.GetBook(tn, v1.RandomID)
	require.NoError(t, err)
	require.Equal(t, "v2", r3.Name)
}

func TestBookCacheConcurrentReadersNeverSeeStaleVersion(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 1, Mode: ModeLive}
	// Several books share shards with the hot one, so other commits bump its shard's epoch too.
	var books []*Book
	for i := 1; i <= 80; i++ {
		books = append(books, mkBook(tn, int64(i), "book", StatusDraft, t0, t0))
	}
	putBooks(t, s, books...)
	hot := books[0]

	// Only the committed floor is checked: a reader may see a version whose commit has not
	// returned yet (and, in that window, an older one again afterwards); see the report.
	const writes = 200
	var committed atomic.Int64 // version whose commit has returned
	var done atomic.Bool
	var wg sync.WaitGroup
	problems := make(chan error, 16)
	// Stop the goroutines before the store closes, also when the test fails early.
	t.Cleanup(func() {
		done.Store(true)
		wg.Wait()
	})

	for r := 0; r < 6; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; !done.Load(); i++ {
				floor := committed.Load()
				rid := hot.RandomID
				if i%4 == 3 {
					rid = books[1+(r*13+i)%79].RandomID // also churn the other entries
				}
				b, err := s.GetBook(tn, rid)
				if err != nil {
					problems <- err
					return
				}
				if rid != hot.RandomID {
					continue
				}
				if int64(b.PageCount) < floor {
					problems <- fmt.Errorf("reader %d saw version %d after version %d was committed", r, b.PageCount, floor)
					return
				}
			}
		}(r)
	}

	// A second writer rewrites the other books concurrently (epoch churn in shared shards).
	wg.Add(1)
	go func() {
		defer wg.Done()
		cur := map[int]*Book{}
		for i := 0; !done.Load(); i++ {
			j := 1 + i%79
			old := cur[j]
			if old == nil {
				old = books[j]
			}
			next := cloneB(old)
			next.Name = fmt.Sprintf("churn %d", i)
			batch := s.NewBatch()
			if err := batch.PutBook(old, next); err != nil {
				problems <- err
				return
			}
			if err := batch.Commit(); err != nil {
				problems <- err
				return
			}
			cur[j] = next
		}
	}()

	old := hot
	for v := 1; v <= writes; v++ {
		next := cloneB(old)
		next.PageCount = v
		next.UpdatedAt = t0.Add(time.Duration(v) * time.Millisecond)
		batch := s.NewBatch()
		require.NoError(t, batch.PutBook(old, next))
		require.NoError(t, batch.Commit())
		committed.Store(int64(v))
		old = next
		// The writer itself reads its own write at once.
		got, err := s.GetBook(tn, hot.RandomID)
		require.NoError(t, err)
		require.Equal(t, v, got.PageCount)
	}
	done.Store(true)
	wg.Wait()
	close(problems)
	for err := range problems {
		require.NoError(t, err)
	}
	got, err := s.GetBook(tn, hot.RandomID)
	require.NoError(t, err)
	require.Equal(t, writes, got.PageCount)
	require.True(t, got.UpdatedAt.Equal(t0.Add(writes*time.Millisecond)))
	// Index entries follow: exactly one updated-at entry for the hot book.
	p, err := s.ListBooks(tn, BookQuery{Sort: SortUpdated, Desc: true, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, hot.ID, p.Books[0].ID)
	n, err := s.CountBooks(tn, "*", 0)
	require.NoError(t, err)
	require.Equal(t, 80, n)
}
