package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
func (f *Forwarder) Forward(ctx *fasthttp.RequestCtx, base, clientIP string, ex Exchange) error {
	if len(ctx.Request.Header.Peek(ForwardedHeader)) > 0 {
		return ErrLoop
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
		return err
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
	if ex == Quick {
		// Read whole straight into the client's response (bounded by the client's timeouts).
		if err := c.Do(req, &ctx.Response); err != nil {
			ctx.Response.Reset()
			return err
		}
		return nil
	}
	resp := fasthttp.AcquireResponse()
	if err := c.Do(req, resp); err != nil { // bounded by the client's read and write timeouts
		fasthttp.ReleaseResponse(resp)
		return err
	}
	resp.Header.CopyTo(&ctx.Response.Header)
	if resp.IsBodyStream() {
		// Written to the client as it arrives; the owner's response is released once written.
		ctx.Response.SetBodyStream(&forwardedBody{resp: resp}, resp.Header.ContentLength())
		return nil
	}
	ctx.Response.SetBody(resp.Body())
	fasthttp.ReleaseResponse(resp)
	return nil
}

// forwardedBody is an owner's streamed answer, read by the server writing it to the client;
// Close (the server calls it when done) releases the owner's response and its connection.
type forwardedBody struct {
	resp *fasthttp.Response
}

func (b *forwardedBody) Read(p []byte) (int, error) { return b.resp.BodyStream().Read(p) }

func (b *forwardedBody) Close() error {
	err := b.resp.CloseBodyStream()
	fasthttp.ReleaseResponse(b.resp)
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
