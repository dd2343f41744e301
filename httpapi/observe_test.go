package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2/clientcredentials"

	"flipbook/actors"
	"flipbook/internal/testutil"
	"flipbook/mcp"
)

// logSink collects a service's log output (the JSON handler writes one line per record).
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines decodes every line; each must be a JSON object.
func (l *logSink) lines(tb testing.TB) []map[string]any {
	tb.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(tb, json.Unmarshal(sc.Bytes(), &m), "a log line is not JSON: %s", sc.Text())
		out = append(out, m)
	}
	return out
}

// requestLines are the request lines with the given request id.
func (l *logSink) requestLines(tb testing.TB, id string) []map[string]any {
	var out []map[string]any
	for _, m := range l.lines(tb) {
		if m["msg"] == "request" && m["request_id"] == id {
			out = append(out, m)
		}
	}
	return out
}

func jsonLogs(c *Config) *logSink {
	sink := &logSink{}
	c.Logger = slog.New(slog.NewJSONHandler(sink, nil))
	c.RequestLog = &RequestLog{W: sink} // as serve does: request lines encoded by hand
	return sink
}

// scrape gets GET /metrics (with the admin token when token is set) and parses it with
// Prometheus's own text parser.
func scrape(tb testing.TB, url, token string) (int, map[string]*dto.MetricFamily) {
	tb.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(tb, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(tb, err)
	if res.StatusCode != 200 {
		return res.StatusCode, nil
	}
	require.Contains(tb, res.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	require.NoError(tb, err, "%s", raw)
	return res.StatusCode, fams
}

// sample is the value of the series of family name whose labels include want (0 when absent);
// for a histogram, its count.
func sample(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if have[want[i]] != want[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
	}
	return 0
}

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { jsonLogs(c) })
	url := h.base + "/metrics"
	key, ws := h.workspaceKey(t, "company", "live", "*")

	// Access: the admin token, as for the admin API; 401 in the API's envelope otherwise.
	for _, cred := range []string{"", key, "adm_wrong"} {
		r := h.do(t, "GET", "/metrics", cred, nil)
		require.Equal(t, 401, r.Status, "credential %q: %s", cred, r.Body)
		require.Equal(t, "Unauthenticated", r.errType(), "%s", r.Body)
	}
	status, before := scrape(t, url, h.admin)
	require.Equal(t, 200, status)

	// REST: the counter of the operation and status moves by exactly the requests made.
	for range 3 {
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/me", key, nil).Status)
	}
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/nosuchbook", key, nil).Status)
	require.Equal(t, 404, h.do(t, "GET", "/no/such/route?api_key="+key, "", nil).Status)

	// MCP: the request is counted under its tool.
	cs := h.mcpSession(t, key, "")
	res, out := callTool(t, cs, "books_list", map[string]any{})
	require.False(t, res.IsError, "%v", out)

	// Reader events: appended and stored agree once the consumer caught up.
	rid := h.konva(t, key, "metrics", "publish")
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", collectBody(rid,
		map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 900},
		map[string]any{"type": "session_ended", "exit_reason": "closed"})).Status)

	// A conversion: one photo, one page.
	batch, _ := h.uploadOK(t, key, "photo.png", markedPNG(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])

	var after map[string]*dto.MetricFamily
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		_, after = scrape(t, url, h.admin)
		stored, lag := sample(after, "flipbook_events_stored_total"), sample(after, "flipbook_event_log_lag_events")
		mem := sample(after, "flipbook_duckdb_memory_bytes")
		// the batch's status is written just before the supervisor's figures move
		running := sample(after, "flipbook_conversion_running_batches")
		if stored != 3 || lag != 0 || mem <= 0 || running != 0 {
			return fmt.Errorf("want the consumer to have stored the 3 events and the conversion over: events stored %v, log lag %v, DuckDB memory %v, running batches %v",
				stored, lag, mem, running)
		}
		return nil
	})

	delta := func(name string, labels ...string) float64 {
		return sample(after, name, labels...) - sample(before, name, labels...)
	}
	require.Equal(t, 3.0, delta("flipbook_http_requests_total", "operation", "me", "status", "200"))
	require.Equal(t, 1.0, delta("flipbook_http_requests_total", "operation", "books.get", "status", "404"))
	require.Equal(t, 1.0, delta("flipbook_http_requests_total", "operation", "not_found", "status", "404"))
	require.Equal(t, 1.0, delta("flipbook_http_requests_total", "operation", "books_list", "status", "200"), "MCP tools/call by tool")
	require.GreaterOrEqual(t, delta("flipbook_http_requests_total", "operation", "mcp", "status", "200"), 1.0, "MCP initialize")
	require.Equal(t, 1.0, delta("flipbook_http_requests_total", "operation", "reader.collect", "status", "202"))
	require.Equal(t, 1.0, delta("flipbook_http_requests_total", "operation", "books.upload", "status", "202"))
	require.Equal(t, 3.0, sample(after, "flipbook_http_requests_total", "operation", "metrics", "status", "401"))
	require.Equal(t, 3.0, delta("flipbook_http_request_duration_seconds", "operation", "me"), "histogram count")
	require.Equal(t, dto.MetricType_HISTOGRAM, after["flipbook_http_request_duration_seconds"].GetType())
	for _, m := range after["flipbook_http_requests_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			require.NotContains(t, lp.GetValue(), "/", "no raw path as a label")
			require.NotContains(t, lp.GetValue(), key)
		}
	}

	// Actors: every kind is there; the single actors run; nothing is left waiting.
	for _, k := range actors.ActorKinds {
		require.NotNil(t, findSeries(after, "flipbook_actor_mailbox_depth", "kind", k), "mailbox depth of %s", k)
	}
	require.Equal(t, 1.0, sample(after, "flipbook_actors", "kind", "accounts"))
	require.Equal(t, 1.0, sample(after, "flipbook_actors", "kind", "conversion"))
	require.GreaterOrEqual(t, sample(after, "flipbook_actors", "kind", "ws"), 1.0)

	// Event log: this process appended 3, DuckDB stored 3, the log ends where DuckDB is.
	require.Equal(t, 3.0, sample(after, "flipbook_events_appended_total"))
	require.Equal(t, 3.0, sample(after, "flipbook_event_log_end_offset"))
	require.Equal(t, 3.0, sample(after, "flipbook_event_log_stored_offset"))

	// Conversion: the photo's page is counted; the queue is empty.
	require.Equal(t, 1.0, sample(after, "flipbook_conversion_pages_total"))
	require.Equal(t, 0.0, sample(after, "flipbook_conversion_queued_batches"))
	require.Equal(t, 0.0, sample(after, "flipbook_conversion_running_batches"))

	// Memory and the runtime.
	require.Greater(t, sample(after, "flipbook_pebble_memtable_bytes"), 0.0)
	require.NotNil(t, after["flipbook_pebble_block_cache_bytes"])
	require.Greater(t, sample(after, "flipbook_duckdb_memory_bytes"), 0.0)
	require.NotNil(t, after["flipbook_duckdb_temporary_storage_bytes"])
	require.Greater(t, sample(after, "go_goroutines"), 0.0)
	require.NotNil(t, after["process_resident_memory_bytes"])
	require.Equal(t, 1.0, sample(after, "flipbook_build_info", "version", Version))
	_ = ws
}

