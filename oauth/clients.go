package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ory/fosite"

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
	// A client-credentials client acts for the API key it was registered with.
	Workspace int64    `json:"workspace,omitempty"`
	Mode      string   `json:"mode,omitempty"`
	KeyID     int64    `json:"key_id,omitempty"`
	KeyHash   string   `json:"key_hash,omitempty"`
	Scopes    []string `json:"scopes,omitempty"`
}

// fositeClient is the client as fosite sees it.
func (c *Client) fositeClient(resources []string) fosite.Client {
	scopes := c.Scopes
	if len(scopes) == 0 || slices.Contains(scopes, "*") {
		scopes = allScopes()
	}
	return &fosite.DefaultClient{ID: c.ID, Secret: c.SecretHash, RedirectURIs: c.RedirectURIs,
		GrantTypes: c.GrantTypes, ResponseTypes: c.ResponseTypes, Scopes: scopes,
		Audience: resources, Public: c.AuthMethod == "none"}
}

// clients loads clients: registered ones from Pebble, metadata documents from their URL
// (through the outbound guard), kept for CIMDCacheFor.
type clients struct {
	st        *storage.Store
	http      *http.Client
	policy    outbound.Policy
	resources []string
	mu        sync.Mutex // one fetch of a document at a time
}

// CIMDCacheFor is how long a fetched client metadata document is used before it is fetched
// again.
const CIMDCacheFor = time.Hour

// maxCIMD bounds a metadata document.
const maxCIMD = 64 << 10

func newClients(st *storage.Store, allowPrivate bool, resources []string) *clients {
	p := outbound.Policy{AllowPrivate: allowPrivate}
	return &clients{st: st, policy: p, resources: resources, http: &http.Client{Timeout: 10 * time.Second,
		Transport:     p.Transport(outbound.TransportOptions{Timeout: 10 * time.Second, MaxIdlePerHost: 2}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// isCIMD reports whether a client id is a metadata document URL.
func isCIMD(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

func (s *Store) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	c, err := s.clients.load(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.fositeClient(s.clients.resources), nil
}

func (cs *clients) load(ctx context.Context, id string) (*Client, error) {
	if isCIMD(id) {
		return cs.document(ctx, id)
	}
	var c Client
	if err := cs.st.OAuthGet(kindClient, id, &c); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fosite.ErrInvalidClient.WithHint("The client is not registered.")
		}
		return nil, err
	}
	return &c, nil
}

// document returns the client described by the metadata document at id (MCP 2025-11-25:
// Client ID Metadata Documents): fetched through the outbound guard, at most 64 KB, its
// client_id must be its own URL.
func (cs *clients) document(ctx context.Context, id string) (*Client, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var cached Client
	if err := cs.st.OAuthGet(kindCIMD, id, &cached); err == nil && time.Since(cached.FetchedAt) < CIMDCacheFor {
		return &cached, nil
	}
	bad := func(why string) error {
		return fosite.ErrInvalidClient.WithHint("The client metadata document at " + id + " " + why + ".")
	}
	if err := cs.policy.CheckURL(ctx, id); err != nil {
		return nil, bad("cannot be fetched: " + err.Error())
	}
	if u, _ := url.Parse(id); u == nil || u.Path == "" || u.Path == "/" || u.Fragment != "" {
		return nil, bad("must be an https URL with a path")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, bad("is not a valid URL")
	}
	req.Header.Set("Accept", "application/json")
	res, err := cs.http.Do(req)
	if err != nil {
		return nil, bad("could not be fetched: " + err.Error())
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, bad(fmt.Sprintf("answered %d", res.StatusCode))
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxCIMD+1))
	if err != nil || len(data) > maxCIMD {
		return nil, bad("is larger than 64 KB or could not be read")
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
		return nil, bad("is not JSON")
	}
	switch {
	case doc.ClientID != id:
		return nil, bad("names another client_id")
	case len(doc.RedirectURIs) == 0:
		return nil, bad("has no redirect_uris")
	case doc.AuthMethod != "" && doc.AuthMethod != "none":
		return nil, bad("asks for token_endpoint_auth_method " + doc.AuthMethod + " (only none is supported for metadata-document clients)")
	}
	for _, u := range doc.RedirectURIs {
		if err := checkRedirect(u); err != nil {
			return nil, bad("has a bad redirect_uri: " + err.Error())
		}
	}
	c := &Client{ID: id, Name: doc.Name, URI: doc.URI, RedirectURIs: doc.RedirectURIs,
		GrantTypes: publicGrants(doc.GrantTypes), ResponseTypes: []string{"code"}, AuthMethod: "none",
		Source: "cimd", CreatedAt: time.Now().UTC(), FetchedAt: time.Now().UTC()}
	if cached.ID != "" {
		c.CreatedAt = cached.CreatedAt
	}
	b := cs.st.NewOAuthBatch()
	if err := b.Put(kindCIMD, id, c); err != nil {
		b.Close()
		return nil, err
	}
	return c, b.Commit()
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
