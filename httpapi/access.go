package httpapi

import (
	"errors"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"flipbook/actors"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

// Access lists (spec §4.2), embed allowlists (§4.3) and tracked links (§4.9).

func subJSON(s *storage.Subscriber) api.Subscriber {
	return api.Subscriber{ID: s.ID, BookID: s.BookID, Email: s.Email, Type: s.Type, CreatedAt: fmtTime(s.CreatedAt)}
}

// normalizeAccessEntry checks an access-list entry and returns it in its stored form: an
// address (lower case) or a domain (lower case, no "@"). Without a type, an entry holding "@"
// (after the first character: "@acme.com" is the domain acme.com) is an address, anything else
// a domain; either way a domain must be registrable (api.DomainProblem), so "not-an-email" is
// refused rather than stored as a domain.
func normalizeAccessEntry(raw, typ string) (string, string, bool) {
	e := strings.ToLower(strings.TrimSpace(raw))
	if typ == "" {
		typ = "domain"
		if i := strings.IndexByte(e, '@'); i > 0 {
			typ = "email"
		}
	}
	switch typ {
	case "email":
		a, err := mail.ParseAddress(e)
		if err != nil || a.Address != e || a.Name != "" {
			return "", "", false
		}
		at := strings.LastIndexByte(e, '@')
		host, ok := api.ASCIIHost(e[at+1:])
		if !ok || !api.RegistrableDomain(host) {
			return "", "", false
		}
		return e[:at+1] + host, typ, true
	default:
		e = strings.TrimPrefix(e, "@")
		h, ok := normalizeHost(e)
		return h, "domain", ok && api.RegistrableDomain(h)
	}
}

// normalizeHost reduces a pasted URL or host to a bare host name (lower case, internationalised
// names in ASCII form, no port, no trailing dot) and checks it is a host name or an address.
func normalizeHost(raw string) (string, bool) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", false
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" || u.User != nil {
		return "", false
	}
	h, ok := api.ASCIIHost(strings.TrimSuffix(u.Hostname(), "."))
	return h, ok && validHost(h)
}

// validHost accepts DNS names of letter-digit-hyphen labels, and IP addresses.
func validHost(h string) bool { return net.ParseIP(h) != nil || api.LDHHost(h) }

// accessService runs the operations on who reads a book and from where: access lists, embed
// domains and tracked links (spec §4.2, §4.3, §4.9), in the store, changed through the actors.
type accessService struct {
	links
	Store  *storage.Store
	Actors *actors.System
}

// bookOf is the caller's book rid (a 404 when the workspace has none such).
func (s *accessService) bookOf(r *api.Request, rid string) (*storage.Book, error) {
	return tenantBook(s.Store, r, rid)
}

func (s *accessService) ListSubscribers(r *api.Request, in *api.SubscriberList) (*api.Reply[[]api.Subscriber, api.PageMeta], error) {
	per := 25
	if in.PerPage != nil {
		per = int(*in.PerPage)
	} else if in.RowsPerPage != nil {
		per = int(*in.RowsPerPage)
	}
	page := 1
	if in.Page != nil {
		page = int(*in.Page)
	}
	filter := strings.ToLower(in.Filter)
	typ := in.Type
	keep := func(sub *storage.Subscriber) bool {
		return (typ == "" || sub.Type == typ) &&
			(filter == "" || strings.Contains(sub.Email, filter) || strings.Contains(strings.ToLower(sub.BookID), filter))
	}
	subs, total, err := s.Store.Subscribers(r.Auth.Tenant, keep, (page-1)*per, per)
	if err != nil {
		return nil, err
	}
	data := make([]api.Subscriber, len(subs))
	for i, sub := range subs {
		data[i] = subJSON(sub)
	}
	last := max(1, (total+per-1)/per)
	meta := api.PageMeta{Total: total, PerPage: per, CurrentPage: page, LastPage: last}
	if len(subs) > 0 {
		from, to := (page-1)*per+1, (page-1)*per+len(subs)
		meta.From, meta.To = &from, &to
	}
	return api.With(data, meta), nil
}

func (s *accessService) CreateSubscriber(r *api.Request, in *api.SubscriberCreate) (*api.Reply[api.Subscriber, api.CreatedMeta], error) {
	rid := in.BookID
	if _, err := s.Store.GetBook(r.Auth.Tenant, rid); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return nil, api.FieldError("book_id", "is not a flipbook of this workspace")
		}
		return nil, err
	}
	entry, typ, ok := normalizeAccessEntry(in.Email, in.Type)
	if !ok {
		msg := "must be an email address (name@example.com) or a registrable domain (example.com; not a public suffix such as co.uk, a bare name or an IP address)"
		if in.Type == "email" {
			msg = "must be a valid email address at a registrable domain, such as name@example.com"
		} else if in.Type == "domain" {
			msg = "must be a registrable domain such as example.com (not a public suffix such as co.uk, a bare name or an IP address)"
		}
		return nil, api.FieldError("email", msg)
	}
	added, err := s.Actors.AddSubscriber(r.Auth.Tenant, rid, entry, typ)
	if err != nil {
		return nil, notFoundAs(err, "book")
	}
	status := 200
	if added.Created {
		status = 201
	}
	return &api.Reply[api.Subscriber, api.CreatedMeta]{Status: status, Data: subJSON(added.Entry),
		Meta: &api.CreatedMeta{Created: added.Created}}, nil
}

