package cluster

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// serveStreamed is serve with the service's body streaming: a body of any size reaches the
// handler as a stream (httpapi's headerReceived asks for a pre-read of one byte).
func serveStreamed(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &fasthttp.Server{Handler: h, StreamRequestBody: true,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{MaxRequestBodySize: 1}
		}}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// An owner that reads the whole piped body and only then answers has not answered early: the
// client's body was all sent. pipe decides "early" by whether the writing goroutine had
// reported back when the answer's header arrived, so an answer that overtakes the goroutine's
// report (it sent the last bytes and was not scheduled yet) is taken for an early one: route
// then closes the client's connection with a lingering close (lingerClose), which holds the
// owner's whole answer in memory before it sends a byte.
func TestPipeWholeBodyIsNotEarly(t *testing.T) {
	owner := serveStreamed(t, func(ctx *fasthttp.RequestCtx) {
		n, err := io.Copy(io.Discard, ctx.RequestBodyStream())
		if err != nil {
			ctx.SetStatusCode(400)
			return
		}
		ctx.SetStatusCode(201)
		ctx.SetBodyString("got " + strconv.FormatInt(n, 10))
	})
	f := NewForwarder("node-a", []byte("shared-secret"), time.Minute)
	defer f.Close()
	var early, total atomic.Int64
	node := serveStreamed(t, func(ctx *fasthttp.RequestCtx) {
		e, err := f.Forward(ctx, owner, ctx.RemoteIP().String(), Long)
		total.Add(1)
		if e {
			early.Add(1)
		}
		if err != nil {
			ctx.SetStatusCode(503)
		}
	})
	body := bytes.Repeat([]byte("x"), 200<<10)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 2000 && time.Now().Before(deadline) && early.Load() == 0; i++ {
		res, err := http.Post(node+"/api/v1/books", "application/octet-stream", bytes.NewReader(body))
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 201, res.StatusCode, "%s", b)
	}
	require.Zero(t, early.Load(), "%d of %d forwards whose whole body the owner read were reported early", early.Load(), total.Load())
}

// A client that goes away in the middle of a piped body: the forward ends (the owner's
// connection closed, its handler's read fails) within pipeAnswerGrace and a little, and
// Forward returns.
func TestPipeClientGoneMidBody(t *testing.T) {
	ownerGot := make(chan int64, 1)
	owner := serveStreamed(t, func(ctx *fasthttp.RequestCtx) {
		n, _ := io.Copy(io.Discard, ctx.RequestBodyStream())
		ownerGot <- n
	})
	f := NewForwarder("node-a", []byte("shared-secret"), time.Minute)
	defer f.Close()
	done := make(chan error, 1)
	node := serveStreamed(t, func(ctx *fasthttp.RequestCtx) {
		_, err := f.Forward(ctx, owner, ctx.RemoteIP().String(), Long)
		done <- err
	})
	c, err := net.Dial("tcp", node[len("http://"):])
	require.NoError(t, err)
	_, err = c.Write(append([]byte("POST /api/v1/books HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n"), bytes.Repeat([]byte("x"), 300<<10)...))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // sleep: the body is on its way to the owner
	require.NoError(t, c.Close())
	select {
	case n := <-ownerGot:
		require.Less(t, n, int64(10000000), "the owner read a whole body")
	case <-time.After(5 * time.Second):
		t.Fatal("the owner's connection was not closed 5 s after the client went away")
	}
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Forward did not return 5 s after the client went away")
	}
}
