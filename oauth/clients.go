package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ory/fosite"

	"flipbook/errs"
	"flipbook/outbound"
	"flipbook/storage"
)

// Client is a registered client (dynamic registration, or a client-credentials client bound to
// an API key), or one described by a fetched Client ID Metadata Document.
type Client struct {
	ID            string    `json:"client_id"`
	SecretHash    []byte    `json:"secret_hash,omitempty"`
	Name          string    `json:"client_name"`
	URI           string    `json:"client_uri,omitempty"`
	RedirectURIs  []string  `json:"redirect_uris"`
	GrantTypes    []string  `json:"grant_types"`
	ResponseTypes []string  `json:"response_types"`
	AuthMethod    string    `json:"token_endpoint_auth_method"`
	Source        string    `json:"source"` // dcr, cimd, key
	CreatedAt     time.Time `json:"created_at"`
	FetchedAt     time.Time `json:"fetched_at,omitempty"` // metadata documents: when fetched
	// RegisteredAt is when a public client's metadata was last registered again (the same
	// metadata is the same client): the purge keeps an unused client that long from then.
	RegisteredAt time.Time `json:"registered_at,omitzero"`
	// A client-credentials client acts for the API key it was registered with.
	Workspace int64    `json:"workspace,omitempty"`
	Mode      string   `json:"mode,omitempty"`
	KeyID     int64    `json:"key_id,omitempty"`
	KeyHash   string   `json:"key_hash,omitempty"`
	Scopes    []string `json:"scopes,omitempty"`
}

// fositeClient is the client as fosite sees it.
// all is every scope the server knows (Store.scopes), given to a client registered for all.
func (c *Client) fositeClient(resources, all []string) fosite.Client {
	scopes := c.Scopes
	if len(scopes) == 0 || slices.Contains(scopes, "*") {
		scopes = all
	}
	return &fosite.DefaultClient{ID: c.ID, Secret: c.SecretHash, RedirectURIs: c.RedirectURIs,
		GrantTypes: c.GrantTypes, ResponseTypes: c.ResponseTypes, Scopes: scopes,
		Audience: resources, Public: c.AuthMethod == "none"}
}

// clients loads clients: registered ones from Pebble, metadata documents from their URL
// (through the outbound guard), cached in Pebble for CIMDCacheFor.
//
// No lock is held across a fetch: concurrent lookups of one document share a single fetch
// (inflight), a failed fetch is remembered for CIMDFailFor (failed) so a slow or broken URL is
// not fetched again by every request, and a lookup of one document never waits for another's.
// Lookups made on behalf of stored grants (token verification, refresh, code exchange) never
// fetch: they use the cached document, however old (stored).
type clients struct {
	st        *storage.Store
	http      *http.Client
	policy    outbound.Policy
	resources []string
	lim       *limiter // per-IP limit of document fetches (nil: none)

	mu       sync.Mutex
	inflight map[string]*fetchCall
	failed   map[string]fetchFailure
}

// fetchCall is a fetch of a metadata document under way; the lookups that join it wait for done.
type fetchCall struct {
	done chan struct{}
	c    *Client
	err  error
}

// fetchFailure is a failed fetch, answered again until until.
type fetchFailure struct {
	err   error
	until time.Time
}

// CIMDCacheFor is how long a fetched client metadata document is used before it is fetched
// again (by an authorization or token request; token verification uses it however old).
const CIMDCacheFor = time.Hour

// CIMDFailFor is how long a failed fetch of a metadata document is remembered: lookups in that
// time get the same error without a fetch.
const CIMDFailFor = 30 * time.Second

// cimdTimeout bounds a fetch of a metadata document (the address check, DNS included, the
// connection, the answer and its body).
const cimdTimeout = 10 * time.Second

// maxCIMD bounds a metadata document, maxCIMDURL its URL.
const (
	maxCIMD    = 64 << 10
	maxCIMDURL = 2048
)

// Bounds of a client's redirect URIs (dynamic registration and metadata documents).
const (
	maxRedirectURIs   = 10
	maxRedirectURILen = 2048
)

// maxFailed is the size of the failure cache above which expired entries are dropped.
const maxFailed = 1024

