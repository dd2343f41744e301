package storage

import (
	"errors"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// Subscriber is an access-list entry of a book: an address or a domain (spec §2.2).
type Subscriber struct {
	ID        int64     `json:"id"`
	BookID    string    `json:"book_id"`
	Email     string    `json:"email"` // normalised: lower case; a domain without "@"
	Type      string    `json:"type"`  // email or domain
	CreatedAt time.Time `json:"created_at"`
}

// EmbedDomain is a site allowed to embed a book (spec §2.3); subdomains are included.
type EmbedDomain struct {
	ID        int64     `json:"id"`
	BookID    string    `json:"book_id"`
	Domain    string    `json:"domain"`
	CreatedAt time.Time `json:"created_at"`
}

// TrackedLink is a shareable link to a book that attributes its readers (spec §4.9).
type TrackedLink struct {
	ID        int64          `json:"id"`
	Workspace int64          `json:"workspace_id"`
	Mode      Mode           `json:"mode"`
	BookID    string         `json:"book_id"`
	Name      string         `json:"name"`
	Slug      string         `json:"slug"`
	Channel   *string        `json:"channel"`
	Kind      string         `json:"kind"`
	Metadata  map[string]any `json:"metadata"`
	CreatedAt time.Time      `json:"created_at"`
}

// Tenant of the link.
func (l *TrackedLink) Tenant() Tenant { return Tenant{Workspace: l.Workspace, Mode: l.Mode} }

// Keys (see keys.go):
//
//	t/<tenant>/sub/<id>                 Subscriber
//	t/<tenant>/bsub/<rid>/<email>       subscriber id of a book's entry (duplicates, the gate)
//	t/<tenant>/emb/<rid>/<id>           EmbedDomain
//	t/<tenant>/embh/<rid>/<domain>      embed domain id by host (duplicates)
//	t/<tenant>/tl/<rid>/<id>            TrackedLink
//	g/tlslug/<slug>                     tenant + book + id of a tracked link (public /l/{slug})

func subKey(t Tenant, id int64) []byte { return cat(t.prefix(), []byte("sub/"), u64(uint64(id))) }
func bookSubKey(t Tenant, rid, email string) []byte {
	return cat(t.prefix(), []byte("bsub/"+rid+"/"+email))
}
func embKey(t Tenant, rid string, id int64) []byte {
	return cat(t.prefix(), []byte("emb/"+rid+"/"), u64(uint64(id)))
}
func embHostKey(t Tenant, rid, host string) []byte {
	return cat(t.prefix(), []byte("embh/"+rid+"/"+host))
}
func tlKey(t Tenant, rid string, id int64) []byte {
	return cat(t.prefix(), []byte("tl/"+rid+"/"), u64(uint64(id)))
}
func tlSlugKey(slug string) []byte { return []byte("g/tlslug/" + slug) }

// PutSubscriber stages an access-list entry.
func (bt *Batch) PutSubscriber(t Tenant, s *Subscriber) error {
	bt.set(bookSubKey(t, s.BookID, s.Email), u64(uint64(s.ID)))
	return bt.setJSON(subKey(t, s.ID), s)
}

// DeleteSubscriber stages the removal of an access-list entry.
func (bt *Batch) DeleteSubscriber(t Tenant, s *Subscriber) {
	bt.del(bookSubKey(t, s.BookID, s.Email))
	bt.del(subKey(t, s.ID))
}

// Subscriber reads an access-list entry by id.
func (s *Store) Subscriber(t Tenant, id int64) (*Subscriber, error) {
	var out Subscriber
	if err := s.getJSON(subKey(t, id), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// BookSubscriber finds a book's entry for an address or domain (normalised).
func (s *Store) BookSubscriber(t Tenant, rid, email string) (*Subscriber, error) {
	v, err := s.get(bookSubKey(t, rid, email))
	if err != nil {
		return nil, err
	}
	return s.Subscriber(t, int64(beUint64(v)))
}

// BookSubscriberCount counts a book's access-list entries, stopping at max (0 = all).
func (s *Store) BookSubscriberCount(t Tenant, rid string, max int) (int, error) {
	return s.countPrefix(cat(t.prefix(), []byte("bsub/"+rid+"/")), max)
}

// Subscribers lists a tenant's access-list entries in id order for which keep returns true,
// skipping the first offset matches and returning at most limit, with the total of matches.
func (s *Store) Subscribers(t Tenant, keep func(*Subscriber) bool, offset, limit int) ([]*Subscriber, int, error) {
	p := cat(t.prefix(), []byte("sub/"))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, 0, err
	}
	defer it.Close()
	var out []*Subscriber
	total := 0
	for it.First(); it.Valid(); it.Next() {
		var sub Subscriber
		if err := codec.Unmarshal(it.Value(), &sub); err != nil {
			return nil, 0, err
		}
		if !keep(&sub) {
			continue
		}
		if total >= offset && len(out) < limit {
			out = append(out, &sub)
		}
		total++
	}
	return out, total, it.Error()
}

// PutEmbedDomain stages an embed allowlist entry.
func (bt *Batch) PutEmbedDomain(t Tenant, d *EmbedDomain) error {
	bt.set(embHostKey(t, d.BookID, d.Domain), u64(uint64(d.ID)))
	return bt.setJSON(embKey(t, d.BookID, d.ID), d)
}

// DeleteEmbedDomain stages the removal of an embed allowlist entry.
func (bt *Batch) DeleteEmbedDomain(t Tenant, d *EmbedDomain) {
	bt.del(embHostKey(t, d.BookID, d.Domain))
	bt.del(embKey(t, d.BookID, d.ID))
}

// EmbedDomains lists a book's embed allowlist in creation order.
func (s *Store) EmbedDomains(t Tenant, rid string) ([]*EmbedDomain, error) {
	return listJSON[EmbedDomain](s, cat(t.prefix(), []byte("emb/"+rid+"/")), false)
}

// EmbedDomain reads one entry of a book's embed allowlist.
func (s *Store) EmbedDomain(t Tenant, rid string, id int64) (*EmbedDomain, error) {
	var d EmbedDomain
	if err := s.getJSON(embKey(t, rid, id), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// EmbedDomainByHost finds a book's entry for a host.
func (s *Store) EmbedDomainByHost(t Tenant, rid, host string) (*EmbedDomain, error) {
	v, err := s.get(embHostKey(t, rid, host))
	if err != nil {
		return nil, err
	}
	return s.EmbedDomain(t, rid, int64(beUint64(v)))
}

// PutTrackedLink stages a tracked link and its global slug entry.
func (bt *Batch) PutTrackedLink(l *TrackedLink) error {
	t := l.Tenant()
	bt.set(tlSlugKey(l.Slug), cat(t.bytes(), u64(uint64(l.ID)), []byte(l.BookID)))
	return bt.setJSON(tlKey(t, l.BookID, l.ID), l)
}

// SlugTaken reports whether a tracked-link slug (in lower case) is in use anywhere.
func (s *Store) SlugTaken(slug string) (bool, error) { return s.has(tlSlugKey(slug)) }

// TrackedLinkTenant is the tenant of a tracked link's slug, from the global slug entry alone
// (cluster mode: any node knows it; the link itself is its workspace's partition state).
func (s *Store) TrackedLinkTenant(slug string) (Tenant, error) {
	t, _, err := s.trackedLinkSlug(slug)
	return t, err
}

// trackedLinkSlug reads a slug's global entry (case-insensitively, as TrackedLinkBySlug).
func (s *Store) trackedLinkSlug(slug string) (Tenant, []byte, error) {
	v, err := s.get(tlSlugKey(slug))
	if errors.Is(err, errs.ErrNotFound) {
		if lower := strings.ToLower(slug); lower != slug {
			v, err = s.get(tlSlugKey(lower))
		}
	}
	if err != nil {
		return Tenant{}, nil, err
	}
	if len(v) < tenantLen+8 {
		return Tenant{}, nil, errs.ErrNotFound
	}
	t, ok := tenantFromBytes(v[:tenantLen])
	if !ok {
		return Tenant{}, nil, errs.ErrNotFound
	}
	return t, v, nil
}

// TrackedLinkBySlug resolves a public tracked-link slug, case-insensitively: the slug as given
// (a pre-existing slug with capitals that shares its lower-case form, slugcase.go), else in
// lower case.
func (s *Store) TrackedLinkBySlug(slug string) (*TrackedLink, error) {
	t, v, err := s.trackedLinkSlug(slug)
	if err != nil {
		return nil, err
	}
	var l TrackedLink
	if err := s.getJSON(tlKey(t, string(v[tenantLen+8:]), int64(beUint64(v[tenantLen:tenantLen+8]))), &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// TrackedLinks lists a book's tracked links in creation order.
func (s *Store) TrackedLinks(t Tenant, rid string) ([]*TrackedLink, error) {
	return listJSON[TrackedLink](s, cat(t.prefix(), []byte("tl/"+rid+"/")), false)
}

// deleteBookAccess stages the removal of a book's access lists and tracked links.
func (s *Store) deleteBookAccess(bt *Batch, t Tenant, rid string) error {
	subs := cat(t.prefix(), []byte("bsub/"+rid+"/"))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: subs, UpperBound: prefixEnd(subs)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		bt.del(subKey(t, int64(beUint64(it.Value()))))
	}
	it.Close()
	links, err := s.TrackedLinks(t, rid)
	if err != nil {
		return err
	}
	for _, l := range links {
		bt.del(tlSlugKey(l.Slug))
	}
	for _, p := range [][]byte{subs, cat(t.prefix(), []byte("emb/"+rid+"/")),
		cat(t.prefix(), []byte("embh/"+rid+"/")), cat(t.prefix(), []byte("tl/"+rid+"/"))} {
		_ = bt.b.DeleteRange(p, prefixEnd(p), nil)
	}
	return nil
}

func (s *Store) countPrefix(p []byte, max int) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
		if max > 0 && n >= max {
			break
		}
	}
	return n, it.Error()
}
