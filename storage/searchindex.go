package storage

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"math"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
	"flipbook/search"
)

// The search index of a workspace's page texts (issue 28) lives beside them in Pebble and is
// written in the same batch as the texts, so it is current whenever they are: a converted,
// re-converted, backfilled or deleted book changes both at once, and a tenant's keys hold only
// its own pages.
//
//	t/<tenant>/ix/<term> 0x00 <rid>  postings: uvarint count, then per page uvarint(page delta), uvarint(tf)
//	t/<tenant>/ixb/<rid>             the book's terms, 0x00-separated (what deleting it removes)
//
// One key per (term, book) rather than per page: a term is read with one key per book that has
// it, and a prefix ("photo") is one range over its terms. A query reads each term's range,
// intersects the books (rarest term first) and their pages, and scores each page.

func ixPrefix(t Tenant) []byte { return append(t.prefix(), "ix/"...) }

func ixKey(t Tenant, term, rid string) []byte {
	k := append(ixPrefix(t), term...)
	k = append(k, 0)
	return append(k, rid...)
}

func ixBookKey(t Tenant, rid string) []byte {
	return append(append(t.prefix(), "ixb/"...), rid...)
}

// posting is one page of a book that has a term, and how many times.
type posting struct {
	page int
	tf   int
}

// indexPageTexts stages the index entries of a book's texts, replacing those it had.
func (bt *Batch) indexPageTexts(t Tenant, rid string, texts []PageText) error {
	if err := bt.unindexPageTexts(t, rid); err != nil {
		return err
	}
	terms := map[string][]posting{}
	for i := range texts {
		p := texts[i].Page
		for _, w := range texts[i].Words {
			search.Each(w.Text, func(term string) bool {
				ps := terms[term]
				if n := len(ps); n > 0 && ps[n-1].page == p {
					ps[n-1].tf++
				} else {
					terms[term] = append(ps, posting{page: p, tf: 1})
				}
				return true
			})
		}
	}
	if len(terms) == 0 {
		return nil
	}
	names := make([]string, 0, len(terms))
	var buf []byte
	for term, ps := range terms {
		names = append(names, term)
		buf = binary.AppendUvarint(buf[:0], uint64(len(ps)))
		prev := 0
		for _, p := range ps {
			buf = binary.AppendUvarint(buf, uint64(p.page-prev))
			buf = binary.AppendUvarint(buf, uint64(p.tf))
			prev = p.page
		}
		bt.set(ixKey(t, term, rid), buf)
	}
	sort.Strings(names)
	var list []byte
	for i, n := range names {
		if i > 0 {
			list = append(list, 0)
		}
		list = append(list, n...)
	}
	bt.set(ixBookKey(t, rid), list)
	bt.stageTerms(t, rid, list)
	return nil
}

// stageTerms records the term list the batch leaves for a book (nil: none).
func (bt *Batch) stageTerms(t Tenant, rid string, list []byte) {
	if bt.ixTerms == nil {
		bt.ixTerms = map[string][]byte{}
	}
	bt.ixTerms[string(ixBookKey(t, rid))] = list
}

// unindexPageTexts stages the removal of a book's index entries (none when it has none). It
// reads the book's term list as this batch left it, else as committed: the book's actor is its
// only writer.
func (bt *Batch) unindexPageTexts(t Tenant, rid string) error {
	list, staged := bt.ixTerms[string(ixBookKey(t, rid))]
	if !staged {
		var err error
		list, err = bt.s.get(ixBookKey(t, rid))
		switch {
		case errors.Is(err, errs.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
	}
	if list == nil {
		return nil
	}
	for _, term := range bytes.Split(list, []byte{0}) {
		bt.del(ixKey(t, string(term), rid))
	}
	bt.del(ixBookKey(t, rid))
	bt.stageTerms(t, rid, nil)
	return nil
}

// decodePostings reads a postings value.
func decodePostings(v []byte, out []posting) ([]posting, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)) {
		return nil, errBadPostings
	}
	v = v[k:]
	page := 0
	for i := uint64(0); i < n; i++ {
		d, k1 := binary.Uvarint(v)
		if k1 <= 0 {
			return nil, errBadPostings
		}
		tf, k2 := binary.Uvarint(v[k1:])
		if k2 <= 0 {
			return nil, errBadPostings
		}
		v = v[k1+k2:]
		page += int(d)
		out = append(out, posting{page: page, tf: int(tf)})
	}
	return out, nil
}

var errBadPostings = errors.New("storage: a search index entry is damaged")

// SearchHit is a page that matches a query, with its score (higher is better).
type SearchHit struct {
	RandomID string
	Page     int
	Score    float64
}

// MaxSearchHits is how deep the hits of a workspace search can be paged: the best
// MaxSearchHits pages are ranked, the rest are counted but not listed.
const MaxSearchHits = 1000

// MaxSearchScan is the most index entries (a term of a book each) one query reads: a query
// whose words begin too many terms of too many books (two letters in a big workspace) is
// refused with ErrSearchTooBroad rather than reading the whole index.
const MaxSearchScan = 400_000

// MaxSearchPostings is the most page postings (a term on a page each) one query decodes, about
// 32 MB: an entry holds a posting for every page of its book with the term, so the entries'
// budget alone let a query of 2% of it decode 4 million postings (337 MB, found by a review),
// and the whole of it 800 million for books of 2,000 pages. Past it: ErrSearchTooBroad.
const MaxSearchPostings = 2_000_000

// ErrSearchTooBroad is Search's answer to a query past MaxSearchScan.
var ErrSearchTooBroad = errors.New("matches too many words to search; use longer or more specific words")

