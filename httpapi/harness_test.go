package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// harness is a real service on a real loopback listener, with a temp data dir.
type harness struct {
	svc   *Service
	cfg   Config
	base  string
	admin string
	http  *http.Client
	// tb is the test that started the harness; contract, when set, replaces the served
	// document in the OpenAPI hook (openapi_contract_test.go; tests of the hook itself).
	tb       testing.TB
	contract *apiContract
	// ln is the loopback listener every start serves on: bound once, so a restart serves
	// where the first start did.
	ln *keptListener
}

const testAdminToken = "adm_test_token"

// newHarness starts a service; mod may change the config (rate limits, data dir, ...).
func newHarness(tb testing.TB, mod func(*Config)) *harness {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = tb.TempDir()
	cfg.AdminToken = testAdminToken
	cfg.RateWorkspace, cfg.RateEndpoint, cfg.RateUnauthenticated, cfg.RateCollect = 0, 0, 0, 0
	if mod != nil {
		mod(&cfg)
	}
	h := &harness{cfg: cfg, admin: testAdminToken, http: &http.Client{Timeout: 30 * time.Second}, tb: tb}
	if _, bench := tb.(*testing.B); !bench {
		// Every answer of a documented /api/v1 operation is checked against the OpenAPI
		// document (benchmarks measure streaming and memory: not there).
		h.http.Transport = &contractTransport{h: h, next: http.DefaultTransport}
	}
	tb.Cleanup(func() { // registered first: a start that fails still closes its listener
		h.stop(tb)
		h.ln.close()
	})
	h.start(tb)
	return h
}

func (h *harness) start(tb testing.TB) {
	tb.Helper()
	if h.ln == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(tb, err)
		h.ln = keepListener(ln)
	}
	cfg := h.cfg
	cfg.Addr = h.ln.Addr().String()
	svc, err := New(cfg)
	require.NoError(tb, err)
	h.svc, h.base = svc, "http://"+cfg.Addr
	go svc.Serve(h.ln.handle())
}

func (h *harness) stop(tb testing.TB) {
	if h.svc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(tb, h.svc.Shutdown(ctx))
	h.svc = nil
}

// restart stops the service and starts a new one on the same data dir.
func (h *harness) restart(tb testing.TB) {
	h.stop(tb)
	h.start(tb)
}

// keptListener is a harness's listener, open from its first start to its end. A restart used to
// bind the address again once the stopped service had closed it, which only serial tests could
// do safely: in between, another test's listener or outgoing connection may take the port. Now
// each start serves on a handle instead: the service's Shutdown closes the handle (Accept
// answers net.ErrClosed, as a closed listener does), not the socket, and the next start's
// handle accepts where it left off. A connection made while no service runs waits in the
// backlog for the next one rather than being refused.
type keptListener struct {
	net.Listener
	conns chan net.Conn // accepted by the accept loop, taken by the serving handle
	quit  chan struct{} // closed by close
	done  chan struct{} // closed when the accept loop ends (err says why)
	err   error
}

func keepListener(ln net.Listener) *keptListener {
	l := &keptListener{Listener: ln, conns: make(chan net.Conn), quit: make(chan struct{}), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *keptListener) acceptLoop() {
	defer close(l.done)
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.err = err // read after done is closed
			return
		}
		l.give(c)
	}
}

// give hands c to the next Accept of an open handle; it closes c if the listener closes first.
func (l *keptListener) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.quit:
		c.Close()
	}
}

// close closes the socket: for good, at the harness's end.
func (l *keptListener) close() {
	if l != nil {
		close(l.quit)
		l.Listener.Close()
		<-l.done
	}
}

// handle is a listener for one start of the service.
func (l *keptListener) handle() net.Listener {
	return &listenerHandle{keptListener: l, closed: make(chan struct{})}
}

type listenerHandle struct {
	*keptListener
	once   sync.Once
	closed chan struct{}
}

func (h *listenerHandle) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		select {
		case <-h.closed: // closed while c was being taken: c is the next start's
			go h.give(c)
			return nil, net.ErrClosed
		default:
			return c, nil
		}
	case <-h.closed:
		return nil, net.ErrClosed
	case <-h.done:
		return nil, h.err
	}
}

