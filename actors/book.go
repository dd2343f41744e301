package actors

import (
	"errors"
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/errs"
	"flipbook/storage"
)

// book is the actor of one book: the only writer of its record. It loads the record when it
// starts (so a restarted or re-spawned actor is correct) and stops itself when idle.
type book struct {
	s   *System
	t   storage.Tenant
	rid string

	rec       *storage.Book // nil when the book does not exist (any more)
	loaded    bool
	processed uint64
	last      time.Time
	idle      *time.Timer
}

type idleTick struct{}

func newBook(s *System, t storage.Tenant, rid string) actor.Producer {
	return func() actor.Receiver { return &book{s: s, t: t, rid: rid} }
}

func (b *book) reset() { b.loaded, b.rec = false, nil }

func (b *book) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized:
	case actor.Started:
		b.s.books.Add(1)
		b.last = time.Now()
		pid := c.PID()
		b.idle = time.AfterFunc(b.s.opts.BookIdle, func() { b.s.tell(pid, idleTick{}) })
	case actor.Stopped:
		b.s.books.Add(-1)
		if b.idle != nil {
			b.idle.Stop()
		}
	case idleTick:
		if since := time.Since(b.last); since < b.s.opts.BookIdle {
			b.idle.Reset(b.s.opts.BookIdle - since)
			return
		}
		b.s.tellFrom(c.Parent(), &bookIdle{rid: b.rid, pid: c.PID(), processed: b.processed}, c.PID())
		b.idle.Reset(b.s.opts.BookIdle) // ask again later if the parent had sent more
	case *routed:
		b.processed++
		b.last = time.Now()
		if err := b.load(); err != nil {
			if c.Sender() != nil {
				c.Respond(err)
			}
			return
		}
		switch m := m.msg.(type) {
		case *UpdateBook:
			c.Respond(result(b.update(m.Patch)))
		case *DeleteBook:
			c.Respond(result(b.delete()))
		case *SetPages:
			c.Respond(result(b.setPages(m)))
		case *SetTexts:
			c.Respond(result(b.setTexts(m)))
		case *SetRenditions:
			c.Respond(result(b.setRenditions(m)))
		case *AddSubscriber:
			c.Respond(result(b.addSubscriber(m)))
		case *RemoveSubscriber:
			c.Respond(result(b.removeSubscriber(m)))
		case *AddEmbedDomain:
			c.Respond(result(b.addEmbedDomain(m)))
		case *RemoveEmbedDomain:
			c.Respond(result(b.removeEmbedDomain(m)))
		case *CreateTrackedLink:
			c.Respond(result(b.createTrackedLink(m)))
		case *applyBulkItem:
			c.Respond(result(b.applyBulk(m)))
		case *dueBook:
			b.due(m.due)
		}
	}
}

func (b *book) load() error {
	if b.loaded {
		return nil
	}
	rec, err := b.s.Store.GetBook(b.t, b.rid)
	switch {
	case err == nil:
		b.rec = rec
	case errors.Is(err, errs.ErrNotFound):
		b.rec = nil
	default:
		return err
	}
	b.loaded = true
	return nil
}

// write replaces the stored record by next (under the publish quota when it goes live); also,
// when not nil, stages what goes into the same commit.
func (b *book) write(next *storage.Book, also func(*storage.Batch) error) error {
	old := b.rec
	err := b.s.withPublishSlot(b.t, old.Status, next.Status, func() error {
		batch := b.s.Store.NewBatch()
		if err := batch.PutBook(old, next); err != nil {
			batch.Close()
			return err
		}
		if also != nil {
			if err := also(batch); err != nil {
				batch.Close()
				return err
			}
		}
		return batch.Commit()
	})
	if err != nil {
		return err
	}
	b.rec = next
	b.s.scheduleTransition(next)
	return nil
}

func (b *book) update(p *BookPatch) (*storage.Book, error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	next := cloneBook(b.rec)
	now := b.s.now()
	if err := p.apply(next, now); err != nil {
		return nil, err
	}
	next.UpdatedAt = now
	next.BumpSettingsRevision()
	if err := b.write(next, nil); err != nil {
		return nil, err
	}
	return next, nil
}

func (b *book) delete() (*storage.Book, error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	batch := b.s.Store.NewBatch()
	if err := batch.DeleteBook(b.rec); err != nil {
		batch.Close()
		return nil, err
	}
	if err := batch.Commit(); err != nil {
		return nil, err
	}
	gone := b.rec
	b.rec = nil
	if err := b.s.Store.Blobs.DeleteBook(b.rid); err != nil {
		b.s.opts.Logger.Error("delete book files", "book", b.rid, "err", err)
	}
	return gone, nil
}

func (b *book) setPages(m *SetPages) (*storage.Book, error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	next := cloneBook(b.rec)
	next.UpdatedAt = b.s.now()
	if m.Failed != "" {
		next.PageImagesStatus, next.PageImagesError = storage.PagesFailed, m.Failed
	} else {
		next.PageImagesStatus, next.PageImagesError = storage.PagesReady, ""
		next.Pages, next.PageCount = m.Pages, len(m.Pages)
		next.Thumbnail, next.Document = m.Thumbnail, m.Document
	}
	batch := b.s.Store.NewBatch()
	if err := batch.PutBook(b.rec, next); err != nil {
		batch.Close()
		return nil, err
	}
	if m.Failed == "" {
		if err := batch.PutPages(b.t, b.rid, m.Pages); err != nil {
			batch.Close()
			return nil, err
		}
		if err := batch.PutPageTexts(b.t, b.rid, m.Texts); err != nil {
			batch.Close()
			return nil, err
		}
		if err := batch.PutOutline(b.t, b.rid, m.Outline); err != nil {
			batch.Close()
			return nil, err
		}
	}
	if err := batch.Commit(); err != nil {
		return nil, err
	}
	b.rec = next
	return next, nil
}

func (b *book) due(d storage.Due) {
	if b.rec == nil {
		if err := b.s.Store.DropDue(d); err != nil {
			b.s.opts.Logger.Error("drop due entry", "book", b.rid, "err", err)
		}
		return
	}
	next := cloneBook(b.rec)
	now := b.s.now()
	if !transition(next, now) {
		if at, ok := storage.NextTransition(b.rec); !ok || !at.Equal(d.At) {
			_ = b.s.Store.DropDue(d) // stale entry
		}
		return
	}
	next.UpdatedAt = now
	if err := b.write(next, nil); err != nil {
		b.s.opts.Logger.Error("timed transition", "book", b.rid, "err", err)
	}
}

func cloneBook(b *storage.Book) *storage.Book {
	c := *b
	c.Pages = append([]storage.Page(nil), b.Pages...)
	c.Memo = nil // a rendering of the old version must not follow the copy
	return &c
}
