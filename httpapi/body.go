package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/bytebufferpool"
	"github.com/valyala/fasthttp"

	"flipbook/api"
)

// Request bodies are read by the route that wants them, never before (docs/ARCHITECTURE.md,
// "Request bodies"). The server streams bodies (fasthttp's StreamRequestBody): once a request's
// headers are in, fasthttp waits for at most one byte of body and calls the handler, which
//
//   - refuses a declared Content-Length over the route's cap with 413 at once (the body is
//     never read; the connection closes, since its unread bytes cannot be skipped);
//   - on an authenticated route, authenticates first: a request without valid credentials is
//     answered 401 without its body being read;
//   - then reads the body, at most the route's cap (a chunked body past it is a 413 when it
//     gets there), against a read deadline that grows with the declared length, so a sender
//     trickling bytes is cut off (408);
//   - holds what it buffers in memory against one service-wide budget (Config.MaxBufferedBytes):
//     past it, a request gets 503 with Retry-After instead of memory;
//   - streams multipart uploads to temporary files (Go's multipart reader), never whole into
//     memory.
//
// An idle socket that declared a large body therefore costs a goroutine and its 8 KiB read
// buffer until its deadline, whatever length it declared.

const (
	// routeBody is the cap of routes outside the operation table (OAuth forms and client
	// registrations, metadata documents, viewer and file routes that take no body).
	routeBody = 64 << 10
	// headerTimeout bounds reading a request's line and headers.
	headerTimeout = 30 * time.Second
	// A body must arrive within Config.BodyReadTimeout (default bodyTimeoutBase) plus its
	// declared length at bodyMinRate (bytes per second), and never later than bodyTimeoutMax;
	// a chunked body (no declared length) within chunkedBodyFactor times the base (5 minutes).
	bodyTimeoutBase   = 30 * time.Second
	bodyMinRate       = 256 << 10
	bodyTimeoutMax    = 30 * time.Minute
	chunkedBodyFactor = 10
	// DefaultMaxBufferedBytes is the default of Config.MaxBufferedBytes.
	DefaultMaxBufferedBytes = 768 << 20
	// bufferedFactor is how much memory a buffered JSON body costs while its request runs: the
	// bytes, the decoded values (strings are copies) and what a handler makes of them (a
	// base64 page image decoded). Held against the budget for the whole request.
	bufferedFactor = 3
	// mcpBufferedFactor is bufferedFactor for an MCP request: one the SDK answers (anything the
	// tools/call fast path leaves to it) holds its body about 8 times at its peak (copied by the
	// transport, decoded twice, a base64 file decoded and put in a multipart form): measured by
	// a review at 8.1-8.5× for a 16 MiB books_upload_pdfs call, against the 3× reserved.
	mcpBufferedFactor = 9
	// smallBody is read without touching the budget (pooled buffers; most requests).
	smallBody = 64 << 10
	// multipartMemory is what Go's multipart reader may keep in memory per request besides
	// files: its 10 MiB allowance for non-file parts.
	multipartMemory = 10 << 20
)

// bodyTimeout is the read deadline (from the end of the headers) of a body of declared length
// cl (-1: chunked), base being Config.BodyReadTimeout.
func bodyTimeout(base time.Duration, cl int) time.Duration {
	if cl < 0 {
		return base * chunkedBodyFactor
	}
	return min(base+time.Duration(cl/bodyMinRate)*time.Second, bodyTimeoutMax)
}

// headerReceived configures each request once its headers are read (fasthttp's
// HeaderReceived): the body's read deadline, and a pre-read of at most one byte (the handler
// reads the rest).
//
// A declared length over every cap of the request's path is answered 413 at once, before a
// body byte arrives: the request continues as one without a body (fasthttp reads none), marked
// with overCapHeader for its handler, and its connection closes after the answer.
//
// A client sending overCapHeader itself only gets its own request refused.
func (s *Service) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	cl := h.ContentLength()
	if cl == 0 {
		// No body (most requests): the deadline of the headers stands (nothing more is read).
		return fasthttp.RequestConfig{}
	}
	if cl > minBodyCap && cl > s.routeBodyCap(h.Method(), h.RequestURI()) {
		h.Set(overCapHeader, strconv.Itoa(cl))
		h.SetContentLength(0)
		return fasthttp.RequestConfig{ReadTimeout: headerTimeout, MaxRequestBodySize: 1}
	}
	return fasthttp.RequestConfig{ReadTimeout: bodyTimeout(s.cfg.BodyReadTimeout, cl), MaxRequestBodySize: 1}
}

