package main

// End-to-end tests of the flipbook binary: serve() and run() are called in-process with real
// HTTP over loopback, a temp data dir and a getenv map, as the binary's main() would call them.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// syncBuffer is an io.Writer safe for the server goroutine to write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// envMap is a getenv backed by a map (nil: empty environment), so the real environment
// (FLIPBOOK_ADMIN_TOKEN, ...) never leaks into a test.
func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// keyWritten is a condition for testutil.Eventually: the first start printed where it wrote
// the API key, and the file holds one; it sets *key.
func keyWritten(key *string, stdout *syncBuffer) func() error {
	return func() error {
		out := stdout.String()
		if *key = keyFromStdout(out); *key == "" {
			return fmt.Errorf("the first start wrote no API key yet; stdout:\n%s", out)
		}
		return nil
	}
}

// server is one serve() call running in a goroutine.
type server struct {
	t              *testing.T
	addr, base     string
	stdout, stderr *syncBuffer
	cancel         context.CancelFunc
	errc           chan error
	done           bool
	err            error
}

const startTimeout = 30 * time.Second

// launch calls serve in a goroutine. It returns once serve reported its address (addr set) or
// returned (err set, addr empty).
func launch(t *testing.T, args []string, env map[string]string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{t: t, stdout: &syncBuffer{}, stderr: &syncBuffer{}, cancel: cancel, errc: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() { s.errc <- serve(ctx, args, envMap(env), s.stdout, s.stderr, ready) }()
	t.Cleanup(func() {
		// A server that never came up returned an error the test itself checks.
		if err := s.stop(); err != nil && s.addr != "" {
			t.Errorf("serve returned %v at cleanup; stderr:\n%s", err, s.stderr.String())
		}
	})
	select {
	case s.addr = <-ready:
		s.base = "http://" + s.addr
	case err := <-s.errc:
		s.done, s.err = true, err
	case <-time.After(startTimeout):
		t.Fatalf("serve neither got ready nor returned within %s; stderr:\n%s", startTimeout, s.stderr.String())
	}
	return s
}

// startServe starts a server that must come up.
func startServe(t *testing.T, args []string, env map[string]string) *server {
	t.Helper()
	s := launch(t, args, env)
	require.False(t, s.done, "serve returned %v instead of serving; stderr:\n%s", s.err, s.stderr.String())
	return s
}

// stop cancels serve's context and returns what serve returned.
func (s *server) stop() error {
	if s.done {
		return s.err
	}
	s.cancel()
	select {
	case s.err = <-s.errc:
		s.done = true
		return s.err
	case <-time.After(startTimeout):
		s.t.Fatalf("serve did not return within %s of cancel", startTimeout)
		return nil
	}
}

// keyRE is what an API key looks like.
var keyRE = regexp.MustCompile(`wsk_(?:test|live)_[A-Za-z0-9]+`)

// keyFileRE finds the file a first start wrote its API key to (the key itself is not printed).
var keyFileRE = regexp.MustCompile(`API key written to (\S+) \(`)

// keyFromStdout is the API key of a first start: read from the file its stdout names; "" until
// that line is out.
func keyFromStdout(out string) string {
	m := keyFileRE.FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		return ""
	}
	return keyRE.FindString(string(b))
}

// firstKey is the API key a first start created.
func (s *server) firstKey(t *testing.T) string {
	t.Helper()
	key := keyFromStdout(s.stdout.String())
	require.NotEmpty(t, key, "no API key file named on stdout:\n%s", s.stdout.String())
	return key
}

// reply is a decoded HTTP answer.
type reply struct {
	status int
	header http.Header
	raw    []byte
	json   map[string]any
}

func (r *reply) data() map[string]any { m, _ := r.json["data"].(map[string]any); return m }
func (r *reply) errField(name string) any {
	e, _ := r.json["error"].(map[string]any)
	return e[name]
}

var client = &http.Client{Timeout: 60 * time.Second}

// call sends method url with an optional bearer key and JSON body.
func call(t *testing.T, method, url, key string, body any) *reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	require.NoError(t, err, "%s %s", method, url)
	defer res.Body.Close()
	return decodeReply(t, res)
}

