package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ory/fosite"
	"github.com/stretchr/testify/require"

	"flipbook/errs"
	"flipbook/storage"
)

const testRedirect = "http://127.0.0.1:9/cb"

// testServer is an authorization server on a fresh store, metadata documents allowed from
// loopback, with an API key (wsk_test, id 1, workspace 1, every scope).
func testServer(t *testing.T, rate int) (*Server, *storage.Store) {
	t.Helper()
	st, err := storage.Open(t.TempDir(), storage.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s, err := New(st, Options{Issuer: "http://issuer.test", Resources: []string{"http://issuer.test/mcp/public-api", "http://issuer.test/api/v1"},
		Scopes: []string{"books:read"}, AllowPrivate: true, RateLimit: rate})
	require.NoError(t, err)
	require.NoError(t, st.PutKey(&storage.APIKey{ID: 1, Workspace: 1, Scopes: []string{"*"}, Mode: storage.ModeLive,
		Hash: storage.HashSecret("wsk_test"), CreatedAt: time.Now()}, nil))
	return s, st
}

// docServer serves client metadata documents after delay, counting requests per path.
type docServer struct {
	*httptest.Server
	delay time.Duration
	mu    sync.Mutex
	docs  map[string]map[string]any
	hits  map[string]int
}

func newDocServer(t *testing.T, delay time.Duration) *docServer {
	d := &docServer{delay: delay, docs: map[string]map[string]any{}, hits: map[string]int{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.hits[r.URL.Path]++
		doc, ok := d.docs[r.URL.Path]
		d.mu.Unlock()
		time.Sleep(d.delay) // sleep: the slow metadata server under test
		if !ok {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(d.Close)
	return d
}

// client publishes a valid document at path and returns its client id.
func (d *docServer) client(path, name string, redirects ...string) string {
	id := d.URL + path
	if len(redirects) == 0 {
		redirects = []string{testRedirect}
	}
	d.mu.Lock()
	d.docs[path] = map[string]any{"client_id": id, "client_name": name, "redirect_uris": redirects}
	d.mu.Unlock()
	return id
}

func (d *docServer) count(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

// authorizeURL is an authorization request of client id (PKCE S256).
func authorizeURL(base, id string) string {
	return base + "/oauth/authorize?" + url.Values{"response_type": {"code"}, "client_id": {id},
		"redirect_uri": {testRedirect}, "state": {"state-12345"}, "code_challenge_method": {"S256"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}}.Encode()
}

// issueToken stores an access token of client id approved with the test key.
func issueToken(t *testing.T, s *Server, clientID string) string {
	t.Helper()
	ctx := context.Background()
	sess := newSession()
	sess.Workspace, sess.Mode, sess.KeyID = 1, "live", 1
	k, err := s.st.KeyByID(1)
	require.NoError(t, err)
	sess.KeyHash = keyHashPrefix(k.Hash)
	sess.SetExpiresAt(fosite.AccessToken, time.Now().Add(time.Hour))
	req := &fosite.Request{ID: randomToken("req_", 8), RequestedAt: time.Now().UTC(), Client: &fosite.DefaultClient{ID: clientID},
		GrantedScope: fosite.Arguments{"books:read"}, Form: url.Values{}, Session: sess}
	tok, sig, err := s.strategy.GenerateAccessToken(ctx, req)
	require.NoError(t, err)
	require.NoError(t, s.store.CreateAccessTokenSession(ctx, sig, req))
	return tok
}

// setFetchedAt ages a cached metadata document.
func setFetchedAt(t *testing.T, st *storage.Store, id string, at time.Time) {
	t.Helper()
	var c Client
	require.NoError(t, st.OAuthGet(kindCIMD, id, &c))
	c.FetchedAt = at
	b := st.NewOAuthBatch()
	require.NoError(t, b.Put(kindCIMD, id, &c))
	require.NoError(t, b.Commit())
}

func register(t *testing.T, h http.Handler, ip string, body any) *httptest.ResponseRecorder {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	r := httptest.NewRequest("POST", "/oauth/register", bytes.NewReader(data))
	r.RemoteAddr = ip + ":40000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A slow metadata document delays only the requests of its own client: authorization requests
// of other clients (registered, or metadata documents fetched meanwhile) and token verification (of any client, that one's included) do not wait
// for it, and the concurrent requests naming it share one fetch.
func TestSlowMetadataDocumentDelaysNoOneElse(t *testing.T) {
	s, st := testServer(t, 0)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	const delay = 2 * time.Second
	slow := newDocServer(t, delay)
	idA := slow.client("/a.json", "Slow A")
	idB := slow.client("/b.json", "Stale B")
	// B's document was fetched two hours ago: stale, and its host is just as slow.
	b := st.NewOAuthBatch()
	require.NoError(t, b.Put(kindCIMD, idB, &Client{ID: idB, Name: "Stale B", RedirectURIs: []string{testRedirect},
		GrantTypes: publicGrants(nil), ResponseTypes: []string{"code"}, AuthMethod: "none", Source: "cimd",
		CreatedAt: time.Now().Add(-2 * time.Hour), FetchedAt: time.Now().Add(-2 * time.Hour)}))
	require.NoError(t, b.Commit())
	// C is a registered client.
	w := register(t, s.Handler(), "192.0.2.1", map[string]any{"redirect_uris": []string{testRedirect}, "client_name": "Registered C"})
	require.Equal(t, 201, w.Code, w.Body.String())
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &reg))
	tokB, tokC, tokA := issueToken(t, s, idB), issueToken(t, s, reg.ClientID), issueToken(t, s, idA)

	// Three anonymous authorization requests naming A.
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := http.Get(authorizeURL(srv.URL, idA))
			if err == nil {
				codes[i] = res.StatusCode
				res.Body.Close()
			}
		}(i)
	}
	require.Eventually(t, func() bool { return slow.count("/a.json") > 0 }, delay/2, 10*time.Millisecond)
	fetchStarted := time.Now()

	// While A's document is being fetched: C's consent page, and every token's verification.
	start := time.Now()
	res, err := http.Get(authorizeURL(srv.URL, reg.ClientID))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Less(t, time.Since(start), delay/4, "C's authorization request waited for A's document")
	fast := newDocServer(t, 0)
	idD := fast.client("/d.json", "Fast D")
	start = time.Now()
	res, err = http.Get(authorizeURL(srv.URL, idD))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Less(t, time.Since(start), delay/4, "D's authorization request (its document fetched) waited for A's document")
	require.Equal(t, 1, fast.count("/d.json"))
	for name, tok := range map[string]string{"B (stale document)": tokB, "C": tokC, "A (being fetched)": tokA} {
		start := time.Now()
		g, err := s.VerifyAccessToken(context.Background(), tok)
		require.NoError(t, err, name)
		require.NotEmpty(t, g.ClientID, name)
		require.Less(t, time.Since(start), delay/4, "verifying %s's token waited", name)
	}
	require.Zero(t, slow.count("/b.json"), "verification does not fetch B's stale document")
	require.Less(t, time.Since(fetchStarted), delay, "all of that happened while A was being fetched")

	wg.Wait()
	require.Equal(t, []int{200, 200, 200}, codes, "A's requests are answered once its document came")
	require.Equal(t, 1, slow.count("/a.json"), "one fetch for the three requests")
}

// Concurrent lookups of one document share a fetch; a failed fetch is remembered for a while
// (no fetch in that time), then tried again; a stale document is fetched again by lookups that
// may fetch, never by the stored-grant lookup.
func TestMetadataDocumentFetchOnceAndNegativeCache(t *testing.T) {
	s, st := testServer(t, 0)
	cs := s.store.clients
	docs := newDocServer(t, 300*time.Millisecond)
	good := docs.client("/good.json", "Good")
	broken := docs.URL + "/broken.json" // answers 500

	lookAll := func(id string) []error {
		results := make([]error, 8)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				c, err := cs.load(context.Background(), id)
				if err == nil && c.ID != id {
					err = errors.New("wrong client " + c.ID)
				}
				results[i] = err
			}(i)
		}
		wg.Wait()
		return results
	}
	for _, err := range lookAll(good) {
		require.NoError(t, err)
	}
	require.Equal(t, 1, docs.count("/good.json"))
	for _, err := range lookAll(broken) {
		require.ErrorIs(t, err, fosite.ErrInvalidClient)
	}
	require.Equal(t, 1, docs.count("/broken.json"), "one fetch for concurrent lookups")

	// Remembered: answered without a fetch, quickly.
	start := time.Now()
	_, err := cs.load(context.Background(), broken)
	require.ErrorIs(t, err, fosite.ErrInvalidClient)
	require.Less(t, time.Since(start), 100*time.Millisecond)
	require.Equal(t, 1, docs.count("/broken.json"))
	// Once the failure is old enough, fetched again.
	cs.mu.Lock()
	f := cs.failed[broken]
	f.until = time.Now().Add(-time.Second)
	cs.failed[broken] = f
	cs.mu.Unlock()
	_, err = cs.load(context.Background(), broken)
	require.ErrorIs(t, err, fosite.ErrInvalidClient)
	require.Equal(t, 2, docs.count("/broken.json"))

	// A stale document: the stored-grant lookup uses it as it is, fosite's lookup fetches it.
	setFetchedAt(t, st, good, time.Now().Add(-CIMDCacheFor-time.Minute))
	c, err := cs.stored(good)
	require.NoError(t, err)
	require.Equal(t, "Good", c.Name)
	require.Equal(t, 1, docs.count("/good.json"))
	_, err = s.store.GetClient(context.Background(), good)
	require.NoError(t, err)
	require.Equal(t, 2, docs.count("/good.json"))

	// A document never cached: the stored-grant lookup does not fetch it either.
	never := docs.client("/never.json", "Never")
	c, err = cs.stored(never)
	require.NoError(t, err)
	require.Equal(t, never, c.ID)
	require.Equal(t, "none", c.AuthMethod)
	require.Zero(t, docs.count("/never.json"))

	// Absurdly long URLs are refused without a fetch.
	_, err = cs.load(context.Background(), docs.URL+"/"+strings.Repeat("x", maxCIMDURL))
	require.ErrorIs(t, err, fosite.ErrInvalidClient)
}