func findSeries(fams map[string]*dto.MetricFamily, name, label, value string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() == value {
				return m
			}
		}
	}
	return nil
}

// markedPNG is a small real PNG.
func markedPNG(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, png.Encode(&buf, markedImage(60, 80)))
	return buf.Bytes()
}

// With the admin surface off (no admin token) /metrics and pprof are not there at all, while
// the metrics listener serves without a token.
func TestMetricsAdminDisabledAndListener(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.AdminToken = ""; c.PProf = true })
	for _, p := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap"} {
		r := h.do(t, "GET", p, "anything", nil)
		require.Equal(t, 404, r.Status, "%s: %s", p, r.Body)
		require.Equal(t, "NotFound", r.errType())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- h.svc.ServeMetrics(ln) }()
	base := "http://" + ln.Addr().String()
	status, fams := scrape(t, base+"/metrics", "")
	require.Equal(t, 200, status)
	require.Greater(t, sample(fams, "go_goroutines"), 0.0)
	require.NotNil(t, fams["flipbook_actor_mailbox_depth"])
	res, err := http.Get(base + "/api/v1/health")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 404, res.StatusCode, "the metrics listener serves nothing else")
	h.stop(t)
	select {
	case err := <-served:
		require.NoError(t, err, "Shutdown stops the metrics listener")
	case <-time.After(10 * time.Second):
		t.Fatal("the metrics listener still serves after Shutdown")
	}
	_, err = net.DialTimeout("tcp", ln.Addr().String(), time.Second)
	require.Error(t, err, "the metrics address is closed")
}

