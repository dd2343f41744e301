package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"flipbook/api"
	"flipbook/internal/testutil"
	"flipbook/mcp"
)

// redirectTarget is a client's redirect URI: it records the queries it was sent.
type redirectTarget struct {
	*httptest.Server
	mu      sync.Mutex
	queries []url.Values
}

func newRedirectTarget(t *testing.T) *redirectTarget {
	rt := &redirectTarget{}
	rt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cb" {
			http.NotFound(w, r)
			return
		}
		rt.mu.Lock()
		rt.queries = append(rt.queries, r.URL.Query())
		rt.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>back</title><p id="done">back at the client</p>`)
	}))
	t.Cleanup(rt.Close)
	return rt
}

func (rt *redirectTarget) all() []url.Values {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]url.Values(nil), rt.queries...)
}

// wait returns the n-th query (1-based) once it arrived; it describes the browser's page if
// none does.
func (rt *redirectTarget) wait(t *testing.T, ctx context.Context, n int) url.Values {
	t.Helper()
	var q []url.Values
	err := testutil.Poll(60*time.Second, 20*time.Millisecond, func() error {
		if q = rt.all(); len(q) < n {
			return fmt.Errorf("the browser was not redirected to the client (%d of %d redirects)", len(q), n)
		}
		return nil
	})
	if err == nil {
		return q[n-1]
	}
	var loc, text string
	_ = chromedp.Run(ctx, chromedp.Location(&loc), chromedp.Text("body", &text, chromedp.ByQuery))
	t.Fatalf("%v; it shows %s: %s", err, loc, text)
	return nil
}

// browser starts headless Chromium for the consent page (startBrowser).
func browser(t *testing.T, exe string) context.Context {
	return startBrowser(t, exe, 1024, 900, 180*time.Second)
}

// TestOAuthXConsentInBrowser goes through the consent page in headless Chromium as a person
// would: a wrong key, a key with none of the scopes asked for, then the right key; and Deny. (A
// key with some of them gets those: TestOAuthXNarrowerKey.)
func TestOAuthXConsentInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	ctx := browser(t, exe)
	key, ws := h.workspaceKey(t, "company", "live", "books:read", "books:write")
	unrelated := h.key(t, ws, "live", "subscribers:read")
	h.konva(t, key, "consent book", "draft")
	target := newRedirectTarget(t)
	cfg := oauthClient(t, h, target.URL+"/cb")
	cfg.Scopes = []string{"books:read", "books:write"}
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-browser-1", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", h.base+mcp.Path))

	var title, scopes, body, errText, loc string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible("#approve", chromedp.ByID),
		chromedp.Text("h1", &title, chromedp.ByQuery),
		chromedp.Text("#scopes", &scopes, chromedp.ByID),
		chromedp.Text("body", &body, chromedp.ByQuery),
	))
	require.Contains(t, title, "Test host", "the client's name")
	require.Contains(t, scopes, "books:read")
	require.Contains(t, scopes, "books:write")
	require.Contains(t, body, h.base+mcp.Path, "the resource")
	require.Contains(t, body, target.URL+"/cb", "the redirect URI")
	require.Contains(t, body, cfg.ClientID)

	// submit types a key, clicks a button and waits for the page that answers.
	submit := func(key, button string) {
		t.Helper()
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Evaluate(`document.getElementById('error') && document.getElementById('error').remove()`, nil),
			chromedp.SendKeys("#api_key", key, chromedp.ByID),
			chromedp.Click(button, chromedp.ByID),
		))
	}
	// A wrong key: the page says so, nothing is redirected.
	submit("wsk_live_wrongwrongwrong", "#approve")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible("#error", chromedp.ByID),
		chromedp.Text("#error", &errText, chromedp.ByID),
		chromedp.Location(&loc),
	))
	require.Contains(t, errText, "wrong")
	require.True(t, strings.HasPrefix(loc, h.base+"/oauth/authorize"), loc)
	require.Empty(t, target.all())

	// A key with none of the scopes asked for: the error names them.
	submit(unrelated, "#approve")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible("#error", chromedp.ByID),
		chromedp.Text("#error", &errText, chromedp.ByID),
		chromedp.Text("#scopes", &scopes, chromedp.ByID),
	))
	require.Contains(t, errText, "books:write")
	require.Contains(t, errText, "none of the scopes")
	require.Contains(t, scopes, "books:write", "the page still asks for the same scopes")
	require.Empty(t, target.all())

	// The right key: back at the client with a code and the same state.
	submit(key, "#approve")
	q := target.wait(t, ctx, 1)
	require.Equal(t, "state-browser-1", q.Get("state"))
	require.NotEmpty(t, q.Get("code"))
	require.Empty(t, q.Get("error"))
	require.NoError(t, chromedp.Run(ctx, chromedp.WaitVisible("#done", chromedp.ByID), chromedp.Location(&loc)))
	require.True(t, strings.HasPrefix(loc, target.URL+"/cb?"), loc)

	tok, err := cfg.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	require.Equal(t, "books:read books:write", tok.Extra("scope"))
	cs := h.mcpSession(t, tok.AccessToken, "2025-11-25")
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	require.Contains(t, names, "books_list")
	res, out := callTool(t, cs, "books_list", map[string]any{"limit": 5})
	require.False(t, res.IsError, "%v", out)
	require.Len(t, out["data"], 1, "the key's workspace")
	res, out = callTool(t, cs, "subscribers_list", nil)
	require.True(t, res.IsError)
	require.Equal(t, api.TypeMissingScope, toolErrType(out), "only the scopes asked for")
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status, "issued for the MCP endpoint only")

	// Deny: back at the client with access_denied and no code.
	denyURL := cfg.AuthCodeURL("state-browser-deny", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(denyURL),
		chromedp.WaitVisible("#deny", chromedp.ByID),
		chromedp.Click("#deny", chromedp.ByID),
	))
	q = target.wait(t, ctx, 2)
	require.Equal(t, "access_denied", q.Get("error"))
	require.Equal(t, "state-browser-deny", q.Get("state"))
	require.Empty(t, q.Get("code"))
	require.Len(t, target.all(), 2)
}

// TestOAuthXConsentNotFramed loads the consent page inside a frame of another site: Chromium
// refuses to render it (X-Frame-Options: DENY, frame-ancestors 'none').
func TestOAuthXConsentNotFramed(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	ctx := browser(t, exe)
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	authURL := cfg.AuthCodeURL("state-framed", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	framer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>framer</title><iframe id="f" width="800" height="600" src="`+
			strings.ReplaceAll(authURL, "&", "&amp;")+`"></iframe>`)
	}))
	defer framer.Close()
	// The page itself loads at top level (so a refusal below is the framing's).
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(authURL), chromedp.WaitVisible("#approve", chromedp.ByID)))

	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(framer.URL), chromedp.WaitReady("#f", chromedp.ByID)))
	var child *page.FrameTree
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		var tree *page.FrameTree
		require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
			var err error
			tree, err = page.GetFrameTree().Do(ctx)
			return err
		})))
		if len(tree.ChildFrames) == 1 && tree.ChildFrames[0].Frame.URL != "" && tree.ChildFrames[0].Frame.URL != "about:blank" {
			child = tree.ChildFrames[0]
			return nil
		}
		var urls []string
		for _, f := range tree.ChildFrames {
			urls = append(urls, f.Frame.URL)
		}
		return fmt.Errorf("the frame has not settled: child frames %q, want one with a URL", urls)
	})
	t.Logf("framed: %s", child.Frame.URL)
	require.False(t, strings.HasPrefix(child.Frame.URL, h.base), "the consent page is not rendered in a frame: %s", child.Frame.URL)
	// Nothing of the page is reachable in the frame.
	var approve bool
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`(() => { try { return !!document.getElementById('f').contentDocument.getElementById('approve') } catch (e) { return false } })()`, &approve)))
	require.False(t, approve)
}

