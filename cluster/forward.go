package cluster

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Any node answers any request (issue 26, "Any node answers any request"): what a node does not
// own it forwards to the owner in one hop. The forwarded request keeps its method, URI, headers
// (the request id among them) and body; the answer comes back with the owner's status, headers
// and bytes. ForwardedHeader marks a forwarded request: a node receiving one never forwards it
// again (during a rebalance it answers 503 instead), so a request makes at most one hop.

// ForwardedHeader names the node a request was forwarded by; ForwardAuthHeader proves it is a
// node of the cluster (an HMAC of the node's name under the cluster's shared secret, the admin
// token), so a client cannot pass for a node (its forwarded-for address would be believed).
const (
	ForwardedHeader   = "X-Flipbook-Forwarded-By"
	ForwardAuthHeader = "X-Flipbook-Forward-Auth"
)

// ErrLoop refuses to forward a request that was forwarded already.
var ErrLoop = errors.New("cluster: the request was forwarded already (one hop at most)")

// QuickForwardTimeout bounds a quick exchange (Quick, QuickStreamed): an owner that does not
// answer within it (paused, cut off) gets the request a 503 instead of holding it for the
// forwarder's full timeout.
const QuickForwardTimeout = 30 * time.Second

// Exchange is the kind of a forwarded exchange: how long the owner may take, and whether its
// answer is read whole before it is written to the client or streamed through.
type Exchange int

const (
	// Quick: a small answer at once (the API's JSON, the collector, OAuth, the viewer's page):
	// read whole, within QuickForwardTimeout. The cheapest per request.
	Quick Exchange = iota
	// QuickStreamed: an answer at once but possibly large (files: page images, downloads):
	// streamed through, within QuickForwardTimeout.
	QuickStreamed
	// Long: an answer that may take minutes (CSV exports, MCP tool calls, a request whose body
	// is still streaming in): streamed through, within the forwarder's own timeout.
	Long
)

// Forwarder forwards requests to other nodes, with pooled clients per node (one for quick
// exchanges, one for long ones).
type Forwarder struct {
	node    string
	secret  []byte
	timeout time.Duration

	mu      sync.Mutex
	clients map[string]*fasthttp.HostClient
	proofs  sync.Map     // node name → its proof (ForwardAuthHeader), computed once
	nproofs atomic.Int32 // entries in proofs (at most maxProofs: names a client makes up are not kept)
}

// maxProofs bounds the proofs kept (a cluster's node names; more are computed each time).
const maxProofs = 256

// NewForwarder is node's forwarder; secret is the cluster's shared secret (every node's
// --admin-token); timeout bounds one forwarded exchange.
func NewForwarder(node string, secret []byte, timeout time.Duration) *Forwarder {
	return &Forwarder{node: node, secret: secret, timeout: timeout, clients: map[string]*fasthttp.HostClient{}}
}

// proof is the value of ForwardAuthHeader for node.
func (f *Forwarder) proof(node string) string {
	if v, ok := f.proofs.Load(node); ok {
		return v.(string)
	}
	h := hmac.New(sha256.New, f.secret)
	h.Write([]byte("flipbook-forward\n" + node))
	p := hex.EncodeToString(h.Sum(nil))
	if f.nproofs.Add(1) <= maxProofs {
		f.proofs.Store(node, p)
	}
	return p
}

// FromPeer says whether ctx's request was forwarded by a node of the cluster (its
// ForwardedHeader backed by a valid ForwardAuthHeader). A request that only claims it has both
// headers removed: it is a client's request like any other.
func (f *Forwarder) FromPeer(ctx *fasthttp.RequestCtx) bool {
	by := ctx.Request.Header.Peek(ForwardedHeader)
	auth := ctx.Request.Header.Peek(ForwardAuthHeader)
	if len(by) == 0 && len(auth) == 0 {
		return false
	}
	if len(by) > 0 && len(f.secret) > 0 && hmac.Equal(auth, []byte(f.proof(string(by)))) {
		return true
	}
	ctx.Request.Header.Del(ForwardedHeader)
	ctx.Request.Header.Del(ForwardAuthHeader)
	return false
}