func TestPprof(t *testing.T) {
	t.Parallel()
	off := newHarness(t, nil)
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap"} {
		require.Equal(t, 404, off.do(t, "GET", p, off.admin, nil).Status, "pprof is off by default: %s", p)
	}

	h := newHarness(t, func(c *Config) { c.PProf = true })
	key := h.workspace(t, "company", "live")
	for _, cred := range []string{"", key} {
		r := h.do(t, "GET", "/debug/pprof/", cred, nil)
		require.Equal(t, 401, r.Status, "%s", r.Body)
		require.Equal(t, "Unauthenticated", r.errType())
	}
	r := h.do(t, "GET", "/debug/pprof/", h.admin, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Contains(t, string(r.Body), "goroutine")
	r = h.do(t, "GET", "/debug/pprof/goroutine?debug=1", h.admin, nil)
	require.Equal(t, 200, r.Status)
	require.Contains(t, string(r.Body), "goroutine profile:")
	r = h.do(t, "GET", "/debug/pprof/heap", h.admin, nil)
	require.Equal(t, 200, r.Status)
	require.NotEmpty(t, r.Body)
	r = h.do(t, "GET", "/debug/pprof/cmdline", h.admin, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, 404, h.do(t, "GET", "/debug/pprof/nosuchprofile", h.admin, nil).Status)
}

