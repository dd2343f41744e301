package actors

import (
	"errors"
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/errs"
	"flipbook/storage"
)

// Messages of a workspace actor.
type (
	// CreateBook → *storage.Book. Book carries the new record (random id, pages, settings); the
	// actor assigns id and timestamps and enforces the plan's published-book limit.
	CreateBook struct{ Book *storage.Book }
	// UpdateBook → *storage.Book
	UpdateBook struct {
		RandomID string
		Patch    *BookPatch
	}
	// DeleteBook → *storage.Book (the deleted record)
	DeleteBook struct{ RandomID string }
	// CreateUpload → *storage.Upload. Books carries one new record per file of the batch
	// (page_images_status processing); books, batch and queue entry are written in one commit.
	CreateUpload struct {
		Upload *storage.Upload
		Books  []*storage.Book
	}
	// SetPages → *storage.Book: the result of a conversion (pages ready, or failed with a reason).
	SetPages struct {
		RandomID  string
		Pages     []storage.Page
		Thumbnail string
		Document  string
		// Texts are the pages' texts (issue 28), stored with the pages; nil when the source
		// has none (photos, editor pages).
		Texts []storage.PageText
		// Outline is the document's bookmarks (issue 29), stored with the pages.
		Outline []storage.OutlineItem
		Failed  string // reason; "" when the pages are ready
	}
)

// bookMsg is a message routed to a book actor.
type bookMsg interface{ bookID() string }

func (m *UpdateBook) bookID() string        { return m.RandomID }
func (m *DeleteBook) bookID() string        { return m.RandomID }
func (m *SetPages) bookID() string          { return m.RandomID }
func (m *AddSubscriber) bookID() string     { return m.RandomID }
func (m *RemoveSubscriber) bookID() string  { return m.RandomID }
func (m *AddEmbedDomain) bookID() string    { return m.RandomID }
func (m *RemoveEmbedDomain) bookID() string { return m.RandomID }
func (m *dueBook) bookID() string           { return m.due.RandomID }
func (m *CreateTrackedLink) bookID() string { return m.Link.BookID }

// dueBook tells a book that a timed transition may have come.
type dueBook struct{ due storage.Due }

// routed wraps a message forwarded by the workspace to a book actor, so the book can count them.
type routed struct{ msg bookMsg }

// bookIdle asks the parent to stop a book actor that has handled processed routed messages.
type bookIdle struct {
	rid       string
	pid       *actor.PID
	processed uint64
}

type child struct {
	pid  *actor.PID
	sent uint64
}

// workspace is the actor of one tenant: it creates books and routes book messages to the book
// actors, spawning them on demand and stopping idle ones (see route and bookIdle).
type workspace struct {
	s        *System
	t        storage.Tenant
	children map[string]*child
}

func newWorkspace(s *System, t storage.Tenant) actor.Producer {
	return func() actor.Receiver { return &workspace{s: s, t: t, children: map[string]*child{}} }
}

func (w *workspace) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started, actor.Stopped, actor.Initialized:
	case *CreateBook:
		c.Respond(result(w.createBook(m.Book)))
	case *CreateUpload:
		c.Respond(result(w.createUpload(m)))
	case *ViewerFor:
		c.Respond(result(w.viewerFor(m.Email)))
	case *SaveBrand:
		c.Respond(result(w.saveBrand(m)))
	case *ToggleTakeOver:
		c.Respond(result(w.toggleTakeOver(m)))
	case *CreateWebhook:
		c.Respond(result(w.createWebhook(m)))
	case *UpdateWebhook:
		c.Respond(result(w.updateWebhook(m)))
	case *DeleteWebhook:
		c.Respond(result(w.deleteWebhook(m)))
	case *deactivateWebhook:
		w.deactivateWebhook(m)
	case *CreateCatalog:
		c.Respond(result(w.createCatalog(m)))
	case *QueueSync:
		c.Respond(result(w.queueSync(m)))
	case *ArchiveCatalog:
		c.Respond(result(w.archiveCatalog(m)))
	case bookMsg:
		w.route(c, m)
	case *bookIdle:
		// Stop the child only if it has handled everything sent to it: then no message is in
		// flight and the next one spawns a fresh actor, never two actors for one book at once.
		if ch, ok := w.children[m.rid]; ok && ch.pid.Equals(m.pid) && ch.sent == m.processed {
			delete(w.children, m.rid)
			c.Engine().Poison(ch.pid)
		}
	}
}

func (w *workspace) route(c *actor.Context, m bookMsg) {
	rid := m.bookID()
	ch, ok := w.children[rid]
	if !ok {
		ch = &child{pid: c.SpawnChild(newBook(w.s, w.t, rid), "book",
			actor.WithID(rid+"-"+RandomString(6)), actor.WithInboxSize(defaultInboxSize),
			w.s.middleware("book"))}
		w.children[rid] = ch
	}
	ch.sent++
	w.s.tellFrom(ch.pid, &routed{msg: m}, c.Sender())
}

