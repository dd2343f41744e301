package actors

import (
	"errors"
	"strings"

	"flipbook/errs"
	"flipbook/storage"
)

// Messages for a book's access lists and embed allowlist (owned by the book actor, which keeps
// the derived eod_enabled and domains_enabled in the same commit).
type (
	// AddSubscriber → *Added[storage.Subscriber] (an existing entry is returned, not stored twice)
	AddSubscriber struct {
		RandomID string
		Email    string // normalised by the caller
		Type     string
	}
	// RemoveSubscriber → *storage.Subscriber
	RemoveSubscriber struct {
		RandomID string
		ID       int64
	}
	// AddEmbedDomain → *Added[storage.EmbedDomain]
	AddEmbedDomain struct {
		RandomID string
		Domain   string // a normalised host
	}
	// RemoveEmbedDomain → *storage.EmbedDomain
	RemoveEmbedDomain struct {
		RandomID string
		ID       int64
	}
	// CreateTrackedLink → *storage.TrackedLink (the book's actor); Slug "" generates one.
	CreateTrackedLink struct {
		Link *storage.TrackedLink
	}
)

// Added is the outcome of an add: the entry and whether it was new.
type Added[T any] struct {
	Entry   *T
	Created bool
}

func (b *book) addSubscriber(m *AddSubscriber) (*Added[storage.Subscriber], error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	if sub, err := b.s.Store.BookSubscriber(b.t, b.rid, m.Email); err == nil {
		return &Added[storage.Subscriber]{Entry: sub}, nil
	} else if !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	id, err := b.s.Store.NextIDFor(b.t.Workspace, "subscriber")
	if err != nil {
		return nil, err
	}
	sub := &storage.Subscriber{ID: id, BookID: b.rid, Email: m.Email, Type: m.Type, CreatedAt: b.s.now()}
	batch := b.s.Store.NewBatch()
	if err := batch.PutSubscriber(b.t, sub); err != nil {
		batch.Close()
		return nil, err
	}
	if err := b.writeFlags(batch, true, b.rec.Settings.DomainsEnabled); err != nil {
		return nil, err
	}
	return &Added[storage.Subscriber]{Entry: sub, Created: true}, nil
}

