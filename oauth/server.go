// Package oauth is the service's OAuth 2.1 authorization server and the protected-resource
// metadata of its two resources, the REST API and the MCP endpoint (docs/OAUTH.md). The
// protocol rules (authorization code with PKCE, refresh rotation with reuse detection, client
// credentials, revocation) are github.com/ory/fosite's; this package stores fosite's records in
// Pebble, loads clients (registered, or Client ID Metadata Documents fetched through the
// outbound guard), serves the consent page (the person approves with an API key of the
// workspace: the token holds at most that key's scopes and dies with it) and verifies access
// tokens for package api.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	foauth2 "github.com/ory/fosite/handler/oauth2"

	"flipbook/storage"
)

// Options configure the authorization server.
type Options struct {
	Issuer    string   // the service's public URL (no trailing slash)
	Resources []string // the protected resources: the MCP endpoint's URL and the REST base URL
	Scopes    []string // every scope (spec §5.5)
	// AllowPrivate lets metadata documents be fetched from private addresses (tests, local use).
	AllowPrivate bool
	// DocumentRoots, when set, replace the system's roots for metadata documents served over
	// https (tests serve them from TLS test servers: MCP clients insist on an https client_id).
	DocumentRoots *x509.CertPool
	AccessTTL     time.Duration // default 1 hour
	RefreshTTL    time.Duration // default 30 days
	Logger        *slog.Logger
	// OnRevoke is called after tokens were revoked (the API forgets cached credentials).
	OnRevoke func()
	// OnRevokeShared, when set, is called after OnRevoke for a revocation (RFC 7009, a refresh
	// token presented again, an admin's), not for a refresh's rotation of its access tokens:
	// in a cluster, the other nodes forget theirs before the revocation answers, and a refresh
	// does not wait for them.
	OnRevokeShared func()
	// RateLimit is the per-IP limit, per minute, of each of: registrations (POST
	// /oauth/register), authorization requests (GET and POST /oauth/authorize), and fetches of
	// client metadata documents (whatever the endpoint). 0: no limit.
	RateLimit int
	// UnusedClientTTL is how long a dynamically registered client that never obtained an
	// authorization code or a token is kept, and a cached metadata document of a client that
	// holds no grant (Purge). 0: DefaultUnusedClientTTL.
	UnusedClientTTL time.Duration
}

// DefaultUnusedClientTTL is Options.UnusedClientTTL's default.
const DefaultUnusedClientTTL = 7 * 24 * time.Hour

// Server is the authorization server.
type Server struct {
	o        Options
	st       *storage.Store
	store    *Store
	provider fosite.OAuth2Provider
	strategy *foauth2.HMACSHAStrategy
	cfg      *fosite.Config
	csrfKey  []byte
	lim      *limiter
}

// New starts the authorization server on st.
func New(st *storage.Store, o Options) (*Server, error) {
	if o.AccessTTL == 0 {
		o.AccessTTL = time.Hour
	}
	if o.RefreshTTL == 0 {
		o.RefreshTTL = 30 * 24 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.UnusedClientTTL == 0 {
		o.UnusedClientTTL = DefaultUnusedClientTTL
	}
	secret, err := st.Secret("oauth_hmac_secret")
	if err != nil {
		return nil, err
	}
	csrf, err := st.Secret("oauth_csrf_key")
	if err != nil {
		return nil, err
	}
	cfg := &fosite.Config{
		AccessTokenLifespan:            o.AccessTTL,
		RefreshTokenLifespan:           o.RefreshTTL,
		AuthorizeCodeLifespan:          10 * time.Minute,
		GlobalSecret:                   secret,
		EnforcePKCE:                    true,
		EnforcePKCEForPublicClients:    true,
		EnablePKCEPlainChallengeMethod: false,
		ScopeStrategy:                  fosite.ExactScopeStrategy,
		AudienceMatchingStrategy:       fosite.DefaultAudienceMatchingStrategy,
		RefreshTokenScopes:             []string{},
		TokenURL:                       o.Issuer + "/oauth/token",
		AccessTokenIssuer:              o.Issuer,
		SendDebugMessagesToClients:     true,
	}
	lim := newLimiter(o.RateLimit)
	store := &Store{st: st, clients: newClients(st, o.AllowPrivate, o.DocumentRoots, o.Resources, lim),
		scopes: append(slices.Clone(o.Scopes), "*"), onRevoke: o.OnRevoke, onRevokeShared: o.OnRevokeShared}
	strategy := compose.NewOAuth2HMACStrategy(cfg)
	provider := compose.Compose(cfg, store, &compose.CommonStrategy{CoreStrategy: strategy},
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2ClientCredentialsGrantFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2PKCEFactory,
	)
	return &Server{o: o, st: st, store: store, provider: provider, strategy: strategy, cfg: cfg, csrfKey: csrf, lim: lim}, nil
}

// Handler serves the authorization server's routes and the metadata documents.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serveASMetadata)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server/{rest...}", s.serveASMetadata)
	mux.HandleFunc("GET /.well-known/openid-configuration", s.serveASMetadata)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", s.servePRM)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/{rest...}", s.servePRM)
	mux.HandleFunc("GET /oauth/authorize", s.serveAuthorize)
	mux.HandleFunc("POST /oauth/authorize", s.serveAuthorize)
	mux.HandleFunc("POST /oauth/token", s.serveToken)
	mux.HandleFunc("POST /oauth/revoke", s.serveRevoke)
	mux.HandleFunc("POST /oauth/register", s.serveRegister)
	// The fasthttp adaptor hands the pooled RequestCtx over as the request's context; it must
	// not be watched by goroutines that outlive the handler (an outbound fetch's transport),
	// so handlers get a context of their own (their outbound requests carry their own timeouts),
	// holding the requester's address (metadata document fetches are limited per address).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(withIP(context.Background(), clientIP(r))))
	})
}

