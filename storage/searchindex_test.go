package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
	"flipbook/search"
)

// pageOf makes a page text of the given words (boxes do not matter to the index).
func pageOf(page int, text string) PageText {
	pt := PageText{Page: page, Source: TextFromPDF, Text: text, Words: []Word{}}
	for _, w := range strings.Fields(text) {
		pt.Words = append(pt.Words, Word{Text: w})
	}
	return pt
}

func mustQuery(t *testing.T, q string) search.Query {
	t.Helper()
	p, err := search.Parse(q)
	require.NoError(t, err)
	return p
}

func hitsOf(hits []SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s/%d", h.RandomID, h.Page)
	}
	return out
}

// The index finds pages by folded word prefixes, every term on the same page, best first; it
// is replaced with the texts, removed with the book, and kept apart per tenant.
func TestSearchIndex(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn, other := Tenant{Workspace: 1, Mode: ModeLive}, Tenant{Workspace: 2, Mode: ModeLive}
	a, b := mkBook(tn, 1, "a", StatusDraft, t0, t0), mkBook(tn, 2, "b", StatusDraft, t0, t0)
	o := mkBook(other, 3, "o", StatusDraft, t0, t0)
	putBooks(t, s, a, b, o)
	bt := s.NewBatch()
	require.NoError(t, bt.PutPageTexts(tn, a.RandomID, []PageText{
		pageOf(1, "Our Photographs of the Éléphant"),
		pageOf(2, "photo photo photo, and a garden"),
		pageOf(3, "nothing here"),
	}))
	require.NoError(t, bt.PutPageTexts(tn, b.RandomID, []PageText{pageOf(1, "A garden PHOTO"), pageOf(7, "elephants")}))
	require.NoError(t, bt.PutPageTexts(other, o.RandomID, []PageText{pageOf(1, "photo elephant garden")}))
	require.NoError(t, bt.Commit())

	search := func(tn Tenant, q string, offset, limit int) ([]string, int) {
		hits, total, err := s.Search(tn, mustQuery(t, q), offset, limit)
		require.NoError(t, err)
		return hitsOf(hits), total
	}
	// Three photos on a/2 rank it first; then the single ones, by book and page.
	got, total := search(tn, "photo", 0, 10)
	require.Equal(t, []string{a.RandomID + "/2", a.RandomID + "/1", b.RandomID + "/1"}, got)
	require.Equal(t, 3, total)
	got, _ = search(tn, "ELEPH", 0, 10)
	require.ElementsMatch(t, []string{a.RandomID + "/1", b.RandomID + "/7"}, got)
	got, total = search(tn, "garden photo", 0, 10)
	require.ElementsMatch(t, []string{a.RandomID + "/2", b.RandomID + "/1"}, got)
	require.Equal(t, 2, total)
	got, _ = search(tn, "a", 0, 10) // one letter: the word itself, not "and"
	require.ElementsMatch(t, []string{a.RandomID + "/2", b.RandomID + "/1"}, got)
	got, _ = search(tn, "zebra photo", 0, 10)
	require.Empty(t, got)
	// Paging: offsets past the hits are empty; the total stays.
	got, total = search(tn, "photo", 1, 1)
	require.Equal(t, []string{a.RandomID + "/1"}, got)
	require.Equal(t, 3, total)
	got, total = search(tn, "photo", 5, 10)
	require.Empty(t, got)
	require.Equal(t, 3, total)
	// The other workspace sees only its own book.
	got, _ = search(other, "photo", 0, 10)
	require.Equal(t, []string{o.RandomID + "/1"}, got)

	// New texts replace the old entries; deleting the book removes them.
	bt = s.NewBatch()
	require.NoError(t, bt.PutPageTexts(tn, a.RandomID, []PageText{pageOf(1, "zebra")}))
	require.NoError(t, bt.Commit())
	got, _ = search(tn, "photo", 0, 10)
	require.Equal(t, []string{b.RandomID + "/1"}, got)
	got, _ = search(tn, "zebra", 0, 10)
	require.Equal(t, []string{a.RandomID + "/1"}, got)
	bt = s.NewBatch()
	require.NoError(t, bt.DeleteBook(a))
	require.NoError(t, bt.DeleteBook(b))
	require.NoError(t, bt.Commit())
	for _, q := range []string{"zebra", "photo", "garden", "eleph"} {
		got, _ = search(tn, q, 0, 10)
		require.Empty(t, got, q)
	}
	n := 0
	it, err := s.db.NewIter(nil)
	require.NoError(t, err)
	for ok := it.First(); ok; ok = it.Next() {
		if strings.HasPrefix(string(it.Key()), string(ixPrefix(tn))) || strings.HasPrefix(string(it.Key()), string(ixBookKey(tn, ""))) {
			n++
		}
	}
	require.NoError(t, it.Close())
	require.Zero(t, n, "index keys left after deleting every book")
}