func (w *workspace) createBook(b *storage.Book) (*storage.Book, error) {
	st := w.s.Store
	if err := w.prepareBook(b, w.s.now()); err != nil {
		return nil, err
	}
	err := w.s.withPublishSlot(w.t, "", b.Status, func() error {
		batch := st.NewBatch()
		if err := batch.PutBook(nil, b); err != nil {
			batch.Close()
			return err
		}
		if err := batch.PutPages(w.t, b.RandomID, b.Pages); err != nil {
			batch.Close()
			return err
		}
		if len(b.Texts) > 0 {
			if err := batch.PutPageTexts(w.t, b.RandomID, b.Texts); err != nil {
				batch.Close()
				return err
			}
		}
		return batch.Commit()
	})
	if err != nil {
		return nil, err
	}
	w.s.scheduleTransition(b)
	if len(b.Pages) > 0 {
		if len(b.Texts) == 0 {
			w.s.WantText(w.t, b.RandomID) // a book of images: its text is read by OCR
		}
		w.s.WantRenditions(w.t, b.RandomID)
	}
	return b, nil
}

// prepareBook assigns a new book's id and timestamps and applies its requested status.
func (w *workspace) prepareBook(b *storage.Book, now time.Time) error {
	if exists, err := w.s.Store.BookExists(b.RandomID); err != nil {
		return err
	} else if exists {
		return errs.ErrConflict
	}
	id, err := w.s.Store.NextIDFor(w.t.Workspace, "book")
	if err != nil {
		return err
	}
	b.ID, b.Workspace, b.Mode = id, w.t.Workspace, w.t.Mode
	b.CreatedAt, b.UpdatedAt = now, now
	status := b.Status
	b.Status = storage.StatusDraft
	return setStatus(b, status, now)
}

func (w *workspace) createUpload(m *CreateUpload) (*storage.Upload, error) {
	now := w.s.now()
	live := ""
	for _, b := range m.Books {
		if err := w.prepareBook(b, now); err != nil {
			return nil, err
		}
		if isLive(b.Status) {
			live = b.Status
		}
	}
	seq, err := w.s.Store.NextIDFor(w.t.Workspace, "convq")
	if err != nil {
		return nil, err
	}
	u := m.Upload
	u.Workspace, u.Mode, u.Seq, u.Status, u.CreatedAt = w.t.Workspace, w.t.Mode, uint64(seq), storage.BatchQueued, now
	err = w.s.withPublishSlotN(w.t, live, len(m.Books), func() error {
		batch := w.s.Store.NewBatch()
		for _, b := range m.Books {
			if err := batch.PutBook(nil, b); err != nil {
				batch.Close()
				return err
			}
			if err := batch.PutPages(w.t, b.RandomID, nil); err != nil {
				batch.Close()
				return err
			}
		}
		if err := batch.PutUpload(u); err != nil {
			batch.Close()
			return err
		}
		return batch.Commit()
	})
	if err != nil {
		return nil, err
	}
	for _, b := range m.Books {
		w.s.scheduleTransition(b)
	}
	w.s.tell(w.s.conversion, &batchQueued{ref: storage.QueueRef{Seq: u.Seq, Tenant: w.t, ID: u.ID}})
	return u, nil
}

// Book operations, called by the API layers.

func (s *System) CreateBook(t storage.Tenant, b *storage.Book) (*storage.Book, error) {
	return askT[*storage.Book](s, s.workspace(t), &CreateBook{Book: b})
}

func (s *System) UpdateBook(t storage.Tenant, rid string, p *BookPatch) (*storage.Book, error) {
	return askT[*storage.Book](s, s.workspace(t), &UpdateBook{RandomID: rid, Patch: p})
}

func (s *System) DeleteBook(t storage.Tenant, rid string) (*storage.Book, error) {
	return askT[*storage.Book](s, s.workspace(t), &DeleteBook{RandomID: rid})
}

// CreateUpload creates the books of an upload batch and queues the batch for conversion.
func (s *System) CreateUpload(t storage.Tenant, u *storage.Upload, books []*storage.Book) (*storage.Upload, error) {
	return askT[*storage.Upload](s, s.workspace(t), &CreateUpload{Upload: u, Books: books})
}

// SetPages records a conversion's result on a book.
func (s *System) SetPages(t storage.Tenant, m *SetPages) (*storage.Book, error) {
	return askT[*storage.Book](s, s.workspace(t), m)
}

func notFound(err error) error {
	if errors.Is(err, errs.ErrNotFound) {
		return errs.ErrNotFound
	}
	return err
}