// Close stops this handle's Accept; the socket stays open for the next start.
func (h *listenerHandle) Close() error {
	h.once.Do(func() { close(h.closed) })
	return nil
}

// resp is a decoded response.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
}

func (r *resp) data() map[string]any { m, _ := r.JSON["data"].(map[string]any); return m }
func (r *resp) list() []any          { l, _ := r.JSON["data"].([]any); return l }
func (r *resp) meta() map[string]any { m, _ := r.JSON["meta"].(map[string]any); return m }
func (r *resp) errType() string {
	e, _ := r.JSON["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}
func (r *resp) details() map[string]any {
	e, _ := r.JSON["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

// do sends a request. body may be nil, a string (sent raw) or a value (sent as JSON). An answer
// of a documented /api/v1 operation that the OpenAPI document does not describe fails tb.
func (h *harness) do(tb testing.TB, method, path, key string, body any, headers ...string) *resp {
	tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(tb, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), tbKey{}, tb), method, h.base+path, rd)
	require.NoError(tb, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" { // net/http sends req.Host, not a Host header
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := h.http.Do(req)
	require.NoError(tb, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(tb, err)
	out := &resp{Status: res.StatusCode, Header: res.Header, Body: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		var v any // an object, or an array (a JSON-RPC batch answer): JSON holds objects only
		require.NoError(tb, json.Unmarshal(raw, &v), "body: %s", raw)
		out.JSON, _ = v.(map[string]any)
	}
	return out
}

// adminDo calls the admin API with the admin token.
func (h *harness) adminDo(tb testing.TB, method, path string, body any) *resp {
	return h.do(tb, method, "/admin/v1"+path, h.admin, body)
}

// workspace creates a workspace on plan and a *-scoped key in mode; it returns the key.
func (h *harness) workspace(tb testing.TB, plan, mode string) string {
	k, _ := h.workspaceKey(tb, plan, mode, "*")
	return k
}

// workspaceKey creates a workspace and a key with the given scopes; it returns key and ws id.
func (h *harness) workspaceKey(tb testing.TB, plan, mode string, scopes ...string) (string, int64) {
	tb.Helper()
	w := h.adminDo(tb, "POST", "/workspaces", map[string]any{"name": "ws " + plan, "plan": plan})
	require.Equal(tb, 201, w.Status, "%s", w.Body)
	id := int64(w.data()["id"].(float64))
	return h.key(tb, id, mode, scopes...), id
}

// key creates another key for workspace id.
func (h *harness) key(tb testing.TB, ws int64, mode string, scopes ...string) string {
	tb.Helper()
	k := h.adminDo(tb, "POST", "/workspaces/"+itoa(ws)+"/keys", map[string]any{"name": "k", "scopes": scopes, "mode": mode})
	require.Equal(tb, 201, k.Status, "%s", k.Body)
	return k.data()["key"].(string)
}

// konva creates a book of two pages; it returns the random id.
func (h *harness) konva(tb testing.TB, key, title, status string) string {
	tb.Helper()
	r := h.do(tb, "POST", "/api/v1/books/konva", key, konvaBody(title, status, 2))
	require.Equal(tb, 201, r.Status, "%s", r.Body)
	return r.data()["random_id"].(string)
}

func konvaBody(title, status string, pages int) map[string]any {
	imgs := make([]any, pages)
	for i := range imgs {
		imgs[i] = pngBase64(40+i, 60)
	}
	b := map[string]any{
		"title":       title,
		"canvas":      map[string]any{"width": 600, "height": 800, "orientation": "portrait", "objects": []any{map[string]any{"type": "image"}}},
		"page_images": imgs,
	}
	if status != "" {
		b["status"] = status
	}
	return b
}

// pngBase64 is a real w×h PNG, base64-encoded.
func pngBase64(w, h int) string {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 5), uint8(y * 3), 120, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// fakeCtx is a request context carrying a bearer key (for calling the pipeline directly).