// Registrations, authorization requests and metadata document fetches are limited per IP.
func TestOAuthRateLimits(t *testing.T) {
	s, _ := testServer(t, 3)
	h := s.Handler()
	body := func(i int) map[string]any {
		return map[string]any{"client_name": "c" + strconv.Itoa(i), "redirect_uris": []string{testRedirect}}
	}
	for i := 0; i < 3; i++ {
		w := register(t, h, "192.0.2.1", body(i))
		require.Equal(t, 201, w.Code, w.Body.String())
	}
	w := register(t, h, "192.0.2.1", body(3))
	require.Equal(t, 429, w.Code, w.Body.String())
	require.NotEmpty(t, w.Header().Get("Retry-After"))
	require.Equal(t, "3", w.Header().Get("RateLimit-Limit"))
	require.Contains(t, w.Body.String(), "too_many_requests")
	require.Equal(t, 201, register(t, h, "192.0.2.1", body(1)).Code, "the same metadata again is the same client: not counted")
	require.Equal(t, 201, register(t, h, "192.0.2.2", body(3)).Code, "another address has its own budget")
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(t, json.Unmarshal(register(t, h, "192.0.2.3", body(4)).Body.Bytes(), &reg))

	authorize := func(ip, id string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", authorizeURL("", id), nil)
		r.RemoteAddr = ip + ":40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := 0; i < 3; i++ {
		require.Equal(t, 200, authorize("192.0.2.4", reg.ClientID).Code)
	}
	require.Equal(t, 429, authorize("192.0.2.4", reg.ClientID).Code)
	require.Equal(t, 200, authorize("192.0.2.5", reg.ClientID).Code)

	// Fetches of metadata documents, at any endpoint: here the token endpoint, each request
	// naming another (broken) document.
	docs := newDocServer(t, 0)
	token := func(ip, id string) *httptest.ResponseRecorder {
		form := url.Values{"grant_type": {"authorization_code"}, "client_id": {id}, "code": {"x"},
			"code_verifier": {strings.Repeat("v", 43)}, "redirect_uri": {testRedirect}}
		r := httptest.NewRequest("POST", "/oauth/token", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = ip + ":40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := 0; i < 3; i++ {
		w := token("192.0.2.6", docs.URL+"/doc-"+strconv.Itoa(i)+".json")
		require.Equal(t, 401, w.Code, w.Body.String())
		require.Contains(t, w.Body.String(), "invalid_client")
	}
	w = token("192.0.2.6", docs.URL+"/doc-9.json")
	require.Equal(t, 429, w.Code, w.Body.String())
	require.NotEmpty(t, w.Header().Get("Retry-After"))
	require.Zero(t, docs.count("/doc-9.json"), "refused before the fetch")
	// A remembered failure costs nothing: no fetch, no budget (the answer is the failure's).
	w = token("192.0.2.6", docs.URL+"/doc-0.json")
	require.Equal(t, 401, w.Code, w.Body.String())
	require.Equal(t, 1, docs.count("/doc-0.json"))
}

// Dynamic registration bounds the redirect URIs: at most 10, each at most 2048 characters;
// metadata documents too.
func TestRegistrationRedirectBounds(t *testing.T) {
	s, _ := testServer(t, 0)
	h := s.Handler()
	uris := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "https://app.example/cb/" + strconv.Itoa(i)
		}
		return out
	}
	for _, c := range []struct {
		name string
		uris []string
		code int
	}{
		{"ten", uris(10), 201},
		{"eleven", uris(11), 400},
		{"2048 characters", []string{"https://app.example/" + strings.Repeat("x", 2048-len("https://app.example/"))}, 201},
		{"2049 characters", []string{"https://app.example/" + strings.Repeat("x", 2049-len("https://app.example/"))}, 400},
	} {
		w := register(t, h, "192.0.2.1", map[string]any{"redirect_uris": c.uris})
		require.Equal(t, c.code, w.Code, "%s: %s", c.name, w.Body.String())
		if c.code == 400 {
			var e map[string]string
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
			require.Equal(t, "invalid_redirect_uri", e["error"], c.name)
			require.NotEmpty(t, e["error_description"], c.name)
		}
	}
	docs := newDocServer(t, 0)
	many := docs.client("/many.json", "Many", uris(11)...)
	_, err := s.store.clients.load(context.Background(), many)
	require.ErrorIs(t, err, fosite.ErrInvalidClient)
	require.Contains(t, fosite.ErrorToRFC6749Error(err).HintField, "at most 10 redirect_uris")
}

