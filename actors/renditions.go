package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"flipbook/actors/convert"
	"flipbook/errs"
	"flipbook/storage"
)

// The page renditions (issue 29, docs/VIEWER.md "Page images"): once a book's pages are ready,
// a backfill (backfill.go) makes WebP copies of each page image at convert.RenditionWidths and
// a placeholder for its first pages, a batch of pages at a time, each batch one vipsthumbnail
// process per width, and stores them through the book's actor. One process runs at a time, at
// a lower priority (nice 10): it takes at most one core, and yields it to conversions (the
// kernel gives a nice-10 process about a tenth of a core beside a nice-0 one) rather than
// holding a renderer slot a conversion would wait for. Until then the viewer shows the page
// images themselves. Made after the book is ready, not during its conversion, so that a book
// is readable as soon as its pages are rendered (the convert benchmark): the renditions follow
// within seconds. Books converted before renditions existed are found by the walk at start.

// renditionBatch is how many pages one vipsthumbnail process encodes (per width).
const renditionBatch = 24

// SetRenditions → *storage.Book: the renditions made of some of a book's pages. Each entry
// names the page file it was made from: a page whose image changed since is left as it is.
type SetRenditions struct {
	RandomID string
	Pages    []PageRenditions
}

// PageRenditions are the renditions of one page.
type PageRenditions struct {
	Number      int
	File        string // the page image they were made from
	Renditions  []storage.Rendition
	Placeholder []byte
}

func (m *SetRenditions) bookID() string { return m.RandomID }

// renditionJob is the renditions backfill's job.
type renditionJob struct{ s *System }

func (renditionJob) name() string { return "page renditions" }

// needs says whether a ready book has a page without its renditions.
func (j renditionJob) needs(t storage.Tenant, rid string) bool {
	b, err := j.s.Store.GetBook(t, rid)
	if err != nil || b.PageImagesStatus != storage.PagesReady || b.PageCount == 0 {
		return false
	}
	pages, err := j.s.Store.Pages(t, rid)
	if err != nil {
		return false
	}
	for _, p := range pages {
		if wantsRenditions(p) {
			return true
		}
	}
	return false
}

// wantsRenditions says whether a page lacks renditions it can have: a WebP copy at the
// smallest width (when it is wider), or its placeholder.
func wantsRenditions(p storage.Page) bool {
	return (len(p.Renditions) == 0 && convert.RenditionFits(convert.RenditionWidths[0], p.Width)) ||
		(p.Number <= storage.PlaceholderPages && len(p.Placeholder) == 0)
}

// fill makes and stores the renditions of a book's pages that lack them, a batch at a time.
func (j renditionJob) fill(ctx context.Context, t storage.Tenant, rid string) error {
	pages, err := j.s.Store.Pages(t, rid)
	if err != nil {
		return notFoundOK(err)
	}
	var todo []storage.Page
	for _, p := range pages {
		if wantsRenditions(p) {
			todo = append(todo, p)
		}
	}
	dir := j.s.Store.WorkDir("renditions-" + rid)
	defer os.RemoveAll(dir)
	for start := 0; start < len(todo) && ctx.Err() == nil; start += renditionBatch {
		batch := todo[start:min(start+renditionBatch, len(todo))]
		made, err := j.batch(ctx, rid, batch, filepath.Join(dir, "b"))
		if err == nil {
			_, err = askT[*storage.Book](j.s, j.s.workspace(t), &SetRenditions{RandomID: rid, Pages: made})
		}
		if err != nil && ctx.Err() == nil && j.gone(t, rid) {
			// The book was deleted meanwhile. Renditions already moved into its blobs (an
			// object store creates the folder again) go too, as a conversion's do
			// (conversion.go).
			return j.s.Store.Blobs.DeleteBook(rid)
		}
		if err != nil && ctx.Err() == nil && !j.needs(t, rid) {
			return nil // nothing left to make
		}
		if err != nil {
			return notFoundOK(err)
		}
	}
	return ctx.Err()
}

// gone reports whether a book is deleted (its record is not found).
func (j renditionJob) gone(t storage.Tenant, rid string) bool {
	_, err := j.s.Store.GetBook(t, rid)
	return errors.Is(err, errs.ErrNotFound)
}

// batch makes the renditions of pages in dir and moves them into the book's blobs. Pages with the same image (blank pages, say) share its renditions.
func (j renditionJob) batch(ctx context.Context, rid string, pages []storage.Page, dir string) ([]PageRenditions, error) {
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	var masters []string
	var widths []int
	index := map[string]int{} // page file → its place in masters
	for _, p := range pages {
		if _, ok := index[p.File]; ok {
			continue
		}
		m, err := j.s.localBlob(dir, rid, p.File)
		if err != nil {
			return nil, err
		}
		index[p.File] = len(masters)
		masters, widths = append(masters, m), append(widths, p.Width)
	}
	made, err := convert.MakeRenditions(ctx, masters, widths, filepath.Join(dir, "out"))
	if err != nil {
		return nil, err
	}
	stored := make([][]storage.Rendition, len(made))
	for i, m := range made {
		stored[i] = []storage.Rendition{}
		for _, r := range m.WebP {
			name, err := j.s.Store.Blobs.MoveFile(rid, r.Path, "webp")
			if err != nil {
				return nil, err
			}
			stored[i] = append(stored[i], storage.Rendition{File: name, Width: r.Width, Height: r.Height})
		}
	}
	out := make([]PageRenditions, len(pages))
	for i, p := range pages {
		k := index[p.File]
		out[i] = PageRenditions{Number: p.Number, File: p.File, Renditions: stored[k]}
		if p.Number <= storage.PlaceholderPages {
			out[i].Placeholder = made[k].Placeholder
		}
	}
	// One flush makes the files durable before the page list points at them.
	return out, j.s.Store.Blobs.Sync()
}

// setRenditions stores renditions of a book's pages, for the pages whose image is still the
// one they were made from.
func (b *book) setRenditions(m *SetRenditions) (*storage.Book, error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	pages, err := b.s.Store.Pages(b.t, b.rid)
	if err != nil {
		return nil, err
	}
	changed := false
	for _, r := range m.Pages {
		if i := r.Number - 1; i >= 0 && i < len(pages) && pages[i].File == r.File {
			pages[i].Renditions, pages[i].Placeholder = r.Renditions, r.Placeholder
			changed = true
		}
	}
	if !changed {
		return b.rec, nil
	}
	batch := b.s.Store.NewBatch()
	if err := batch.PutPages(b.t, b.rid, pages); err != nil {
		batch.Close()
		return nil, err
	}
	return b.rec, batch.Commit()
}

// WantRenditions asks the renditions backfill for a book's page renditions (once its pages
// are ready).
func (s *System) WantRenditions(t storage.Tenant, rid string) {
	if s.renditions != nil {
		s.Engine.Send(s.renditions, wanted{t: t, rid: rid})
	}
}