// TestRequestLogsHoldNoSecrets: every request gives exactly one JSON line with its id,
// operation, route, status, latency and (when authenticated) workspace, and no credential in
// any form (header, api_key query, wrong key, OAuth token, admin token, webhook signing secret)
// ever reaches the log.
func TestRequestLogsHoldNoSecrets(t *testing.T) {
	var logs *logSink
	h := newHarness(t, func(c *Config) { logs = jsonLogs(c); c.AllowPrivateTargets = true })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	rid := h.konva(t, key, "logged", "publish")
	const (
		wrongKey      = "fb_live_wrongwrongwrongwrong0123456789"
		signingSecret = "whsec_dontlogme_0123456789abcdef"
	)
	// An OAuth access token (client credentials), whose client secret is a secret too.
	reg := h.do(t, "POST", "/oauth/register", key, map[string]any{"client_name": "cron", "grant_types": []string{"client_credentials"}})
	require.Equal(t, 201, reg.Status, "%s", reg.Body)
	clientSecret := reg.JSON["client_secret"].(string)
	cc := &clientcredentials.Config{ClientID: reg.JSON["client_id"].(string), ClientSecret: clientSecret, TokenURL: h.base + "/oauth/token"}
	tok, err := cc.Token(context.Background())
	require.NoError(t, err)

	type call struct {
		id, method, path, cred string
		body                   any
		status                 int
		op, route              string
		ws                     int64
	}
	calls := []call{
		{"t-header", "GET", "/api/v1/me", key, nil, 200, "me", "/api/v1/me", ws},
		{"t-query", "GET", "/api/v1/me?api_key=" + key, "", nil, 200, "me", "/api/v1/me", ws},
		{"t-wrong-header", "GET", "/api/v1/me", wrongKey, nil, 401, "me", "/api/v1/me", 0},
		{"t-wrong-query", "GET", "/api/v1/books?api_key=" + wrongKey, "", nil, 401, "books.list", "/api/v1/books", 0},
		{"t-oauth", "GET", "/api/v1/books/" + rid, tok.AccessToken, nil, 200, "books.get", "/api/v1/books/{book}", ws},
		{"t-webhook", "POST", "/api/v1/webhook-subscriptions", key, map[string]any{"name": "crm", "provider": "generic",
			"target_url": "http://127.0.0.1:9/flipbook", "event_types": []string{"session_ended"},
			"signing_secret": signingSecret}, 201, "webhooks.create", "/api/v1/webhook-subscriptions", ws},
		{"t-admin", "GET", "/admin/v1/ingest", h.admin, nil, 200, "admin.ingest_status", "/admin/v1/ingest", 0},
		{"t-mcp-query", "POST", mcp.Path + "?api_key=" + key, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"},
			200, "mcp", mcp.Path, ws},
		{"t-viewer", "GET", "/view/" + rid, "", nil, 200, "viewer", "/view/{book}", 0},
		{"t-csv", "GET", "/api/v1/exports/books/" + rid + "/interaction-events?api_key=" + key, "", nil, 200,
			"exports.interaction_events", "/api/v1/exports/books/{book}/interaction-events", ws},
		{"t-404", "GET", "/nowhere?api_key=" + key, "", nil, 404, "not_found", "", 0},
	}
	for _, c := range calls {
		headers := []string{"X-Request-Id", c.id}
		if c.path == mcp.Path+"?api_key="+key {
			headers = append(headers, "Accept", "application/json, text/event-stream")
		}
		r := h.do(t, c.method, c.path, c.cred, c.body, headers...)
		require.Equal(t, c.status, r.Status, "%s: %s", c.id, r.Body)
		require.Equal(t, c.id, r.Header.Get("X-Request-Id"), c.id)
	}
	// An MCP tools/call with the key in the header goes through the fast path.
	cs := h.mcpSession(t, key, "")
	res, out := callTool(t, cs, "identity_get", map[string]any{})
	require.False(t, res.IsError, "%v", out)

	for _, c := range calls {
		var got []map[string]any
		testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
			if got = logs.requestLines(t, c.id); len(got) == 0 {
				return fmt.Errorf("request %s not logged", c.id)
			}
			return nil
		})
		require.Len(t, got, 1, "%s: exactly one line", c.id)
		l := got[0]
		require.Equal(t, "INFO", l["level"], c.id)
		require.Equal(t, c.op, l["operation"], c.id)
		require.Equal(t, c.route, l["route"], c.id)
		require.Equal(t, c.method, l["method"], c.id)
		require.EqualValues(t, c.status, l["status"], c.id)
		require.Contains(t, l, "latency_ms", c.id)
		require.GreaterOrEqual(t, l["latency_ms"].(float64), 0.0, c.id)
		require.Contains(t, l, "bytes", c.id)
		if c.ws != 0 {
			require.EqualValues(t, c.ws, l["workspace_id"], "%s: workspace of the caller", c.id)
		} else {
			require.NotContains(t, l, "workspace_id", c.id)
		}
	}
	// A streamed export is logged when its body has been sent, with its bytes.
	csv := logs.requestLines(t, "t-csv")[0]
	require.Greater(t, csv["bytes"].(float64), 0.0, "the CSV header at least")

	// The MCP tool call is logged under its tool with the caller's workspace.
	found := false
	for _, l := range logs.lines(t) {
		if l["msg"] == "request" && l["operation"] == "identity_get" {
			found = true
			require.EqualValues(t, ws, l["workspace_id"])
			require.Equal(t, mcp.Path, l["route"])
		}
	}
	require.True(t, found, "the tools/call is logged under its tool")

	// Requests without an X-Request-Id get one, the same in the response and the line.
	r := h.do(t, "GET", "/api/v1/health", "", nil)
	id := r.Header.Get("X-Request-Id")
	require.NotEmpty(t, id)
	require.Len(t, logs.requestLines(t, id), 1)

	all := logs.String()
	for name, secret := range map[string]string{"API key": key, "wrong key": wrongKey, "OAuth access token": tok.AccessToken,
		"OAuth client secret": clientSecret, "admin token": h.admin, "signing secret": signingSecret} {
		require.NotContains(t, all, secret, "the %s reached the log", name)
	}
	require.NotContains(t, all, "api_key", "no query string is logged")
	require.NotContains(t, all, "Bearer")
}

// With the log at warn, requests write nothing (their lines are info) but are still counted.
func TestRequestLogLevel(t *testing.T) {
	t.Parallel()
	sink := &logSink{}
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/health", "", nil).Status)
	require.NotContains(t, sink.String(), `"msg":"request"`)
	_, fams := scrape(t, h.base+"/metrics", h.admin)
	require.Equal(t, 1.0, sample(fams, "flipbook_http_requests_total", "operation", "health", "status", "200"))
}

// fasthttp's own errors quote the request's bytes; the log keeps none of them.
func TestScrubTransport(t *testing.T) {
	t.Parallel()
	msg := `error when serving connection "127.0.0.1:8080"<->"127.0.0.1:51234": error when reading request headers: ` +
		`invalid header value "Bearer fb_live_secret": buffer size=120, contents: "GET /x?api_key=fb_live_secret HTTP/1.1\r\n"`
	got := scrubTransport(msg)
	require.NotContains(t, got, "fb_live_secret")
	require.Contains(t, got, `"127.0.0.1:8080"<->"127.0.0.1:51234"`)
	require.NotContains(t, scrubTransport(`unsupported http request method "X" in "X /?api_key=k HTTP/1.1"`), "api_key")
}

