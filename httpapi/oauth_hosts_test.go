package httpapi

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"flipbook/mcp"
)

var mcpAccept = []string{"Accept", "application/json, text/event-stream"}

// What MCP hosts do that plain OAuth clients may not (docs/OAUTH.md "MCP hosts").

// TestOAuthXNoState: an authorization request without state (the TypeScript SDK's, unless its
// host supplies one) is accepted with PKCE; the redirect carries no state.
func TestOAuthXNoState(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "books:read")
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", h.base+mcp.Path))
	require.NotContains(t, authURL, "state=")
	q := approve(t, h, authURL, key)
	require.NotEmpty(t, q.Get("code"), "%v", q)
	_, has := q["state"]
	require.False(t, has, "no state sent, none returned: %v", q)
	tok, err := cfg.Exchange(context.Background(), q.Get("code"), exchangeOpts(authURL, verifier)...)
	require.NoError(t, err)
	m := h.do(t, "POST", mcp.Path, tok.AccessToken, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, mcpAccept...)
	require.Equal(t, 200, m.Status, "%s", m.Body)

	// Errors redirected to the client carry no empty state either.
	res, err := noRedirect.Get(cfg.AuthCodeURL("", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", h.base+"/nope")))
	require.NoError(t, err)
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "invalid_target", loc.Query().Get("error"))
	_, has = loc.Query()["state"]
	require.False(t, has, loc.String())
	// PKCE stays required without state.
	authorizeRefused(t, cfg.AuthCodeURL(""), "invalid_request")
	// A state that is sent is still held to 8 characters at least.
	authorizeRefused(t, cfg.AuthCodeURL("short", oauth2.S256ChallengeOption(verifier)), "invalid_state")
}

// tokenForm posts to the token endpoint and returns the status and decoded answer.
func tokenForm(t *testing.T, h *harness, form url.Values) (int, map[string]any) {
	t.Helper()
	r := h.do(t, "POST", "/oauth/token", "", form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	return r.Status, r.JSON
}

// TestOAuthXResourceAndRefresh: resource on the code exchange and on refresh (RFC 8707), as
// hosts write it (trailing slash, case of the host), and refresh scopes (RFC 6749 §6).
func TestOAuthXResourceAndRefresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "books:read", "books:write")
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	cfg.Scopes = []string{"books:read"}
	mcpRes := h.base + mcp.Path
	// Written differently, the same resource: an upper-case scheme, a trailing slash.
	variant := "HTTP://" + strings.TrimPrefix(h.base, "http://") + mcp.Path + "/"
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-resource-1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", mcpRes+"/"))
	q := approve(t, h, authURL, key)
	tok, err := cfg.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", variant))
	require.NoError(t, err, "the granted resource, written another way")
	require.Equal(t, "books:read", tok.Extra("scope"))
	m := h.do(t, "POST", mcp.Path, tok.AccessToken, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, mcpAccept...)
	require.Equal(t, 200, m.Status, "%s", m.Body)
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status, "issued for the MCP endpoint only")

	refreshForm := func(rt string, kv ...string) url.Values {
		f := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {cfg.ClientID}}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Add(kv[i], kv[i+1])
		}
		return f
	}
	rt := tok.RefreshToken
	// Refused refreshes spend nothing: another resource, a resource with a fragment, a scope
	// outside the grant (RFC 6749 §6: invalid_scope, not a narrower token).
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"resource", h.base + APIBase}, "invalid_target"},
		{[]string{"resource", mcpRes + "#x"}, "invalid_target"},
		{[]string{"resource", "https://elsewhere.example/mcp/public-api"}, "invalid_target"},
		{[]string{"scope", "books:write"}, "invalid_scope"},
		{[]string{"scope", "books:read books:write"}, "invalid_scope"},
		{[]string{"scope", "admin:everything"}, "invalid_scope"},
	} {
		st, body := tokenForm(t, h, refreshForm(rt, c.kv...))
		require.Equal(t, 400, st, "%v: %v", c.kv, body)
		require.Equal(t, c.want, body["error"], "%v: %v", c.kv, body)
	}
	// The granted resource (as the SDK sends it) and the grant's scope: new tokens.
	st, body := tokenForm(t, h, refreshForm(rt, "resource", mcpRes, "scope", "books:read"))
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "books:read", body["scope"])
	rt = body["refresh_token"].(string)
	// Without resource or scope: the grant's.
	st, body = tokenForm(t, h, refreshForm(rt))
	require.Equal(t, 200, st, "%v", body)
	at := body["access_token"].(string)
	m = h.do(t, "POST", mcp.Path, at, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, mcpAccept...)
	require.Equal(t, 200, m.Status, "%s", m.Body)
}