// Search returns the best pages of the tenant's books for q, in order (score, then book, then
// page), from offset, at most limit; total is how many pages match in all.
func (s *Store) Search(t Tenant, q search.Query, offset, limit int) (hits []SearchHit, total int, err error) {
	return s.search(t, q, offset, limit, MaxSearchScan)
}

// search is Search reading at most budget index entries.
func (s *Store) search(t Tenant, q search.Query, offset, limit, budget int) (hits []SearchHit, total int, err error) {
	perTerm := make([]map[string][]posting, len(q.Terms))
	postings := MaxSearchPostings
	for i, term := range q.Terms {
		if perTerm[i], err = s.termPostings(t, term, &budget, &postings); err != nil {
			return nil, 0, err
		}
		if len(perTerm[i]) == 0 {
			return nil, 0, nil
		}
	}
	// The rarest term (fewest books) drives the intersection.
	sort.Slice(perTerm, func(a, b int) bool { return len(perTerm[a]) < len(perTerm[b]) })
	idf := make([]float64, len(perTerm))
	for i, m := range perTerm {
		idf[i] = 1 / math.Log(math.E+float64(len(m)))
	}
	keep := min(offset+limit, MaxSearchHits)
	top := &hitHeap{}
	lists := make([][]posting, len(perTerm))
	for rid, first := range perTerm[0] {
		lists[0] = first
		found := true
		for i := 1; i < len(perTerm) && found; i++ {
			lists[i], found = perTerm[i][rid]
		}
		if !found {
			continue
		}
		intersectPages(lists, func(page int, tfs []int) {
			total++
			score := 0.0
			for i, tf := range tfs {
				score += (1 + math.Log(float64(tf))) * idf[i]
			}
			h := SearchHit{RandomID: rid, Page: page, Score: score}
			if top.Len() < keep {
				heap.Push(top, h)
			} else if keep > 0 && better(h, (*top)[0]) {
				(*top)[0] = h
				heap.Fix(top, 0)
			}
		})
	}
	out := make([]SearchHit, top.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(top).(SearchHit)
	}
	if offset >= len(out) {
		return []SearchHit{}, total, nil
	}
	return out[offset:min(offset+limit, len(out))], total, nil
}

// termPostings reads the pages of every book with a word the query term matches (the term
// itself, or every term it begins), merged by book and page, taking the entries read from
// budget and the postings decoded from postings (ErrSearchTooBroad when either runs out: an
// entry's count is read before its postings are decoded).
func (s *Store) termPostings(t Tenant, term string, budget, postings *int) (map[string][]posting, error) {
	lo := append(ixPrefix(t), term...)
	hi := prefixEnd(lo)
	if !search.Prefix(term) {
		lo = append(lo, 0)
		hi = prefixEnd(lo)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := map[string][]posting{}
	several := map[string]bool{} // books with more than one term under the prefix
	skip := len(ixPrefix(t))
	for ok := it.First(); ok; ok = it.Next() {
		if *budget--; *budget < 0 {
			return nil, ErrSearchTooBroad
		}
		if n, k := binary.Uvarint(it.Value()); k > 0 {
			if *postings -= int(min(n, uint64(MaxSearchPostings)+1)); *postings < 0 {
				return nil, ErrSearchTooBroad
			}
		}
		k := it.Key()[skip:]
		z := bytes.IndexByte(k, 0)
		if z < 0 {
			continue
		}
		rid := string(k[z+1:])
		prev, seen := out[rid]
		if seen {
			several[rid] = true
		}
		if out[rid], err = decodePostings(it.Value(), prev); err != nil {
			return nil, err
		}
	}
	for rid := range several {
		out[rid] = mergePages(out[rid])
	}
	return out, it.Error()
}

// mergePages sorts postings by page and sums the counts of a page's several terms.
func mergePages(ps []posting) []posting {
	sort.Slice(ps, func(i, j int) bool { return ps[i].page < ps[j].page })
	out := ps[:0]
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].page == p.page {
			out[n-1].tf += p.tf
			continue
		}
		out = append(out, p)
	}
	return out
}

// intersectPages calls f with each page present in every list (each in page order) and its
// count in each.
func intersectPages(lists [][]posting, f func(page int, tfs []int)) {
	pos := make([]int, len(lists))
	tfs := make([]int, len(lists))
	for {
		page := 0
		for i, l := range lists {
			if pos[i] == len(l) {
				return
			}
			page = max(page, l[pos[i]].page)
		}
		all := true
		for i, l := range lists {
			for pos[i] < len(l) && l[pos[i]].page < page {
				pos[i]++
			}
			if pos[i] == len(l) {
				return
			}
			if l[pos[i]].page != page {
				all = false
			} else {
				tfs[i] = l[pos[i]].tf
			}
		}
		if all {
			f(page, tfs)
			for i := range pos {
				pos[i]++
			}
		}
	}
}

// better reports whether a ranks before b.
func better(a, b SearchHit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.RandomID != b.RandomID {
		return a.RandomID < b.RandomID
	}
	return a.Page < b.Page
}

// hitHeap keeps the best hits seen, the worst on top.
type hitHeap []SearchHit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(SearchHit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// SearchIndexSize is the size of a tenant's search index: its keys and their bytes (keys and
// values, before compression), for the benchmark's figure per page.
func (s *Store) SearchIndexSize(t Tenant) (keys int, bytes int64, err error) {
	for _, p := range [][]byte{ixPrefix(t), ixBookKey(t, "")} {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
		if err != nil {
			return 0, 0, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			keys++
			bytes += int64(len(it.Key()) + len(it.Value()))
		}
		if err := it.Close(); err != nil {
			return 0, 0, err
		}
	}
	return keys, bytes, nil
}