func decodeReply(t *testing.T, res *http.Response) *reply {
	t.Helper()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := &reply{status: res.StatusCode, header: res.Header, raw: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &r.json), "body: %s", raw)
	}
	return r
}

// pngBase64 is a real w×h PNG, base64-encoded.
func pngBase64(t *testing.T, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 3), 90, 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// konvaBody is a POST /api/v1/books/konva body with pages real PNG pages.
func konvaBody(t *testing.T, title string, pages, w, h int) map[string]any {
	t.Helper()
	page := pngBase64(t, w, h)
	imgs := make([]any, pages)
	for i := range imgs {
		imgs[i] = page
	}
	return map[string]any{
		"title": title,
		"canvas": map[string]any{"width": w, "height": h, "orientation": "portrait",
			"objects": []any{map[string]any{}}},
		"page_images": imgs,
	}
}

// refused reports whether nothing accepts TCP connections on addr any more.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

func serveArgs(dir string, extra ...string) []string {
	return append([]string{"--addr", "127.0.0.1:0", "--data", dir}, extra...)
}

// 1. First start on an empty data dir.
func TestFirstStart(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, serveArgs(dir), nil)
	out := s.stdout.String()

	require.Contains(t, out, "listening on "+s.base)
	require.Equal(t, 1, strings.Count(out, "First start:"), "stdout:\n%s", out)
	// The key goes to a file only its owner reads, never to stdout (which lands in logs).
	require.NotRegexp(t, keyRE, out, "a key on stdout")
	require.NotRegexp(t, keyRE, s.stderr.String(), "a key on stderr")
	keyFile := filepath.Join(dir, "first-api-key")
	require.Equal(t, 1, strings.Count(out, "API key written to "+keyFile+" (mode 0600"), "stdout:\n%s", out)
	fi, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	key := s.firstKey(t)
	require.True(t, strings.HasPrefix(key, "wsk_test_"), key)
	raw, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	require.Equal(t, key+"\n", string(raw))
	require.Contains(t, out, `curl -H "Authorization: Bearer $(cat '`+keyFile+`')" `+s.base+"/api/v1/me")
	require.Contains(t, out, "Admin token written to "+filepath.Join(dir, "admin-token"))

	me := call(t, "GET", s.base+"/api/v1/me", key, nil)
	require.Equal(t, 200, me.status, "%s", me.raw)
	d := me.data()
	require.Equal(t, "Default", d["workspace"].(map[string]any)["name"])
	require.Equal(t, "company", d["workspace"].(map[string]any)["plan"])
	require.Equal(t, "company", d["plan"].(map[string]any)["name"])
	require.Equal(t, "test", d["mode"])
	require.Equal(t, []any{"*"}, d["scopes"])

	health := call(t, "GET", s.base+"/api/v1/health", "", nil)
	require.Equal(t, 200, health.status, "%s", health.raw)
	require.Equal(t, "ok", health.json["status"])

	noKey := call(t, "GET", s.base+"/api/v1/me", "", nil)
	require.Equal(t, 401, noKey.status, "%s", noKey.raw)

	fi, err = os.Stat(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	tok, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(tok), "adm_"), "%q", tok)
}

// 2. Shutdown: serve returns nil, the listener closes, a restart keeps keys and data.
func TestShutdownAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, serveArgs(dir), nil)
	key := s.firstKey(t)
	tok1, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)

	created := call(t, "POST", s.base+"/api/v1/books/konva", key, konvaBody(t, "Persisted", 1, 40, 60))
	require.Equal(t, 201, created.status, "%s", created.raw)
	rid, _ := created.data()["random_id"].(string)
	require.NotEmpty(t, rid, "%s", created.raw)

	require.NoError(t, s.stop(), "stderr:\n%s", s.stderr.String())
	require.Contains(t, s.stdout.String(), "shutting down")
	require.Contains(t, s.stdout.String(), "stopped")
	require.True(t, refused(s.addr), "%s still accepts connections after serve returned", s.addr)

	s2 := startServe(t, serveArgs(dir), nil)
	out := s2.stdout.String()
	require.NotContains(t, out, "wsk_", "a restart printed a key:\n%s", out)
	require.NotContains(t, out, "First start", out)
	require.NotContains(t, out, "Admin token written", out)
	tok2, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	require.Equal(t, string(tok1), string(tok2), "the admin token changed on restart")

	me := call(t, "GET", s2.base+"/api/v1/me", key, nil)
	require.Equal(t, 200, me.status, "%s", me.raw)
	require.Equal(t, "Default", me.data()["workspace"].(map[string]any)["name"])

	book := call(t, "GET", s2.base+"/api/v1/books/"+rid, key, nil)
	require.Equal(t, 200, book.status, "%s", book.raw)
	require.Equal(t, "Persisted", book.data()["name"])
	require.EqualValues(t, 1, book.data()["page_count"])
}