// The index agrees with a scan of the texts on random books and queries: the same pages match.
func TestSearchIndexMatchesScan(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 9, Mode: ModeLive}
	vocab := []string{"alpha", "alphabet", "beta", "Bêta", "gamma", "gammé", "delta", "a", "an", "x", "été", "ete", "straße", "strasse"}
	rng := rand.New(rand.NewPCG(1, 2))
	texts := map[string][]PageText{}
	bt := s.NewBatch()
	for i := range 30 {
		b := mkBook(tn, int64(i+1), fmt.Sprintf("b%02d", i), StatusDraft, t0, t0)
		putBooks(t, s, b)
		var pages []PageText
		for p := 1; p <= 1+rng.IntN(6); p++ {
			var words []string
			for range rng.IntN(8) {
				words = append(words, vocab[rng.IntN(len(vocab))])
			}
			pages = append(pages, pageOf(p, strings.Join(words, " ")))
		}
		texts[b.RandomID] = pages
		require.NoError(t, bt.PutPageTexts(tn, b.RandomID, pages))
	}
	require.NoError(t, bt.Commit())
	for _, qs := range []string{"alph", "alpha", "beta", "gam", "a", "an", "x", "ete", "strasse", "alpha beta", "a gamme", "delta ete x"} {
		q := mustQuery(t, qs)
		var want []string
		for rid, pages := range texts {
			for _, p := range pages {
				if _, m := q.Find(strings.Fields(p.Text), 3); m == q.All() {
					want = append(want, fmt.Sprintf("%s/%d", rid, p.Page))
				}
			}
		}
		hits, total, err := s.Search(tn, q, 0, MaxSearchHits)
		require.NoError(t, err)
		got := hitsOf(hits)
		sort.Strings(want)
		require.Equal(t, len(want), total, qs)
		require.ElementsMatch(t, want, got, qs)
		for i := 1; i < len(hits); i++ {
			require.True(t, !better(hits[i], hits[i-1]), "hits out of order for %q", qs)
		}
	}
}

// Writing a book's texts twice in one batch, or writing then deleting it, leaves exactly the
// last state's index entries; a query reading more entries than its budget is refused.
func TestSearchIndexBatchAndBudget(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 4, Mode: ModeLive}
	a, b := mkBook(tn, 1, "a", StatusDraft, t0, t0), mkBook(tn, 2, "b", StatusDraft, t0, t0)
	putBooks(t, s, a, b)
	bt := s.NewBatch()
	require.NoError(t, bt.PutPageTexts(tn, a.RandomID, []PageText{pageOf(1, "first walrus")}))
	require.NoError(t, bt.PutPageTexts(tn, a.RandomID, []PageText{pageOf(1, "second otter")}))
	require.NoError(t, bt.PutPageTexts(tn, b.RandomID, []PageText{pageOf(1, "otter walrus")}))
	require.NoError(t, bt.DeleteBook(b))
	require.NoError(t, bt.Commit())
	for q, want := range map[string][]string{"walrus": nil, "first": nil, "otter": {a.RandomID + "/1"}, "second": {a.RandomID + "/1"}} {
		hits, _, err := s.Search(tn, mustQuery(t, q), 0, 10)
		require.NoError(t, err)
		if want == nil {
			require.Empty(t, hits, q)
		} else {
			require.Equal(t, want, hitsOf(hits), q)
		}
	}
	keys, _, err := s.SearchIndexSize(tn)
	require.NoError(t, err)
	require.Equal(t, 3, keys, "otter, second and a's term list")

	bt = s.NewBatch()
	for i := range 20 {
		c := mkBook(tn, int64(10+i), fmt.Sprintf("c%02d", i), StatusDraft, t0, t0)
		putBooks(t, s, c)
		require.NoError(t, bt.PutPageTexts(tn, c.RandomID, []PageText{pageOf(1, "otter otters ottoman")}))
	}
	require.NoError(t, bt.Commit())
	_, total, err := s.search(tn, mustQuery(t, "ot"), 0, 10, 61)
	require.NoError(t, err)
	require.Equal(t, 21, total)
	_, _, err = s.search(tn, mustQuery(t, "ot"), 0, 10, 60)
	require.ErrorIs(t, err, ErrSearchTooBroad)
}

