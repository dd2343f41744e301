package httpapi

import (
	"errors"

	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

// ListPages is GET /books/{book}/pages (an extension, issue 28): each page's size, image and
// whether it has text. A book still converting has no pages yet.
func (s *bookService) ListPages(r *api.Request, in *api.BookPath) (*api.Data[[]api.PageInfo], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	pages, err := s.Store.Pages(r.Auth.Tenant, b.RandomID)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	source := map[int]string{} // the pages with words: their text's source
	err = s.Store.EachPageText(r.Auth.Tenant, b.RandomID, func(t *storage.PageText) error {
		if len(t.Words) > 0 {
			source[t.Page] = t.Source
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]api.PageInfo, 0, len(pages))
	for _, p := range pages {
		info := api.PageInfo{Number: p.Number, Width: p.Width, Height: p.Height, ImageURL: s.fileURL(b.RandomID, p.File),
			Renditions: make([]api.PageRendition, 0, len(p.Renditions))}
		if !s.noRenditions {
			for _, r := range p.Renditions {
				info.Renditions = append(info.Renditions, api.PageRendition{ImageURL: s.fileURL(b.RandomID, r.File), Width: r.Width, Height: r.Height})
			}
		}
		if src, ok := source[p.Number]; ok {
			info.HasText, info.TextSource = true, optString(src)
		}
		out = append(out, info)
	}
	return api.OK(out), nil
}

// GetPage is GET /books/{book}/pages/{page} (an extension, issue 28): the page's text and
// words. A page of the book without stored text (a photo, an editor page, a book converted
// before text was kept) answers an empty text and no words; a page past the last is a 404.
func (s *bookService) GetPage(r *api.Request, in *api.BookPage) (*api.Data[api.PageTextInfo], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	if in.Page > int64(b.PageCount) {
		return nil, api.ErrNotFound("page")
	}
	out := api.PageTextInfo{Number: int(in.Page), Words: []storage.Word{}}
	t, err := s.Store.PageText(r.Auth.Tenant, b.RandomID, int(in.Page))
	switch {
	case errors.Is(err, errs.ErrNotFound):
		return api.OK(out), nil
	case err != nil:
		return nil, err
	}
	out.Text, out.Source, out.Problem = t.Text, optString(t.Source), optString(t.Problem)
	if len(t.Words) > 0 {
		out.Words = t.Words
	}
	return api.OK(out), nil
}

// optString is s, or nil when empty.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// GetOutline is GET /books/{book}/outline (an extension, issue 29): the document's bookmarks as
// the conversion kept them; a book without (a photo, an editor book, a PDF without bookmarks,
// a book converted before outlines were kept) answers an empty list.
func (s *bookService) GetOutline(r *api.Request, in *api.BookPath) (*api.Data[[]api.OutlineItem], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	items, err := s.Store.Outline(r.Auth.Tenant, b.RandomID)
	if err != nil {
		return nil, err
	}
	out := make([]api.OutlineItem, len(items))
	for i, it := range items {
		out[i] = api.OutlineItem{Title: it.Title, Level: it.Level, Page: it.Page}
	}
	return api.OK(out), nil
}
