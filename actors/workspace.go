package actors

import (
	"errors"

	"github.com/anthdm/hollywood/actor"

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
)

// bookMsg is a message routed to a book actor.
type bookMsg interface{ bookID() string }

func (m *UpdateBook) bookID() string { return m.RandomID }
func (m *DeleteBook) bookID() string { return m.RandomID }
func (m *dueBook) bookID() string    { return m.due.RandomID }

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
			actor.WithMiddleware(w.s.recoverMW))}
		w.children[rid] = ch
	}
	ch.sent++
	c.Engine().SendWithSender(ch.pid, &routed{msg: m}, c.Sender())
}

func (w *workspace) createBook(b *storage.Book) (*storage.Book, error) {
	st := w.s.Store
	if exists, err := st.BookExists(b.RandomID); err != nil {
		return nil, err
	} else if exists {
		return nil, ErrConflict
	}
	id, err := st.NextID("book")
	if err != nil {
		return nil, err
	}
	now := w.s.now()
	b.ID, b.Workspace, b.Mode = id, w.t.Workspace, w.t.Mode
	b.CreatedAt, b.UpdatedAt = now, now
	status := b.Status
	b.Status = storage.StatusDraft
	if err := setStatus(b, status, now); err != nil {
		return nil, err
	}
	err = w.s.withPublishSlot(w.t, "", b.Status, func() error {
		batch := st.NewBatch()
		if err := batch.PutBook(nil, b); err != nil {
			batch.Close()
			return err
		}
		if err := batch.PutPages(w.t, b.RandomID, b.Pages); err != nil {
			batch.Close()
			return err
		}
		return batch.Commit()
	})
	if err != nil {
		return nil, err
	}
	w.s.scheduleTransition(b)
	return b, nil
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

func notFound(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return ErrNotFound
	}
	return err
}