// 3. A request in flight when the context is cancelled still completes.
//
// The request is held open deterministically with Expect: 100-continue: the server has accepted
// the connection and read the headers when it sends "100 Continue"; only then is the context
// cancelled, and the body is sent only once the listener has stopped accepting (shutdown has
// begun) and serve is verified not to have returned.
func TestInFlightRequestFinishesOnShutdown(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, serveArgs(dir), nil)
	key := s.firstKey(t)

	body, err := json.Marshal(konvaBody(t, "In flight", 20, 400, 600))
	require.NoError(t, err)
	pr, pw := io.Pipe()
	defer pw.Close()
	got100 := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{Got100Continue: func() { once.Do(func() { close(got100) }) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
		"POST", s.base+"/api/v1/books/konva", pr)
	require.NoError(t, err)
	req.ContentLength = int64(len(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	slow := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		ExpectContinueTimeout: 60 * time.Second, DisableKeepAlives: true}}
	defer slow.CloseIdleConnections()

	type result struct {
		res *http.Response
		err error
	}
	resc := make(chan result, 1)
	go func() {
		res, err := slow.Do(req)
		resc <- result{res, err}
	}()

	select {
	case <-got100:
	case r := <-resc:
		t.Fatalf("answered before 100 Continue: %v %v", r.res, r.err)
	case <-time.After(startTimeout):
		t.Fatal("no 100 Continue")
	}

	s.cancel()
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !refused(s.addr) {
			return fmt.Errorf("listener %s still accepting after cancel", s.addr)
		}
		return nil
	})
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if out := s.stdout.String(); !strings.Contains(out, "shutting down") {
			return fmt.Errorf("no shutdown message; stdout:\n%s", out)
		}
		return nil
	})
	select {
	case err := <-s.errc:
		t.Fatalf("serve returned %v while a request was still in flight", err)
	default:
	}

	go func() {
		_, _ = pw.Write(body)
		_ = pw.Close()
	}()
	var r result
	select {
	case r = <-resc:
	case <-time.After(startTimeout):
		t.Fatal("the in-flight request did not finish")
	}
	require.NoError(t, r.err, "the in-flight request failed")
	defer r.res.Body.Close()
	rep := decodeReply(t, r.res)
	require.Equal(t, 201, rep.status, "%s", rep.raw)
	rid, _ := rep.data()["random_id"].(string)
	require.NotEmpty(t, rid)
	require.EqualValues(t, 20, rep.data()["page_count"])

	require.NoError(t, s.stop(), "stderr:\n%s", s.stderr.String())
	require.Contains(t, s.stdout.String(), "stopped")

	// What the in-flight request wrote was committed before the store closed.
	s2 := startServe(t, serveArgs(dir), nil)
	book := call(t, "GET", s2.base+"/api/v1/books/"+rid, key, nil)
	require.Equal(t, 200, book.status, "%s", book.raw)
	require.EqualValues(t, 20, book.data()["page_count"])
}

// unauthStatuses sends n unauthenticated GET /api/v1/books and returns the statuses; it checks
// Retry-After on every 429.
func unauthStatuses(t *testing.T, base string, n int) []int {
	t.Helper()
	var got []int
	for i := 0; i < n; i++ {
		r := call(t, "GET", base+"/api/v1/books", "", nil)
		got = append(got, r.status)
		if r.status == 429 {
			ra, err := strconv.Atoi(r.header.Get("Retry-After"))
			require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
			require.GreaterOrEqual(t, ra, 1)
			require.Equal(t, "TooManyRequests", r.errField("type"), "%s", r.raw)
		}
	}
	return got
}

