package httpapi

import (
	"errors"
	"io"
	"mime"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/api"
)

// Streamed responses (Result.Stream: the CSV exports). fasthttp writes a body stream after the
// handler returned, from the connection's goroutine, with chunked transfer encoding: a stream
// that implements fasthttp.BodyWriterTo gets the chunked writer itself, so each write of the
// stream's 64 KB buffer is one chunk straight to the socket (no pipe, no extra goroutine).
//
//   - A client that goes away makes a write fail; the stream returns that error and fasthttp
//     closes it (Close), which stops its export (docs/ARCHITECTURE.md, "Exports").
//   - An error of the stream itself (the database failing mid-export) also ends it; fasthttp
//     then closes the connection without the last chunk, so the client sees a truncated
//     transfer, never a short file that looks complete. It is logged.
//   - The write deadline is renewed at each write: a slow client may take as long as it needs,
//     one stalled for WriteTimeout is cut off.
//   - Shutdown waits for running streams like for any request, then aborts those still
//     running (their next write fails at once).

// errStreamAborted is the write error of a stream aborted by Shutdown.
var errStreamAborted = errors.New("the service is shutting down")

// streamWriteTimeout is how long one write to a streaming client may block.
const streamWriteTimeout = 5 * time.Minute

// streamSet tracks the running streams.
type streamSet struct {
	mu      sync.Mutex
	m       map[*streamBody]struct{}
	running sync.WaitGroup
}

func (ss *streamSet) add(b *streamBody) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[*streamBody]struct{}{}
	}
	ss.m[b] = struct{}{}
	ss.running.Add(1)
}

func (ss *streamSet) remove(b *streamBody) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.m[b]; ok {
		delete(ss.m, b)
		ss.running.Done()
	}
}

// abort makes every running stream's writes fail and waits (at most wait) until they closed.
func (ss *streamSet) abort(wait time.Duration) bool {
	ss.mu.Lock()
	for b := range ss.m {
		b.abort()
	}
	ss.mu.Unlock()
	done := make(chan struct{})
	go func() { ss.running.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

// streamBody is a Result.Stream as fasthttp's response body stream.
type streamBody struct {
	s       *Service
	st      api.Stream
	conn    net.Conn // the client's connection (nil when the pipeline is called without one)
	op      string
	reqID   string
	aborted atomic.Bool
	werr    error // the write error that ended the stream
	renewed time.Time
	closed  sync.Once
	// The request's log line and metrics, recorded at Close with the bytes written (observe.go);
	// nil when the request is not observed.
	line    *reqLine
	written int64
}

// renderStream sends a streamed result: status and headers now, the body once the handler
// returned.
func (s *Service) renderStream(ctx *fasthttp.RequestCtx, op *api.Operation, res *api.Result) {
	status := res.Status
	if status == 0 {
		status = 200
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType(res.ContentType)
	if res.Filename != "" {
		ctx.Response.Header.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": res.Filename}))
	}
	b := &streamBody{s: s, st: res.Stream, conn: ctx.Conn(), op: op.ID,
		reqID: string(ctx.Response.Header.Peek("X-Request-Id"))}
	s.streams.add(b)
	if ri := reqInfoOf(ctx); ri != nil {
		ri.stream = b
	}
	ctx.SetBodyStream(b, -1)
}

// SupportsBodyWriteTo lets fasthttp call WriteTo with its chunked writer.
func (b *streamBody) SupportsBodyWriteTo() bool { return true }

// Read is never used by the server (it calls WriteTo); it exists because a body stream must be
// an io.Reader.
func (b *streamBody) Read([]byte) (int, error) {
	return 0, errors.New("a streamed response is written with WriteTo")
}

func (b *streamBody) WriteTo(w io.Writer) (int64, error) {
	n, err := b.st.WriteTo(&clientWriter{b: b, w: w})
	b.written = n
	switch {
	case err == nil:
	case b.aborted.Load():
		b.s.log.Warn("stream cut off by shutdown", "op", b.op, "request_id", b.reqID, "bytes", n)
	case b.werr != nil:
		b.s.log.Info("stream stopped: the client went away", "op", b.op, "request_id", b.reqID, "bytes", n, "err", b.werr)
	default:
		b.s.log.Error("stream failed; the transfer is cut short", "op", b.op, "request_id", b.reqID, "bytes", n, "err", err)
	}
	return n, err
}

func (b *streamBody) Close() error {
	var err error
	b.closed.Do(func() {
		err = b.st.Close()
		b.s.streams.remove(b)
		if b.line != nil {
			b.s.record(b.line, b.written)
		}
	})
	return err
}

func (b *streamBody) abort() {
	b.aborted.Store(true)
	if b.conn != nil {
		b.conn.SetWriteDeadline(time.Unix(1, 0))
	}
}

// clientWriter is the writer a stream writes to: it renews the connection's write deadline
// and records the first write error.
type clientWriter struct {
	b *streamBody
	w io.Writer
}

func (c *clientWriter) Write(p []byte) (int, error) {
	b := c.b
	if b.werr != nil {
		return 0, b.werr
	}
	if b.aborted.Load() {
		b.werr = errStreamAborted
		return 0, b.werr
	}
	if b.conn != nil {
		if now := time.Now(); now.Sub(b.renewed) > time.Second {
			b.conn.SetWriteDeadline(now.Add(streamWriteTimeout))
			b.renewed = now
			if b.aborted.Load() { // abort ran between the check above and the renewal
				b.conn.SetWriteDeadline(time.Unix(1, 0))
			}
		}
	}
	n, err := c.w.Write(p)
	if err != nil {
		b.werr = err
	}
	return n, err
}