// overCapHeader marks a request whose declared body was over its path's caps
// (headerReceived): its value is the declared length.
const overCapHeader = "X-Flipbook-Body-Over-Cap"

// declaredLength is the request's declared body length (-1 chunked, 0 none), the one it
// declared when headerReceived set it aside.
func declaredLength(ctx *fasthttp.RequestCtx) int {
	if cl := ctx.Request.Header.ContentLength(); cl != 0 {
		return cl // headerReceived sets the length to 0 when it marks a request
	}
	if v := ctx.Request.Header.Peek(overCapHeader); len(v) > 0 {
		if n, err := strconv.Atoi(string(v)); err == nil {
			return n
		}
	}
	return ctx.Request.Header.ContentLength()
}

// minBodyCap is the smallest cap of any route: a declared length under it is never looked up.
const minBodyCap = 16 << 10

// routeBodyCap is the body cap of the route method and uri go to (capRouter, built with the
// routes): an operation's MaxBody, MCP's MaxBodyBytes, routeBody for the rest.
func (s *Service) routeBodyCap(method, uri []byte) int {
	path := uri
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	lc := capCtxPool.Get().(*fasthttp.RequestCtx)
	defer func() {
		lc.ResetUserValues()
		capCtxPool.Put(lc)
	}()
	h, _ := s.caps.Lookup(string(method), string(path), lc)
	if h == nil {
		return routeBody // 404 and 405 answers read no more than that
	}
	h(lc)
	n, _ := lc.UserValue(bodyCapKey).(int)
	return n
}

var capCtxPool = sync.Pool{New: func() any { return new(fasthttp.RequestCtx) }}

// bodyCapKey holds a route's cap in capRouter's lookups.
const bodyCapKey = "\x00flipbook.cap"

// capHandler is a route's entry in capRouter.
func capHandler(n int) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) { ctx.SetUserValue(bodyCapKey, n) }
}

// bodyBudget is the memory the service lets request bodies hold at once.
type bodyBudget struct {
	mu        sync.Mutex
	used, max int64
	refused   atomic.Int64 // requests refused for want of budget (metrics)
}

// take reserves n bytes; false when the budget cannot spare them.
func (b *bodyBudget) take(n int64) bool {
	if n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used+n > b.max {
		b.refused.Add(1)
		return false
	}
	b.used += n
	return true
}

func (b *bodyBudget) give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse is the memory reserved now (metrics).
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// errBusyBodies is the answer when the body budget is spent.
func errBusyBodies() *api.Error {
	return &api.Error{Status: 503, Type: api.TypeUnavailable, RetryAfter: 1,
		Message: "the service is holding as many request bodies as it allows; retry shortly"}
}

// body is one request's body as its route reads it: at most once, at most limit bytes, with
// the memory it holds reserved until release.
type body struct {
	s        *Service
	ctx      *fasthttp.RequestCtx
	op       *api.Operation // set when the body is a call's parameters (Decode)
	limit    int
	held     int64
	loaded   bool
	err      *api.Error
	multi    bool // read as a multipart form (files on disk)
	declared int
	factor   int64 // memory held per body byte (bufferedFactor unless set)
}

// newBody prepares ctx's body for reading; multipart forms are parsed with files on disk.
func (s *Service) newBody(ctx *fasthttp.RequestCtx, limit int, multipart bool) *body {
	return &body{s: s, ctx: ctx, limit: limit, multi: multipart, declared: declaredLength(ctx), factor: bufferedFactor}
}

// Decode reads the body and collects the call's path, query and body values (api.Decoder:
// run by Call once the caller is authorized).
func (b *body) Decode(a *api.Args) error {
	if err := b.load(); err != nil {
		return err
	}
	return readArgs(b.ctx, b.op, a)
}

// overCap says whether the declared length is over the cap (a 413 before anything else).
func (b *body) overCap() bool { return b.declared > b.limit }

// tooLarge refuses the body and closes the connection (its bytes are not read).
func (b *body) tooLarge() *api.Error {
	refusedUnread(b.ctx)
	return api.ErrTooLarge(b.limit)
}