// TestOAuthXLoopbackRedirects: a loopback redirect is registered without (or with) a port and
// used on any port (RFC 8252 §7.3), localhost included; nothing else about it may differ.
func TestOAuthXLoopbackRedirects(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "books:read")
	for _, reg := range []string{"http://localhost/callback", "http://localhost:33418/callback", "http://127.0.0.1/callback", "http://[::1]:8/callback"} {
		cfg := oauthClient(t, h, reg)
		u, _ := url.Parse(reg)
		host := u.Hostname()
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		cfg.RedirectURL = "http://" + host + ":51234/callback"
		tok := codeFlow(t, h, cfg, key, oauth2.SetAuthURLParam("resource", h.base+APIBase))
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status, reg)
		verifier := oauth2.GenerateVerifier()
		for _, bad := range []string{
			"http://" + host + ":51234/other",        // another path
			"http://" + host + ":51234/callback?x=1", // another query
			"https://" + host + ":51234/callback",    // another scheme
			"http://evil.example:51234/callback",     // not loopback
			"http://" + host + ".evil.example/callback",
		} {
			c := *cfg
			c.RedirectURL = bad
			res, err := noRedirect.Get(c.AuthCodeURL("state-loopback", oauth2.S256ChallengeOption(verifier)))
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			require.NotEqual(t, http.StatusOK, res.StatusCode, "%s → %s: %s", reg, bad, body)
			require.NotContains(t, res.Header.Get("Location"), "evil", bad)
			require.False(t, strings.HasPrefix(res.Header.Get("Location"), bad), "%s → %s", reg, bad)
		}
	}
	// VS Code registers http://127.0.0.1:33418 (no path) and may come back to its root.
	vs := oauthClient(t, h, "http://127.0.0.1:33418")
	vs.RedirectURL = "http://127.0.0.1:33418/"
	tok := codeFlow(t, h, vs, key, oauth2.SetAuthURLParam("resource", h.base+APIBase))
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status)

	// localhost and 127.0.0.1 are not each other; an https registration is not an http
	// redirect on another port (fosite's own loopback matching ignores the registered scheme,
	// so a code could go in clear: found by a review), and is still itself.
	for reg, asked := range map[string]string{
		"http://localhost/cb-only":     "http://127.0.0.1:4000/cb-only",
		"https://127.0.0.1/callback":   "http://127.0.0.1:51234/callback",
		"https://127.0.0.2:9/callback": "http://127.0.0.2:9/callback",
		"https://[::1]/callback":       "http://[::1]:51234/callback",
	} {
		cfg := oauthClient(t, h, reg)
		cfg.RedirectURL = asked
		res, err := noRedirect.Get(cfg.AuthCodeURL("state-loopback", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.NotEqual(t, http.StatusOK, res.StatusCode, "%s → %s: %.200s", reg, asked, body)
		require.False(t, strings.HasPrefix(res.Header.Get("Location"), "http://"), "%s → %s", reg, asked)
	}
	cfg := oauthClient(t, h, "https://127.0.0.1/callback")
	res, err := noRedirect.Get(cfg.AuthCodeURL("state-loopback", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "the registered https redirect itself")
}

// TestOAuthXRegistrationAnswer: the RFC 7591 answer hosts read and store, and registering the
// same metadata again (hosts do on every connection) names the same client.
func TestOAuthXRegistrationAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	meta := map[string]any{"client_name": "Claude", "client_uri": "https://claude.ai",
		"redirect_uris": []string{"https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback"},
		"grant_types":   []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none", "scope": "books:read"}
	r := h.do(t, "POST", "/oauth/register", "", meta)
	require.Equal(t, 201, r.Status, "%s", r.Body)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	id := r.JSON["client_id"].(string)
	issued := r.JSON["client_id_issued_at"]
	require.NotNil(t, issued)
	require.Equal(t, "Claude", r.JSON["client_name"])
	require.Equal(t, "https://claude.ai", r.JSON["client_uri"])
	require.Equal(t, []any{"https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback"}, r.JSON["redirect_uris"])
	require.Equal(t, []any{"authorization_code", "refresh_token"}, r.JSON["grant_types"])
	require.Equal(t, []any{"code"}, r.JSON["response_types"])
	require.Equal(t, "none", r.JSON["token_endpoint_auth_method"])
	require.NotContains(t, r.JSON, "client_secret", "a public client has no secret")
	require.NotContains(t, r.JSON, "client_secret_expires_at")
	for k, v := range r.JSON {
		require.NotNil(t, v, "%s is null (the TypeScript SDK's schema refuses null fields)", k)
		require.NotEqual(t, "", v, "%s is empty", k)
	}

	// Again, as a host does on its next connection: the same client, as first registered.
	r2 := h.do(t, "POST", "/oauth/register", "", meta)
	require.Equal(t, 201, r2.Status, "%s", r2.Body)
	require.Equal(t, id, r2.JSON["client_id"])
	require.Equal(t, issued, r2.JSON["client_id_issued_at"])
	// Other metadata is another client: another redirect URI, another name.
	other := map[string]any{"client_name": "Claude", "redirect_uris": []string{"https://evil.example/cb"}}
	r3 := h.do(t, "POST", "/oauth/register", "", other)
	require.Equal(t, 201, r3.Status, "%s", r3.Body)
	require.NotEqual(t, id, r3.JSON["client_id"])
	require.NotContains(t, r3.JSON, "client_uri", "left out, not empty")
	other["client_name"] = "Claude 2"
	require.NotEqual(t, r3.JSON["client_id"], h.do(t, "POST", "/oauth/register", "", other).JSON["client_id"])
	// A minimal registration (redirect_uris only) gets the defaults.
	r4 := h.do(t, "POST", "/oauth/register", "", map[string]any{"redirect_uris": []string{"cursor://anysphere.cursor-retrieval/oauth/user-x/callback"}})
	require.Equal(t, 201, r4.Status, "%s", r4.Body)
	require.Equal(t, []any{"authorization_code", "refresh_token"}, r4.JSON["grant_types"])
	require.NotContains(t, r4.JSON, "client_name")

	// The custom-scheme redirect (Cursor) works through the consent.
	key, _ := h.workspaceKey(t, "company", "live", "books:read")
	cfg := &oauth2.Config{ClientID: r4.JSON["client_id"].(string), RedirectURL: "cursor://anysphere.cursor-retrieval/oauth/user-x/callback",
		Endpoint: oauth2.Endpoint{AuthURL: h.base + "/oauth/authorize", TokenURL: h.base + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	tok := codeFlow(t, h, cfg, key, oauth2.SetAuthURLParam("resource", h.base+APIBase))
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status)
}

// TestOAuthXNarrowerKey: a host asking for every scope (SEP-835) approved with a key holding
// fewer gets the overlap, and the token answer says which; a key with none of them is refused
// on the consent page.
func TestOAuthXNarrowerKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "books:read")
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	cfg.Scopes = []string{"books:read", "books:write", "analytics:read"}
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-narrow", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", h.base+APIBase))
	q := approve(t, h, authURL, key)
	require.NotEmpty(t, q.Get("code"), "%v", q)
	tok, err := cfg.Exchange(context.Background(), q.Get("code"), exchangeOpts(authURL, verifier)...)
	require.NoError(t, err)
	require.Equal(t, "books:read", tok.Extra("scope"), "the answer names the scopes granted")
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status)
	r := h.do(t, "POST", "/api/v1/books/konva", tok.AccessToken, konvaBody("x", "draft", 1))
	require.Equal(t, 403, r.Status, "%s", r.Body)

	// A key with nothing asked for: the consent page refuses it and stays.
	other, _ := h.workspaceKey(t, "company", "live", "subscribers:read")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(authURL)
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	form := url.Values{}
	for _, m := range hiddenRe.FindAllStringSubmatch(string(page), -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	form.Set("api_key", other)
	form.Set("decision", "approve")
	res, err = c.PostForm(h.base+"/oauth/authorize", form)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 403, res.StatusCode, "%s", body)
	require.Contains(t, string(body), "none of the scopes")
}
