package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"flipbook/mcp"
)

// Fuzzing of request body framing (issue 27, body.go): a fuzzed body is sent, on a raw
// connection, to one of several routes (operations that read their body as JSON, as multipart,
// as a form, routes that answer 404 or 405 without wanting a body), and a second request is
// pipelined right behind it on the same connection. Whatever the route does with the body (reads
// it, refuses it, ignores it), it must not read any of it as the start of another request: the
// service either reads the declared body to its end or closes the connection after its answer.
// A body whose bytes were taken for a request would let a client smuggle a request past a proxy
// that shares connections.

// framingRoutes are the routes the bodies are sent to, with the Content-Type they are sent as.
var framingRoutes = []struct{ method, path, ctype string }{
	{"POST", "/api/v1/books", "multipart/form-data; boundary=" + fuzzBoundary},
	{"PUT", "/api/v1/brand", "multipart/form-data; boundary=" + fuzzBoundary},
	{"POST", "/api/v1/books/konva", "application/json"},
	{"PUT", "/api/v1/books/{book}", "application/json"},
	{"POST", "/collect", "text/plain"},
	{"POST", mcp.Path, "application/json"},
	{"POST", "/oauth/token", "application/x-www-form-urlencoded"},
	{"POST", "/oauth/register", "application/json"},
	{"GET", "/api/v1/health", "application/json"},
	{"PATCH", "/api/v1/books", "application/json"}, // 405
	{"POST", "/api/v1/me", "application/json"},     // 405
	{"GET", "/nope", "application/json"},           // 404
	{"GET", "/view/{book}", "text/plain"},
}

// healthProbe is the request pipelined behind each fuzzed one (the service closes the
// connection after answering it).
const healthProbe = "GET /api/v1/health HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n"

// chunkedBody frames body as chunks of at most n bytes.
func chunkedBody(body []byte, n int) string {
	var b strings.Builder
	for len(body) > 0 {
		k := min(n, len(body))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, body[:k])
		body = body[k:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// FuzzBodyFraming sends a fuzzed body (with a Content-Length, or chunked) followed by a
// pipelined GET /api/v1/health. Property: the first answer is not a 5xx; then either the
// connection closes (after an answer that says Connection: close) or the next answer is the
// health check's 200, and there is no third answer: no byte of the body was read as a request.
func FuzzBodyFraming(f *testing.F) {
	h := newHarness(f, func(c *Config) { c.MaxBodyBytes = fuzzUploadCap })
	key := h.workspace(f, "company", "live")
	rid := h.konva(f, key, "framed", "publish")
	addr := strings.TrimPrefix(h.base, "http://")
	form := fuzzForm([][2]string{{"status", "draft"}}, [3]string{"files", "notes.txt", "plain text"})
	for i, r := range framingRoutes {
		var body string
		switch {
		case strings.HasPrefix(r.ctype, "multipart/"):
			body = string(form)
		case r.path == "/oauth/token":
			body = "grant_type=client_credentials&client_id=x&client_secret=y"
		case r.path == mcp.Path:
			body = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		default:
			body = `{"status":"draft","book_id":"` + rid + `","session_id":"s","events":[{"type":"session_started"}]}`
		}
		f.Add(uint8(i), []byte(body))
		f.Add(uint8(i|0x80), []byte(body))                     // chunked
		f.Add(uint8(i), []byte(body+strings.Repeat("x", 200))) // trailing bytes the route does not want
	}
	f.Add(uint8(9), []byte("X"+healthProbe)) // a request inside the body of a 405
	f.Add(uint8(11), []byte("X"+healthProbe))
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		route := framingRoutes[int(sel&0x7f)%len(framingRoutes)]
		path := strings.ReplaceAll(route.path, "{book}", rid)
		req := route.method + " " + path + " HTTP/1.1\r\nHost: fuzz\r\nAuthorization: Bearer " + key +
			"\r\nAccept: application/json, text/event-stream\r\nContent-Type: " + route.ctype + "\r\n"
		if sel&0x80 != 0 {
			req += "Transfer-Encoding: chunked\r\n\r\n" + chunkedBody(body, 1000)
		} else {
			req += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
		}
		what := fmt.Sprintf("%s %s (%d bytes, chunked %v)", route.method, route.path, len(body), sel&0x80 != 0)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() { _, _ = io.WriteString(c, req+healthProbe) }()
		br := bufio.NewReader(c)
		first, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v\nbody: %q", what, err, clip(body, 1000))
		}
		_, _ = io.Copy(io.Discard, first.Body)
		first.Body.Close()
		if first.StatusCode >= 500 {
			t.Fatalf("%s: %d\nbody: %q", what, first.StatusCode, clip(body, 1000))
		}
		if first.Close {
			return // Connection: close: nothing more is read from this connection
		}
		second, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s answered %d and kept the connection, but the request after it got no answer (%v)\nbody: %q",
				what, first.StatusCode, err, clip(body, 1000))
		}
		b, _ := io.ReadAll(second.Body)
		second.Body.Close()
		if second.StatusCode != 200 || !strings.Contains(string(b), `"status"`) {
			t.Fatalf("%s answered %d; the health check pipelined behind it was answered %d: %.300s\nbody: %q",
				what, first.StatusCode, second.StatusCode, b, clip(body, 1000))
		}
		if third, err := http.ReadResponse(br, nil); err == nil {
			t.Fatalf("%s: a third answer (%d) to two requests: part of the body was read as a request\nbody: %q",
				what, third.StatusCode, clip(body, 1000))
		}
	})
}
