package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"

	"flipbook/api"
	"flipbook/storage"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// serveASMetadata is RFC 8414's authorization server metadata.
func (s *Server) serveASMetadata(w http.ResponseWriter, _ *http.Request) {
	i := s.o.Issuer
	writeJSON(w, 200, map[string]any{
		"issuer":                                     i,
		"authorization_endpoint":                     i + "/oauth/authorize",
		"token_endpoint":                             i + "/oauth/token",
		"registration_endpoint":                      i + "/oauth/register",
		"revocation_endpoint":                        i + "/oauth/revoke",
		"scopes_supported":                           s.o.Scopes,
		"response_types_supported":                   []string{"code"},
		"response_modes_supported":                   []string{"query"},
		"grant_types_supported":                      []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":           []string{"S256"},
		"token_endpoint_auth_methods_supported":      []string{"none", "client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
		"client_id_metadata_document_supported":      true,
		"resource_indicators_supported":              true,
		"service_documentation":                      i + "/api/docs",
	})
}

// servePRM is RFC 9728's protected resource metadata: /.well-known/oauth-protected-resource
// followed by the resource's path (the root names the MCP endpoint).
func (s *Server) servePRM(w http.ResponseWriter, r *http.Request) {
	path := "/" + r.PathValue("rest")
	res := ""
	for _, x := range s.o.Resources {
		if strings.TrimPrefix(x, s.o.Issuer) == path || path == "/" && strings.HasSuffix(x, "/mcp/public-api") {
			res = x
		}
	}
	if res == "" {
		writeJSON(w, 404, map[string]any{"error": "not_found", "error_description": "no protected resource at " + path})
		return
	}
	writeJSON(w, 200, map[string]any{
		"resource":                 res,
		"authorization_servers":    []string{s.o.Issuer},
		"scopes_supported":         s.o.Scopes,
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "Flipbook " + map[bool]string{true: "MCP endpoint", false: "REST API"}[strings.HasSuffix(res, "/mcp/public-api")],
		"resource_documentation":   s.o.Issuer + "/api/docs",
	})
}

// Consent page.

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Authorize {{.ClientName}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1f2328}
code{background:#f3f4f6;padding:.1rem .3rem;border-radius:4px}.err{color:#b91c1c;border:1px solid #fca5a5;background:#fef2f2;padding:.6rem;border-radius:6px}
label{display:block;margin:1rem 0 .3rem;font-weight:600}input[type=password]{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}
button{font:inherit;padding:.5rem 1.2rem;margin:1rem .5rem 0 0;border-radius:6px;border:1px solid #d0d7de;cursor:pointer}
button.ok{background:#1e3a8a;color:#fff;border-color:#1e3a8a}ul{padding-left:1.2rem}</style></head>
<body><h1>Authorize {{.ClientName}}</h1>
<p><strong>{{.ClientName}}</strong> (<code>{{.ClientID}}</code>) asks for access to your flipbook workspace{{if .Resource}} through <code>{{.Resource}}</code>{{end}}.</p>
<p>It asks to:</p><ul id="scopes">{{range .Scopes}}<li><code>{{.}}</code></li>{{else}}<li>everything the API key below may do</li>{{end}}</ul>
<p>It will return to <code>{{.RedirectURI}}</code>.</p>
{{if .Error}}<p class="err" id="error">{{.Error}}</p>{{end}}
<form method="post" action="/oauth/authorize">
{{range .Hidden}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">{{end}}
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<label for="api_key">An API key of the workspace</label>
<input type="password" id="api_key" name="api_key" autocomplete="off" placeholder="wsk_live_…">
<p>It gets what it asks for that this key may do (never more than the key's scopes), until the key is revoked or rotated.</p>
<button class="ok" type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form></body></html>`))

type hidden struct{ Name, Value string }

const csrfCookie = "fb_oauth_csrf"

// authorizeParams are carried from the consent page's GET to its POST.
var authorizeParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state",
	"code_challenge", "code_challenge_method", "resource"}

func (s *Server) csrfFor(nonce string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if !s.limit(w, r, "authorize", "authorization requests") {
		return
	}
	// fosite's parsing, done first: the form is read below.
	if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "the form could not be parsed"})
		return
	}
	// The client lookup learns the redirect URI asked for (loopback redirects on any port).
	ctx := withRedirect(r.Context(), r.Form.Get("redirect_uri"))
	r = r.WithContext(ctx)
	// state is optional (OAuth 2.1 §4.1.1: PKCE, required here, protects the flow; the
	// TypeScript SDK sends none unless its host supplies one), but fosite refuses a state
	// shorter than 8 characters, none included, whatever its configuration: a request without
	// one is given a placeholder for fosite's check, taken off again at once. The redirect then
	// carries no state (stateless drops the empty one fosite adds).
	noState := r.Form.Get("state") == ""
	if noState {
		r.Form.Set("state", statePlaceholder)
	}
	w = &stateless{ResponseWriter: w}
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if a, ok := ar.(*fosite.AuthorizeRequest); ok && noState {
		a.State = ""
		a.Form.Del("state")
	}
	if err == nil {
		err = checkState(ar.GetState())
	}
	if err != nil {
		if limited(w, err) {
			return
		}
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	// PKCE with S256 is required (OAuth 2.1): refused before the person is asked anything
	// (fosite would refuse it only when the code is issued).
	if f := ar.GetRequestForm(); f.Get("code_challenge") == "" || f.Get("code_challenge_method") != "S256" {
		s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHint(
			"PKCE is required: send code_challenge with code_challenge_method=S256."))
		return
	}
	resources, err := s.resourceOf(ar.GetRequestForm()["resource"])
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	if r.Method == http.MethodGet {
		s.consent(w, r, ar, "", http.StatusOK)
		return
	}
	// POST: the person's decision. The CSRF token must match the cookie set with the page.
	c, cerr := r.Cookie(csrfCookie)
	if cerr != nil || c.Value == "" || !hmac.Equal([]byte(r.PostFormValue("csrf_token")), []byte(s.csrfFor(c.Value))) {
		s.consent(w, r, ar, "The form expired or did not come from this page: please try again.", http.StatusForbidden)
		return
	}
	if r.PostFormValue("decision") != "approve" {
		s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The request was denied."))
		return
	}
	secret := strings.TrimSpace(r.PostFormValue("api_key"))
	key, err := s.st.KeyByHash(storage.HashSecret(secret))
	if secret == "" || err != nil {
		s.consent(w, r, ar, "That API key is wrong or has been revoked.", http.StatusUnauthorized)
		return
	}
	// The grant is what was asked and the key may do (RFC 6749 §3.3 lets the server issue less
	// than asked; the token answer's scope says what): hosts following SEP-835 ask for every
	// scope the resource metadata lists, and a person approving with a narrower key means that
	// key's access. Nothing in common is a refusal.
	scopes, missing := grantScopes(key.Scopes, ar.GetRequestedScopes())
	if len(missing) > 0 {
		scopes = slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { return slices.Contains(missing, sc) })
	}
	if len(scopes) == 0 {
		s.consent(w, r, ar, "This API key has none of the scopes asked for ("+strings.Join(missing, ", ")+"): use another key, or ask the application for others.", http.StatusForbidden)
		return
	}
	for _, sc := range scopes {
		ar.GrantScope(sc)
	}
	for _, res := range resources {
		ar.GrantAudience(res)
	}
	sess := newSession()
	sess.Workspace, sess.Mode, sess.KeyID, sess.KeyHash = key.Workspace, key.Mode.String(), key.ID, keyHashPrefix(key.Hash)
	sess.Subject = "workspace:" + itoa(key.Workspace) + "/" + key.Mode.String()
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, sess)
	if err != nil {
		s.provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	s.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// consent renders the consent page with a fresh CSRF cookie and token.
func (s *Server) consent(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, msg string, status int) {
	nonce := randomToken("", 16)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: nonce, Path: "/oauth/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: strings.HasPrefix(s.o.Issuer, "https://"), MaxAge: 1800})
	var hid []hidden
	form := ar.GetRequestForm()
	for _, k := range authorizeParams {
		for _, v := range form[k] {
			hid = append(hid, hidden{k, v})
		}
	}
	name := ar.GetClient().GetID()
	if c := s.storedClient(name); c != nil && c.Name != "" { // just loaded: no fetch
		name = c.Name
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' "+redirectOrigin(form.Get("redirect_uri"))+"; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_ = consentPage.Execute(w, map[string]any{"ClientName": name, "ClientID": ar.GetClient().GetID(),
		"Scopes": ar.GetRequestedScopes(), "Resource": strings.Join(form["resource"], ", "),
		"RedirectURI": form.Get("redirect_uri"), "Error": msg, "Hidden": hid, "CSRF": s.csrfFor(nonce)})
}

// redirectOrigin is the origin of a redirect URI (the form posts back here and is redirected
// there, which form-action must allow).
func redirectOrigin(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	rest := u[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	return u[:i+3] + rest
}

// serveToken is the token endpoint: authorization code (with PKCE), refresh (rotated; a spent
// refresh token revokes its family) and client credentials.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := s.grantTargets(ctx, r); err != nil {
		s.provider.WriteAccessError(ctx, w, nil, err)
		return
	}
	ar, err := s.provider.NewAccessRequest(ctx, r, newSession())
	if err != nil {
		if limited(w, err) {
			return
		}
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	if err := s.tokenRules(ctx, r, ar); err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

// tokenRules adds the service's rules to a token request fosite accepted: the approving key
// must still be valid (resource indicators and a refresh's scope were checked against the
// grant before, grantTargets), and a client-credentials client gets its key's workspace,
// scopes and resources.
func (s *Server) tokenRules(ctx context.Context, r *http.Request, ar fosite.AccessRequester) error {
	asked := r.PostForm["resource"]
	if ar.GetGrantTypes().ExactOne("client_credentials") {
		c, err := s.store.clients.load(ctx, ar.GetClient().GetID())
		if err != nil {
			return err
		}
		sess := ar.GetSession().(*Session)
		sess.Workspace, sess.Mode, sess.KeyID, sess.KeyHash = c.Workspace, c.Mode, c.KeyID, c.KeyHash
		sess.Subject = "client:" + c.ID
		if err := s.checkKey(sess); err != nil {
			return err
		}
		scopes, missing := grantScopes(c.Scopes, ar.GetRequestedScopes())
		if len(missing) > 0 {
			return fosite.ErrInvalidScope.WithHintf("The client's API key lacks %s.", strings.Join(missing, ", "))
		}
		for _, sc := range scopes {
			ar.GrantScope(sc)
		}
		res, err := s.resourceOf(asked)
		if err != nil {
			return err
		}
		for _, x := range res {
			ar.GrantAudience(x)
		}
		return nil
	}
	sess, _ := ar.GetSession().(*Session)
	if err := s.checkKey(sess); err != nil {
		return err
	}
	return nil
}

// grantTargets checks a code exchange's or a refresh's resource indicators (RFC 8707: each
// must be one the grant holds) and a refresh's scope (RFC 6749 §6: the grant's or fewer;
// invalid_scope otherwise, never a token with other scopes). It runs before fosite handles the
// request: fosite spends a code's PKCE record while reading it, so a request refused after
// that could not be made again right. Unknown or spent codes and tokens are left to fosite.
// (The new tokens keep the grant's scopes and resources: a refresh token's scope must stay the
// original's, and the answer's scope says which were issued.)
func (s *Server) grantTargets(ctx context.Context, r *http.Request) error {
	if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return nil // fosite answers
	}
	f := r.PostForm
	var req fosite.Requester
	var err error
	switch f.Get("grant_type") {
	case "authorization_code":
		req, err = s.store.GetAuthorizeCodeSession(ctx, s.strategy.AuthorizeCodeSignature(ctx, f.Get("code")), nil)
	case "refresh_token":
		req, err = s.store.GetRefreshTokenSession(ctx, s.strategy.RefreshTokenSignature(ctx, f.Get("refresh_token")), nil)
	default:
		return nil
	}
	if err != nil || req == nil || req.GetClient() == nil || req.GetClient().GetID() != f.Get("client_id") && f.Get("client_id") != "" {
		return nil
	}
	if asked := f["resource"]; len(asked) > 0 {
		res, err := s.resourceOf(asked)
		if err != nil {
			return err
		}
		for _, x := range res {
			if !slices.Contains(req.GetGrantedAudience(), x) {
				return errTarget("The grant was not issued for " + x + ".")
			}
		}
	}
	if f.Get("grant_type") == "refresh_token" {
		granted := req.GetGrantedScopes()
		var outside []string
		for _, sc := range strings.Fields(f.Get("scope")) {
			if !slices.Contains(granted, sc) && !(slices.Contains(granted, "*") && slices.Contains(s.store.scopes, sc)) {
				outside = append(outside, sc)
			}
		}
		if len(outside) > 0 {
			return fosite.ErrInvalidScope.WithHintf("The grant does not include %s: a refresh may ask only for scopes the grant holds.",
				strings.Join(outside, ", "))
		}
	}
	return nil
}

func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	err := s.provider.NewRevocationRequest(ctx, r)
	if limited(w, err) {
		return
	}
	s.provider.WriteRevocationResponse(ctx, w, err)
}

// limited answers 429 when a request failed because its client's metadata document could not
// be fetched under the per-IP limit.
func limited(w http.ResponseWriter, err error) bool {
	var rl *rateLimited
	if err == nil || !errors.As(err, &rl) {
		return false
	}
	tooMany(w, rl.d, fmt.Sprintf("too many client metadata documents fetched for this address (limit %d per minute): try again in %d s",
		rl.d.Limit, retryAfter(rl.d)))
	return true
}

// serveRegister is Dynamic Client Registration (RFC 7591). Without credentials it registers a
// public client (authorization code with PKCE, refresh); with an API key as bearer token it may
// register a confidential client-credentials client that acts for that key. Registrations are
// limited per IP (Options.RateLimit); a public client that never obtains a code or a token is
// purged after Options.UnusedClientTTL.
func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	var in registerRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil {
		badMetadata(w, "invalid_client_metadata", "the body must be a JSON object of client metadata")
		return
	}
	if len(in.Name) > 255 || len(in.URI) > 2048 {
		badMetadata(w, "invalid_client_metadata", "client_name is at most 255 characters and client_uri 2048")
		return
	}
	now := time.Now().UTC()
	c := &Client{ID: randomToken("fbc_", 12), Name: in.Name, URI: in.URI, Source: "dcr", CreatedAt: now,
		ResponseTypes: []string{"code"}}
	var secret string
	if slices.Contains(in.GrantTypes, "client_credentials") {
		var ok bool
		if secret, ok = s.registerKeyClient(w, r, &in, c); !ok {
			return
		}
	} else if !s.registerPublicClient(w, r, &in, c, now) {
		return
	}
	b := s.st.NewOAuthBatch()
	if err := b.Put(kindClient, c.ID, c); err != nil {
		b.Close()
		writeJSON(w, 500, map[string]any{"error": "server_error"})
		return
	}
	if c.Workspace != 0 {
		b.Mark(kindWClient, itoa(c.Workspace)+"/"+c.ID)
	}
	if err := b.Commit(); err != nil {
		writeJSON(w, 500, map[string]any{"error": "server_error"})
		return
	}
	writeJSON(w, 201, registration(c, secret))
}

// registerRequest is the client metadata of a registration (RFC 7591 §2).
type registerRequest struct {
	RedirectURIs  []string `json:"redirect_uris"`
	Name          string   `json:"client_name"`
	URI           string   `json:"client_uri"`
	GrantTypes    []string `json:"grant_types"`
	ResponseTypes []string `json:"response_types"`
	AuthMethod    string   `json:"token_endpoint_auth_method"`
	Scope         string   `json:"scope"`
}

// badMetadata answers a registration with a 400 error.
func badMetadata(w http.ResponseWriter, code, msg string) {
	writeJSON(w, 400, map[string]any{"error": code, "error_description": msg})
}

// registerKeyClient makes c a confidential client-credentials client acting for the API key
// given as bearer token, and returns its new secret. It reports false when it has answered
// the request (rate limited, no valid key, scopes the key lacks, an error).
func (s *Server) registerKeyClient(w http.ResponseWriter, r *http.Request, in *registerRequest, c *Client) (string, bool) {
	if !s.limit(w, r, "register", "client registrations") {
		return "", false
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	key, err := s.st.KeyByHash(storage.HashSecret(strings.TrimSpace(tok)))
	if tok == "" || err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="flipbook"`)
		writeJSON(w, 401, map[string]any{"error": "invalid_token",
			"error_description": "a client_credentials client is registered with an API key of the workspace as bearer token"})
		return "", false
	}
	scopes, missing := grantScopes(key.Scopes, strings.Fields(in.Scope))
	if len(missing) > 0 {
		badMetadata(w, "invalid_client_metadata", "the API key lacks "+strings.Join(missing, ", "))
		return "", false
	}
	c.GrantTypes, c.ResponseTypes, c.AuthMethod = []string{"client_credentials"}, []string{}, "client_secret_basic"
	if in.AuthMethod == "client_secret_post" {
		c.AuthMethod = in.AuthMethod
	}
	c.Workspace, c.Mode, c.KeyID, c.KeyHash, c.Scopes = key.Workspace, key.Mode.String(), key.ID, keyHashPrefix(key.Hash), scopes
	c.Source = "key"
	secret := randomToken("fbcs_", 24)
	h, err := s.hashSecret(r.Context(), secret)
	if err != nil {
		writeJSON(w, 500, map[string]any{"error": "server_error"})
		return "", false
	}
	c.SecretHash = h
	return secret, true
}

// registerPublicClient makes c a public client (authorization code with PKCE, refresh). It
// reports false when it has answered the request: bad redirect URIs, rate limited, or the same
// metadata registered before (answered with that client).
func (s *Server) registerPublicClient(w http.ResponseWriter, r *http.Request, in *registerRequest, c *Client, now time.Time) bool {
	// Registered without credentials, a client is public whatever token_endpoint_auth_method
	// it asked for: RFC 7591 §3.2.1 lets the server replace a requested value, and the
	// answer says "none". claude.ai registers asking for client_secret_post and reads the
	// method from the answer (refusing it fails Claude's connector at registration).
	if len(in.RedirectURIs) == 0 {
		badMetadata(w, "invalid_redirect_uri", "redirect_uris is required")
		return false
	}
	if err := checkRedirects(in.RedirectURIs); err != nil {
		badMetadata(w, "invalid_redirect_uri", err.Error())
		return false
	}
	c.RedirectURIs, c.GrantTypes, c.AuthMethod = in.RedirectURIs, publicGrants(in.GrantTypes), "none"
	// The same metadata registered again is the same client (publicClientID): hosts
	// register on every new connection (Claude does), and hosted ones from few addresses.
	// The answer is the client as first registered; it is not counted against the limit,
	// and it restarts the time an unused client is kept (RegisteredAt, written at most
	// hourly: repeating a registration costs a read, not a write).
	c.ID = s.publicClientID(c)
	if old, err := s.store.clients.registered(c.ID); err == nil && old.Source == "dcr" {
		s.reregister(w, old, now)
		return false
	}
	return s.limit(w, r, "register", "client registrations")
}

// reregister answers a registration of the public client old's metadata again with old,
// recording the time of the registration (at most hourly).
func (s *Server) reregister(w http.ResponseWriter, old *Client, now time.Time) {
	if now.Sub(old.CreatedAt) < time.Hour || now.Sub(old.RegisteredAt) < time.Hour {
		writeJSON(w, 201, registration(old, ""))
		return
	}
	old.RegisteredAt = now
	b := s.st.NewOAuthBatch()
	if err := b.Put(kindClient, old.ID, old); err != nil {
		b.Close()
		writeJSON(w, 500, map[string]any{"error": "server_error"})
		return
	}
	if err := b.Commit(); err != nil {
		writeJSON(w, 500, map[string]any{"error": "server_error"})
		return
	}
	writeJSON(w, 201, registration(old, ""))
}

// publicClientID is the id of a public client: an HMAC of its metadata (name, URI, redirect
// URIs, grants) under a secret of the installation, so registering the same metadata again
// names the same client and nobody can choose or predict another's id. A public client has no
// secret: what binds it is its redirect URIs, which are part of the id.
func (s *Server) publicClientID(c *Client) string {
	canon, _ := json.Marshal([]any{c.Name, c.URI, c.RedirectURIs, c.GrantTypes})
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("public-client\x00"))
	m.Write(canon)
	return "fbc_" + hex.EncodeToString(m.Sum(nil)[:12])
}

// registration is RFC 7591 §3.2.1's answer: the client_id, when it was issued, and the
// metadata as registered (what hosts store and read back: redirect_uris, grant_types,
// response_types, token_endpoint_auth_method). Optional fields are left out rather than null
// or empty (the TypeScript SDK's schema refuses a null or empty client_uri); a secret comes
// with client_secret_expires_at 0 (it does not expire).
func registration(c *Client, secret string) map[string]any {
	out := map[string]any{"client_id": c.ID, "client_id_issued_at": c.CreatedAt.Unix(),
		"redirect_uris": orEmpty(c.RedirectURIs), "grant_types": c.GrantTypes, "response_types": orEmpty(c.ResponseTypes),
		"token_endpoint_auth_method": c.AuthMethod}
	if c.Name != "" {
		out["client_name"] = c.Name
	}
	if c.URI != "" {
		out["client_uri"] = c.URI
	}
	if secret != "" {
		out["client_secret"], out["client_secret_expires_at"] = secret, 0
		out["scope"] = strings.Join(c.Scopes, " ")
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// statePlaceholder stands for a missing state during fosite's parsing (serveAuthorize).
const statePlaceholder = "no-state-sent"

// checkState is the service's rule for state: optional (PKCE protects the flow), and when sent
// at least 8 characters (a shorter one protects nothing) and at most 1024.
func checkState(state string) error {
	switch {
	case state == "":
		return nil
	case len(state) < 8:
		return fosite.ErrInvalidState.WithHint("state, when sent, must be at least 8 characters (or leave it out: PKCE protects the flow).")
	case len(state) > 1024:
		return fosite.ErrInvalidState.WithHint("state is at most 1024 characters.")
	}
	return nil
}

// stateless drops an empty state parameter from a redirect's query: an authorization request
// without state gets a response without one (RFC 6749 §4.1.2: state is returned when it was sent).
type stateless struct{ http.ResponseWriter }

func (w *stateless) WriteHeader(code int) {
	if loc := w.Header().Get("Location"); loc != "" {
		if u, err := url.Parse(loc); err == nil {
			if q := u.Query(); q.Has("state") && q.Get("state") == "" {
				q.Del("state")
				u.RawQuery = q.Encode()
				w.Header().Set("Location", u.String())
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Grant is a verified access token.
type Grant struct {
	RequestID string
	ClientID  string
	Workspace int64
	Mode      string
	KeyID     int64
	Scopes    []string
	Audience  []string
	ExpiresAt time.Time
}

// ErrInvalidToken is a token that is unknown, expired, revoked, or whose key is gone.
var ErrInvalidToken = errors.New("the access token is invalid, expired or revoked")

// IsAccessToken reports whether a bearer credential is one of this server's access tokens.
func IsAccessToken(tok string) bool { return strings.HasPrefix(tok, "ory_at_") }

// VerifyAccessToken checks an access token: its HMAC, that it is stored (not revoked), not
// expired, and that the key that approved it still exists unrotated.
func (s *Server) VerifyAccessToken(ctx context.Context, tok string) (*Grant, error) {
	sig := s.strategy.AccessTokenSignature(ctx, tok)
	if sig == "" {
		return nil, ErrInvalidToken
	}
	req, err := s.store.GetAccessTokenSession(ctx, sig, nil)
	if err != nil {
		return nil, ErrInvalidToken
	}
	if err := s.strategy.ValidateAccessToken(ctx, req, tok); err != nil {
		return nil, ErrInvalidToken
	}
	sess, _ := req.GetSession().(*Session)
	if s.checkKey(sess) != nil {
		return nil, ErrInvalidToken
	}
	return &Grant{RequestID: req.GetID(), ClientID: req.GetClient().GetID(), Workspace: sess.Workspace, Mode: sess.Mode,
		KeyID: sess.KeyID, Scopes: req.GetGrantedScopes(), Audience: req.GetGrantedAudience(),
		ExpiresAt: sess.GetExpiresAt(fosite.AccessToken)}, nil
}

// IsToken reports whether a bearer credential has the form of an access token (api.TokenVerifier).
func (s *Server) IsToken(tok string) bool { return IsAccessToken(tok) }

// Verify checks an access token for package api (api.TokenVerifier).
func (s *Server) Verify(ctx context.Context, tok string) (*api.TokenGrant, error) {
	g, err := s.VerifyAccessToken(ctx, tok)
	if err != nil {
		return nil, err
	}
	return &api.TokenGrant{ClientID: g.ClientID, KeyID: g.KeyID, Scopes: g.Scopes, Audience: g.Audience,
		ExpiresAt: g.ExpiresAt}, nil
}