// The purge removes dynamically registered clients that never obtained a code or a token once
// older than UnusedClientTTL, and old cached documents of clients without grants; it keeps
// clients that were used, young ones, client-credentials clients and documents of clients
// holding grants.
func TestPurgeUnusedClients(t *testing.T) {
	s, st := testServer(t, 0)
	ctx := context.Background()
	now := time.Now()
	old, young := now.Add(-8*24*time.Hour), now.Add(-24*time.Hour)
	put := func(kind string, c *Client) {
		b := st.NewOAuthBatch()
		require.NoError(t, b.Put(kind, c.ID, c))
		require.NoError(t, b.Commit())
	}
	put(kindClient, &Client{ID: "fbc_unused", Source: "dcr", CreatedAt: old})
	put(kindClient, &Client{ID: "fbc_young", Source: "dcr", CreatedAt: young})
	put(kindClient, &Client{ID: "fbc_coded", Source: "dcr", CreatedAt: old})
	put(kindClient, &Client{ID: "fbc_granted", Source: "dcr", CreatedAt: old})
	put(kindClient, &Client{ID: "fbc_legacy", Source: "dcr", CreatedAt: old})
	put(kindClient, &Client{ID: "fbc_key", Source: "key", CreatedAt: old, Workspace: 1})
	put(kindClient, &Client{ID: "fbc_reregistered", Source: "dcr", CreatedAt: old, RegisteredAt: young})
	put(kindCIMD, &Client{ID: "https://a.example/old.json", Source: "cimd", CreatedAt: old, FetchedAt: old})
	put(kindCIMD, &Client{ID: "https://a.example/granted.json", Source: "cimd", CreatedAt: old, FetchedAt: old})
	put(kindCIMD, &Client{ID: "https://a.example/fresh.json", Source: "cimd", CreatedAt: young, FetchedAt: young})

	code := testRequest("code-grant")
	code.Client = &fosite.DefaultClient{ID: "fbc_coded"}
	require.NoError(t, s.store.CreateAuthorizeCodeSession(ctx, "code-1", code))
	for _, id := range []string{"fbc_granted", "https://a.example/granted.json"} {
		r := testRequest("grant-of-" + id)
		r.Client = &fosite.DefaultClient{ID: id}
		r.Session.(*Session).SetExpiresAt(fosite.AccessToken, now.Add(time.Hour))
		require.NoError(t, s.store.CreateAccessTokenSession(ctx, "at-"+id, r))
	}
	// A client of before the use marker, holding a grant: the grant keeps it.
	b := st.NewOAuthBatch()
	b.Mark(kindCGrant, "fbc_legacy/some-grant")
	require.NoError(t, b.Commit())
	_, err := s.Purge(now)
	require.NoError(t, err)

	var c Client
	require.ErrorIs(t, st.OAuthGet(kindClient, "fbc_unused", &c), errs.ErrNotFound)
	require.ErrorIs(t, st.OAuthGet(kindCIMD, "https://a.example/old.json", &c), errs.ErrNotFound)
	for _, id := range []string{"fbc_young", "fbc_coded", "fbc_granted", "fbc_legacy", "fbc_key", "fbc_reregistered"} {
		require.NoError(t, st.OAuthGet(kindClient, id, &c), id)
	}
	for _, id := range []string{"https://a.example/granted.json", "https://a.example/fresh.json"} {
		require.NoError(t, st.OAuthGet(kindCIMD, id, &c), id)
	}
	// A registered client that was purged is unknown from then on.
	_, err = s.store.GetClient(ctx, "fbc_unused")
	require.ErrorIs(t, err, fosite.ErrInvalidClient)
	// Nothing more the second time.
	dcr, docs, err := s.store.purgeClients(now.Add(-DefaultUnusedClientTTL))
	require.NoError(t, err)
	require.Zero(t, dcr+docs)
}