// 4. Flags and environment.
func TestFlagsAndEnv(t *testing.T) {
	t.Run("env addr and data", func(t *testing.T) {
		dir := t.TempDir()
		s := startServe(t, nil, map[string]string{"FLIPBOOK_ADDR": "127.0.0.1:0", "FLIPBOOK_DATA": dir})
		require.True(t, strings.HasPrefix(s.addr, "127.0.0.1:"), s.addr)
		require.NotEqual(t, "127.0.0.1:0", s.addr)
		require.Contains(t, s.stdout.String(), "(data in "+dir+")")
		require.FileExists(t, filepath.Join(dir, "admin-token"))
		me := call(t, "GET", s.base+"/api/v1/me", s.firstKey(t), nil)
		require.Equal(t, 200, me.status, "%s", me.raw)
	})

	t.Run("flags win over env", func(t *testing.T) {
		// The env address is taken: serving proves the flag's address was used.
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer busy.Close()
		envDir, flagDir := t.TempDir(), t.TempDir()
		s := startServe(t, serveArgs(flagDir),
			map[string]string{"FLIPBOOK_ADDR": busy.Addr().String(), "FLIPBOOK_DATA": envDir})
		require.NotEqual(t, busy.Addr().String(), s.addr)
		require.FileExists(t, filepath.Join(flagDir, "admin-token"))
		entries, err := os.ReadDir(envDir)
		require.NoError(t, err)
		require.Empty(t, entries, "the env data dir was used")
		health := call(t, "GET", s.base+"/api/v1/health", "", nil)
		require.Equal(t, 200, health.status)
	})

	t.Run("env address in use fails", func(t *testing.T) {
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer busy.Close()
		s := launch(t, []string{"--data", t.TempDir()}, map[string]string{"FLIPBOOK_ADDR": busy.Addr().String()})
		require.True(t, s.done, "serve started on a busy address")
		require.Error(t, s.err)
	})

	t.Run("bad integer in env", func(t *testing.T) {
		dir := t.TempDir()
		s := launch(t, serveArgs(dir), map[string]string{"FLIPBOOK_RATE_LIMIT_WORKSPACE": "lots"})
		require.True(t, s.done, "serve started despite a bad FLIPBOOK_RATE_LIMIT_WORKSPACE")
		require.ErrorContains(t, s.err, "FLIPBOOK_RATE_LIMIT_WORKSPACE")
		require.NoFileExists(t, filepath.Join(dir, "admin-token"))
	})

	t.Run("bad flags", func(t *testing.T) {
		for _, args := range [][]string{
			{"--rate-limit-workspace", "lots"},
			{"--shutdown-timeout", "soon"},
			{"--book-idle", "1"},
			{"--no-such-flag"},
		} {
			s := launch(t, serveArgs(t.TempDir(), args...), nil)
			require.True(t, s.done, "serve started with %v", args)
			require.Error(t, s.err, "%v", args)
		}
	})

	t.Run("unauthenticated rate limit flag", func(t *testing.T) {
		s := startServe(t, serveArgs(t.TempDir(), "--rate-limit-unauthenticated", "2"), nil)
		require.Equal(t, []int{401, 401, 429}, unauthStatuses(t, s.base, 3))
		// health is public and not limited; a valid key is not limited by the IP limit.
		require.Equal(t, 200, call(t, "GET", s.base+"/api/v1/health", "", nil).status)
		require.Equal(t, 200, call(t, "GET", s.base+"/api/v1/books", s.firstKey(t), nil).status)
	})

	t.Run("unauthenticated rate limit env, flag wins", func(t *testing.T) {
		env := map[string]string{"FLIPBOOK_RATE_LIMIT_UNAUTHENTICATED": "1"}
		s := startServe(t, serveArgs(t.TempDir()), env)
		require.Equal(t, []int{401, 429}, unauthStatuses(t, s.base, 2))
		s2 := startServe(t, serveArgs(t.TempDir(), "--rate-limit-unauthenticated", "2"), env)
		require.Equal(t, []int{401, 401, 429}, unauthStatuses(t, s2.base, 3))
	})
}

