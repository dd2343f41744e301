package httpapi

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"flipbook/mcp"
)

// oauthClient registers a public client (Dynamic Client Registration) and returns its config.
func oauthClient(t *testing.T, h *harness, redirect string) *oauth2.Config {
	t.Helper()
	r := h.do(t, "POST", "/oauth/register", "", map[string]any{"client_name": "Test host", "redirect_uris": []string{redirect}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	return &oauth2.Config{ClientID: r.JSON["client_id"].(string), RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: h.base + "/oauth/authorize", TokenURL: h.base + "/oauth/token",
			AuthStyle: oauth2.AuthStyleInParams}}
}

var (
	hiddenRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// approve opens the consent page of authURL, approves with key and returns the redirect's query.
func approve(t *testing.T, h *harness, authURL, key string) url.Values {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(authURL)
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, "%s %s", page, res.Header.Get("Location"))
	require.Contains(t, res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	form := url.Values{}
	for _, m := range hiddenRe.FindAllStringSubmatch(string(page), -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	require.NotEmpty(t, form.Get("csrf_token"))
	form.Set("api_key", key)
	form.Set("decision", "approve")
	res, err = c.PostForm(h.base+"/oauth/authorize", form)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, []int{302, 303}, res.StatusCode, "%s", body)
	loc, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	return loc.Query()
}

func oauthErr(err error) string {
	var re *oauth2.RetrieveError
	if e, ok := err.(*oauth2.RetrieveError); ok {
		re = e
		return re.ErrorCode
	}
	return ""
}

func TestOAuthAuthorizationCodeFlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "books:read", "books:write")
	rid := h.konva(t, key, "oauth book", "draft")
	ctx := context.Background()

	// Discovery: a 401 names the resource metadata, which names the authorization server.
	r := h.do(t, "GET", "/api/v1/books", "", nil)
	require.Equal(t, 401, r.Status)
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `resource_metadata="`+h.base+`/.well-known/oauth-protected-resource/api/v1"`)
	prm := h.do(t, "GET", "/.well-known/oauth-protected-resource/mcp/public-api", "", nil)
	require.Equal(t, 200, prm.Status)
	require.Equal(t, h.base+mcp.Path, prm.JSON["resource"])
	as := h.do(t, "GET", "/.well-known/oauth-authorization-server", "", nil)
	require.Equal(t, 200, as.Status)
	require.Equal(t, []any{"S256"}, as.JSON["code_challenge_methods_supported"])

	cfg := oauthClient(t, h, "http://127.0.0.1:9/callback")
	cfg.Scopes = []string{"books:read"}
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-1234", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", h.base+APIBase))
	q := approve(t, h, authURL, key)
	require.Equal(t, "state-1234", q.Get("state"))
	code := q.Get("code")
	require.NotEmpty(t, code)

	// A wrong verifier is refused; the right one gets tokens; the code cannot be used twice.
	_, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier()))
	require.Error(t, err)
	require.Equal(t, "invalid_grant", oauthErr(err))
	// The code exchange names the resource again (RFC 8707 §2.2, as MCP hosts do): another
	// resource than the grant's is refused (and spends nothing), the granted one succeeds.
	q = approve(t, h, authURL, key)
	_, err = cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", h.base+mcp.Path))
	require.Equal(t, "invalid_target", oauthErr(err), "%v", err)
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", h.base+APIBase))
	require.NoError(t, err)
	require.NotEmpty(t, tok.RefreshToken)

	// The token works like a key with its scopes, on the resource it was issued for.
	at := tok.AccessToken
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books/"+rid, at, nil).Status)
	w := h.do(t, "PUT", "/api/v1/books/"+rid, at, map[string]any{"status": "draft", "title": "x"})
	require.Equal(t, 403, w.Status, "books:write was not granted")
	require.Contains(t, w.Header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="books:write"`)
	// ... and not on the MCP endpoint (issued for the REST API).
	m := h.do(t, "POST", mcp.Path, at, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	require.Equal(t, 401, m.Status, "%s", m.Body)
	require.Contains(t, m.Header.Get("WWW-Authenticate"), `error="invalid_token"`)

	// Refresh rotates; the spent refresh token replayed revokes the family.
	src := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)})
	tok2, err := src.Token()
	require.NoError(t, err)
	require.NotEqual(t, tok.RefreshToken, tok2.RefreshToken)
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books/"+rid, tok2.AccessToken, nil).Status)
	_, err = cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}).Token()
	require.Error(t, err, "a spent refresh token")
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books/"+rid, tok2.AccessToken, nil).Status, "the family is revoked")
	_, err = cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok2.RefreshToken, Expiry: time.Now().Add(-time.Minute)}).Token()
	require.Error(t, err, "the newer refresh token of the family too")

	// A code used twice is refused, and the tokens issued for it are revoked. (This exchange
	// leaves resource out, as RFC 8707 allows: the token has the grant's resources.)
	q = approve(t, h, authURL, key)
	tok3, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books/"+rid, tok3.AccessToken, nil).Status)
	_, err = cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	require.Equal(t, "invalid_grant", oauthErr(err), "a code used twice")
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books/"+rid, tok3.AccessToken, nil).Status, "the code's tokens are revoked")

	// A resource that is not the service's is refused at the authorization endpoint.
	bad := cfg.AuthCodeURL("state-5678", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", "https://evil.example/api"))
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(bad)
	require.NoError(t, err)
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	require.Equal(t, "invalid_target", loc.Query().Get("error"))

	// Without PKCE there is no code.
	noPKCE := cfg.AuthCodeURL("state-9999")
	res, err = (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(noPKCE)
	require.NoError(t, err)
	res.Body.Close()
	loc, _ = url.Parse(res.Header.Get("Location"))
	require.Equal(t, "invalid_request", loc.Query().Get("error"))
}

func TestOAuthMCPAndRevocation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	ctx := context.Background()
	cfg := oauthClient(t, h, "http://localhost:9/cb")
	verifier := oauth2.GenerateVerifier()
	q := approve(t, h, cfg.AuthCodeURL("state-5678", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", h.base+mcp.Path)), key)
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", h.base+mcp.Path))
	require.NoError(t, err)

	// The MCP Go SDK client lists and calls tools with the token.
	cs := h.mcpSession(t, tok.AccessToken, "2025-11-25")
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, 55, n)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "books_list", Arguments: map[string]any{"limit": 5}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	// Not on REST (issued for the MCP endpoint).
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status)

	// Revocation takes effect on the next request.
	form := url.Values{"token": {tok.AccessToken}, "client_id": {cfg.ClientID}}
	rr, err := http.PostForm(h.base+"/oauth/revoke", form)
	require.NoError(t, err)
	rr.Body.Close()
	require.Equal(t, 200, rr.StatusCode)
	m := h.do(t, "POST", mcp.Path, tok.AccessToken, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	require.Equal(t, 401, m.Status)
}

func TestOAuthClientCredentialsAndKeyRevocation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "books:read")
	rid := h.konva(t, h.key(t, ws, "live", "*"), "cc book", "draft")
	ctx := context.Background()

	// Registering a client-credentials client needs an API key; its scopes are at most the key's.
	r := h.do(t, "POST", "/oauth/register", "", map[string]any{"client_name": "cron", "grant_types": []string{"client_credentials"}})
	require.Equal(t, 401, r.Status, "%s", r.Body)
	r = h.do(t, "POST", "/oauth/register", key, map[string]any{"client_name": "cron", "grant_types": []string{"client_credentials"},
		"scope": "books:write"})
	require.Equal(t, 400, r.Status, "%s", r.Body)
	r = h.do(t, "POST", "/oauth/register", key, map[string]any{"client_name": "cron", "grant_types": []string{"client_credentials"}})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	cc := &clientcredentials.Config{ClientID: r.JSON["client_id"].(string), ClientSecret: r.JSON["client_secret"].(string),
		TokenURL: h.base + "/oauth/token"}
	tok, err := cc.Token(ctx)
	require.NoError(t, err)
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books/"+rid, tok.AccessToken, nil).Status)
	require.Equal(t, 403, h.do(t, "DELETE", "/api/v1/books/"+rid, tok.AccessToken, nil).Status)

	wrong := *cc
	wrong.ClientSecret = "nope"
	_, err = wrong.Token(ctx)
	require.Equal(t, "invalid_client", oauthErr(err))
	more := *cc
	more.Scopes = []string{"books:write"}
	_, err = more.Token(ctx)
	require.Equal(t, "invalid_scope", oauthErr(err))

	// Rotating the key ends its tokens (and the client's next grant).
	me := h.do(t, "GET", "/api/v1/me", key, nil)
	keyID := int64(me.data()["key"].(map[string]any)["id"].(float64))
	rot := h.adminDo(t, "POST", "/keys/"+itoa(keyID)+"/rotate", nil)
	require.Contains(t, []int{200, 201}, rot.Status, "%s", rot.Body)
	g := h.do(t, "GET", "/api/v1/books/"+rid, tok.AccessToken, nil)
	require.Equal(t, 401, g.Status)
	require.Contains(t, g.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	_, err = cc.Token(ctx)
	require.Equal(t, "invalid_grant", oauthErr(err))
	var body map[string]any
	_ = json.Unmarshal(g.Body, &body)
	require.True(t, strings.Contains(string(g.Body), "revoked") || strings.Contains(string(g.Body), "invalid"))
}