func newClients(st *storage.Store, allowPrivate bool, roots *x509.CertPool, resources []string, lim *limiter) *clients {
	p := outbound.Policy{AllowPrivate: allowPrivate}
	tr := p.Transport(outbound.TransportOptions{Timeout: cimdTimeout, MaxIdlePerHost: 2})
	if roots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &clients{st: st, policy: p, resources: resources, lim: lim,
		inflight: map[string]*fetchCall{}, failed: map[string]fetchFailure{},
		http: &http.Client{Timeout: cimdTimeout, Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// isCIMD reports whether a client id is a metadata document URL.
func isCIMD(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// GetClient is fosite's client lookup (authorization, token and revocation requests): a
// metadata document is fetched when it is not cached or its cache is older than CIMDCacheFor.
func (s *Store) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	c, err := s.clients.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if asked := redirectFrom(ctx); asked != "" && !slices.Contains(c.RedirectURIs, asked) {
		// Not registered as asked. fosite matches an http loopback redirect with a registered
		// loopback one on another port whatever the registered scheme (an https registration
		// let a code go in clear to http://127.0.0.1:<any port>: found by a review), so it is
		// handed no loopback redirect but the one asked for, when loopbackMatch accepts it.
		uris := make([]string, 0, len(c.RedirectURIs)+1)
		for _, reg := range c.RedirectURIs {
			if !isLoopbackURI(reg) {
				uris = append(uris, reg)
			}
		}
		if slices.ContainsFunc(c.RedirectURIs, func(reg string) bool { return loopbackMatch(asked, reg) }) {
			uris = append(uris, asked)
		}
		cc := *c
		cc.RedirectURIs = uris
		c = &cc
	}
	return c.fositeClient(s.clients.resources, s.scopes), nil
}

// isLoopbackURI reports whether a URI's host is localhost or a loopback address (any of
// 127.0.0.0/8 or ::1, as fosite's loopback matching takes them).
func isLoopbackURI(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil {
		return false
	}
	h := u.Hostname()
	ip := net.ParseIP(h)
	return h == "localhost" || (ip != nil && ip.IsLoopback())
}

type redirectKey struct{}

// withRedirect records the redirect URI an authorization request asks for: the client lookup
// accepts it when it is a registered loopback redirect on another port (loopbackMatch).
func withRedirect(ctx context.Context, uri string) context.Context {
	return context.WithValue(ctx, redirectKey{}, uri)
}

func redirectFrom(ctx context.Context) string {
	uri, _ := ctx.Value(redirectKey{}).(string)
	return uri
}

// loopbackMatch reports whether asked is the registered loopback redirect reg on any port (RFC
// 8252 §7.3: a native app listens on whatever port it gets): both http, the same loopback host
// (localhost, 127.0.0.1 or [::1]; fosite already matches the IP literals with the same path,
// localhost is what Claude Code, Gemini CLI and others register), path (the empty one as /) and
// query; no user info, no fragment.
func loopbackMatch(asked, reg string) bool {
	a, err1 := url.Parse(asked)
	r, err2 := url.Parse(reg)
	if err1 != nil || err2 != nil || a.Scheme != "http" || r.Scheme != "http" || a.User != nil || r.User != nil ||
		a.Fragment != "" || strings.Contains(asked, "#") {
		return false
	}
	h := a.Hostname()
	return (h == "localhost" || h == "127.0.0.1" || h == "::1") && strings.EqualFold(h, r.Hostname()) &&
		rootPath(a.EscapedPath()) == rootPath(r.EscapedPath()) && a.RawQuery == r.RawQuery
}

// rootPath is an http URL's path with the empty path as "/" (RFC 3986 §6.2.3): VS Code
// registers http://127.0.0.1:33418 and may come back to http://127.0.0.1:33418/.
func rootPath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// load returns a client, fetching its metadata document if needed.
func (cs *clients) load(ctx context.Context, id string) (*Client, error) {
	if isCIMD(id) {
		return cs.document(ctx, id)
	}
	return cs.registered(id)
}

func (cs *clients) registered(id string) (*Client, error) {
	var c Client
	if err := cs.st.OAuthGet(kindClient, id, &c); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return nil, fosite.ErrInvalidClient.WithHint("The client is not registered.")
		}
		return nil, err
	}
	return &c, nil
}

// stored returns the client of a stored grant without any network I/O: a registered client,
// or a metadata document as cached, however old. A document client whose cache is gone (the
// purge keeps the cache of clients holding grants, so only in a race) is the public client its
// id names: what a stored grant needs of its client is its id (fosite compares it with the
// client of the request) and that it is public; the document's redirect URIs and name matter
// only to authorization requests, which fetch it.
func (cs *clients) stored(id string) (*Client, error) {
	if !isCIMD(id) {
		return cs.registered(id)
	}
	var c Client
	switch err := cs.st.OAuthGet(kindCIMD, id, &c); {
	case err == nil:
		return &c, nil
	case !errors.Is(err, errs.ErrNotFound):
		return nil, err
	}
	return &Client{ID: id, GrantTypes: publicGrants(nil), ResponseTypes: []string{"code"}, AuthMethod: "none",
		Source: "cimd"}, nil
}

// document returns the client described by the metadata document at id (MCP 2025-11-25:
// Client ID Metadata Documents): the cached one while younger than CIMDCacheFor, else fetched
// (fetch).
func (cs *clients) document(ctx context.Context, id string) (*Client, error) {
	if len(id) > maxCIMDURL {
		return nil, fosite.ErrInvalidClient.WithHintf("A client metadata document URL is at most %d characters.", maxCIMDURL)
	}
	var cached Client
	if err := cs.st.OAuthGet(kindCIMD, id, &cached); err == nil && time.Since(cached.FetchedAt) < CIMDCacheFor {
		return &cached, nil
	} else if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	now := time.Now()
	cs.mu.Lock()
	if f, ok := cs.failed[id]; ok {
		if now.Before(f.until) {
			cs.mu.Unlock()
			return nil, f.err
		}
		delete(cs.failed, id)
	}
	call := cs.inflight[id]
	if call == nil {
		// A fetch of our own: the caller's address pays for it (a joined fetch is free).
		if d := cs.lim.allow("cimd", ipFrom(ctx), now); !d.Allowed {
			cs.mu.Unlock()
			return nil, fosite.ErrInvalidClient.WithHintf("Too many client metadata documents fetched for this address: try again in %d s.",
				retryAfter(d)).WithWrap(&rateLimited{d})
		}
		call = &fetchCall{done: make(chan struct{})}
		cs.inflight[id] = call
		cs.mu.Unlock()
		cs.run(call, id, &cached)
	} else {
		cs.mu.Unlock()
	}
	select {
	case <-call.done:
		return call.c, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run fetches a document for the lookups that joined call.
func (cs *clients) run(call *fetchCall, id string, cached *Client) {
	ctx, cancel := context.WithTimeout(context.Background(), cimdTimeout)
	defer cancel()
	// Should fetch panic, the lookups that joined are still answered (with this error).
	call.err = fosite.ErrServerError.WithHint("The client metadata document could not be fetched.")
	remember := false
	defer cs.finish(call, id, &remember)
	var storeErr bool
	call.c, storeErr, call.err = cs.fetch(ctx, id, cached)
	remember = call.err != nil && !storeErr
}

// finish ends a fetch: the lookups that joined it are answered, and a failure of the document
// (remember) is answered again for CIMDFailFor.
func (cs *clients) finish(call *fetchCall, id string, remember *bool) {
	cs.mu.Lock()
	delete(cs.inflight, id)
	if *remember {
		if len(cs.failed) >= maxFailed {
			now := time.Now()
			for k, f := range cs.failed {
				if !now.Before(f.until) {
					delete(cs.failed, k)
				}
			}
		}
		cs.failed[id] = fetchFailure{err: call.err, until: time.Now().Add(CIMDFailFor)}
	}
	cs.mu.Unlock()
	close(call.done)
}

// fetch fetches and checks the document at id through the outbound guard (at most 64 KB, its
// client_id must be its own URL) and caches it; storeErr reports an error of the store (not the
// document's fault, so not remembered as a failed fetch).
func (cs *clients) fetch(ctx context.Context, id string, cached *Client) (_ *Client, storeErr bool, _ error) {
	bad := func(why string) error {
		return fosite.ErrInvalidClient.WithHint("The client metadata document at " + id + " " + why + ".")
	}
	if err := cs.policy.CheckURL(ctx, id); err != nil {
		return nil, false, bad("cannot be fetched: " + err.Error())
	}
	if u, _ := url.Parse(id); u == nil || u.Path == "" || u.Path == "/" || u.Fragment != "" {
		return nil, false, bad("must be an https URL with a path")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, false, bad("is not a valid URL")
	}
	req.Header.Set("Accept", "application/json")
	res, err := cs.http.Do(req)
	if err != nil {
		return nil, false, bad("could not be fetched: " + err.Error())
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, false, bad(fmt.Sprintf("answered %d", res.StatusCode))
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxCIMD+1))
	if err != nil || len(data) > maxCIMD {
		return nil, false, bad("is larger than 64 KB or could not be read")
	}
	var doc struct {
		ClientID      string   `json:"client_id"`
		Name          string   `json:"client_name"`
		URI           string   `json:"client_uri"`
		RedirectURIs  []string `json:"redirect_uris"`
		GrantTypes    []string `json:"grant_types"`
		ResponseTypes []string `json:"response_types"`
		AuthMethod    string   `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, false, bad("is not JSON")
	}
	switch {
	case doc.ClientID != id:
		return nil, false, bad("names another client_id")
	case len(doc.RedirectURIs) == 0:
		return nil, false, bad("has no redirect_uris")
	case doc.AuthMethod != "" && doc.AuthMethod != "none":
		return nil, false, bad("asks for token_endpoint_auth_method " + doc.AuthMethod + " (only none is supported for metadata-document clients)")
	case len(doc.Name) > 255 || len(doc.URI) > 2048:
		return nil, false, bad("has a client_name longer than 255 characters or a client_uri longer than 2048")
	}
	if err := checkRedirects(doc.RedirectURIs); err != nil {
		return nil, false, bad("has bad redirect_uris: " + err.Error())
	}
	now := time.Now().UTC()
	c := &Client{ID: id, Name: doc.Name, URI: doc.URI, RedirectURIs: doc.RedirectURIs,
		GrantTypes: publicGrants(doc.GrantTypes), ResponseTypes: []string{"code"}, AuthMethod: "none",
		Source: "cimd", CreatedAt: now, FetchedAt: now}
	if cached.ID != "" {
		c.CreatedAt = cached.CreatedAt
	}
	b := cs.st.NewOAuthBatch()
	if err := b.Put(kindCIMD, id, c); err != nil {
		b.Close()
		return nil, true, err
	}
	if err := b.Commit(); err != nil {
		return nil, true, err
	}
	return c, false, nil
}

// publicGrants are the grants a public client may use: the authorization code and refresh.
func publicGrants(asked []string) []string {
	if len(asked) == 0 {
		return []string{"authorization_code", "refresh_token"}
	}
	var out []string
	for _, g := range asked {
		if g == "authorization_code" || g == "refresh_token" {
			out = append(out, g)
		}
	}
	if !slices.Contains(out, "authorization_code") {
		out = append(out, "authorization_code")
	}
	return out
}

// checkRedirects checks a client's redirect URIs: at most maxRedirectURIs, each at most
// maxRedirectURILen characters and acceptable to checkRedirect.
func checkRedirects(uris []string) error {
	if len(uris) > maxRedirectURIs {
		return fmt.Errorf("at most %d redirect_uris are accepted", maxRedirectURIs)
	}
	for _, u := range uris {
		if len(u) > maxRedirectURILen {
			return fmt.Errorf("a redirect_uri is at most %d characters", maxRedirectURILen)
		}
		if err := checkRedirect(u); err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
	}
	return nil
}

// checkRedirect accepts https redirect URIs and http ones on loopback (RFC 8252), and custom
// schemes of native apps (com.example.app:/callback); never fragments.
func checkRedirect(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return errors.New("must be an absolute URI")
	}
	if u.Fragment != "" {
		return errors.New("must not have a fragment")
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return errors.New("must have a host")
		}
	case "http":
		h := u.Hostname()
		if h != "localhost" && h != "127.0.0.1" && h != "::1" {
			return errors.New("http is allowed only for loopback addresses (localhost, 127.0.0.1, [::1])")
		}
	case "javascript", "data", "file", "vbscript":
		return errors.New("must not use the " + u.Scheme + " scheme")
	}
	return nil
}