// adminCLI runs `flipbook admin` through run().
type adminCLI struct {
	t         *testing.T
	base, dir string
}

func (a adminCLI) run(args ...string) (map[string]any, string, error) {
	a.t.Helper()
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{"admin", "--url", a.base, "--data", a.dir}, args...)
	err := run(ctx, full, envMap(nil), &stdout, &stderr)
	out := stdout.String()
	var m map[string]any
	if strings.TrimSpace(out) != "" {
		require.NoError(a.t, json.Unmarshal([]byte(out), &m), "stdout of %v: %s", args, out)
	}
	return m, out + stderr.String(), err
}

// ok runs an admin command that must succeed and returns its data.
func (a adminCLI) ok(args ...string) map[string]any {
	a.t.Helper()
	m, out, err := a.run(args...)
	require.NoError(a.t, err, "admin %v: %s", args, out)
	d, _ := m["data"].(map[string]any)
	require.NotNil(a.t, d, "admin %v: %s", args, out)
	return d
}

func idArg(v any) string { return strconv.FormatInt(int64(v.(float64)), 10) }

// 5. `flipbook admin` subcommands against the running server.
func TestAdminCommands(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, serveArgs(dir), nil)
	a := adminCLI{t: t, base: s.base, dir: dir}

	ws := a.ok("workspaces", "create", "--name", "Acme", "--plan", "pro")
	require.NotNil(t, ws["id"])
	require.Equal(t, "acme", ws["slug"])
	require.Equal(t, "Acme", ws["name"])
	require.Equal(t, "pro", ws["plan"])
	wsID := idArg(ws["id"])

	k := a.ok("keys", "create", "--workspace", wsID, "--scopes", "books:read", "--mode", "live")
	key, _ := k["key"].(string)
	require.True(t, strings.HasPrefix(key, "wsk_live_"), "%v", k)
	require.Equal(t, []any{"books:read"}, k["scopes"])
	require.Equal(t, "live", k["mode"])
	keyID := idArg(k["id"])

	require.Equal(t, 200, call(t, "GET", s.base+"/api/v1/books", key, nil).status)
	denied := call(t, "PUT", s.base+"/api/v1/books/x", key, map[string]any{"status": "draft"})
	require.Equal(t, 403, denied.status, "%s", denied.raw)
	require.Equal(t, "MissingScope", denied.errField("type"), "%s", denied.raw)
	require.Equal(t, "books:write", denied.errField("required_scope"), "%s", denied.raw)
	me := call(t, "GET", s.base+"/api/v1/me", key, nil)
	require.Equal(t, 200, me.status, "%s", me.raw)
	require.Equal(t, "Acme", me.data()["workspace"].(map[string]any)["name"])
	require.Equal(t, "live", me.data()["mode"])

	rot := a.ok("keys", "rotate", "--id", keyID)
	newKey, _ := rot["key"].(string)
	require.True(t, strings.HasPrefix(newKey, "wsk_live_"), "%v", rot)
	require.NotEqual(t, key, newKey)
	require.Equal(t, keyID, idArg(rot["id"]))
	old := call(t, "GET", s.base+"/api/v1/books", key, nil)
	require.Equal(t, 401, old.status, "old key after rotate: %s", old.raw)
	require.Equal(t, 200, call(t, "GET", s.base+"/api/v1/books", newKey, nil).status)

	rev := a.ok("keys", "revoke", "--id", keyID)
	require.Equal(t, true, rev["revoked"])
	require.Equal(t, 401, call(t, "GET", s.base+"/api/v1/books", newKey, nil).status, "revoked key")

	// A second key sees the plan change at once (its identity was cached before it).
	k2 := a.ok("keys", "create", "--workspace", wsID, "--scopes", "*", "--mode", "test")
	key2 := k2["key"].(string)
	require.True(t, strings.HasPrefix(key2, "wsk_test_"), "%v", k2)
	me = call(t, "GET", s.base+"/api/v1/me", key2, nil)
	require.Equal(t, "pro", me.data()["plan"].(map[string]any)["name"], "%s", me.raw)
	up := a.ok("workspaces", "set-plan", "--id", wsID, "--plan", "company")
	require.Equal(t, "company", up["plan"])
	me = call(t, "GET", s.base+"/api/v1/me", key2, nil)
	require.Equal(t, "company", me.data()["plan"].(map[string]any)["name"], "%s", me.raw)

	t.Run("wrong token", func(t *testing.T) {
		m, out, err := a.run("--token", "adm_wrong", "workspaces", "create", "--name", "X", "--plan", "free")
		require.Error(t, err)
		require.ErrorContains(t, err, "401")
		e, _ := m["error"].(map[string]any)
		require.Equal(t, "Unauthenticated", e["type"], out)
	})

	t.Run("not found", func(t *testing.T) {
		m, out, err := a.run("keys", "rotate", "--id", "999999")
		require.Error(t, err)
		e, _ := m["error"].(map[string]any)
		require.Equal(t, "NotFound", e["type"], out)
	})

	t.Run("env url and data", func(t *testing.T) {
		var stdout, stderr syncBuffer
		err := run(context.Background(), []string{"admin", "workspaces", "create", "--name", "Env Co", "--plan", "free"},
			envMap(map[string]string{"FLIPBOOK_URL": s.base, "FLIPBOOK_DATA": dir}), &stdout, &stderr)
		require.NoError(t, err, "%s%s", stdout.String(), stderr.String())
		require.Contains(t, stdout.String(), `"slug": "env-co"`)
	})

	t.Run("usage errors", func(t *testing.T) {
		_, _, err := a.run("keys")
		require.ErrorContains(t, err, "missing admin command")
		_, out, err := a.run("keys", "frobnicate")
		require.ErrorContains(t, err, "unknown admin command")
		require.Contains(t, out, "usage: flipbook admin")
		var stdout, stderr syncBuffer
		err = run(context.Background(), []string{"admin", "--url", s.base, "--data", t.TempDir(), "keys", "revoke", "--id", "1"},
			envMap(nil), &stdout, &stderr)
		require.ErrorContains(t, err, "no admin token")
	})
}