func (b *book) removeSubscriber(m *RemoveSubscriber) (*storage.Subscriber, error) {
	sub, err := b.s.Store.Subscriber(b.t, m.ID)
	if errors.Is(err, errs.ErrNotFound) || (err == nil && sub.BookID != b.rid) {
		return nil, errs.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	n, err := b.s.Store.BookSubscriberCount(b.t, b.rid, 2)
	if err != nil {
		return nil, err
	}
	batch := b.s.Store.NewBatch()
	batch.DeleteSubscriber(b.t, sub)
	if b.rec == nil { // the book is gone: only the entry
		return sub, batch.Commit()
	}
	if err := b.writeFlags(batch, n > 1, b.rec.Settings.DomainsEnabled); err != nil {
		return nil, err
	}
	return sub, nil
}

func (b *book) addEmbedDomain(m *AddEmbedDomain) (*Added[storage.EmbedDomain], error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	if d, err := b.s.Store.EmbedDomainByHost(b.t, b.rid, m.Domain); err == nil {
		return &Added[storage.EmbedDomain]{Entry: d}, nil
	} else if !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	id, err := b.s.Store.NextIDFor(b.t.Workspace, "embed_domain")
	if err != nil {
		return nil, err
	}
	d := &storage.EmbedDomain{ID: id, BookID: b.rid, Domain: m.Domain, CreatedAt: b.s.now()}
	batch := b.s.Store.NewBatch()
	if err := batch.PutEmbedDomain(b.t, d); err != nil {
		batch.Close()
		return nil, err
	}
	if err := b.writeFlags(batch, b.rec.Settings.EODEnabled, true); err != nil {
		return nil, err
	}
	return &Added[storage.EmbedDomain]{Entry: d, Created: true}, nil
}

func (b *book) removeEmbedDomain(m *RemoveEmbedDomain) (*storage.EmbedDomain, error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	d, err := b.s.Store.EmbedDomain(b.t, b.rid, m.ID)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, errs.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	all, err := b.s.Store.EmbedDomains(b.t, b.rid)
	if err != nil {
		return nil, err
	}
	batch := b.s.Store.NewBatch()
	batch.DeleteEmbedDomain(b.t, d)
	if err := b.writeFlags(batch, b.rec.Settings.EODEnabled, len(all) > 1); err != nil {
		return nil, err
	}
	return d, nil
}

// writeFlags commits batch together with the book's derived flags (rewriting the record only
// when they change).
func (b *book) writeFlags(batch *storage.Batch, eod, domains bool) error {
	if b.rec.Settings.EODEnabled == eod && b.rec.Settings.DomainsEnabled == domains {
		return batch.Commit()
	}
	next := cloneBook(b.rec)
	next.Settings.EODEnabled, next.Settings.DomainsEnabled = eod, domains
	next.UpdatedAt = b.s.now()
	if err := batch.PutBook(b.rec, next); err != nil {
		batch.Close()
		return err
	}
	if err := batch.Commit(); err != nil {
		return err
	}
	b.rec = next
	return nil
}

// slugLen is the length of generated tracked-link slugs.
const slugLen = 10

// createTrackedLink runs in the book's actor, in order with its delete: run in the workspace
// actor, a link committed while the book's delete listed its links outlived the book, its
// /l/{slug} still redirecting and its slug taken (found by a review).
func (b *book) createTrackedLink(m *CreateTrackedLink) (*storage.TrackedLink, error) {
	if b.rec == nil {
		return nil, errs.ErrNotFound
	}
	l := m.Link
	// Slugs are global (the public /l/{slug} route resolves them), so claims of all workspaces
	// go through one lock.
	b.s.slugMu.Lock()
	defer b.s.slugMu.Unlock()
	l.Slug = strings.ToLower(l.Slug) // slugs are case-insensitive (storage/slugcase.go)
	if l.Slug == "" {
		for {
			l.Slug = strings.ToLower(RandomString(slugLen))
			taken, err := b.s.Store.SlugTaken(l.Slug)
			if err != nil {
				return nil, err
			}
			if !taken {
				break
			}
		}
	} else if taken, err := b.s.Store.SlugTaken(l.Slug); err != nil {
		return nil, err
	} else if taken {
		return nil, errs.Invalid("slug", "is already taken")
	}
	id, err := b.s.Store.NextIDFor(b.t.Workspace, "tracked_link")
	if err != nil {
		return nil, err
	}
	l.ID, l.Workspace, l.Mode, l.CreatedAt = id, b.t.Workspace, b.t.Mode, b.s.now()
	batch := b.s.Store.NewBatch()
	if err := batch.PutTrackedLink(l); err != nil {
		batch.Close()
		return nil, err
	}
	return l, batch.Commit()
}

// Access-list operations, called by the API layers.

func (s *System) AddSubscriber(t storage.Tenant, rid, email, typ string) (*Added[storage.Subscriber], error) {
	return askT[*Added[storage.Subscriber]](s, s.workspace(t), &AddSubscriber{RandomID: rid, Email: email, Type: typ})
}

func (s *System) RemoveSubscriber(t storage.Tenant, rid string, id int64) (*storage.Subscriber, error) {
	return askT[*storage.Subscriber](s, s.workspace(t), &RemoveSubscriber{RandomID: rid, ID: id})
}

func (s *System) AddEmbedDomain(t storage.Tenant, rid, domain string) (*Added[storage.EmbedDomain], error) {
	return askT[*Added[storage.EmbedDomain]](s, s.workspace(t), &AddEmbedDomain{RandomID: rid, Domain: domain})
}

func (s *System) RemoveEmbedDomain(t storage.Tenant, rid string, id int64) (*storage.EmbedDomain, error) {
	return askT[*storage.EmbedDomain](s, s.workspace(t), &RemoveEmbedDomain{RandomID: rid, ID: id})
}

func (s *System) CreateTrackedLink(t storage.Tenant, l *storage.TrackedLink) (*storage.TrackedLink, error) {
	return askT[*storage.TrackedLink](s, s.workspace(t), &CreateTrackedLink{Link: l})
}