// TestOAuthXConsentCSRF checks the consent form's CSRF protection and the page's headers
// (without a browser).
func TestOAuthXConsentCSRF(t *testing.T) {
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "books:read")
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	authURL := cfg.AuthCodeURL("state-csrf-1", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))

	// The page's headers: never framed, never cached, no referrer; the form posts only here
	// and to the client's redirect origin.
	res, err := noRedirect.Get(authURL)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	pageHeaders := func(hd http.Header) {
		t.Helper()
		require.Equal(t, "DENY", hd.Get("X-Frame-Options"))
		csp := hd.Get("Content-Security-Policy")
		require.Contains(t, csp, "frame-ancestors 'none'")
		require.Contains(t, csp, "form-action 'self' http://127.0.0.1:9;")
		require.Contains(t, csp, "default-src 'none'")
		require.Equal(t, "no-store", hd.Get("Cache-Control"))
		require.Equal(t, "no-referrer", hd.Get("Referrer-Policy"))
		require.True(t, strings.HasPrefix(hd.Get("Content-Type"), "text/html"))
	}
	pageHeaders(res.Header)
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "fb_oauth_csrf" {
			cookie = c
		}
	}
	require.NotNil(t, cookie)
	require.True(t, cookie.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	require.Equal(t, "/oauth/", cookie.Path)

	// post sends a consent form with client c and returns the status and the redirect query.
	post := func(c *http.Client, form url.Values) (int, url.Values) {
		t.Helper()
		res, err := c.PostForm(h.base+"/oauth/authorize", form)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == 403 {
			pageHeaders(res.Header)
			require.Contains(t, string(body), `id="error"`)
		}
		if loc := res.Header.Get("Location"); loc != "" {
			u, err := url.Parse(loc)
			require.NoError(t, err)
			return res.StatusCode, u.Query()
		}
		return res.StatusCode, nil
	}
	c1, form1 := consentForm(t, h, authURL)
	form1.Set("api_key", key)
	form1.Set("decision", "approve")

	// Without the cookie.
	st, q := post(noRedirect, form1)
	require.Equal(t, 403, st)
	require.Nil(t, q, "no code")
	// With the cookie but no token, or a made-up one.
	for _, tokv := range []string{"", "x", form1.Get("csrf_token") + "x"} {
		f := url.Values{}
		for k, v := range form1 {
			f[k] = v
		}
		f.Set("csrf_token", tokv)
		st, q = post(c1, f)
		require.Equal(t, 403, st, "%q", tokv)
		require.Nil(t, q)
	}
	// The 403 page set a new cookie in c1's jar: form1's token no longer matches it (a token
	// from another page load).
	st, q = post(c1, form1)
	require.Equal(t, 403, st)
	require.Nil(t, q)
	// Another browser's cookie with this token.
	c2, _ := consentForm(t, h, authURL)
	st, q = post(c2, form1)
	require.Equal(t, 403, st)
	require.Nil(t, q)
	// A deny without the CSRF pair is refused too (it would redirect).
	deny := url.Values{}
	for k, v := range form1 {
		deny[k] = v
	}
	deny.Set("decision", "deny")
	st, q = post(noRedirect, deny)
	require.Equal(t, 403, st)
	require.Nil(t, q)

	// The pair of one page load works.
	c2, form2 := consentForm(t, h, authURL)
	form2.Set("api_key", key)
	form2.Set("decision", "approve")
	st, q = post(c2, form2)
	require.Contains(t, []int{302, 303}, st)
	require.Equal(t, "state-csrf-1", q.Get("state"))
	require.NotEmpty(t, q.Get("code"))
	// Deny with a valid pair redirects with access_denied.
	c3, form3 := consentForm(t, h, authURL)
	form3.Set("decision", "deny")
	st, q = post(c3, form3)
	require.Contains(t, []int{302, 303}, st)
	require.Equal(t, "access_denied", q.Get("error"))
	require.Empty(t, q.Get("code"))

	// The form's parameters cannot be swapped after the page: a POST with another redirect_uri
	// (not registered) gets no redirect there.
	c4, form4 := consentForm(t, h, authURL)
	form4.Set("api_key", key)
	form4.Set("decision", "approve")
	form4.Set("redirect_uri", "http://127.0.0.1:9/evil")
	res, err = c4.PostForm(h.base+"/oauth/authorize", form4)
	require.NoError(t, err)
	res.Body.Close()
	require.NotContains(t, res.Header.Get("Location"), "/evil")
}