// ResourceMetadataURL is the protected-resource metadata document of a resource (RFC 9728
// §3.1: the well-known path inserted before the resource's path).
func (s *Server) ResourceMetadataURL(resource string) string {
	path := strings.TrimPrefix(resource, s.o.Issuer)
	return s.o.Issuer + "/.well-known/oauth-protected-resource" + path
}

// normResource is a resource URL as compared (RFC 3986 §6.2.2/§6.2.3 normalization): scheme
// and host in lower case, no default port, no trailing slash; "" for a value that is not an
// absolute http(s) URL without a fragment (RFC 8707 §2: a resource must not have one).
func normResource(r string) string {
	u, err := url.Parse(r)
	if err != nil || u.Host == "" || u.User != nil || strings.Contains(r, "#") {
		return ""
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname())
	if scheme != "http" && scheme != "https" {
		return ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && !(scheme == "http" && p == "80") && !(scheme == "https" && p == "443") {
		host += ":" + p
	}
	out := scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}

// errTarget is RFC 8707's invalid_target.
func errTarget(hint string) error {
	return &fosite.RFC6749Error{ErrorField: "invalid_target", CodeField: http.StatusBadRequest,
		DescriptionField: "The requested resource is invalid, unknown, or malformed.", HintField: hint}
}

// resourceOf checks requested resource indicators (RFC 8707): each must name one of ours, as
// normResource compares them (with or without a trailing slash, any case of scheme and host,
// with or without the default port); the resources are returned as configured.
func (s *Server) resourceOf(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		n := normResource(v)
		i := slices.IndexFunc(s.o.Resources, func(x string) bool { return n != "" && normResource(x) == n })
		if i < 0 {
			return nil, errTarget("resource must be one of: " + strings.Join(s.o.Resources, ", "))
		}
		if !slices.Contains(out, s.o.Resources[i]) {
			out = append(out, s.o.Resources[i])
		}
	}
	if len(out) == 0 { // no indicator: the token is good for both of the service's resources
		out = slices.Clone(s.o.Resources)
	}
	return out, nil
}

func keyHashPrefix(h []byte) string {
	if len(h) > 8 {
		h = h[:8]
	}
	return hex.EncodeToString(h)
}

// checkKey reports whether the key a grant was approved with still exists unrotated.
func (s *Server) checkKey(sess *Session) error {
	if sess == nil || sess.KeyID == 0 {
		return fosite.ErrInvalidGrant.WithHint("The grant has no API key.")
	}
	k, err := s.st.KeyByID(sess.KeyID)
	if err != nil || keyHashPrefix(k.Hash) != sess.KeyHash {
		return fosite.ErrInvalidGrant.WithHint("The API key that approved this grant was revoked or rotated.")
	}
	return nil
}

// grantScopes are the scopes a key may grant from those requested: all requested must be the
// key's (a key with * has every scope); none requested grants the key's own.
func grantScopes(keyScopes, requested []string) ([]string, []string) {
	if len(requested) == 0 {
		return slices.Clone(keyScopes), nil
	}
	var missing []string
	for _, sc := range requested {
		if !slices.Contains(keyScopes, "*") && !slices.Contains(keyScopes, sc) {
			missing = append(missing, sc)
		}
	}
	return requested, missing
}

func randomToken(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// hashedSecret is how a client secret is compared (fosite's hasher: bcrypt).
func (s *Server) hashSecret(ctx context.Context, secret string) ([]byte, error) {
	return s.cfg.GetSecretsHasher(ctx).Hash(ctx, []byte(secret))
}
