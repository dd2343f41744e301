package cluster

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

func serve(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Bodies streamed, as the service reads them: a forwarded body is piped, not buffered.
	srv := &fasthttp.Server{Handler: h, StreamRequestBody: true}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// A request forwarded to the owner arrives with its method, URI, headers (its request id) and
// body, marked as forwarded; the client gets the owner's status, headers and bytes. A
// forwarded request is never forwarded again.
func TestForwardOneHop(t *testing.T) {
	t.Parallel()
	var seen struct {
		method, uri, reqID, by, xff, host string
		body                              []byte
		peer                              bool
	}
	peers := NewForwarder("owner", []byte("shared-secret"), 10*time.Second)
	big := bytes.Repeat([]byte("row,of,a,large,export\n"), 400_000) // 8.8 MB
	owner := serve(t, func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/api/v1/exports/big" {
			ctx.SetContentType("text/csv")
			ctx.SetBodyStreamWriter(func(w *bufio.Writer) { // chunked, as the exports are
				for off := 0; off < len(big); off += 64 << 10 {
					_, _ = w.Write(big[off:min(off+64<<10, len(big))])
					_ = w.Flush()
				}
			})
			return
		}
		seen.method, seen.uri = string(ctx.Method()), string(ctx.RequestURI())
		seen.reqID, seen.by = string(ctx.Request.Header.Peek("X-Request-Id")), string(ctx.Request.Header.Peek(ForwardedHeader))
		seen.xff, seen.host = string(ctx.Request.Header.Peek("X-Forwarded-For")), string(ctx.Host())
		seen.body = append([]byte(nil), ctx.PostBody()...)
		seen.peer = peers.FromPeer(ctx)
		ctx.SetStatusCode(201)
		ctx.Response.Header.Set("X-Request-Id", seen.reqID)
		ctx.Response.Header.Set("RateLimit-Remaining", "41")
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"data":{"id":"b1"}}`)
	})
	f := NewForwarder("node-a", []byte("shared-secret"), 10*time.Second)
	defer f.Close()
	node := serve(t, func(ctx *fasthttp.RequestCtx) {
		f.FromPeer(ctx) // drops a client's claim to be a node
		ex := Quick
		if strings.Contains(string(ctx.Path()), "/exports/") {
			ex = Long
		}
		if _, err := f.Forward(ctx, owner, ctx.RemoteIP().String(), ex); err != nil {
			ctx.SetStatusCode(503)
			ctx.SetBodyString(err.Error())
		}
	})

	body := bytes.Repeat([]byte("x"), 100_000)
	req, err := http.NewRequest("POST", node+"/api/v1/books/konva?x=1&y=%2F", bytes.NewReader(body))
	require.NoError(t, err)
	req.Host = "books.example"
	req.Header.Set("X-Request-Id", "req-123")
	req.Header.Set("Authorization", "Bearer wsk_test_abc")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 201, res.StatusCode, "%s", got)
	require.Equal(t, `{"data":{"id":"b1"}}`, string(got))
	require.Equal(t, "41", res.Header.Get("RateLimit-Remaining"))
	require.Equal(t, "req-123", res.Header.Get("X-Request-Id"))
	require.Equal(t, "POST", seen.method)
	require.Equal(t, "/api/v1/books/konva?x=1&y=%2F", seen.uri)
	require.Equal(t, "req-123", seen.reqID)
	require.Equal(t, "node-a", seen.by)
	require.Equal(t, "127.0.0.1", seen.xff)
	require.Equal(t, "books.example", seen.host)
	require.Equal(t, body, seen.body)
	require.True(t, seen.peer, "the owner knows the request comes from a node")

	// A large streamed answer comes through whole (streamed, not held by the forwarding node).
	res, err = http.Get(node + "/api/v1/exports/big")
	require.NoError(t, err)
	got, err = io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "text/csv", res.Header.Get("Content-Type"))
	require.True(t, bytes.Equal(big, got), "the same %d bytes (got %d)", len(big), len(got))

	// A client claiming to be a node, without the cluster's secret, is forwarded as a client.
	req, _ = http.NewRequest("GET", node+"/api/v1/books", nil)
	req.Header.Set(ForwardedHeader, "node-b")
	req.Header.Set(ForwardAuthHeader, "00ff")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 201, res.StatusCode)
	require.Equal(t, "node-a", seen.by)

	// Forwarded once already (by a node): not again.
	req, _ = http.NewRequest("GET", node+"/api/v1/books", nil)
	req.Header.Set(ForwardedHeader, "node-b")
	req.Header.Set(ForwardAuthHeader, f.proof("node-b"))
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	got, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 503, res.StatusCode)
	require.Contains(t, string(got), "one hop")
}

// A forward that could not reach the owner (its node is down: NotSent) is to be tried again
// once the partition has a new owner (docs/ARCHITECTURE.md "Serving": "a forward that could not
// dial is tried again after the next ownership change"; httpapi/cluster.go route). The second
// try must reach the new owner, not be refused as a loop because the first try left the
// forwarding headers on the client's request (found by a review: it was).
func TestForwardRetriedAfterDialFailure(t *testing.T) {
	t.Parallel()
	// The old owner: a port with nothing listening (a killed node).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	var mu sync.Mutex // the handlers' results, read by the test
	var seenBy string
	newOwner := serve(t, func(ctx *fasthttp.RequestCtx) {
		mu.Lock()
		defer mu.Unlock()
		seenBy = string(ctx.Request.Header.Peek(ForwardedHeader))
		ctx.SetStatusCode(200)
		ctx.SetBodyString(`{"data":"from the new owner"}`)
	})
	f := NewForwarder("node-a", []byte("shared-secret"), 10*time.Second)
	defer f.Close()
	var firstErr, secondErr error
	node := serve(t, func(ctx *fasthttp.RequestCtx) {
		f.FromPeer(ctx)
		clientIP := ctx.RemoteIP().String()
		_, err := f.Forward(ctx, dead, clientIP, Quick)
		mu.Lock()
		firstErr = err
		mu.Unlock()
		if firstErr == nil || !NotSent(firstErr) {
			ctx.SetStatusCode(500)
			ctx.SetBodyString("the first forward was expected to fail to dial")
			return
		}
		// The partition moved to a live node: the same request, forwarded again (route's loop).
		_, err = f.Forward(ctx, newOwner, clientIP, Quick)
		mu.Lock()
		secondErr = err
		mu.Unlock()
		if err != nil {
			ctx.SetStatusCode(503)
			ctx.SetBodyString(err.Error())
		}
	})
	res, err := http.Get(node + "/api/v1/books")
	require.NoError(t, err)
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	require.True(t, NotSent(firstErr), "first forward: %v", firstErr)
	require.NoError(t, secondErr, "the second forward, to the partition's new owner, after the first could not dial")
	require.Equal(t, 200, res.StatusCode, "%s", got)
	require.True(t, strings.Contains(string(got), "new owner"))
	require.Equal(t, "node-a", seenBy)
}

// A forwarded request whose owner drops the connection after reading it (killed mid-request,
// after it applied the write) or does not answer within the quick timeout (paused, cut off) has
// an unknown outcome: it is "never sent twice" (docs/ARCHITECTURE.md "Serving": "A forward that
// failed after it may have been sent is a 503 (never sent twice)"), and the client's 503 comes
// within the quick timeout ("not a wait of minutes": exchangeOf). fasthttp resent GET, HEAD and
// PUT requests without a body stream by itself on such errors (5 times by default), and route
// reads bodies of up to 1 MiB before forwarding, so a forwarded PUT reached the owner five
// times (found by a review). A write is now sent once; a read at most twice (a kept-alive
// connection to a dead owner fails at its first use, and the read goes again on a new one).
func TestForwardNotSentTwice(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"PUT", "GET"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			var mu sync.Mutex
			got := 0
			go func() { // the owner: reads the request, then dies before answering
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					buf := make([]byte, 4096)
					if n, _ := c.Read(buf); n > 0 {
						mu.Lock()
						got++
						mu.Unlock()
					}
					c.Close()
				}
			}()
			f := NewForwarder("node-a", []byte("shared-secret"), time.Minute)
			defer f.Close()
			var ferr error
			node := serve(t, func(ctx *fasthttp.RequestCtx) {
				if ctx.Request.IsBodyStream() { // as route does for a body of up to 1 MiB
					ctx.Request.SetBody(append([]byte(nil), ctx.Request.Body()...))
				}
				_, err := f.Forward(ctx, "http://"+ln.Addr().String(), ctx.RemoteIP().String(), Quick)
				mu.Lock()
				ferr = err
				mu.Unlock()
				if err != nil {
					ctx.SetStatusCode(503)
				}
			})
			var body io.Reader
			if method == "PUT" {
				body = strings.NewReader(`{"title":"renamed"}`)
			}
			req, err := http.NewRequest(method, node+"/api/v1/books/b1", body)
			require.NoError(t, err)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			res.Body.Close()
			require.Equal(t, 503, res.StatusCode)
			mu.Lock()
			n, fe := got, ferr
			mu.Unlock()
			require.Error(t, fe)
			want := 1
			if method == "GET" {
				want = 2
			}
			require.Equal(t, want, n, "the owner received the forwarded %s %d times", method, n)
		})
	}
}