// MaxSearchScan bounds index entries (a term of a book), but each entry holds a posting per
// page of the book that has the term: a prefix query over books whose pages repeat many terms
// under the prefix decoded pages × entries postings, 4 million at 2% of the budget (337 MB: found
// by a review). MaxSearchPostings refuses it, before decoding them.
func TestSearchBudgetCountsPostings(t *testing.T) {
	s := openStore(t)
	tn := Tenant{Workspace: 77, Mode: ModeLive}
	const books, pages, words = 4, 500, 2000
	texts := make([]PageText, pages)
	ws := make([]Word, words)
	for i := range ws {
		ws[i] = Word{Text: "ab" + strconv.FormatInt(int64(i), 36)}
	}
	for p := range texts {
		texts[p] = PageText{Page: p + 1, Source: TextFromPDF, Text: "x", Words: ws}
	}
	start := time.Now()
	for b := range books {
		bt := s.NewBatch()
		require.NoError(t, bt.PutPageTexts(tn, fmt.Sprintf("bk%08d", b), texts))
		require.NoError(t, bt.CommitNoSync())
	}
	build := time.Since(start)

	// Count the entries and postings under "ab" as Search would read them.
	lo := append(ixPrefix(tn), "ab"...)
	it, err := s.db.NewIter(nil)
	require.NoError(t, err)
	entries, postings := 0, 0
	for ok := it.SeekGE(lo); ok && bytes.HasPrefix(it.Key(), lo); ok = it.Next() {
		n, _ := binary.Uvarint(it.Value())
		entries++
		postings += int(n)
	}
	require.NoError(t, it.Close())

	q := mustQuery(t, "ab")
	// The allocations counted are the process's: the build's flushes and compactions, still
	// running in the background, made them 288 MB in one CI run. They are waited for.
	require.NoError(t, s.db.Flush())
	testutil.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		if m := s.db.Metrics(); m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0 {
			return fmt.Errorf("%d compactions, %d flushes in progress", m.Compact.NumInProgress, m.Flush.NumInProgress)
		}
		return nil
	})
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start = time.Now()
	_, total, err := s.Search(tn, q, 0, 10)
	took := time.Since(start)
	runtime.ReadMemStats(&m1)
	alloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("build %v; query \"ab\": %d entries (%.1f%% of MaxSearchScan %d), %d postings decoded, total %d, err %v, %.0f MB allocated, %v",
		build, entries, 100*float64(entries)/MaxSearchScan, MaxSearchScan, postings, total, err, float64(alloc)/(1<<20), took)
	t.Logf("at the full budget: %d entries × %d pages = %d postings (×16 B = %.1f GB before slice growth)",
		MaxSearchScan, 2000, MaxSearchScan*2000, float64(MaxSearchScan)*2000*16/(1<<30))
	require.ErrorIs(t, err, ErrSearchTooBroad, "%d postings under the prefix", postings)
	require.Less(t, alloc, uint64(256<<20), "refused once MaxSearchPostings were decoded (32 MB of them, and their slices' growth)")
}
