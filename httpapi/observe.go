package httpapi

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"flipbook/api"
)

// Request observation (docs/OPERATIONS.md): every request the router answers goes through
// serveHTTP, which gives it a request id, runs the router and then writes one log line and
// records the request metrics. What only the handlers know reaches it through the request's
// reqInfo (a user value): the route's labels (set by the wrapper every route is registered
// with, so no handler has to remember), the MCP tool (mcp.Options.Observe) and the caller's
// workspace (serveOp, the MCP hook). Nothing of the request's URL, query or headers is logged:
// the route pattern stands for the path, and credentials travel in headers or the query.

// reqInfoKey is the user value holding a request's *reqInfo.
const reqInfoKey = "\x00flipbook.req"

// reqInfo is what a request's log line and metrics need beyond the response. Pooled: a
// handler copies out what must outlive the request (a streamed response's line, below).
type reqInfo struct {
	id        string
	route     *routeInfo
	workspace int64
	stream    *streamBody
	// unread: the request was refused with its body (part of it) still on the connection;
	// serveHTTP answers it with a lingering close (body.go).
	unread bool
}

var reqInfoPool = sync.Pool{New: func() any { return new(reqInfo) }}

func reqInfoOf(ctx *fasthttp.RequestCtx) *reqInfo {
	ri, _ := ctx.UserValue(reqInfoKey).(*reqInfo)
	return ri
}

// routeInfo is a route's labels and its metric handles. A route's series are made at its first
// request, so a scrape shows only the operations that were called (each histogram is 15
// series).
type routeInfo struct {
	op      string // the operation label: operation id, MCP tool, or a fixed route name
	pattern string // the route pattern logged as route
	m       *metrics
	latency atomic.Pointer[observer]
	codes   atomic.Pointer[map[int]prometheus.Counter] // by status, copied on write
	mu      sync.Mutex
}

type observer struct{ prometheus.Observer }

// observe records a request's duration in the route's operation's histogram.
func (r *routeInfo) observe(d time.Duration) {
	o := r.latency.Load()
	if o == nil {
		o = &observer{r.m.latency.WithLabelValues(r.op)} // the same series whoever makes it first
		r.latency.Store(o)
	}
	o.Observe(d.Seconds())
}

// counter is the request counter of the route's operation for status.
func (r *routeInfo) counter(status int) prometheus.Counter {
	if m := r.codes.Load(); m != nil {
		if c, ok := (*m)[status]; ok {
			return c
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.codes.Load()
	next := make(map[int]prometheus.Counter, 8)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	c := r.m.requests.WithLabelValues(r.op, strconv.Itoa(status))
	next[status] = c
	r.codes.Store(&next)
	return c
}

// routes makes the routeInfo of each (operation label, pattern) once.
type routes struct {
	m     *metrics
	mu    sync.Mutex
	byKey map[[2]string]*routeInfo
	tools map[*api.Operation]*routeInfo // MCP tools
	other *routeInfo                    // no route matched nor said what it was (OPTIONS)
	// forwarded: answered by the node owning the request's workspace (cluster mode), or a
	// 503 while its partition moved
	forwarded *routeInfo
	badReq    *routeInfo // requests fasthttp refused before routing
}

func newRoutes(m *metrics) *routes {
	r := &routes{m: m, byKey: map[[2]string]*routeInfo{}, tools: map[*api.Operation]*routeInfo{}}
	r.other = r.get("other", "")
	r.badReq = r.get("transport_error", "")
	r.forwarded = r.get("forwarded", "")
	return r
}

func (r *routes) get(op, pattern string) *routeInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]string{op, pattern}
	if ri, ok := r.byKey[k]; ok {
		return ri
	}
	ri := &routeInfo{op: op, pattern: pattern, m: r.m}
	r.byKey[k] = ri
	return ri
}

// labeled wraps a route's handler so the request is labeled with op and the route's pattern.
func (s *Service) labeled(op, pattern string, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	ri := s.routes.get(op, pattern)
	return func(ctx *fasthttp.RequestCtx) {
		if x := reqInfoOf(ctx); x != nil {
			x.route = ri
		}
		h(ctx)
	}
}

// observeMCP is the MCP endpoint's hook (mcp.Options.Observe): the authenticated caller, and
// the tool once the request names a known one.
func (s *Service) observeMCP(ctx *fasthttp.RequestCtx, p *api.Principal, tool *api.Operation) {
	ri := reqInfoOf(ctx)
	if ri == nil {
		return
	}
	if p != nil {
		ri.workspace = p.Tenant.Workspace
	}
	if tool != nil {
		if r := s.routes.tools[tool]; r != nil {
			ri.route = r
		}
	}
}

// noteCaller records the authenticated caller of a REST call.
func noteCaller(ctx *fasthttp.RequestCtx, p *api.Principal) {
	if p == nil {
		return
	}
	if ri := reqInfoOf(ctx); ri != nil {
		ri.workspace = p.Tenant.Workspace
	}
}

// serveHTTP is the server's handler: the router, observed.
func (s *Service) serveHTTP(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	ri := reqInfoPool.Get().(*reqInfo)
	ri.id = s.newRequestID(ctx)
	ctx.SetUserValue(reqInfoKey, ri)
	// The one place a routed answer gets its X-Request-Id (transportError sets it for the
	// requests fasthttp refused before routing).
	ctx.Response.Header.Set("X-Request-Id", ri.id)
	if s.cluster == nil || !s.cluster.route(ctx, ri.id) {
		s.router.Handler(ctx)
	} else {
		ri.route = s.routes.forwarded
	}
	if !ri.unread && !skipUnread(ctx) {
		refusedUnread(ctx)
	}
	if ri.unread {
		lingerClose(ctx)
	}
	ctx.RemoveUserValue(reqInfoKey)
	s.finish(ctx, ri, start)
	*ri = reqInfo{}
	reqInfoPool.Put(ri)
}

