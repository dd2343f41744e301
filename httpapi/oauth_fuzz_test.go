package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"flipbook/api"
)

// Fuzzing of the OAuth endpoints of a real service (issue 27, package oauth): the JSON body of
// dynamic client registration (POST /oauth/register), the form of the token endpoint (POST
// /oauth/token), and the query and form of the authorization endpoint (GET and POST
// /oauth/authorize).

// oauthErrors are the error codes the endpoints may answer (RFC 6749 §4.1.2.1 and §5.2, RFC 7591
// §3.2.2, RFC 6750 §3.1, RFC 8707 §2, RFC 7009 §2.2.1, and those docs/OAUTH.md documents:
// invalid_state and the 429's too_many_requests).
var oauthErrors = []string{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
	"unsupported_grant_type", "invalid_scope", "access_denied", "unsupported_response_type", "server_error",
	"temporarily_unavailable", "invalid_redirect_uri", "invalid_client_metadata", "invalid_token", "invalid_target",
	"unsupported_token_type", "invalid_state", "too_many_requests"}

// oauthRoutes are the fuzzed requests: method, path, and how the fuzzed bytes are sent.
var oauthRoutes = []struct {
	name, method, path, ctype string
	query                     bool // the bytes are the query string, not the body
}{
	{"register", "POST", "/oauth/register", "application/json", false},
	{"token", "POST", "/oauth/token", "application/x-www-form-urlencoded", false},
	{"authorize", "GET", "/oauth/authorize", "", true},
	{"authorize form", "POST", "/oauth/authorize", "application/x-www-form-urlencoded", false},
}

// queryOf makes fuzzed bytes a query string a client can send: bytes a URL cannot carry are
// percent-encoded, everything else (&, =, %, +) is sent as is.
func queryOf(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || c == '#' {
			s.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
			continue
		}
		s.WriteByte(c)
	}
	return s.String()
}