// refusedUnread says ctx is answered with (part of) its body still unsent or unread: the
// connection closes after the answer, with a lingering close (lingerClose).
func refusedUnread(ctx *fasthttp.RequestCtx) {
	if ri := reqInfoOf(ctx); ri != nil {
		ri.unread = true
		return
	}
	ctx.SetConnectionClose()
}

// Lingering close (as nginx's lingering_close): a client still sending a body it was refused
// would get a connection reset, often before it reads the answer. The answer is written, then
// what the client still sends is read and discarded for at most lingerTime (nothing of it is
// kept), then the connection closes.
const (
	lingerTime  = 2 * time.Second
	lingerBytes = 64 << 20
)

// unreadSkip bounds the body a handler left unread that skipUnread reads past (more closes
// the connection instead).
const unreadSkip = 64 << 10

// skipUnread reads past what the handler left of ctx's body (a route that answered without
// reading it: 404, 405, an error before the body was needed), so that it is not read as the
// next request on the connection (found by FuzzBodyFraming). It says false when more than
// unreadSkip bytes remain or the read failed: the connection must then close after the answer.
func skipUnread(ctx *fasthttp.RequestCtx) bool {
	if !ctx.Request.IsBodyStream() {
		return true
	}
	n, err := io.Copy(io.Discard, io.LimitReader(ctx.RequestBodyStream(), unreadSkip+1))
	return err == nil && n <= unreadSkip
}

// lingerClose sends ctx's response and closes its connection lingering. A streamed answer (a
// file, an owner's answer forwarded) is streamed and the connection closed after it, without
// lingering: lingering wrote the answer into memory first, a whole file, and an answer that
// broke midway went out as a complete one with no body (found by a review).
func lingerClose(ctx *fasthttp.RequestCtx) {
	if ctx.Response.IsBodyStream() {
		ctx.SetConnectionClose()
		return
	}
	ctx.Response.SetConnectionClose()
	var answer bytes.Buffer
	w := bufio.NewWriter(&answer)
	if err := ctx.Response.Write(w); err != nil || w.Flush() != nil {
		return // fasthttp writes it and closes
	}
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(answer.Bytes()); err != nil {
			return
		}
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, c, lingerBytes)
	})
}

// load reads the body into the request (ctx.PostBody, or ctx.MultipartForm for a multipart
// form). It reads at most once; later calls return the first result.
func (b *body) load() *api.Error {
	if b.loaded {
		return b.err
	}
	b.loaded = true
	b.err = b.read()
	if b.err != nil {
		// Whatever was not read of the body is still on the connection (a sender too slow
		// for its deadline is not waited for any longer).
		if b.err.Status == fasthttp.StatusRequestTimeout {
			b.ctx.SetConnectionClose()
		} else {
			refusedUnread(b.ctx)
		}
	}
	return b.err
}

