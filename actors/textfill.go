package actors

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/anthdm/hollywood/actor"

	"flipbook/actors/convert"
	"flipbook/errs"
	"flipbook/storage"
)

// The page-text backfill (issue 28): books whose pages have no stored text get it in the
// background, from their document when they have one and by OCR of their page images. These
// are the books converted before page text was kept, and the books made of images (the
// editor's konva pages, template books), which have no conversion. At start (and at Resume)
// the supervisor walks every book of the workspaces this node owns; a new image book is
// announced by its workspace once created. One book is read at a time by one worker goroutine
// (its OCR uses the conversion's renderer slots, so conversions and the backfill share the
// cores), and its texts are written through the book's actor (SetTexts), with their search
// index, so a book deleted meanwhile stays deleted.

// SetTexts → *storage.Book: the backfilled texts of a book's pages. Files are the page files
// the texts were read from: a book whose pages changed since is left as it is.
type SetTexts struct {
	RandomID string
	Files    []string
	Texts    []storage.PageText
}

func (m *SetTexts) bookID() string { return m.RandomID }

// textWanted asks the backfill for a book's text (when it has none yet). walked: sent by the
// walk, which holds a place of textfill.room for it until it leaves the queue.
type textWanted struct {
	t      storage.Tenant
	rid    string
	walked bool
}

// textQueued is how many books the walk queues ahead of the worker: the walk waits for room,
// so a first start over a million books without text holds a few hundred in memory, not all.
const textQueued = 256

// textDone tells the backfill its worker finished a book.
type textDone struct{}

// textScanned tells the backfill a walk over the books ended.
type textScanned struct{}

type textfill struct {
	s       *System
	queue   []textWanted
	known   map[textKey]bool
	room    chan struct{} // places of walked books in the queue (textQueued)
	busy    bool
	walking bool // a walk is running
	rewalk  bool // another walk was asked for meanwhile (Resume)
	ctx     context.Context
	cancel  context.CancelFunc
	running sync.WaitGroup // the worker and the walk, awaited at stop
}

func newTextfill(s *System) actor.Producer {
	return func() actor.Receiver {
		return &textfill{s: s, known: map[textKey]bool{}, room: make(chan struct{}, textQueued)}
	}
}

// textKey names a book in the queue.
type textKey struct {
	t   storage.Tenant
	rid string
}

func (v *textfill) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		v.ctx, v.cancel = context.WithCancel(context.Background())
		v.walk(c)
	case actor.Stopped:
		// The worker's OCR is cancelled; its book stays without text and is found again by
		// the next start's walk.
		v.cancel()
		v.running.Wait()
	case resumeQueues:
		if v.walking {
			v.rewalk = true
		} else {
			v.walk(c)
		}
	case textWanted:
		if k := (textKey{m.t, m.rid}); !v.known[k] {
			v.known[k] = true
			v.queue = append(v.queue, m)
		} else if m.walked {
			<-v.room
		}
		v.next(c)
	case textDone:
		v.busy = false
		v.next(c)
	case textScanned:
		v.walking = false
		if v.rewalk {
			v.rewalk = false
			v.walk(c)
		}
	}
}

// walk looks, off the actor, for the owned books without text, and queues them.
func (v *textfill) walk(c *actor.Context) {
	pid, e, ctx := c.PID(), c.Engine(), v.ctx
	v.walking = true
	v.running.Add(1)
	go func() {
		defer v.running.Done()
		if err := v.walkBooks(ctx, func(w textWanted) { e.Send(pid, w) }); err != nil {
			v.s.opts.Logger.Error("text backfill: walk the books", "err", err)
		}
		e.Send(pid, textScanned{})
	}()
}

// walkBooks sends each owned book without text to the queue, a step of books at a time,
// waiting for room in the queue.
func (v *textfill) walkBooks(ctx context.Context, send func(textWanted)) error {
	after := ""
	for ctx.Err() == nil {
		refs, err := v.s.Store.BooksAfter(after, textQueued)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if !v.s.owns(r.Tenant.Workspace) || !v.needsText(r.Tenant, r.RandomID) {
				continue
			}
			select {
			case v.room <- struct{}{}: // freed as the book leaves the queue
			case <-ctx.Done():
				return nil
			}
			send(textWanted{t: r.Tenant, rid: r.RandomID, walked: true})
		}
		if len(refs) < textQueued {
			return nil
		}
		after = refs[len(refs)-1].RandomID
	}
	return nil
}

// needsText says whether a book is ready, has pages and has no text stored.
func (v *textfill) needsText(t storage.Tenant, rid string) bool {
	b, err := v.s.Store.GetBook(t, rid)
	if err != nil || b.PageImagesStatus != storage.PagesReady || b.PageCount == 0 {
		return false
	}
	has, err := v.s.Store.HasPageText(t, rid)
	return err == nil && !has
}

// next starts the worker on the next queued book when it is idle.
func (v *textfill) next(c *actor.Context) {
	if v.busy || len(v.queue) == 0 || v.ctx.Err() != nil {
		return
	}
	w := v.queue[0]
	v.queue = v.queue[1:]
	delete(v.known, textKey{w.t, w.rid})
	if w.walked {
		<-v.room
	}
	v.busy = true
	pid, e, ctx := c.PID(), c.Engine(), v.ctx
	v.running.Add(1)
	go func() {
		defer v.running.Done()
		if err := v.fill(ctx, w); err != nil && ctx.Err() == nil {
			v.s.opts.Logger.Error("text backfill", "book", w.rid, "err", err)
		}
		e.Send(pid, textDone{})
	}()
}

// fill reads and stores one book's text.
func (v *textfill) fill(ctx context.Context, w textWanted) error {
	if !v.s.owns(w.t.Workspace) || !v.needsText(w.t, w.rid) {
		return nil
	}
	b, err := v.s.Store.GetBook(w.t, w.rid)
	if err != nil {
		return notFoundOK(err)
	}
	pages, err := v.s.Store.Pages(w.t, w.rid)
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
		if images[i], err = v.local(dir, w.rid, p.File); err != nil {
			return notFoundOK(err)
		}
	}
	pdf := ""
	if b.Document != "" {
		if pdf, err = v.local(dir, w.rid, b.Document); err != nil {
			return notFoundOK(err)
		}
	}
	texts := convert.BookText(ctx, pdf, images, convert.Options{Slots: v.s.renderSlots, OCRLanguages: v.s.conv.OCRLanguages})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	_, err = askT[*storage.Book](v.s, v.s.workspace(w.t), &SetTexts{RandomID: w.rid, Files: files, Texts: texts})
	return notFoundOK(err)
}

// local is a file path of a book's blob: its own in the blob folder, or a copy in dir when the
// blobs are in an object store.
func (v *textfill) local(dir, rid, name string) (string, error) {
	if p, ok := v.s.Store.Blobs.Path(rid, name); ok {
		return p, nil
	}
	r, _, err := v.s.Store.Blobs.Open(rid, name)
	if err != nil {
		return "", err
	}
	defer r.Close()
	p := filepath.Join(dir, filepath.Base(name))
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return "", err
	}
	return p, f.Close()
}

// notFoundOK is err, except that a book or a file gone (deleted meanwhile) is no error.
func notFoundOK(err error) error {
	if errors.Is(err, errs.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
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
		s.Engine.Send(s.textfill, textWanted{t: t, rid: rid})
	}
}