func (f *Forwarder) client(base string, ex Exchange) (*fasthttp.HostClient, error) {
	key := base + " " + strconv.Itoa(int(ex))
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clients[key]; c != nil {
		return c, nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New("cluster: a node's URL must be http(s)://HOST[:PORT]")
	}
	c := &fasthttp.HostClient{Addr: hostPort(u), IsTLS: u.Scheme == "https",
		ReadTimeout: f.timeout, WriteTimeout: f.timeout, MaxIdleConnDuration: time.Minute,
		DisableHeaderNamesNormalizing: true, DisablePathNormalizing: true,
		NoDefaultUserAgentHeader: true, // no User-Agent added where the client sent none
		// fasthttp sent a GET, HEAD or PUT again, up to 5 times, when its answer failed, and
		// the owner may have applied it (found by a review: a PUT reached it 5 times, and a
		// paused owner held a quick request 5 × 30 s). A write is sent once: one that failed
		// after it may have been sent is the client's to retry (a 503). A read may be sent
		// once more, so that a kept-alive connection to an owner that died since (its first
		// use fails) is not a 503: the new connection's dial fails, and the forward waits for
		// the partition's next owner.
		MaxIdemponentCallAttempts: 2,
		RetryIfErr: func(r *fasthttp.Request, _ int, _ error) (bool, bool) {
			return false, r.Header.IsGet() || r.Header.IsHead()
		},
		// A large or long answer (a CSV export, a file) streams through instead of being held
		// whole here.
		StreamResponseBody: ex != Quick}
	if ex != Long {
		c.ReadTimeout = min(f.timeout, QuickForwardTimeout)
		// A quick request has no body stream: it is written into the socket's buffer at once,
		// never left waiting on a stalled owner (its answer's ReadTimeout bounds the exchange).
		c.WriteTimeout = 0
	}
	f.clients[key] = c
	return c, nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return u.Host + ":443"
	}
	return u.Host + ":80"
}

// Forward sends ctx's request to the node at base (its advertised URL) and writes the node's
// answer into ctx's response. A body still on the client's connection (a streamed request) is
// streamed through as it arrives (a Long exchange). clientIP is the address the owner is to
// take as the client's; ex the kind of exchange (Long whenever the body streams in).
func (f *Forwarder) Forward(ctx *fasthttp.RequestCtx, base, clientIP string, ex Exchange) (early bool, err error) {
	if len(ctx.Request.Header.Peek(ForwardedHeader)) > 0 {
		return false, ErrLoop
	}
	// The forwarding headers are set on the client's request itself (below): taken off again,
	// so a forward that could not dial can be sent again, to the partition's next owner, and
	// is not taken for a loop (found by a review: it was a 503 after 250 ms).
	defer func() {
		ctx.Request.Header.Del(ForwardedHeader)
		ctx.Request.Header.Del(ForwardAuthHeader)
	}()
	if ctx.Request.IsBodyStream() {
		ex = Long
	}
	c, err := f.client(strings.TrimRight(base, "/"), ex)
	if err != nil {
		return false, err
	}
	req := &ctx.Request // sent as it is (a copy costs a forward more than its header fields)
	if ctx.Request.IsBodyStream() {
		// A copy, whose body stream is not closed once sent: the stream is the client's
		// connection, which the server still owns (and a forward that could not dial is tried
		// again with it).
		req = fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		ctx.Request.CopyTo(req) // all but the body stream
		req.SetBodyStream(struct{ io.Reader }{ctx.RequestBodyStream()}, ctx.Request.Header.ContentLength())
	}
	req.Header.Set(ForwardedHeader, f.node)
	req.Header.Set(ForwardAuthHeader, f.proof(f.node))
	req.Header.Set("X-Forwarded-For", clientIP)
	req.SetRequestURIBytes(ctx.Request.RequestURI()) // the URI as the client sent it
	req.UseHostHeader = true                         // the owner sees the Host the client asked for
	if ctx.Request.IsBodyStream() {
		return f.pipe(ctx, c, req)
	}
	if ex == Quick {
		// Read whole straight into the client's response (bounded by the client's timeouts).
		if err := c.Do(req, &ctx.Response); err != nil {
			ctx.Response.Reset()
			return false, err
		}
		return false, nil
	}
	resp := fasthttp.AcquireResponse()
	if err := c.Do(req, resp); err != nil { // bounded by the client's read and write timeouts
		fasthttp.ReleaseResponse(resp)
		return false, err
	}
	answer(ctx, resp, nil)
	return false, nil
}

// answer writes the owner's response resp into ctx's: a streamed body is written to the client
// as it arrives, and resp released (conn, when set, closed) once written.
func answer(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, conn net.Conn) {
	resp.Header.CopyTo(&ctx.Response.Header)
	if resp.IsBodyStream() {
		ctx.Response.SetBodyStream(&forwardedBody{resp: resp, conn: conn}, resp.Header.ContentLength())
		return
	}
	ctx.Response.SetBody(resp.Body())
	fasthttp.ReleaseResponse(resp)
	if conn != nil {
		_ = conn.Close()
	}
}

