package httpapi

import (
	"encoding/binary"
	"errors"
	"fmt"

	"flipbook/api"
	"flipbook/errs"
	"flipbook/search"
	"flipbook/storage"
)

// Search answers of the page text (extensions, issue 28; docs/API.md "Search").
const (
	DefaultSearchLimit = 20
	snippetRadius      = 8   // words either side of a snippet's first match
	maxHitBoxes        = 100 // boxes of one page's matches returned
)

// parseQuery reads q, refusing it as the field q.
func parseQuery(q string) (search.Query, error) {
	p, err := search.Parse(q)
	if err != nil {
		return p, api.FieldError("q", err.Error())
	}
	return p, nil
}

// SearchBook is GET /books/{book}/search: every page of the book where all the query's words
// are, in page order, each with a snippet and the boxes of its matching words. It reads the
// book's page texts, a page at a time, with the same matching as the workspace index.
func (s *bookService) SearchBook(r *api.Request, in *api.BookSearch) (*api.Data[[]api.BookSearchHit], error) {
	q, err := parseQuery(in.Q)
	if err != nil {
		return nil, err
	}
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	out := []api.BookSearchHit{}
	err = s.Store.EachPageText(r.Auth.Tenant, b.RandomID, func(t *storage.PageText) error {
		if hit, ok := findOnPage(q, t); ok {
			out = append(out, hit)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return api.OK(out), nil
}

// findOnPage matches q against one page's words.
func findOnPage(q search.Query, t *storage.PageText) (api.BookSearchHit, bool) {
	words := make([]string, len(t.Words))
	for i, w := range t.Words {
		words[i] = w.Text
	}
	sn, m := q.Find(words, snippetRadius)
	if m != q.All() {
		return api.BookSearchHit{}, false
	}
	hit := api.BookSearchHit{Page: t.Page, Snippet: sn.Text, Matches: len(sn.Hits), Boxes: []api.Box{}}
	for _, i := range sn.Hits[:min(len(sn.Hits), maxHitBoxes)] {
		w := t.Words[i]
		hit.Boxes = append(hit.Boxes, api.Box{X: w.X, Y: w.Y, W: w.W, H: w.H})
	}
	return hit, true
}

// Search is GET /search: the workspace's pages where all the query's words are, best first,
// from the search index (storage/searchindex.go), cursor paginated over the best
// storage.MaxSearchHits.
func (s *bookService) Search(r *api.Request, in *api.Search) (*api.Reply[[]api.SearchHit, api.SearchMeta], error) {
	q, err := parseQuery(in.Q)
	if err != nil {
		return nil, err
	}
	limit := DefaultSearchLimit
	if in.Limit > 0 {
		limit = int(in.Limit)
	}
	t := r.Auth.Tenant
	binding := fmt.Sprintf("search|%d|%c|%q", t.Workspace, t.Mode, q.Terms)
	offset := 0
	if in.Cursor != "" {
		p, err := s.cursors.decode(binding, in.Cursor)
		if err != nil || len(p) != 4 {
			return nil, api.FieldError("cursor", "is not a cursor issued for this query; use meta.next_cursor of the previous page with the same q")
		}
		offset = int(binary.BigEndian.Uint32(p))
	}
	hits, total, err := s.Store.Search(t, q, offset, limit)
	if errors.Is(err, storage.ErrSearchTooBroad) {
		return nil, api.FieldError("q", err.Error())
	}
	if err != nil {
		return nil, err
	}
	out := make([]api.SearchHit, 0, len(hits))
	for _, h := range hits {
		hit, ok, err := s.searchHit(t, q, h)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, hit)
		}
	}
	next := offset + len(hits)
	meta := api.SearchMeta{CursorMeta: api.CursorMeta{Limit: limit}, Total: total}
	if next < min(total, storage.MaxSearchHits) && len(hits) == limit {
		c := s.cursors.encode(binding, binary.BigEndian.AppendUint32(nil, uint32(next)))
		meta.HasMore, meta.NextCursor = true, &c
	}
	return api.With(out, meta), nil
}

// searchHit completes an index hit with its book and snippet; ok is false when the book or
// the page went away since the index was read (a delete between the two reads).
func (s *bookService) searchHit(t storage.Tenant, q search.Query, h storage.SearchHit) (api.SearchHit, bool, error) {
	b, err := s.Store.GetBook(t, h.RandomID)
	if errors.Is(err, errs.ErrNotFound) {
		return api.SearchHit{}, false, nil
	}
	if err != nil {
		return api.SearchHit{}, false, err
	}
	pt, err := s.Store.PageText(t, h.RandomID, h.Page)
	if errors.Is(err, errs.ErrNotFound) {
		return api.SearchHit{}, false, nil
	}
	if err != nil {
		return api.SearchHit{}, false, err
	}
	hit, _ := findOnPage(q, pt)
	return api.SearchHit{BookID: b.ID, RandomID: b.RandomID, BookName: b.Name, Page: h.Page,
		Snippet: hit.Snippet, Score: roundScore(h.Score)}, true, nil
}

// roundScore keeps a score's first four decimals (enough to order, stable in JSON).
func roundScore(v float64) float64 { return float64(int64(v*1e4+0.5)) / 1e4 }