// TestOAuthXConsentPageRefusals: requests refused before the consent page is shown, and a
// client's name shown as text.
func TestOAuthXConsentPageRefusals(t *testing.T) {
	h := newHarness(t, nil)
	cfg := oauthClient(t, h, "http://127.0.0.1:9/cb")
	verifier := oauth2.GenerateVerifier()
	for name, c := range map[string]struct {
		url, err string
	}{
		"short state":  {cfg.AuthCodeURL("short", oauth2.S256ChallengeOption(verifier)), "invalid_state"},
		"plain PKCE":   {cfg.AuthCodeURL("state-plain", oauth2.SetAuthURLParam("code_challenge", verifier), oauth2.SetAuthURLParam("code_challenge_method", "plain")), "invalid_request"},
		"no method":    {cfg.AuthCodeURL("state-nomethod", oauth2.SetAuthURLParam("code_challenge", oauth2.S256ChallengeFromVerifier(verifier))), "invalid_request"},
		"bad resource": {cfg.AuthCodeURL("state-resource", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", h.base+"/api/v2")), "invalid_target"},
		"bad scope":    {cfg.AuthCodeURL("state-scope", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("scope", "books:read admin:everything")), "invalid_scope"},
		"token flow":   {strings.Replace(cfg.AuthCodeURL("state-token", oauth2.S256ChallengeOption(verifier)), "response_type=code", "response_type=token", 1), "unsupported_response_type"},
	} {
		res, err := noRedirect.Get(c.url)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.NotEqual(t, 200, res.StatusCode, "%s: %s", name, body)
		require.NotContains(t, string(body), "csrf_token", name)
		loc, err := url.Parse(res.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, c.err, loc.Query().Get("error"), "%s: %s %s", name, res.Header.Get("Location"), body)
		require.Empty(t, loc.Query().Get("code"), name)
	}

	// The client's name is text, not markup.
	r := h.do(t, "POST", "/oauth/register", "", map[string]any{"client_name": `<script>alert(1)</script>"><b>x`,
		"redirect_uris": []string{"http://127.0.0.1:9/cb"}})
	require.Equal(t, 201, r.Status)
	evil := *cfg
	evil.ClientID = r.JSON["client_id"].(string)
	res, err := noRedirect.Get(evil.AuthCodeURL("state-xss-1", oauth2.S256ChallengeOption(verifier)))
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.NotContains(t, string(body), "<script>")
	require.NotContains(t, string(body), "<b>x")
	require.Contains(t, string(body), "&lt;script&gt;alert(1)&lt;/script&gt;")
}
