package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"flipbook/search"
	"flipbook/storage"
)

// SearchOptions configure the search scenario (issue 28).
type SearchOptions struct {
	Books   int // books of the workspace (10,000)
	Pages   int // pages a book (20)
	Words   int // words a page (100)
	Queries int // timed queries (500)
}

// TargetSearchP99 is the aim for a workspace search (GET /search's work: the index, then the
// 20 best pages' texts for their snippets) over 10,000 books of 20 pages.
const TargetSearchP99 = 50 * time.Millisecond

// searchVocabulary is the number of distinct words of the synthetic books; word frequencies
// follow Zipf's law, as in natural text (a few words on every page, most on few).
const searchVocabulary = 50_000

// Search builds one workspace of synthetic books in a Pebble store through the same writes as
// a conversion (page texts and their index in one batch a book), then times searches of
// common, rare, two-word and prefix queries, with the snippets of the first page of hits.
func Search(ctx context.Context, o SearchOptions, out io.Writer) (*Report, error) {
	dir, err := os.MkdirTemp("", "flipbook-bench-search-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := storage.Open(dir, storage.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(28, 1))
	vocab := searchWords(rng, searchVocabulary)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(28, 2)), 1.07, 2, searchVocabulary-1)
	t := storage.Tenant{Workspace: 1, Mode: storage.ModeLive}

	start := time.Now()
	if err := fillSearchBooks(ctx, st, t, o, vocab, zipf); err != nil {
		return nil, err
	}
	built := time.Since(start)
	pages := o.Books * o.Pages
	keys, size, err := st.SearchIndexSize(t)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "  indexed %d books of %d pages (%d words a page) in %s: %.0f pages/s\n",
		o.Books, o.Pages, o.Words, built.Round(time.Millisecond), float64(pages)/built.Seconds())
	fmt.Fprintf(out, "  index: %d keys, %.1f MB, %.0f bytes a page (keys and values, before compression)\n",
		keys, float64(size)/1e6, float64(size)/float64(pages))

	kinds := []struct {
		name string
		make func() string
	}{
		{"common word", func() string { return vocab[rng.IntN(50)] }},
		{"mid word", func() string { return vocab[50+rng.IntN(2000)] }},
		{"rare word", func() string { return vocab[2000+rng.IntN(searchVocabulary-2000)] }},
		{"two words", func() string { return vocab[rng.IntN(200)] + " " + vocab[200+rng.IntN(5000)] }},
		{"prefix", func() string { return runePrefix(vocab[rng.IntN(5000)], 4) }},
		{"2-letter prefix", func() string { return runePrefix(vocab[rng.IntN(5000)], 2) }},
	}
	var all []time.Duration
	for _, k := range kinds {
		var ds []time.Duration
		hits, refused := 0, 0
		for range max(o.Queries/len(kinds), 1) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			d, n, err := timeSearch(st, t, k.make())
			if err != nil {
				return nil, err
			}
			if n < 0 {
				refused, n = refused+1, 0
			}
			ds, hits = append(ds, d), hits+n
		}
		slices.Sort(ds)
		fmt.Fprintf(out, "  %-15s p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  (%.0f matching pages a query; %d of %d refused as too broad)\n", k.name,
			msf(pct(ds, 50)), msf(pct(ds, 99)), msf(ds[len(ds)-1]), float64(hits)/float64(len(ds)), refused, len(ds))
		all = append(all, ds...)
	}
	slices.Sort(all)
	rep := &Report{Scenario: "search"}
	rep.checkValue(out, fmt.Sprintf("search p99 over %d books of %d pages", o.Books, o.Pages), msf(pct(all, 99)), "<=", msf(TargetSearchP99), " ms")
	return rep, nil
}

// timeSearch runs one query as GET /search does (the 20 best pages, then each one's text for
// its snippet) and returns how long it took and how many pages matched (-1: refused as too
// broad).
func timeSearch(st *storage.Store, t storage.Tenant, q string) (time.Duration, int, error) {
	start := time.Now()
	query, err := search.Parse(q)
	if err != nil {
		return 0, 0, fmt.Errorf("query %q: %w", q, err)
	}
	hits, total, err := st.Search(t, query, 0, 20)
	if errors.Is(err, storage.ErrSearchTooBroad) {
		return time.Since(start), -1, nil // refused (422), after reading its budget
	}
	if err != nil {
		return 0, 0, err
	}
	for _, h := range hits {
		pt, err := st.PageText(t, h.RandomID, h.Page)
		if err != nil {
			return 0, 0, err
		}
		words := make([]string, len(pt.Words))
		for i, w := range pt.Words {
			words[i] = w.Text
		}
		if _, m := query.Find(words, 8); m != query.All() {
			return 0, 0, fmt.Errorf("query %q: page %s/%d does not match", q, h.RandomID, h.Page)
		}
	}
	return time.Since(start), total, nil
}

// fillSearchBooks writes o.Books books of o.Pages pages of o.Words words, a batch a book.
func fillSearchBooks(ctx context.Context, st *storage.Store, t storage.Tenant, o SearchOptions, vocab []string, zipf *rand.Zipf) error {
	texts := make([]storage.PageText, o.Pages)
	var sb strings.Builder
	for b := range o.Books {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for p := range texts {
			words := make([]storage.Word, o.Words)
			sb.Reset()
			for i := range words {
				w := vocab[zipf.Uint64()]
				x, y := float64(i%10)/10, float64(i/10)/float64(o.Words/10+1)
				words[i] = storage.Word{Text: w, X: x, Y: y, W: 0.08, H: 0.02}
				if i > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(w)
			}
			texts[p] = storage.PageText{Page: p + 1, Source: storage.TextFromPDF, Text: sb.String(), Words: words}
		}
		bt := st.NewBatch()
		if err := bt.PutPageTexts(t, fmt.Sprintf("bk%08d", b), texts); err != nil {
			bt.Close()
			return err
		}
		if err := bt.CommitNoSync(); err != nil {
			return err
		}
	}
	return nil
}

// searchWords makes n distinct pseudo-words of 3 to 10 letters, a few with accents.
func searchWords(rng *rand.Rand, n int) []string {
	const letters = "abcdefghijklmnopqrstuvwxyzéèüö"
	runes := []rune(letters)
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 3 + rng.IntN(8) {
			r := runes[rng.IntN(26)]
			if rng.IntN(40) == 0 {
				r = runes[26+rng.IntN(4)]
			}
			b.WriteRune(r)
		}
		if w := b.String(); !seen[search.Fold(w)] {
			seen[search.Fold(w)] = true
			out = append(out, w)
		}
	}
	return out
}

// msf is d in milliseconds.
func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runePrefix is the first n characters of w.
func runePrefix(w string, n int) string {
	r := []rune(w)
	return string(r[:min(len(r), n)])
}