// reqLine is a finished request as its log line and metrics see it.
type reqLine struct {
	id        string
	route     *routeInfo
	workspace int64
	method    string
	start     time.Time
	status    int
}

// finish records a request once its handler returned. A streamed response (the CSV exports)
// is recorded when its body has been written (streamBody.Close), so its latency and bytes
// cover the whole transfer.
func (s *Service) finish(ctx *fasthttp.RequestCtx, ri *reqInfo, start time.Time) {
	route := ri.route
	if route == nil {
		route = s.routes.other
	}
	l := reqLine{id: ri.id, route: route, workspace: ri.workspace, method: methodName(ctx.Method()),
		start: start, status: ctx.Response.StatusCode()}
	if ri.stream != nil {
		ls := l // only a stream's line outlives the request
		ri.stream.line = &ls
		return
	}
	bytes := int64(0)
	if ctx.Response.IsBodyStream() {
		bytes = int64(max(ctx.Response.Header.ContentLength(), 0)) // a file: its size
	} else {
		bytes = int64(len(ctx.Response.Body()))
	}
	s.record(&l, bytes)
}

// record counts a finished request and writes its log line.
func (s *Service) record(l *reqLine, bytes int64) {
	d := time.Since(l.start)
	l.route.observe(d)
	l.route.counter(l.status).Inc()
	if rl := s.cfg.RequestLog; rl != nil {
		rl.write(l, d, bytes)
		return
	}
	log := s.log
	if !log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 9)
	attrs = append(attrs, slog.String("request_id", l.id))
	if l.workspace != 0 {
		attrs = append(attrs, slog.Int64("workspace_id", l.workspace))
	}
	attrs = append(attrs,
		slog.String("operation", l.route.op),
		slog.String("method", l.method),
		slog.String("route", l.route.pattern),
		slog.Int("status", l.status),
		slog.Float64("latency_ms", float64(d.Microseconds())/1000),
		slog.Int64("bytes", bytes))
	log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// RequestLog writes request lines to W (serve: a LogWriter) in the layout of slog's JSON
// handler, or of its text handler with Text, encoded by hand: through slog the line was most of
// the observation's cost on a cached GET (docs/BENCHMARKS.md). One Write per line.
type RequestLog struct {
	W    io.Writer
	Text bool
}

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 320); return &b }}

func (rl *RequestLog) write(l *reqLine, d time.Duration, bytes int64) {
	bp := lineBufs.Get().(*[]byte)
	b := (*bp)[:0]
	now := time.Now()
	field := func(b []byte, key string) []byte {
		if rl.Text {
			return append(append(append(b, ' '), key...), '=')
		}
		return append(append(append(b, ',', '"'), key...), '"', ':')
	}
	str := func(b []byte, key, v string) []byte {
		b = field(b, key)
		switch {
		case !rl.Text:
			return appendJSONQuoted(b, v)
		case needsQuote(v):
			return strconv.AppendQuote(b, v)
		}
		return append(b, v...)
	}
	if rl.Text {
		b = append(b, "time="...)
		b = now.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, " level=INFO msg=request"...)
	} else {
		b = append(b, `{"time":"`...)
		b = now.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"INFO","msg":"request"`...)
	}
	b = str(b, "request_id", l.id)
	if l.workspace != 0 {
		b = strconv.AppendInt(field(b, "workspace_id"), l.workspace, 10)
	}
	b = str(b, "operation", l.route.op)
	b = str(b, "method", l.method)
	b = str(b, "route", l.route.pattern)
	b = strconv.AppendInt(field(b, "status"), int64(l.status), 10)
	b = strconv.AppendFloat(field(b, "latency_ms"), float64(d.Microseconds())/1000, 'f', -1, 64)
	b = strconv.AppendInt(field(b, "bytes"), bytes, 10)
	if !rl.Text {
		b = append(b, '}')
	}
	b = append(b, '\n')
	_, _ = rl.W.Write(b)
	*bp = b
	lineBufs.Put(bp)
}

// needsQuote reports whether a text-format value needs quotes, as slog's text handler decides.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += n
	}
	return false
}

// appendJSONQuoted appends s as a JSON string, escaped as slog's JSON handler does for the
// characters it must escape (quotes, backslashes, control characters).
func appendJSONQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c >= utf8.RuneSelf:
			if r, n := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...) // invalid UTF-8, as slog writes it
			} else {
				b = append(b, s[i:i+n]...)
				i += n - 1
			}
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// methodName is the request's method as a constant (no allocation, and nothing a client made
// up reaches the log).
func methodName(m []byte) string {
	switch string(m) {
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "PATCH":
		return "PATCH"
	case "DELETE":
		return "DELETE"
	case "HEAD":
		return "HEAD"
	case "OPTIONS":
		return "OPTIONS"
	}
	return "OTHER"
}

// quoted is a Go-quoted string (%q) in a message; hostPort a quoted ip:port.
var (
	quoted   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	hostPort = regexp.MustCompile(`^"(\[[0-9A-Fa-f:.]+\]|[0-9.]+):[0-9]+"$`)
)

// scrubTransport removes the request bytes fasthttp quotes in its errors (the first line with
// its query, a header's value, a snippet of the headers after "contents:"): they can carry the
// client's Authorization header or api_key into the log. Quoted addresses (ip:port) stay.
func scrubTransport(msg string) string {
	if i := strings.Index(msg, "contents:"); i >= 0 {
		msg = msg[:i] + "contents: (not logged)"
	}
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if hostPort.MatchString(q) {
			return q
		}
		return `"(not logged)"`
	})
}