// A tools/call the SDK answers (the fast path off) is counted under its tool too.
func TestMetricsMCPThroughSDK(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MCPSDKOnly = true })
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "")
	res, out := callTool(t, cs, "books_list", map[string]any{})
	require.False(t, res.IsError, "%v", out)
	_, fams := scrape(t, h.base+"/metrics", h.admin)
	require.Equal(t, 1.0, sample(fams, "flipbook_http_requests_total", "operation", "books_list", "status", "200"))
}

// Requests fasthttp refuses before routing (a body over the limit, malformed headers) get a
// line too, and fasthttp's own debug messages do not carry the request's bytes.
func TestTransportErrorsLogged(t *testing.T) {
	t.Parallel()
	sink := &logSink{}
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.MaxBodyBytes = 4096
	})
	const secret = "wsk_live_transportsecret0123456789"
	r := h.do(t, "POST", "/api/v1/books/konva?api_key="+secret, secret, strings.Repeat("x", 10000))
	require.Equal(t, 413, r.Status, "%s", r.Body)
	id := r.Header.Get("X-Request-Id")
	require.NotEmpty(t, id)
	lines := sink.requestLines(t, id)
	require.Len(t, lines, 1)
	// Refused from its headers by its route (body.go), before the key is looked at.
	require.Equal(t, "books.create_konva", lines[0]["operation"])
	require.EqualValues(t, 413, lines[0]["status"])

	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	_, err = c.Write([]byte("GET /api/v1/me?api_key=" + secret + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret +
		"\r\nBad Header Line\r\n\r\n"))
	require.NoError(t, err)
	raw, _ := io.ReadAll(c)
	c.Close()
	require.Contains(t, string(raw), "400")
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		n := 0
		for _, l := range sink.lines(t) {
			if l["msg"] == "request" && l["operation"] == "transport_error" {
				n++
			}
		}
		if n != 1 { // the malformed request (the oversized one was routed: its operation's line)
			return fmt.Errorf("%d transport_error request lines logged, want the malformed request's one", n)
		}
		return nil
	})
	require.Contains(t, sink.String(), `"component":"fasthttp"`, "fasthttp's message about it is there (debug)")
	require.NotContains(t, sink.String(), secret)
}

// The hand-encoded request line is what slog's JSON and text handlers write for the same
// fields (but the time), whatever the strings hold.
func TestRequestLogEncoding(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ id, op, pattern string }{
		{"abc-1", "books.get", "/api/v1/books/{book}"},
		{"q\"uote\\back", "tool name", "/x=y\n\t\x01é"},
		{"", "other", ""},
		{"bad\xffutf8", "ok", "/ü/\xc3"},
	} {
		l := &reqLine{id: c.id, route: &routeInfo{op: c.op, pattern: c.pattern}, workspace: 42, method: "POST", status: 422}
		for _, text := range []bool{false, true} {
			var mine, ref bytes.Buffer
			(&RequestLog{W: &mine, Text: text}).write(l, 1234567*time.Nanosecond, 99)
			opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}
			var h slog.Handler = slog.NewJSONHandler(&ref, opts)
			if text {
				h = slog.NewTextHandler(&ref, opts)
			}
			slog.New(h).LogAttrs(context.Background(), slog.LevelInfo, "request",
				slog.String("request_id", c.id), slog.Int64("workspace_id", 42), slog.String("operation", c.op),
				slog.String("method", "POST"), slog.String("route", c.pattern), slog.Int("status", 422),
				slog.Float64("latency_ms", 1.234), slog.Int64("bytes", 99))
			got := mine.String()
			require.True(t, strings.HasSuffix(got, "\n"))
			require.Equal(t, 1, strings.Count(got, "\n"), "one line: %q", got)
			// Drop the time field of the hand-encoded line, then compare.
			if text {
				require.True(t, strings.HasPrefix(got, "time="), got)
				got = got[strings.IndexByte(got, ' ')+1:]
			} else {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(got), &m), got)
				_, err := time.Parse(time.RFC3339Nano, m["time"].(string))
				require.NoError(t, err)
				got = "{" + got[strings.Index(got, `"level"`):]
			}
			require.Equal(t, ref.String(), got, "text=%v", text)
		}
	}
}
