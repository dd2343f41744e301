package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/internal/testutil"
)

// Request bodies are bounded before they are read (body.go; issue 25 part 2): what an
// anonymous or slow socket can make the service hold.

// rawBodyRequest writes head (request line and headers, without the blank line) and then body on
// a new connection, and reads the answer. It returns the response, its body, and how long the
// answer took from the end of the write.
func rawBodyRequest(t *testing.T, h *harness, head string, body []byte) (*http.Response, string, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = io.WriteString(c, head+"\r\n\r\n")
	require.NoError(t, err)
	if len(body) > 0 {
		_, err = c.Write(body)
		require.NoError(t, err)
	}
	start := time.Now()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	return res, string(raw), time.Since(start)
}

// A declared length over a route's cap is answered 413 at once, with no body byte sent or
// with a little of it, on the collector, the API and MCP; the connection then closes.
func TestBodyOverCapRefusedFromHeaders(t *testing.T) {
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	for _, c := range []struct{ name, head string }{
		{"collect", "POST /collect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 268435455"},
		{"api over the server cap", "POST /api/v1/books HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 268435457"},
		{"api over the operation's cap", "PUT /api/v1/books/abc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\nContent-Type: application/json\r\nContent-Length: 2097152"},
		{"api without a key", "PUT /api/v1/books/abc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2097152"},
		{"mcp", "POST /mcp/public-api HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 268435457"},
		{"oauth", "POST /oauth/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576"},
	} {
		for _, sent := range [][]byte{nil, bytes.Repeat([]byte("x"), 1024)} {
			res, raw, took := rawBodyRequest(t, h, c.head, sent)
			require.Equal(t, 413, res.StatusCode, "%s (%d bytes sent): %s", c.name, len(sent), raw)
			require.Contains(t, raw, api.TypePayloadTooLarge, c.name)
			require.True(t, res.Close, "%s: the connection closes (its body is unread)", c.name)
			require.Less(t, took, 3*time.Second, "%s: answered at once", c.name)
		}
	}
}

// On an authenticated route, a request without valid credentials is refused before its body
// is read: the 401 comes while the body is still pending, and the connection closes.
func TestBodyUnauthenticatedRefusedBeforeRead(t *testing.T) {
	h := newHarness(t, nil)
	for _, c := range []struct{ name, head string }{
		{"upload without a key", "POST /api/v1/books HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000000"},
		{"upload with a wrong key", "POST /api/v1/books HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wsk_live_nope\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000000"},
		{"editor book without a key", "POST /api/v1/books/konva HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000"},
		{"mcp without a key", "POST /mcp/public-api HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000000"},
		{"chunked upload without a key", "POST /api/v1/books HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked"},
	} {
		first := bytes.Repeat([]byte("y"), 1024)
		if strings.Contains(c.head, "chunked") {
			first = []byte("400\r\n" + strings.Repeat("y", 1024) + "\r\n")
		}
		res, raw, took := rawBodyRequest(t, h, c.head, first)
		require.Equal(t, 401, res.StatusCode, "%s: %s", c.name, raw)
		require.NotEmpty(t, res.Header.Get("WWW-Authenticate"), c.name)
		require.True(t, res.Close, "%s: the connection closes", c.name)
		require.Less(t, took, 3*time.Second, "%s: answered while the body is pending", c.name)
	}
}

// A chunked body is cut at its route's cap (413), an authenticated upload included.
func TestBodyChunkedOverCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 2 << 20 })
	key := h.workspace(t, "company", "live")
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	fmt.Fprintf(c, "POST /api/v1/books HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n", key)
	part := "--b\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"a.pdf\"\r\nContent-Type: application/pdf\r\n\r\n"
	fmt.Fprintf(c, "%x\r\n%s\r\n", len(part), part)
	chunk := bytes.Repeat([]byte("z"), 64<<10)
	// Write until the server answers (it stops reading at the cap); a write error then is
	// the server closing the connection.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 64; i++ { // 4 MiB, twice the cap
			if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return
			}
		}
	}()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	require.Equal(t, 413, res.StatusCode, "%s", raw)
	<-done
	require.Empty(t, h.do(t, "GET", "/api/v1/books", key, nil).list(), "nothing was created")
}

