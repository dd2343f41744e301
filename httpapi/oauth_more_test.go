package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"flipbook/api"
	"flipbook/internal/testutil"
	"flipbook/mcp"
)

// noRedirect is an HTTP client that shows redirects instead of following them.
var noRedirect = &http.Client{Timeout: 20 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// codeFlow runs the authorization code flow for cfg with key and returns the tokens.
func codeFlow(t *testing.T, h *harness, cfg *oauth2.Config, key string, opts ...oauth2.AuthCodeOption) *oauth2.Token {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-"+oauth2.GenerateVerifier()[:12],
		append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, opts...)...)
	q := approve(t, h, authURL, key)
	require.NotEmpty(t, q.Get("code"), "%v", q)
	tok, err := cfg.Exchange(context.Background(), q.Get("code"), exchangeOpts(authURL, verifier)...)
	require.NoError(t, err)
	return tok
}

// exchangeOpts are a code exchange's options as MCP hosts send them: the PKCE verifier and the
// resource of the authorization request again (RFC 8707 §2.2; the MCP authorization spec
// requires it in both requests).
func exchangeOpts(authURL, verifier string) []oauth2.AuthCodeOption {
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}
	if u, err := url.Parse(authURL); err == nil {
		if res := u.Query().Get("resource"); res != "" {
			opts = append(opts, oauth2.SetAuthURLParam("resource", res))
		}
	}
	return opts
}

// refresh spends a refresh token.
func refresh(cfg *oauth2.Config, rt string) (*oauth2.Token, error) {
	return cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: rt, Expiry: time.Now().Add(-time.Minute)}).Token()
}

// keyID is the id of an API key (GET /me).
func keyID(t *testing.T, h *harness, key string) int64 {
	t.Helper()
	me := h.do(t, "GET", "/api/v1/me", key, nil)
	require.Equal(t, 200, me.Status, "%s", me.Body)
	return int64(me.data()["key"].(map[string]any)["id"].(float64))
}

// authorizeRefused opens an authorization URL and checks the server refused it outright: an
// error, no consent page (no form, no CSRF cookie) and no code.
func authorizeRefused(t *testing.T, authURL, want string) {
	t.Helper()
	res, err := noRedirect.Get(authURL)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.NotEqual(t, 200, res.StatusCode, "%s", body)
	require.NotContains(t, string(body), "csrf_token")
	for _, c := range res.Cookies() {
		require.NotEqual(t, "fb_oauth_csrf", c.Name, "no consent page")
	}
	if loc := res.Header.Get("Location"); loc != "" {
		u, err := url.Parse(loc)
		require.NoError(t, err)
		require.Empty(t, u.Query().Get("code"))
		require.Equal(t, want, u.Query().Get("error"), loc)
		return
	}
	require.Contains(t, string(body), want)
}

// cimdServer serves client metadata documents: path → document (nil: 404). It counts fetches.
type cimdServer struct {
	*httptest.Server
	mu      sync.Mutex
	docs    map[string]map[string]any
	fetches map[string]int
}

