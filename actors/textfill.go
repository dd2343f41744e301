package actors

import (
	"context"
	"os"
	"slices"

	"flipbook/actors/convert"
	"flipbook/errs"
	"flipbook/storage"
)

// The page-text backfill (issue 28): books whose pages have no stored text get it in the
// background, from their document when they have one and by OCR of their page images. These
// are the books converted before page text was kept, and the books made of images (the
// editor's konva pages, template books), which have no conversion. At start (and at Resume)
// the supervisor (a backfill, backfill.go) walks every book of the workspaces this node owns; a
// new image book is announced by its workspace once created. One book is read at a time (its
// OCR uses the conversion's renderer slots), and its texts are written through the book's actor
// (SetTexts), with their search index, so a book deleted meanwhile stays deleted.

// SetTexts → *storage.Book: the backfilled texts of a book's pages. Files are the page files
// the texts were read from: a book whose pages changed since is left as it is.
type SetTexts struct {
	RandomID string
	Files    []string
	Texts    []storage.PageText
}

func (m *SetTexts) bookID() string { return m.RandomID }

// textJob is the page-text backfill's job.
type textJob struct{ s *System }

func (textJob) name() string { return "text backfill" }

// needs says whether a book is ready, has pages and has no text stored.
func (j textJob) needs(t storage.Tenant, rid string) bool {
	b, err := j.s.Store.GetBook(t, rid)
	if err != nil || b.PageImagesStatus != storage.PagesReady || b.PageCount == 0 {
		return false
	}
	has, err := j.s.Store.HasPageText(t, rid)
	return err == nil && !has
}

// fill reads and stores one book's text.
func (v textJob) fill(ctx context.Context, t storage.Tenant, rid string) error {
	b, err := v.s.Store.GetBook(t, rid)
	if err != nil {
		return notFoundOK(err)
	}
	pages, err := v.s.Store.Pages(t, rid)
	if err != nil {
		return notFoundOK(err)
	}
	dir, err := os.MkdirTemp("", "textfill-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	files := make([]string, len(pages))
	images := make([]string, len(pages))
	for i, p := range pages {
		files[i] = p.File
		if images[i], err = v.s.localBlob(dir, rid, p.File); err != nil {
			return notFoundOK(err)
		}
	}
	pdf := ""
	if b.Document != "" {
		if pdf, err = v.s.localBlob(dir, rid, b.Document); err != nil {
			return notFoundOK(err)
		}
	}
	texts := convert.BookText(ctx, pdf, images, convert.Options{Slots: v.s.renderSlots, OCRLanguages: v.s.conv.OCRLanguages})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	_, err = askT[*storage.Book](v.s, v.s.workspace(t), &SetTexts{RandomID: rid, Files: files, Texts: texts})
	return notFoundOK(err)
}

// setTexts stores backfilled texts, unless the book already has texts or other pages.
func (b *book) setTexts(m *SetTexts) (*storage.Book, error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	pages, err := b.s.Store.Pages(b.t, b.rid)
	if err != nil {
		return nil, err
	}
	files := make([]string, len(pages))
	for i, p := range pages {
		files[i] = p.File
	}
	if has, err := b.s.Store.HasPageText(b.t, b.rid); err != nil || has || !slices.Equal(files, m.Files) {
		return b.rec, err
	}
	batch := b.s.Store.NewBatch()
	if err := batch.PutPageTexts(b.t, b.rid, m.Texts); err != nil {
		batch.Close()
		return nil, err
	}
	return b.rec, batch.Commit()
}

// WantText asks the backfill to read a book's text if it has none (a book made of images).
func (s *System) WantText(t storage.Tenant, rid string) {
	if s.textfill != nil {
		s.Engine.Send(s.textfill, wanted{t: t, rid: rid})
	}
}