// pipe sends req, whose body streams in from the client, on a connection of its own, reading
// the owner's answer while the body is still being written: fasthttp's client writes the whole
// body first, and an owner that refused the request at once (401, 403, 413, 429) and stopped
// reading it failed the write, so the client got a 503 in place of the owner's answer (found by
// a review). An answer that comes before the body was all sent stops the sending and says early:
// the rest of the client's body is then still on its connection, which closes after the answer.
func (f *Forwarder) pipe(ctx *fasthttp.RequestCtx, c *fasthttp.HostClient, req *fasthttp.Request) (early bool, err error) {
	raw, err := fasthttp.DialTimeout(c.Addr, pipeDialTimeout)
	if err != nil {
		return false, err
	}
	var conn net.Conn = &deadlineConn{Conn: raw, timeout: f.timeout}
	if c.IsTLS {
		host, _, _ := net.SplitHostPort(c.Addr)
		tc := tls.Client(conn, &tls.Config{ServerName: host})
		if err := tc.Handshake(); err != nil {
			_ = raw.Close()
			return false, &net.OpError{Op: "dial", Net: "tcp", Err: err} // nothing was sent
		}
		conn = tc
	}
	wrote := make(chan error, 1)
	var mu sync.Mutex
	answered := false
	go func() {
		w := bufio.NewWriterSize(conn, 64<<10)
		err := req.Write(w)
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			// The body broke (the client went away, or the owner stopped reading): an owner
			// that has not answered within pipeAnswerGrace will not, and is not waited for.
			time.AfterFunc(pipeAnswerGrace, func() {
				mu.Lock()
				defer mu.Unlock()
				if !answered {
					_ = raw.Close()
				}
			})
		}
		wrote <- err
	}()
	resp := fasthttp.AcquireResponse()
	resp.StreamBody = true
	rerr := resp.Read(bufio.NewReaderSize(conn, 64<<10))
	mu.Lock()
	answered = true
	mu.Unlock()
	var werr error
	select {
	case werr = <-wrote:
	default:
		// The owner answered (or failed) with the body not all sent: the sending stops, a
		// read of the client's connection or a write to the owner's cut short.
		_ = ctx.Conn().SetReadDeadline(time.Now())
		_ = raw.SetWriteDeadline(time.Now())
		werr = <-wrote
		_ = ctx.Conn().SetReadDeadline(time.Time{})
	}
	// Early only if the body was not all sent: an owner that read all of it may answer before
	// the writer reported (found by a review: 1 forward in 15 taken for early, its client's
	// connection closed).
	early = werr != nil
	if rerr != nil {
		fasthttp.ReleaseResponse(resp)
		_ = raw.Close()
		if werr != nil {
			return early, werr
		}
		return early, rerr
	}
	answer(ctx, resp, raw)
	return early, nil
}

// pipeDialTimeout bounds the dial of a piped forward (fasthttp's client default);
// pipeAnswerGrace is how long an owner may take to answer once the body broke.
const (
	pipeDialTimeout = 3 * time.Second
	pipeAnswerGrace = 2 * time.Second
)

// deadlineConn gives each read and write on a piped forward's connection timeout to complete,
// as the HostClient's ReadTimeout and WriteTimeout do.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	return c.Conn.Read(p)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	return c.Conn.Write(p)
}

// Notify posts path to the node at base as a peer of the cluster (with the proof a forward
// carries) and waits at most timeout for its 204.
func (f *Forwarder) Notify(base, path string, timeout time.Duration) error {
	c, err := f.client(strings.TrimRight(base, "/"), Quick)
	if err != nil {
		return err
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(strings.TrimRight(base, "/") + path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set(ForwardedHeader, f.node)
	req.Header.Set(ForwardAuthHeader, f.proof(f.node))
	if err := c.DoTimeout(req, resp, timeout); err != nil {
		return err
	}
	if resp.StatusCode() != fasthttp.StatusNoContent {
		return fmt.Errorf("cluster: %s%s answered %d", base, path, resp.StatusCode())
	}
	return nil
}

// forwardedBody is an owner's streamed answer, read by the server writing it to the client;
// Close (the server calls it when done) releases the owner's response and its connection.
type forwardedBody struct {
	resp *fasthttp.Response
	conn net.Conn // a piped forward's own connection, closed with it (nil: the client's pool)
}

func (b *forwardedBody) Read(p []byte) (int, error) { return b.resp.BodyStream().Read(p) }

func (b *forwardedBody) Close() error {
	err := b.resp.CloseBodyStream()
	fasthttp.ReleaseResponse(b.resp)
	if b.conn != nil {
		_ = b.conn.Close()
	}
	return err
}

// NotSent says whether a Forward error means the request never reached the other node (it could
// not be reached at all), so it may be sent again, to it or to the partition's next owner. Any
// other error leaves its outcome unknown: the node may have applied it before it failed.
func NotSent(err error) bool {
	var op *net.OpError
	return errors.Is(err, fasthttp.ErrDialTimeout) || errors.Is(err, syscall.ECONNREFUSED) ||
		(errors.As(err, &op) && op.Op == "dial")
}

// Close closes the idle connections to other nodes.
func (f *Forwarder) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.clients {
		c.CloseIdleConnections()
	}
}