func (s *accessService) DeleteSubscriber(r *api.Request, in *api.SubscriberDelete) (*api.Data[api.SubscriberDeleted], error) {
	id := in.Subscriber
	sub, err := s.Store.Subscriber(r.Auth.Tenant, id)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("subscriber")
	}
	if err != nil {
		return nil, err
	}
	if _, err := s.Actors.RemoveSubscriber(r.Auth.Tenant, sub.BookID, id); err != nil {
		return nil, notFoundAs(err, "subscriber")
	}
	return api.OK(api.SubscriberDeleted{Message: "The subscriber was removed.", ID: id}), nil
}

func embJSON(d *storage.EmbedDomain) api.EmbedDomain {
	return api.EmbedDomain{ID: strconv.FormatInt(d.ID, 10), Domain: d.Domain, IncludesSubdomains: true, CreatedAt: fmtTime(d.CreatedAt)}
}

func (s *accessService) ListEmbedDomains(r *api.Request, in *api.BookPath) (*api.Reply[[]api.EmbedDomain, api.EmbedDomainsMeta], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	list, err := s.Store.EmbedDomains(r.Auth.Tenant, b.RandomID)
	if err != nil {
		return nil, err
	}
	data := make([]api.EmbedDomain, len(list))
	for i, d := range list {
		data[i] = embJSON(d)
	}
	return api.With(data, api.EmbedDomainsMeta{Total: len(data), DomainsEnabled: len(data) > 0}), nil
}

func (s *accessService) CreateEmbedDomain(r *api.Request, in *api.EmbedDomainCreate) (*api.Reply[api.EmbedDomain, api.CreatedMeta], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	host, ok := normalizeHost(in.Domain)
	if !ok {
		return nil, api.FieldError("domain", "must be a host name such as example.com (a pasted URL is reduced to its host)")
	}
	if msg := api.DomainProblem(host); msg != "" {
		return nil, api.FieldError("domain", msg+"; it also allows its subdomains")
	}
	added, err := s.Actors.AddEmbedDomain(r.Auth.Tenant, b.RandomID, host)
	if err != nil {
		return nil, notFoundAs(err, "book")
	}
	return api.With(embJSON(added.Entry), api.CreatedMeta{Created: added.Created}), nil
}

func (s *accessService) DeleteEmbedDomain(r *api.Request, in *api.EmbedDomainDelete) (*api.Data[api.EmbedDomainDeleted], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	d, err := s.Actors.RemoveEmbedDomain(r.Auth.Tenant, b.RandomID, in.EmbedDomain)
	if err != nil {
		return nil, notFoundAs(err, "embed domain")
	}
	return api.OK(api.EmbedDomainDeleted{Message: "The embed domain was removed.", ID: strconv.FormatInt(d.ID, 10)}), nil
}

func (s *accessService) tlJSON(l *storage.TrackedLink) api.TrackedLink {
	return api.TrackedLink{ID: l.ID, BookID: l.BookID, Name: l.Name, Slug: l.Slug, Channel: l.Channel, Kind: l.Kind,
		Metadata: l.Metadata, URL: s.publicURL + "/l/" + l.Slug, CreatedAt: fmtTime(l.CreatedAt)}
}

func (s *accessService) ListTrackedLinks(r *api.Request, in *api.BookPath) (*api.Reply[[]api.TrackedLink, api.TrackedLinksMeta], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	list, err := s.Store.TrackedLinks(r.Auth.Tenant, b.RandomID)
	if err != nil {
		return nil, err
	}
	data := make([]api.TrackedLink, len(list))
	for i, l := range list {
		data[i] = s.tlJSON(l)
	}
	return api.With(data, api.TrackedLinksMeta{Total: len(data)}), nil
}

// validSlug accepts URL-safe slugs: letters, digits, "-", "_", ".".
func validSlug(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != "" && s[0] != '.'
}

func (s *accessService) CreateTrackedLink(r *api.Request, in *api.TrackedLinkCreate) (*api.Data[api.TrackedLink], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	l := &storage.TrackedLink{BookID: b.RandomID, Name: in.Name, Slug: in.Slug, Kind: in.Kind, Metadata: in.Metadata}
	if l.Slug != "" && !validSlug(l.Slug) {
		return nil, api.FieldError("slug", "may contain only letters, digits, '-', '_' and '.'")
	}
	if l.Kind == "" {
		l.Kind = "manual"
	}
	if in.Channel != "" {
		l.Channel = &in.Channel
	}
	created, err := s.Actors.CreateTrackedLink(r.Auth.Tenant, l)
	if err != nil {
		return nil, notFoundAs(err, "book")
	}
	return &api.Data[api.TrackedLink]{Status: 201, Data: s.tlJSON(created)}, nil
}

// followTrackedLink is the public GET /l/{slug}: a redirect to the book's viewer with the link
// attributed.
func (s *Service) followTrackedLink(ctx *fasthttp.RequestCtx) {
	slug, _ := ctx.UserValue("slug").(string)
	l, err := s.Store.TrackedLinkBySlug(slug)
	if err != nil {
		s.writeError(ctx, api.ErrNotFound("link"))
		return
	}
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Redirect(s.previewURL(l.BookID)+"?tl="+url.QueryEscape(l.Slug), fasthttp.StatusFound)
}

// notFoundAs names what was not found in an actor's ErrNotFound.
func notFoundAs(err error, what string) error {
	if errors.Is(err, errs.ErrNotFound) {
		return api.ErrNotFound(what)
	}
	return err
}