func newCIMDServer(t *testing.T, tls bool) *cimdServer {
	s := &cimdServer{docs: map[string]map[string]any{}, fetches: map[string]int{}}
	hf := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.fetches[r.URL.Path]++
		doc, ok := s.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
	if tls {
		s.Server = httptest.NewTLSServer(hf)
	} else {
		s.Server = httptest.NewServer(hf)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *cimdServer) set(path string, doc map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[path] = doc
}

func (s *cimdServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches[path]
}

func TestOAuthXClientMetadataDocument(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.AllowPrivateTargets = true })
	key, _ := h.workspaceKey(t, "company", "live", "books:read")
	rid := h.konva(t, h.workspace(t, "company", "live"), "other ws", "draft") // another workspace's book
	docs := newCIMDServer(t, false)
	id := docs.URL + "/oauth/client.json"
	redirect := "http://127.0.0.1:9/cb"
	docs.set("/oauth/client.json", map[string]any{"client_id": id, "client_name": "Metadata Host",
		"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
	endpoint := oauth2.Endpoint{AuthURL: h.base + "/oauth/authorize", TokenURL: h.base + "/oauth/token",
		AuthStyle: oauth2.AuthStyleInParams}

	// The whole code flow with the document's URL as client_id, without registration.
	cfg := &oauth2.Config{ClientID: id, RedirectURL: redirect, Endpoint: endpoint, Scopes: []string{"books:read"}}
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-cimd-1", oauth2.S256ChallengeOption(verifier))
	res, err := noRedirect.Get(authURL)
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, "%s", page)
	require.Contains(t, string(page), "Metadata Host", "the consent page names the document's client")
	q := approve(t, h, authURL, key)
	require.Equal(t, "state-cimd-1", q.Get("state"))
	tok, err := cfg.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	r := h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Empty(t, r.list(), "the key's workspace, not another")
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+rid, tok.AccessToken, nil).Status)
	require.Equal(t, 403, h.do(t, "DELETE", "/api/v1/books/"+rid, tok.AccessToken, nil).Status)
	tok2, err := refresh(cfg, tok.RefreshToken)
	require.NoError(t, err, "a document client refreshes like any public client")
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", tok2.AccessToken, nil).Status)
	require.Equal(t, 1, docs.count("/oauth/client.json"), "the document is fetched once and cached")

	// A metadata-document client is public: it cannot use client credentials.
	cc := &clientcredentials.Config{ClientID: id, ClientSecret: "x", TokenURL: h.base + "/oauth/token"}
	_, err = cc.Token(context.Background())
	require.Error(t, err)

	// Documents the server must refuse: another client_id, no redirect_uris, a 404, a
	// confidential auth method, a redirect_uri that is not its own.
	docs.set("/oauth/other.json", map[string]any{"client_id": docs.URL + "/oauth/client.json", "client_name": "Liar",
		"redirect_uris": []string{redirect}})
	docs.set("/oauth/noredirect.json", map[string]any{"client_id": docs.URL + "/oauth/noredirect.json", "client_name": "No redirect"})
	docs.set("/oauth/secret.json", map[string]any{"client_id": docs.URL + "/oauth/secret.json",
		"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "client_secret_basic"})
	docs.set("/oauth/badredirect.json", map[string]any{"client_id": docs.URL + "/oauth/badredirect.json",
		"redirect_uris": []string{"http://evil.example/cb"}})
	for _, p := range []string{"/oauth/other.json", "/oauth/noredirect.json", "/oauth/missing.json", "/oauth/secret.json", "/oauth/badredirect.json"} {
		bad := &oauth2.Config{ClientID: docs.URL + p, RedirectURL: redirect, Endpoint: endpoint}
		authorizeRefused(t, bad.AuthCodeURL("state-cimd-2", oauth2.S256ChallengeOption(verifier)), "invalid_client")
		require.Equal(t, 1, docs.count(p), p)
	}
	// The right document, but a redirect_uri it does not list: no redirect to it.
	evil := &oauth2.Config{ClientID: id, RedirectURL: "http://127.0.0.1:9/evil", Endpoint: endpoint}
	res, err = noRedirect.Get(evil.AuthCodeURL("state-cimd-3", oauth2.S256ChallengeOption(verifier)))
	require.NoError(t, err)
	res.Body.Close()
	require.NotEqual(t, 200, res.StatusCode)
	require.NotContains(t, res.Header.Get("Location"), "/evil")
}

func TestOAuthXClientMetadataDocumentSSRF(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil) // private targets not allowed (the default)
	docs := newCIMDServer(t, true)
	plain := newCIMDServer(t, false)
	redirect := "http://127.0.0.1:9/cb"
	for _, s := range []*cimdServer{docs, plain} {
		id := s.URL + "/client.json"
		s.set("/client.json", map[string]any{"client_id": id, "client_name": "Loopback", "redirect_uris": []string{redirect}})
		cfg := &oauth2.Config{ClientID: id, RedirectURL: redirect, Endpoint: oauth2.Endpoint{
			AuthURL: h.base + "/oauth/authorize", TokenURL: h.base + "/oauth/token"}}
		authorizeRefused(t, cfg.AuthCodeURL("state-ssrf-1", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "invalid_client")
		require.Zero(t, s.count("/client.json"), "%s: the guard refuses before anything is fetched", id)
		// Nor at the token endpoint.
		form := url.Values{"grant_type": {"authorization_code"}, "client_id": {id}, "code": {"x"}, "code_verifier": {oauth2.GenerateVerifier()},
			"redirect_uri": {redirect}}
		res, err := http.PostForm(h.base+"/oauth/token", form)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Contains(t, []int{400, 401}, res.StatusCode, "%s", body)
		require.Contains(t, string(body), "invalid_client")
		require.Zero(t, s.count("/client.json"))
	}
}

func TestOAuthXExpiredAccessToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.OAuthAccessTTL = 2 * time.Second })
	key, _ := h.workspaceKey(t, "company", "live", "books:read")
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	// fresh gets a token and checks it works at once, over REST and MCP (retried should a
	// loaded machine take the whole 2 s between issuing and using it, the MCP call included).
	fresh := func(get func() *oauth2.Token) *oauth2.Token {
		for i := 0; ; i++ {
			start := time.Now()
			tok := get()
			r := h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil)
			if r.Status == 200 {
				r = h.do(t, "POST", mcp.Path, tok.AccessToken, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
					"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18")
				if r.Status != 401 {
					return tok
				}
			}
			require.True(t, i < 3 && time.Since(start) > time.Second, "a fresh token: %d %s", r.Status, r.Body)
		}
	}
	tok := fresh(func() *oauth2.Token { return codeFlow(t, h, cfg, key) })
	require.LessOrEqual(t, time.Until(tok.Expiry), 2*time.Second, "expires_in is the configured lifetime")

	var r *resp
	testutil.Eventually(t, 15*time.Second, 10*time.Millisecond, func() error {
		r = h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil)
		if r.Status != 401 {
			return fmt.Errorf("the access token has not expired: GET /api/v1/books answers %d", r.Status)
		}
		return nil
	})
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `resource_metadata="`+h.base+`/.well-known/oauth-protected-resource/api/v1"`)
	m := h.do(t, "POST", mcp.Path, tok.AccessToken, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
		"Accept", "application/json, text/event-stream")
	require.Equal(t, 401, m.Status)
	require.Contains(t, m.Header.Get("WWW-Authenticate"), `error="invalid_token"`)

	// The refresh token outlives it: refreshing still works, and rotates.
	rt := tok.RefreshToken
	tok2 := fresh(func() *oauth2.Token {
		t2, err := refresh(cfg, rt)
		require.NoError(t, err)
		require.NotEqual(t, rt, t2.RefreshToken)
		rt = t2.RefreshToken
		return t2
	})
	require.NotEqual(t, tok.AccessToken, tok2.AccessToken)
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status, "the old one stays dead")
}

func TestOAuthXRevokedKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "books:read")
	other := h.key(t, ws, "live", "books:read") // another key of the workspace: its grants live on
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	tok := codeFlow(t, h, cfg, key)
	otherTok := codeFlow(t, h, cfg, other)
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status)

	d := h.adminDo(t, "DELETE", "/keys/"+itoa(keyID(t, h, key)), nil)
	require.Contains(t, []int{200, 204}, d.Status, "%s", d.Body)
	r := h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil)
	require.Equal(t, 401, r.Status, "%s", r.Body)
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	m := h.do(t, "POST", mcp.Path, tok.AccessToken, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
		"Accept", "application/json, text/event-stream")
	require.Equal(t, 401, m.Status)
	_, err := refresh(cfg, tok.RefreshToken)
	require.Error(t, err)
	require.Equal(t, "invalid_grant", oauthErr(err))
	// The key cannot approve new grants either.
	res, err := approveStatus(t, h, cfg, key)
	require.NoError(t, err)
	require.Equal(t, 401, res)

	// The other key's grant is untouched.
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", otherTok.AccessToken, nil).Status)
	_, err = refresh(cfg, otherTok.RefreshToken)
	require.NoError(t, err)
}

// consentForm opens a consent page with a fresh cookie jar and returns the client (holding
// the page's CSRF cookie) and the page's form values.
func consentForm(t *testing.T, h *harness, authURL string) (*http.Client, url.Values) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return c, pageForm(t, c, authURL)
}

