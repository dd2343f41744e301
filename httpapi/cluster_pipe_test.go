package httpapi

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"flipbook/cluster"
)

// forwardingNode is a node's front as serveHTTP runs it for a piped body: Forward to
// owner, and an early answer closed with the lingering close (route's refusedUnread, then
// serveHTTP's lingerClose).
func forwardingNode(t *testing.T, owner string) string {
	t.Helper()
	f := cluster.NewForwarder("node-a", []byte("shared-secret"), time.Minute)
	t.Cleanup(f.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &fasthttp.Server{StreamRequestBody: true, WriteTimeout: 5 * time.Minute,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: time.Minute, MaxRequestBodySize: 1}
		},
		Handler: func(ctx *fasthttp.RequestCtx) {
			early, err := f.Forward(ctx, owner, ctx.RemoteIP().String(), cluster.Long)
			if err != nil {
				ctx.SetStatusCode(503)
				ctx.SetConnectionClose()
				return
			}
			if early {
				refusedUnread(ctx) // no reqInfo here: marks the connection close
				lingerClose(ctx)
			}
		}}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// An owner that answers a piped upload early and dies in the middle of its answer's body must
// not reach the client as a complete answer: the client must see the answer cut short (fewer
// bytes than its Content-Length, or a broken connection), as it does when the same answer is
// not early. lingerClose writes the answer into a buffer first; when reading the owner's body
// fails it leaves the response to fasthttp, whose body stream it has already consumed and
// closed, and fasthttp sends the owner's status with an empty body and Content-Length: 0.
func TestPipedEarlyAnswerBrokenIsNotComplete(t *testing.T) {
	oln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer oln.Close()
	go func() { // the owner: answers at once (a 200 of 100,000 bytes), dies after 1,000
		c, err := oln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nContent-Length: 100000\r\n\r\n"))
		_, _ = c.Write(bytes.Repeat([]byte("a"), 1000))
		time.Sleep(100 * time.Millisecond) // sleep: the owner dies a moment after it sent part of its answer
	}()
	node := forwardingNode(t, "http://"+oln.Addr().String())

	body := &slowBody{head: bytes.Repeat([]byte("x"), 100<<10), pause: 5 * time.Second}
	req, err := http.NewRequest("POST", node+"/api/v1/books", body)
	require.NoError(t, err)
	req.ContentLength = 1 << 20
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return // a broken connection: the client knows the answer did not arrive
	}
	got, rerr := io.ReadAll(res.Body)
	res.Body.Close()
	t.Logf("client: %d, Content-Length %q, %d bytes, read error %v", res.StatusCode, res.Header.Get("Content-Length"), len(got), rerr)
	require.False(t, rerr == nil && strconv.Itoa(len(got)) == res.Header.Get("Content-Length"),
		"the owner died mid-answer, yet the client got a complete-looking %d with %d bytes", res.StatusCode, len(got))
}

// An owner's early answer is streamed to the client as it comes (as every forwarded answer is):
// its header must reach the client before the owner has finished its body. lingerClose reads
// the whole answer into memory first, so an early answer with a long or large body (a
// download through /files/ whose request carried a chunked body, say) is held whole by the
// forwarding node and reaches the client only once the owner has finished it.
func TestPipedEarlyAnswerIsStreamed(t *testing.T) {
	release := make(chan struct{})
	oln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	osrv := &fasthttp.Server{StreamRequestBody: true,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{MaxRequestBodySize: 1}
		},
		Handler: func(ctx *fasthttp.RequestCtx) { // answers without reading the body
			ctx.SetContentType("text/csv")
			ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
				_, _ = w.WriteString("first,row\n")
				_ = w.Flush()
				select {
				case <-release:
				case <-time.After(20 * time.Second):
				}
				_, _ = w.WriteString("last,row\n")
			})
		}}
	go osrv.Serve(oln)
	defer func() { _ = osrv.Shutdown() }()
	defer close(release)
	node := forwardingNode(t, "http://"+oln.Addr().String())

	body := &slowBody{head: bytes.Repeat([]byte("x"), 100<<10), pause: 20 * time.Second}
	req, err := http.NewRequest("POST", node+"/files/r1/download", body)
	require.NoError(t, err)
	req.ContentLength = -1 // chunked
	type result struct {
		status int
		err    error
	}
	got := make(chan result, 1)
	go func() {
		res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			got <- result{err: err}
			return
		}
		got <- result{status: res.StatusCode}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		require.Equal(t, 200, r.status)
	case <-time.After(5 * time.Second):
		t.Fatal("the owner's early answer has not reached the client in 5 s: the forwarding node holds it until the owner has finished its body")
	}
}

// POST /cluster/v1/sync-global is a peer's request: a single process knows no such path (404),
// and in a cluster a client that only claims to be a node (the forwarding header with a made-up
// proof, or none) gets the 404 of any unknown path, never the peer's 204.
func TestSyncGlobalIsForPeersOnly(t *testing.T) {
	post := func(base string, headers ...string) int {
		req, err := http.NewRequest("POST", base+"/cluster/v1/sync-global", nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	single := newHarness(t, nil)
	require.Equal(t, 404, post(single.base))
	require.Equal(t, 404, post(single.base, cluster.ForwardedHeader, "node-1"))

	rc := newInProcessCluster(t)
	for _, h := range rc.nodes {
		require.Equal(t, 404, post(h.base))
		require.Equal(t, 404, post(h.base, cluster.ForwardedHeader, "node-1"))
		require.Equal(t, 404, post(h.base, cluster.ForwardedHeader, "node-1", cluster.ForwardAuthHeader, "00"))
		// A peer's proof passes.
		other := rc.nodes[0]
		if other == h {
			other = rc.nodes[1]
		}
		require.NoError(t, other.svc.cluster.fwd.Notify(h.base, "/cluster/v1/sync-global", 5*time.Second))
	}
}