// FuzzOAuthEndpoints sends fuzzed registrations, token requests and authorization requests
// (with or without an API key as bearer token). Property: never a 5xx; an error answered as
// JSON is the OAuth error object: an error code of the RFCs or of docs/OAUTH.md, a string
// error_description when present (the server's own 413 and 431, answered before the endpoint,
// are in the API's envelope); a registration's success has a client_id, a token success an
// access_token of type Bearer; a redirect carries a code or an error in its query; a page is
// HTML.
func FuzzOAuthEndpoints(f *testing.F) {
	h := newHarness(f, nil)
	key := h.workspace(f, "company", "live")
	redirect := "http://127.0.0.1:9/callback"
	reg := h.do(f, "POST", "/oauth/register", "", map[string]any{"client_name": "Fuzz host", "redirect_uris": []string{redirect}})
	public, _ := reg.JSON["client_id"].(string)
	cc := h.do(f, "POST", "/oauth/register", key, map[string]any{"client_name": "Fuzz job", "grant_types": []string{"client_credentials"},
		"scope": "books:read analytics:read"})
	ccID, _ := cc.JSON["client_id"].(string)
	ccSecret, _ := cc.JSON["client_secret"].(string)
	if public == "" || ccID == "" || ccSecret == "" {
		f.Fatalf("registrations: %s / %s", reg.Body, cc.Body)
	}
	verifier := oauth2.GenerateVerifier()
	challenge := oauth2.S256ChallengeFromVerifier(verifier)
	rest := h.base + APIBase
	authorize := url.Values{"response_type": {"code"}, "client_id": {public}, "redirect_uri": {redirect}, "scope": {"books:read"},
		"state": {"state-1234"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {rest}}.Encode()
	for _, s := range []struct {
		route  int
		body   string
		bearer bool
	}{
		{0, `{"client_name":"Claude","redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"grant_types":["authorization_code","refresh_token"],` +
			`"response_types":["code"],"token_endpoint_auth_method":"client_secret_post","client_uri":"https://claude.ai"}`, false},
		{0, `{"client_name":"cli","redirect_uris":["http://127.0.0.1/cb","http://localhost:33418/cb"]}`, false},
		{0, `{"client_name":"job","grant_types":["client_credentials"],"scope":"books:read webhooks:write","token_endpoint_auth_method":"client_secret_post"}`, true},
		{0, `{"grant_types":["client_credentials"],"scope":"nope"}`, true},
		{0, `{"grant_types":["client_credentials"]}`, false},
		{0, `{"redirect_uris":["javascript:alert(1)"]}`, false},
		{0, `{"redirect_uris":[]}`, false},
		{0, `{"client_name":5}`, false},
		{0, `[]`, false},
		{1, "grant_type=client_credentials&client_id=" + url.QueryEscape(ccID) + "&client_secret=" + url.QueryEscape(ccSecret) +
			"&scope=books%3Aread&resource=" + url.QueryEscape(rest), false},
		{1, "grant_type=client_credentials&client_id=" + url.QueryEscape(ccID) + "&client_secret=wrong", false},
		{1, "grant_type=authorization_code&code=ory_ac_x.y&redirect_uri=" + url.QueryEscape(redirect) + "&client_id=" + public +
			"&code_verifier=" + verifier + "&resource=" + url.QueryEscape(rest), false},
		{1, "grant_type=refresh_token&refresh_token=ory_rt_abc.def&client_id=" + public + "&scope=books%3Aread", false},
		{1, "grant_type=password&username=a&password=b", false},
		{1, "grant_type=client_credentials&client_id=https%3A%2F%2Fclient.invalid%2Fmeta.json", false},
		{1, "", false},
		{2, authorize, false},
		{2, strings.Replace(authorize, "S256", "plain", 1), false},
		{2, strings.Replace(authorize, "state-1234", "s", 1), false},
		{2, "response_type=code&client_id=https%3A%2F%2Fclient.invalid%2Fmeta.json&redirect_uri=https%3A%2F%2Fclient.invalid%2Fcb", false},
		{2, "response_type=token&client_id=" + public, false},
		{2, "client_id=%zz&redirect_uri=%", false},
		{3, authorize + "&csrf_token=x&decision=approve&api_key=" + key, false},
		{3, authorize + "&decision=deny", false},
	} {
		sel := uint8(s.route)
		if s.bearer {
			sel |= 4
		}
		f.Add(sel, []byte(s.body))
	}
	client := &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	f.Fuzz(func(t *testing.T, sel uint8, raw []byte) {
		route := oauthRoutes[int(sel&3)%len(oauthRoutes)]
		target, body := h.base+route.path, io.Reader(bytes.NewReader(raw))
		if route.query {
			// Within the 8 KiB the server takes for a request line and headers: past it the
			// server answers 431 before the endpoint, and may reset the connection while the
			// client is still sending (a race, not the endpoint's parsing).
			q := queryOf(raw)
			if len(q) > 6<<10 {
				q = q[:6<<10]
			}
			target, body = target+"?"+q, nil
		}
		req, err := http.NewRequest(route.method, target, body)
		if err != nil {
			t.Fatalf("%s: %v", route.name, err)
		}
		if route.ctype != "" {
			req.Header.Set("Content-Type", route.ctype)
		}
		if sel&4 != 0 {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", route.name, err)
		}
		out, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("%s: reading the answer: %v", route.name, err)
		}
		what := route.name + " " + string(raw)
		ctype := res.Header.Get("Content-Type")
		if res.StatusCode >= 500 {
			t.Fatalf("%s: %d %s", what, res.StatusCode, out)
		}
		var m map[string]any
		if strings.HasPrefix(ctype, "application/json") {
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatalf("%s: %d answered invalid JSON %q", what, res.StatusCode, out)
			}
		}
		switch {
		case (res.StatusCode == 413 || res.StatusCode == 431) && m != nil:
			// Refused by the server before the endpoint (a request line and headers over 8 KiB,
			// a body over the cap of routes outside the table): the API's error envelope.
			e, _ := m["error"].(map[string]any)
			if msg, _ := e["message"].(string); msg == "" {
				t.Fatalf("%s: %d without the error envelope: %s", what, res.StatusCode, out)
			}
		case res.StatusCode >= 400 && m != nil:
			code, _ := m["error"].(string)
			if !api.Contains(oauthErrors, code) {
				t.Fatalf("%s: %d with error %q, not an OAuth error code: %s", what, res.StatusCode, m["error"], out)
			}
			if d, ok := m["error_description"]; ok {
				if _, isStr := d.(string); !isStr {
					t.Fatalf("%s: error_description is not a string: %s", what, out)
				}
			}
		case res.StatusCode >= 400:
			// The consent page again, with its message (a POST without a valid CSRF token, a
			// wrong key).
			if route.name != "authorize form" || !strings.HasPrefix(ctype, "text/html") {
				t.Fatalf("%s: %d as %q: %.300s", what, res.StatusCode, ctype, out)
			}
		case res.StatusCode >= 300:
			loc, err := url.Parse(res.Header.Get("Location"))
			if err != nil || !strings.HasPrefix(route.path, "/oauth/authorize") {
				t.Fatalf("%s: %d to %q (%v)", what, res.StatusCode, res.Header.Get("Location"), err)
			}
			q := loc.Query()
			if q.Get("code") == "" && !api.Contains(oauthErrors, q.Get("error")) {
				t.Fatalf("%s: a redirect with neither a code nor an OAuth error: %s", what, loc)
			}
		case route.name == "register":
			if id, _ := m["client_id"].(string); res.StatusCode != 201 || id == "" {
				t.Fatalf("%s: %d without a client_id: %s", what, res.StatusCode, out)
			}
		case route.name == "token":
			tok, _ := m["access_token"].(string)
			typ, _ := m["token_type"].(string)
			if res.StatusCode != 200 || tok == "" || !strings.EqualFold(typ, "bearer") {
				t.Fatalf("%s: %d without a bearer access token: %s", what, res.StatusCode, out)
			}
		default: // the consent page
			if res.StatusCode != 200 || !strings.HasPrefix(ctype, "text/html") {
				t.Fatalf("%s: %d as %q: %.300s", what, res.StatusCode, ctype, out)
			}
		}
	})
}
