package cluster

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

func serve(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &fasthttp.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// A request forwarded to the owner arrives with its method, URI, headers (its request id) and
// body, marked as forwarded; the client gets the owner's status, headers and bytes. A
// forwarded request is never forwarded again.
func TestForwardOneHop(t *testing.T) {
	var seen struct {
		method, uri, reqID, by, xff, host string
		body                              []byte
	}
	owner := serve(t, func(ctx *fasthttp.RequestCtx) {
		seen.method, seen.uri = string(ctx.Method()), string(ctx.RequestURI())
		seen.reqID, seen.by = string(ctx.Request.Header.Peek("X-Request-Id")), string(ctx.Request.Header.Peek(ForwardedHeader))
		seen.xff, seen.host = string(ctx.Request.Header.Peek("X-Forwarded-For")), string(ctx.Host())
		seen.body = append([]byte(nil), ctx.PostBody()...)
		ctx.SetStatusCode(201)
		ctx.Response.Header.Set("X-Request-Id", seen.reqID)
		ctx.Response.Header.Set("RateLimit-Remaining", "41")
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"data":{"id":"b1"}}`)
	})
	f := NewForwarder("node-a", 10*time.Second)
	defer f.Close()
	node := serve(t, func(ctx *fasthttp.RequestCtx) {
		if err := f.Forward(ctx, owner); err != nil {
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

	// Forwarded once already: not again.
	req, _ = http.NewRequest("GET", node+"/api/v1/books", nil)
	req.Header.Set(ForwardedHeader, "node-b")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	got, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 503, res.StatusCode)
	require.Contains(t, string(got), "one hop")
}