// 6. run(): command dispatch and usage.
func TestRunCommands(t *testing.T) {
	ctx := context.Background()
	runCmd := func(ctx context.Context, args ...string) (string, string, error) {
		var stdout, stderr syncBuffer
		err := run(ctx, args, envMap(nil), &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}

	_, errOut, err := runCmd(ctx)
	require.Error(t, err)
	require.Contains(t, errOut, "usage: flipbook")

	_, errOut, err = runCmd(ctx, "frobnicate")
	require.ErrorContains(t, err, "frobnicate")
	require.Contains(t, errOut, "usage: flipbook")

	for _, h := range []string{"help", "-h", "--help"} {
		out, _, err := runCmd(ctx, h)
		require.NoError(t, err, h)
		require.Contains(t, out, "usage: flipbook <command>", h)
		for _, c := range []string{"serve", "admin", "bench"} {
			require.Contains(t, out, "\n  "+c+" ", h)
		}
	}

	_, _, err = runCmd(ctx, "serve", "--no-such-flag")
	require.Error(t, err)
	_, _, err = runCmd(ctx, "bench", "--no-such-flag")
	require.Error(t, err)

}

// run serve with a context that is already cancelled: serve must start, shut down and return
// nil. (Signals arriving during start-up are this case.) Guarded by a deadline: see the
// start-up/shutdown race reported with this test.
func TestServeCancelledAtStartReturns(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr syncBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, envMap(nil), &stdout, &stderr)
	}()
	select {
	case err := <-errc:
		require.NoError(t, err, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not return within 10s of starting with a cancelled context; stdout:\n%s", stdout.String())
	}
	require.Contains(t, stdout.String(), "listening on http://127.0.0.1:")
	require.Contains(t, stdout.String(), "stopped")
	require.FileExists(t, filepath.Join(dir, "admin-token"))
}