// A body trickling in slower than its deadline is cut off with 408; the server answers others
// meanwhile.
func TestBodySlowSenderCut(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BodyReadTimeout = time.Second })
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	start := time.Now()
	_, err = io.WriteString(c, "POST /collect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	go func() {
		for i := 0; i < 20; i++ {
			time.Sleep(500 * time.Millisecond) // sleep: the slow sender under test trickles a byte every 500 ms
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	require.Equal(t, 408, res.StatusCode, "%s", raw)
	require.True(t, res.Close)
	require.Less(t, time.Since(start), 8*time.Second, "cut at its deadline (1 s + 1000 B at 256 KiB/s), not after the whole trickle")
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/health", "", nil).Status)
}

// Bodies held in memory count against one budget: past it, 503 with Retry-After; a multipart
// upload streams to disk and needs no more than the multipart reader's allowance.
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxBufferedBytes = 12 << 20 })
	key := h.workspace(t, "company", "live")
	// A 5 MB editor book would hold 15 MB: over the budget.
	big := konvaBody("big", "draft", 1)
	big["page_images"] = []any{strings.Repeat("A", 5<<20)}
	r := h.do(t, "POST", "/api/v1/books/konva", key, big)
	require.Equal(t, 503, r.Status, "%s", r.Body)
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	require.Equal(t, api.TypeUnavailable, r.errType())
	// A 20 MB upload goes through: its file is on disk, not in the budget.
	pdf := append(append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("%"), 20<<20)...), []byte("\n%%EOF\n")...)
	r = h.upload(t, key, "a.pdf", pdf)
	require.NotEqual(t, 503, r.Status, "%s", r.Body)
	require.NotEqual(t, 413, r.Status, "%s", r.Body)
	_, fams := scrape(t, h.base+"/metrics", h.admin)
	require.GreaterOrEqual(t, sample(fams, "flipbook_request_body_budget_refusals_total"), 1.0)
	// Everything reserved was given back.
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		if n := h.svc.bodies.inUse(); n != 0 {
			return fmt.Errorf("the body budget is not free again: %d in use", n)
		}
		return nil
	})
	// Small bodies never touch it.
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/books/konva", key, konvaBody("small", "draft", 1)).Status)
}

// Keep-alive survives bodies read in full: two requests with bodies on one connection.
func TestBodyKeepAlive(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	br := bufio.NewReader(c)
	for i := 0; i < 3; i++ {
		raw, err := json.Marshal(konvaBody(fmt.Sprint("book ", i), "draft", 1))
		require.NoError(t, err)
		body := string(raw)
		fmt.Fprintf(c, "POST /api/v1/books/konva HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body)
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		answer, _ := io.ReadAll(res.Body)
		require.Equal(t, 201, res.StatusCode, "%s", answer)
		require.False(t, res.Close)
	}
}

// A client sending Expect: 100-continue (curl does above 1 MB) and refused reads its answer, not
// a reset: without a key, and over the cap.
func TestBodyExpectContinueRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 4 << 20 })
	key := h.workspace(t, "company", "live")
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Second}}
	for _, c := range []struct {
		key  string
		size int
		want int
	}{{"", 3 << 20, 401}, {key, 6 << 20, 413}} {
		body := append([]byte("--b\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"a.pdf\"\r\n\r\n"), bytes.Repeat([]byte("p"), c.size)...)
		req, err := http.NewRequest("POST", h.base+"/api/v1/books", bytes.NewReader(append(body, "\r\n--b--\r\n"...)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		req.Header.Set("Expect", "100-continue")
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		res, err := client.Do(req)
		require.NoError(t, err, "the answer, not a reset")
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, c.want, res.StatusCode, "%s", raw)
	}
}
