package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

// Readers: who may see a published book (the email gate) and the token that identifies a reader
// who passed it.

// ReaderTokenTTL is how long a reader token (the email gate's pass) is valid.
const ReaderTokenTTL = 30 * 24 * time.Hour

// BillingGrace is how long a book stays readable after billing_expires_at before the viewer shows
// an "expired" notice (the book stays published).
const BillingGrace = 7 * 24 * time.Hour

type readerClaims struct {
	Workspace int64  `json:"w"`
	Mode      byte   `json:"m"`
	Book      string `json:"b"`
	Viewer    int64  `json:"v"`
	Email     string `json:"e"`
	Expires   int64  `json:"x"`
}

type readerTokens struct{ key []byte }

func (rt *readerTokens) sign(c readerClaims) string {
	payload, _ := json.Marshal(c)
	m := hmac.New(sha256.New, rt.key)
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// verify checks a token for a book at now.
func (rt *readerTokens) verify(tok string, b *storage.Book, now time.Time) (*readerClaims, bool) {
	p, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return nil, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	m := hmac.New(sha256.New, rt.key)
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)[:18]) {
		return nil, false
	}
	var c readerClaims
	if json.Unmarshal(payload, &c) != nil || c.Book != b.RandomID || c.Workspace != b.Workspace ||
		c.Mode != byte(b.Mode) || now.Unix() > c.Expires {
		return nil, false
	}
	return &c, true
}

// verifyReader checks a reader token for a book at now: signed by this service, for this book,
// not expired and, while the book is gated, for an address the access list still covers (a
// removed subscriber's token stops working at once).
func (s *Service) verifyReader(tok string, b *storage.Book, now time.Time) (*readerClaims, bool, error) {
	c, ok := s.readers.verify(tok, b, now)
	if !ok {
		return nil, false, nil
	}
	if b.Settings.EODEnabled {
		allowed, _, err := s.accessMatch(b, c.Email)
		if err != nil || !allowed {
			return nil, false, err
		}
	}
	return c, true, nil
}

// readerToken is the reader token a public request carries: the X-Reader-Token header, or the
// token query parameter (for links and images, which cannot send headers).
func readerToken(ctx *fasthttp.RequestCtx) string {
	if tok := ctx.Request.Header.Peek("X-Reader-Token"); len(tok) > 0 {
		return string(tok)
	}
	return string(ctx.QueryArgs().Peek("token"))
}

// errBookGone is the public 404 for books that are not shown (unknown, draft, scheduled,
// expired, deleted): one answer for all, so nothing is learned about unpublished books.
var errBookGone = &api.Error{Status: 404, Type: api.TypeNotFound, Message: "this flipbook is not available"}

// publicBook resolves a book for public routes: only published books whose expires_at has not
// passed are shown.
func (s *Service) publicBook(rid string, now time.Time) (*storage.Book, error) {
	b, err := s.bookAnyStatus(rid)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, errBookGone
	}
	if err != nil {
		return nil, err
	}
	if !shownPublicly(b, now) {
		return nil, errBookGone
	}
	return b, nil
}

// shownPublicly reports whether a book is published and its expires_at has not passed.
func shownPublicly(b *storage.Book, now time.Time) bool {
	return b.Status == storage.StatusPublish && (b.ExpiresAt == nil || b.ExpiresAt.After(now))
}

// bookAnyStatus reads a book by random id whatever its status.
func (s *Service) bookAnyStatus(rid string) (*storage.Book, error) {
	if !storage.ValidName(rid) {
		return nil, errs.ErrNotFound
	}
	t, err := s.Store.BookTenant(rid)
	if err != nil {
		return nil, err
	}
	return s.Store.GetBook(t, rid)
}

// billingExpired reports whether the viewer shows the expired notice instead of the pages.
func billingExpired(b *storage.Book, now time.Time) bool {
	return b.BillingExpiresAt != nil && now.After(b.BillingExpiresAt.Add(BillingGrace))
}

// accessMatch tells whether an address may read a gated book: the address itself is on the
// book's access list, or a domain entry covers its domain (api.DomainCovers: the domain or a
// parent of it, down to the registrable domain; never a public suffix, so an entry such as co.uk
// stored before it was refused opens nothing). It returns the reason for the audit log.
func (s *Service) accessMatch(b *storage.Book, email string) (bool, string, error) {
	t := b.Tenant()
	if _, err := s.Store.BookSubscriber(t, b.RandomID, email); err == nil {
		return true, "address on the access list", nil
	} else if !errors.Is(err, errs.ErrNotFound) {
		return false, "", err
	}
	for _, d := range api.CoveringDomains(email[strings.LastIndexByte(email, '@')+1:]) {
		if _, err := s.Store.BookSubscriber(t, b.RandomID, d); err == nil {
			return true, "domain " + d + " on the access list", nil
		} else if !errors.Is(err, errs.ErrNotFound) {
			return false, "", err
		}
	}
	return false, "address not on the access list", nil
}

// hostAllowed reports whether an embedding host may show a book: allowed when the book has no
// embed domains, or when host equals an entry or is a subdomain of one.
func (s *Service) hostAllowed(b *storage.Book, host string) (bool, error) {
	if !b.Settings.DomainsEnabled {
		return true, nil
	}
	list, err := s.Store.EmbedDomains(b.Tenant(), b.RandomID)
	if err != nil {
		return false, err
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range list {
		if api.DomainCovers(d.Domain, host) {
			return true, nil
		}
	}
	return false, nil
}