// pageForm loads a consent page with c and returns its form values.
func pageForm(t *testing.T, c *http.Client, authURL string) url.Values {
	t.Helper()
	res, err := c.Get(authURL)
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, "%s", page)
	form := url.Values{}
	for _, m := range hiddenRe.FindAllStringSubmatch(string(page), -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	require.NotEmpty(t, form.Get("csrf_token"))
	return form
}

// approveStatus opens a consent page and submits key; it returns the POST's status.
func approveStatus(t *testing.T, h *harness, cfg *oauth2.Config, key string) (int, error) {
	t.Helper()
	c, form := consentForm(t, h, cfg.AuthCodeURL("state-approve", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	form.Set("api_key", key)
	form.Set("decision", "approve")
	res, err := c.PostForm(h.base+"/oauth/authorize", form)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

func TestOAuthXRevokedRefreshToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "books:read")
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	tok := codeFlow(t, h, cfg, key)
	// A second grant of the same client and key is another family: it survives.
	keep := codeFlow(t, h, cfg, key)
	// A refreshed access token of the family dies with it too.
	tok2, err := refresh(cfg, tok.RefreshToken)
	require.NoError(t, err)
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", tok2.AccessToken, nil).Status)

	rev := func(token, hint string) {
		res, err := http.PostForm(h.base+"/oauth/revoke", url.Values{"token": {token}, "token_type_hint": {hint}, "client_id": {cfg.ClientID}})
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
	}
	rev(tok2.RefreshToken, "refresh_token")
	r := h.do(t, "GET", "/api/v1/books", tok2.AccessToken, nil)
	require.Equal(t, 401, r.Status, "the refresh token's access tokens die too")
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	_, err = refresh(cfg, tok2.RefreshToken)
	require.Equal(t, "invalid_grant", oauthErr(err))
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", keep.AccessToken, nil).Status, "another grant lives on")

	// Revoking an unknown or already revoked token answers 200 (RFC 7009 §2.2).
	rev(tok2.RefreshToken, "refresh_token")
	rev("ory_rt_unknown.unknown", "refresh_token")
	// Another client cannot revoke this client's token.
	cfg2 := oauthClient(t, h, "http://127.0.0.1:9/cb2")
	res, err := http.PostForm(h.base+"/oauth/revoke", url.Values{"token": {keep.AccessToken}, "client_id": {cfg2.ClientID}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", keep.AccessToken, nil).Status, "not revoked by another client")
	// Revoking an access token (without hint) ends its grant: fosite revokes the refresh token
	// issued with it as well (RFC 7009 §2.1 allows it).
	rev(keep.AccessToken, "")
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", keep.AccessToken, nil).Status)
	_, err = refresh(cfg, keep.RefreshToken)
	require.Equal(t, "invalid_grant", oauthErr(err))
}

func TestOAuthXRegistrationValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, c := range []struct {
		name string
		body any
		code string
	}{
		{"no redirect_uris", map[string]any{"client_name": "x"}, "invalid_redirect_uri"},
		{"empty redirect_uris", map[string]any{"client_name": "x", "redirect_uris": []string{}}, "invalid_redirect_uri"},
		{"http not on loopback", map[string]any{"redirect_uris": []string{"http://example.com/cb"}}, "invalid_redirect_uri"},
		{"one bad of two", map[string]any{"redirect_uris": []string{"https://example.com/cb", "http://10.0.0.1/cb"}}, "invalid_redirect_uri"},
		{"fragment", map[string]any{"redirect_uris": []string{"https://example.com/cb#x"}}, "invalid_redirect_uri"},
		{"relative", map[string]any{"redirect_uris": []string{"/cb"}}, "invalid_redirect_uri"},
		{"javascript", map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
		{"not JSON", "redirect_uris=x", "invalid_client_metadata"},
		{"long name", map[string]any{"client_name": strings.Repeat("n", 256), "redirect_uris": []string{"https://example.com/cb"}}, "invalid_client_metadata"},
	} {
		r := h.do(t, "POST", "/oauth/register", "", c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, c.code, r.JSON["error"], c.name)
		require.NotEmpty(t, r.JSON["error_description"], c.name)
	}
	// A confidential method asked for without a key (claude.ai asks for client_secret_post):
	// registered as the public client it is, the answer says so (RFC 7591 §3.2.1).
	for _, m := range []string{"client_secret_basic", "client_secret_post", "private_key_jwt"} {
		r := h.do(t, "POST", "/oauth/register", "", map[string]any{"redirect_uris": []string{"https://claude.ai/api/mcp/auth_callback"},
			"token_endpoint_auth_method": m, "client_name": "Claude " + m})
		require.Equal(t, 201, r.Status, "%s: %s", m, r.Body)
		require.Equal(t, "none", r.JSON["token_endpoint_auth_method"], m)
		require.Nil(t, r.JSON["client_secret"], m)
	}
	// What is accepted: https, http on loopback (RFC 8252), a native app's scheme.
	for _, u := range []string{"https://example.com/cb", "http://localhost:8080/cb", "http://127.0.0.1/cb", "http://[::1]:3000/cb", "com.example.app:/oauth"} {
		r := h.do(t, "POST", "/oauth/register", "", map[string]any{"redirect_uris": []string{u}})
		require.Equal(t, 201, r.Status, "%s: %s", u, r.Body)
		require.Equal(t, "none", r.JSON["token_endpoint_auth_method"])
		require.Nil(t, r.JSON["client_secret"], "public clients get no secret")
		require.ElementsMatch(t, []any{"authorization_code", "refresh_token"}, r.JSON["grant_types"])
	}
	// A public client asking for client_credentials without a key is refused (401: the key is
	// the credential).
	r := h.do(t, "POST", "/oauth/register", "", map[string]any{"grant_types": []string{"client_credentials"}})
	require.Equal(t, 401, r.Status)
}

func TestOAuthXMetadata(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	as := h.do(t, "GET", "/.well-known/oauth-authorization-server", "", nil)
	require.Equal(t, 200, as.Status)
	m := as.JSON
	require.Equal(t, h.base, m["issuer"])
	require.Equal(t, h.base+"/oauth/authorize", m["authorization_endpoint"])
	require.Equal(t, h.base+"/oauth/token", m["token_endpoint"])
	require.Equal(t, h.base+"/oauth/register", m["registration_endpoint"])
	require.Equal(t, h.base+"/oauth/revoke", m["revocation_endpoint"])
	require.ElementsMatch(t, []any{"authorization_code", "refresh_token", "client_credentials"}, m["grant_types_supported"])
	require.Equal(t, []any{"S256"}, m["code_challenge_methods_supported"])
	require.Equal(t, []any{"code"}, m["response_types_supported"])
	require.Equal(t, true, m["client_id_metadata_document_supported"])
	require.Contains(t, m["token_endpoint_auth_methods_supported"], "none")
	var scopes []string
	for _, s := range m["scopes_supported"].([]any) {
		scopes = append(scopes, s.(string))
	}
	require.ElementsMatch(t, api.Scopes, scopes)
	require.Equal(t, "no-store", as.Header.Get("Cache-Control"))
	// The same document where OpenID clients look, and under the issuer's path (RFC 8414 §3.1).
	for _, p := range []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server/"} {
		o := h.do(t, "GET", p, "", nil)
		require.Equal(t, 200, o.Status, p)
		require.Equal(t, m, o.JSON, p)
	}

	// The protected resources (RFC 9728): the path after the well-known prefix names the resource.
	for path, res := range map[string]string{
		"/.well-known/oauth-protected-resource/api/v1":          h.base + APIBase,
		"/.well-known/oauth-protected-resource/mcp/public-api":  h.base + mcp.Path,
		"/.well-known/oauth-protected-resource":                 h.base + mcp.Path,
		"/.well-known/oauth-protected-resource/mcp/public-api/": "",
	} {
		r := h.do(t, "GET", path, "", nil)
		if res == "" {
			require.Equal(t, 404, r.Status, path)
			continue
		}
		require.Equal(t, 200, r.Status, path)
		require.Equal(t, res, r.JSON["resource"], path)
		require.Equal(t, []any{h.base}, r.JSON["authorization_servers"], path)
		require.Equal(t, []any{"header"}, r.JSON["bearer_methods_supported"], path)
		require.NotEmpty(t, r.JSON["scopes_supported"], path)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource/nope", "/.well-known/oauth-protected-resource/api/v2",
		"/.well-known/oauth-protected-resource/api/v1/books"} {
		r := h.do(t, "GET", p, "", nil)
		require.Equal(t, 404, r.Status, p)
		require.NotEmpty(t, r.JSON["error"], p)
	}
	// Each resource's 401 names its own metadata document.
	r := h.do(t, "GET", "/api/v1/books", "", nil)
	require.Equal(t, `Bearer resource_metadata="`+h.base+`/.well-known/oauth-protected-resource/api/v1"`, r.Header.Get("WWW-Authenticate"))
	r = h.do(t, "POST", mcp.Path, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
		"Accept", "application/json, text/event-stream")
	require.Equal(t, 401, r.Status)
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `resource_metadata="`+h.base+`/.well-known/oauth-protected-resource/mcp/public-api"`)
}

// scopedCreds are an API key with exactly some scopes and two access tokens approved by it,
// holding exactly those scopes: one issued for the REST API, one for the MCP endpoint.
type scopedCreds struct {
	key, rest, mcp string
	grant          string // how the tokens were obtained
}

// credMaker makes scopedCreds, once per scope set, for keys of one workspace. Tokens come from
// a client-credentials client registered with the key for the scope sets in cc, and from the
// authorization code flow of a public client approved with the key for the others (client
// secrets are bcrypt hashes: a client-credentials token costs seconds under the race detector).
type credMaker struct {
	h     *harness
	ws    int64
	pub   *oauth2.Config
	cc    map[string]bool
	cache map[string]*scopedCreds
}

func newCredMaker(t *testing.T, h *harness, ws int64, ccSets ...string) *credMaker {
	m := &credMaker{h: h, ws: ws, pub: oauthClient(t, h, "http://127.0.0.1:9/cb"), cc: map[string]bool{},
		cache: map[string]*scopedCreds{}}
	for _, s := range ccSets {
		m.cc[s] = true
	}
	return m
}

func (m *credMaker) get(t *testing.T, scopes ...string) *scopedCreds {
	t.Helper()
	h := m.h
	scopes = slices.Clone(scopes)
	slices.Sort(scopes)
	id := strings.Join(scopes, " ")
	if c := m.cache[id]; c != nil {
		return c
	}
	key := h.key(t, m.ws, "live", scopes...)
	var tokenFor func(resource string) *oauth2.Token
	grant := "authorization_code"
	if m.cc[id] {
		grant = "client_credentials"
		r := h.do(t, "POST", "/oauth/register", key, map[string]any{"client_name": "cc " + id,
			"grant_types": []string{"client_credentials"}, "scope": id})
		require.Equal(t, 201, r.Status, "%s", r.Body)
		require.Equal(t, id, r.JSON["scope"])
		cc := &clientcredentials.Config{ClientID: r.JSON["client_id"].(string), ClientSecret: r.JSON["client_secret"].(string),
			TokenURL: h.base + "/oauth/token", Scopes: scopes}
		tokenFor = func(resource string) *oauth2.Token {
			c := *cc
			c.EndpointParams = url.Values{"resource": {resource}}
			tok, err := c.Token(context.Background())
			require.NoError(t, err, id)
			return tok
		}
	} else {
		tokenFor = func(resource string) *oauth2.Token {
			cfg := *m.pub
			cfg.Scopes = scopes
			return codeFlow(t, h, &cfg, key, oauth2.SetAuthURLParam("resource", resource))
		}
	}
	rest, mcpTok := tokenFor(h.base+APIBase), tokenFor(h.base+mcp.Path)
	for _, tok := range []*oauth2.Token{rest, mcpTok} {
		require.Equal(t, id, tok.Extra("scope"), "the token holds exactly the scopes asked")
	}
	c := &scopedCreds{key: key, rest: rest.AccessToken, mcp: mcpTok.AccessToken, grant: grant}
	m.cache[id] = c
	return c
}

// dummyPath fills an operation's path values with values that exist nowhere.
func dummyPath(op *api.Operation) string {
	path := op.Base + op.Path
	for _, p := range op.Params {
		if p.In != api.InPath {
			continue
		}
		v := "nope"
		if p.Kind == api.KInt {
			v = "1"
		}
		path = strings.ReplaceAll(path, "{"+p.Name+"}", v)
	}
	return path
}

// dummyArgs are a tool's required path arguments with such values.
func dummyArgs(op *api.Operation) map[string]any {
	args := map[string]any{}
	for _, p := range op.Params {
		if p.In != api.InPath {
			continue
		}
		if p.Kind == api.KInt {
			args[p.ArgName()] = 1
		} else {
			args[p.ArgName()] = "nope"
		}
	}
	return args
}

// otherScope is a scope an operation does not need.
func otherScope(op *api.Operation) string {
	for _, s := range api.Scopes {
		if s != op.Scope && s != op.AlsoScope {
			return s
		}
	}
	panic("no other scope")
}

// TestOAuthXTokenScopesMatchKeys checks, for every public operation that needs a scope, that a
// token holding exactly that scope is authorized like a key with that scope (same status, never
// 401/403), and that a token without it is refused exactly when such a key is.
func TestOAuthXTokenScopesMatchKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	_, ws := h.workspaceKey(t, "company", "live", "books:read") // company: every plan-gated operation is allowed
	// Client-credentials tokens for a Company-plan scope and the two scopes of a catalog render;
	// code-flow tokens for the others.
	creds := newCredMaker(t, h, ws, "analytics:read", "books:write catalogs:read")
	cache := creds.cache
	n, multipart := 0, 0
	statuses := map[int]int{}
	scopesSeen := map[string]bool{}
	for _, op := range h.svc.Operations() {
		if op.Base != APIBase || op.Internal || op.Scope == "" {
			continue
		}
		n++
		if op.Multipart {
			multipart++ // sent like the others: no body, so no Content-Type (the answer is a 4xx either way)
		}
		scopesSeen[op.Scope] = true
		need := []string{op.Scope}
		if op.AlsoScope != "" {
			need = append(need, op.AlsoScope)
		}
		path := dummyPath(op)
		with := creds.get(t, need...)
		kr := h.do(t, op.Method, path, with.key, nil)
		tr := h.do(t, op.Method, path, with.rest, nil)
		require.NotContains(t, []int{401, 403}, kr.Status, "%s with key %v: %s", op.ID, need, kr.Body)
		require.Equal(t, kr.Status, tr.Status, "%s %s (%s token): token %s / key %s", op.ID, path, with.grant, tr.Body, kr.Body)
		require.Equal(t, kr.errType(), tr.errType(), op.ID)
		statuses[kr.Status]++

		without := creds.get(t, otherScope(op))
		kr = h.do(t, op.Method, path, without.key, nil)
		tr = h.do(t, op.Method, path, without.rest, nil)
		require.Equal(t, 403, kr.Status, "%s: %s", op.ID, kr.Body)
		require.Equal(t, kr.Status, tr.Status, "%s: token %s / key %s", op.ID, tr.Body, kr.Body)
		require.Equal(t, api.TypeMissingScope, tr.errType(), op.ID)
		require.Equal(t, `Bearer error="insufficient_scope", scope="`+op.Scope+`", resource_metadata="`+h.base+`/.well-known/oauth-protected-resource/api/v1"`,
			tr.Header.Get("WWW-Authenticate"), op.ID)
		if op.AlsoScope != "" { // one of the two scopes is not enough
			for _, s := range []string{op.Scope, op.AlsoScope} {
				half := creds.get(t, s)
				kr = h.do(t, op.Method, path, half.key, nil)
				tr = h.do(t, op.Method, path, half.rest, nil)
				require.Equal(t, 403, kr.Status, "%s with %s only", op.ID, s)
				require.Equal(t, 403, tr.Status, "%s with %s only", op.ID, s)
				require.Equal(t, kr.errType(), tr.errType(), op.ID)
				require.Equal(t, kr.JSON["error"].(map[string]any)["required_scope"], tr.JSON["error"].(map[string]any)["required_scope"], op.ID)
			}
		}
		// The REST token is bound to the REST API, the MCP one is refused here.
		mr := h.do(t, op.Method, path, with.mcp, nil)
		require.Equal(t, 401, mr.Status, "%s: a token for the MCP endpoint", op.ID)
	}
	require.GreaterOrEqual(t, n, 60, "public operations with a scope")
	var unused []string
	for _, s := range api.Scopes {
		if !scopesSeen[s] {
			unused = append(unused, s)
		}
	}
	t.Logf("scopes no public operation needs: %v", unused)
	t.Logf("%d operations (%d multipart, sent without a body), %d scope sets; statuses with the scope: %v", n, multipart, len(cache), statuses)

	// The same for the MCP tools: a token issued for the MCP resource with the tool's scope.
	sessions := map[string]*sdk.ClientSession{}
	session := func(cred string) *sdk.ClientSession {
		if s := sessions[cred]; s != nil {
			return s
		}
		s := h.mcpSession(t, cred, "2025-11-25")
		sessions[cred] = s
		return s
	}
	// missing runs a tool and reports whether it was refused for a missing scope.
	missing := func(cred string, op *api.Operation) (bool, string) {
		res, err := session(cred).CallTool(context.Background(), &sdk.CallToolParams{Name: op.Tool, Arguments: dummyArgs(op)})
		if err != nil {
			return false, "rpc: " + err.Error()
		}
		require.NotEmpty(t, res.Content, op.Tool)
		text := res.Content[0].(*sdk.TextContent).Text
		var out map[string]any
		_ = json.Unmarshal([]byte(text), &out)
		if !res.IsError {
			return false, "ok"
		}
		return toolErrType(out) == api.TypeMissingScope, toolErrType(out)
	}
	tools := 0
	answers := map[string]int{}
	for _, op := range h.svc.Operations() {
		if op.Tool == "" || op.Scope == "" {
			continue
		}
		tools++
		need := []string{op.Scope}
		if op.AlsoScope != "" {
			need = append(need, op.AlsoScope)
		}
		with := creds.get(t, need...)
		km, kt := missing(with.key, op)
		tm, tt := missing(with.mcp, op)
		require.False(t, km, "%s with key %v", op.Tool, need)
		require.Equal(t, km, tm, op.Tool)
		require.Equal(t, kt, tt, "%s: the same answer", op.Tool)
		answers[kt]++
		without := creds.get(t, otherScope(op))
		km, kt = missing(without.key, op)
		tm, tt = missing(without.mcp, op)
		require.True(t, km, "%s: %s", op.Tool, kt)
		require.Equal(t, km, tm, "%s: %s", op.Tool, tt)
	}
	require.GreaterOrEqual(t, tools, 45)
	t.Logf("%d tools; answers with the scope: %v", tools, answers)
	// A REST token is refused by the MCP endpoint as a whole.
	for _, c := range cache {
		r := h.do(t, "POST", mcp.Path, c.rest, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
			"Accept", "application/json, text/event-stream")
		require.Equal(t, 401, r.Status)
		require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
		break
	}
}