func (b *body) read() *api.Error {
	req := &b.ctx.Request
	if b.overCap() {
		return b.tooLarge()
	}
	if !req.IsBodyStream() {
		// Already in memory (a request built in-process, or one without a body).
		if len(req.Body()) > b.limit {
			return b.tooLarge()
		}
		return nil
	}
	if b.multi {
		if !b.reserve(multipartMemory) {
			return errBusyBodies()
		}
		if _, err := req.MultipartFormWithLimit(b.limit); err != nil {
			if errors.Is(err, fasthttp.ErrBodyTooLarge) {
				return b.tooLarge()
			}
			return bodyReadError(err, "the multipart/form-data body cannot be read: ")
		}
		// The form ends at its closing boundary; what the client sent after it (an epilogue)
		// is still on the connection and would be read as the next request: skipped, within
		// the cap (found by FuzzMultipartUpload).
		if rest := req.BodyStream(); rest != nil {
			n, err := io.Copy(io.Discard, io.LimitReader(rest, int64(b.limit)+1))
			if err != nil {
				return bodyReadError(err, "the multipart/form-data body cannot be read: ")
			}
			if n > int64(b.limit) {
				return b.tooLarge()
			}
		}
		return nil
	}
	if b.declared >= 0 && b.declared <= smallBody {
		return b.readSmall()
	}
	// Larger or chunked bodies: reserved against the budget as they arrive (what a slow
	// sender has not sent holds nothing), ×bufferedFactor for what the request makes of them,
	// held until the request is answered.
	const step = 64 << 10
	var buf bytes.Buffer
	reserved := 0
	src := io.LimitReader(req.BodyStream(), int64(b.limit)+1)
	for {
		if b.declared > 0 && buf.Len() >= b.declared {
			// All it declared is in: the stream ends there (fasthttp gives no more).
			var one [1]byte
			if n, err := src.Read(one[:]); n > 0 || (err != nil && err != io.EOF) {
				return bodyReadError(fmt.Errorf("more than the declared %d bytes", b.declared), "the request body cannot be read: ")
			}
			break
		}
		if buf.Available() == 0 {
			// The buffer grows with what arrives (doubling from 4 KiB, never past the declared
			// length), never with what is claimed: a socket trickling its body holds a few KiB.
			grow := max(buf.Len(), 4<<10)
			if b.declared > buf.Len() {
				grow = min(grow, b.declared-buf.Len())
			}
			if buf.Len()+grow > reserved {
				more := (buf.Len() + grow - reserved + step - 1) / step * step
				if !b.reserve(int64(more) * b.factor) {
					return errBusyBodies()
				}
				reserved += more
			}
			buf.Grow(grow)
		}
		free := buf.AvailableBuffer()[:buf.Available()]
		n, err := src.Read(free)
		if n > 0 {
			if buf.Len()+n > b.limit {
				return b.tooLarge()
			}
			buf.Write(free[:n])
		}
		if err == io.EOF {
			if b.declared > buf.Len() {
				return shortBody(buf.Len(), b.declared)
			}
			break
		}
		if err != nil {
			return bodyReadError(err, "the request body cannot be read: ")
		}
	}
	req.SetBodyRaw(buf.Bytes())
	return nil
}

// readSmall reads a body of a known small length (most requests) into a pooled buffer, copied
// into the request's own.
func (b *body) readSmall() *api.Error {
	req := &b.ctx.Request
	bb := bytebufferpool.Get()
	defer bytebufferpool.Put(bb)
	if _, err := bb.ReadFrom(io.LimitReader(req.BodyStream(), int64(b.limit)+1)); err != nil {
		return bodyReadError(err, "the request body cannot be read: ")
	}
	if bb.Len() > b.limit {
		return b.tooLarge()
	}
	if b.declared > bb.Len() {
		return shortBody(bb.Len(), b.declared)
	}
	req.SetBody(bb.B)
	return nil
}

// shortBody refuses a body that ended before its declared Content-Length (the client's
// connection closed midway): fasthttp's stream gives io.EOF, and what had arrived was taken
// for the whole body (found by a review: a PUT cut short was applied).
func shortBody(got, declared int) *api.Error {
	return api.ErrBadRequest(fmt.Sprintf("the request body ended after %d of its declared %d bytes", got, declared))
}

func (b *body) reserve(n int64) bool {
	if !b.s.bodies.take(n) {
		return false
	}
	b.held += n
	return true
}

// release returns the body's memory to the budget (when its request is answered).
func (b *body) release() {
	b.s.bodies.give(b.held)
	b.held = 0
}

// bodyReadError is the answer to a body that stopped arriving: 408 for a sender too slow for
// its deadline, 400 for a connection that broke or a malformed body.
func bodyReadError(err error, prefix string) *api.Error {
	if isTimeout(err) {
		return &api.Error{Status: fasthttp.StatusRequestTimeout, Type: api.TypeBadRequest,
			Message: "the request body did not arrive in time"}
	}
	return api.ErrBadRequest(prefix + scrubTransport(err.Error()))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, fasthttp.ErrTimeout) || (errors.As(err, &ne) && ne.Timeout())
}

// withBody is a route outside the operation table: its body (at most limit bytes) is read
// before h runs, so h may call ctx.PostBody.
func (s *Service) withBody(limit int, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		b := s.newBody(ctx, limit, false)
		defer b.release()
		if err := b.load(); err != nil {
			s.writeError(ctx, err)
			return
		}
		h(ctx)
	}
}

// bodyKey holds an MCP request's body (Options.ReadBody reads it).
const bodyKey = "\x00flipbook.body"