// Registering the same public-client metadata again answers the client as first registered
// and restarts the time an unused client is kept (written at most hourly).
func TestReRegistration(t *testing.T) {
	s, st := testServer(t, 0)
	h := s.Handler()
	body := map[string]any{"client_name": "Host", "redirect_uris": []string{testRedirect}, "token_endpoint_auth_method": "client_secret_post"}
	var first, again map[string]any
	require.NoError(t, json.Unmarshal(register(t, h, "192.0.2.1", body).Body.Bytes(), &first))
	id := first["client_id"].(string)
	require.Equal(t, "none", first["token_endpoint_auth_method"])
	// Registered 8 days ago, never used: the purge would take it, unless registered again.
	var c Client
	require.NoError(t, st.OAuthGet(kindClient, id, &c))
	c.CreatedAt = time.Now().Add(-8 * 24 * time.Hour)
	b := st.NewOAuthBatch()
	require.NoError(t, b.Put(kindClient, id, &c))
	require.NoError(t, b.Commit())
	w := register(t, h, "192.0.2.9", body)
	require.Equal(t, 201, w.Code, w.Body.String())
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &again))
	require.Equal(t, id, again["client_id"])
	require.Equal(t, float64(c.CreatedAt.Unix()), again["client_id_issued_at"], "as first registered")
	require.NoError(t, st.OAuthGet(kindClient, id, &c))
	require.WithinDuration(t, time.Now(), c.RegisteredAt, time.Minute)
	_, err := s.Purge(time.Now())
	require.NoError(t, err)
	require.NoError(t, st.OAuthGet(kindClient, id, &c), "kept: registered again a moment ago")
	// Other metadata, another client; the id is not guessable from the metadata alone.
	body["redirect_uris"] = []string{testRedirect + "2"}
	require.NoError(t, json.Unmarshal(register(t, h, "192.0.2.1", body).Body.Bytes(), &again))
	require.NotEqual(t, id, again["client_id"])
	s2, _ := testServer(t, 0)
	require.NotEqual(t, s.publicClientID(&Client{Name: "x"}), s2.publicClientID(&Client{Name: "x"}), "keyed per installation")
}

// The limiter's sweep runs as requests come and forgets idle addresses.
func TestLimiterSweeps(t *testing.T) {
	t.Parallel()
	l := newLimiter(2)
	now := time.Now()
	require.True(t, l.allow("x", "192.0.2.1", now).Allowed)
	require.True(t, l.allow("x", "192.0.2.1", now).Allowed)
	require.False(t, l.allow("x", "192.0.2.1", now).Allowed)
	require.True(t, l.allow("x", "", now).Allowed, "no address: not limited")
	var nilLim *limiter
	require.True(t, nilLim.allow("x", "192.0.2.1", now).Allowed, "no limit")
	later := now.Add(2 * time.Minute)
	require.True(t, l.allow("x", "192.0.2.1", later).Allowed)
	require.Greater(t, l.swept.Load(), now.UnixNano())
}
