package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// deep is a JSON value nesting arrays n levels deep.
func deep(n int) any {
	var v any = "leaf"
	for i := 0; i < n; i++ {
		v = []any{v}
	}
	return v
}

// Free-form values nested past api.MaxNesting are a 422 naming the field, over REST and MCP
// (they were stored until the encoder gave up at ~2,000 levels: a 500 after the fact).
func TestDeepJSONIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Deep", "publish")
	links := "/api/v1/books/" + rid + "/tracked-links"

	ok := h.do(t, "POST", links, key, map[string]any{"name": "ok", "metadata": map[string]any{"x": deep(api.MaxNesting - 1)}})
	require.Equal(t, 201, ok.Status, "%s", ok.Body)
	for _, n := range []int{api.MaxNesting + 1, 3000} {
		r := h.do(t, "POST", links, key, map[string]any{"name": "deep", "metadata": map[string]any{"x": deep(n)}})
		require.Equal(t, 422, r.Status, "%d levels: %s", n, r.Body)
		require.Contains(t, r.details(), "metadata", "%s", r.Body)
	}
	item := map[string]any{"external_item_key": "p1", "title": "P", "payload": []any{deep(3000)}}
	r := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "c", "items": []any{item}})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "items.0.payload", "%s", r.Body)

	// A number no float64 holds is refused in a free-form value as a 422 on its field: stored,
	// it made every later reader drop the value (a lead form vanished from the exports, and an
	// erasure passed over the webhook payload naming the reader: found by a review).
	for _, n := range []string{"1e400", "-1e400"} {
		r := h.do(t, "POST", links, key, `{"name":"big","metadata":{"x":[1,`+n+`]}}`)
		require.Equal(t, 422, r.Status, "%s: %s", n, r.Body)
		require.Contains(t, r.details(), "metadata", "%s", r.Body)
	}
	lead := `{"book_id":"` + rid + `","session_id":"s9","events":[{"type":"lead_form_submitted","page_number":1,` +
		`"form":{"email":"ada@example.com","budget":1e400}}]}`
	r = h.do(t, "POST", "/collect", "", lead)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "events.0.form", "%s", r.Body)
	ok = h.do(t, "POST", links, key, `{"name":"fine","metadata":{"x":[1e300,1e-400,-0.5]}}`)
	require.Equal(t, 201, ok.Status, "%s", ok.Body)

	// The same through a tool.
	out := h.do(t, "POST", "/mcp/public-api", key, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "tracked_links_create", "arguments": map[string]any{"book_id": rid, "name": "m",
			"metadata": map[string]any{"x": deep(100)}}}},
		"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18")
	require.Equal(t, 200, out.Status, "%s", out.Body)
	require.Contains(t, string(out.Body), `"isError":true`)
	require.Contains(t, string(out.Body), "metadata")
	require.Contains(t, string(out.Body), "levels deep")
}

// rawRequest sends bytes on a fresh connection and returns the status line and the body.
func rawRequest(t *testing.T, h *harness, req string) (string, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Write([]byte(req))
	require.NoError(t, err)
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	require.NoError(t, err)
	var body strings.Builder
	length := 0
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if line == "\r\n" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			fmt.Sscan(strings.TrimSpace(v), &length)
		}
	}
	buf := make([]byte, length)
	_, err = io.ReadFull(br, buf)
	require.NoError(t, err)
	body.Write(buf)
	return strings.TrimSpace(status), body.String()
}

// Transport-level refusals: headers over the limit are a 431 that never quotes the request (a
// key was echoed back in the 400's message), and a path of invalid UTF-8 is quoted as valid
// JSON.
func TestTransportErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	long := strings.Repeat("a", 10<<10)
	status, body := rawRequest(t, h, "GET /api/v1/books HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+"\r\nX-Long: "+long+"\r\n\r\n")
	require.Contains(t, status, " 431 ", "%s %s", status, body)
	require.NotContains(t, body, key, "the key is not echoed")
	require.Contains(t, body, `"type":"BadRequest"`)

	status, body = rawRequest(t, h, "GET /api/v1/\xff\xfe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+"\r\n\r\n")
	require.Contains(t, status, " 404 ")
	require.True(t, utf8.ValidString(body), "%q", body)

	// A path id is written one way: "+1" and "01" are not subscriber 1.
	sub := h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": h.konva(t, key, "S", "publish"), "email": "a@example.com"})
	require.Equal(t, 201, sub.Status, "%s", sub.Body)
	id := itoa(int64(sub.data()["id"].(float64)))
	for _, p := range []string{"%2B" + id, "0" + id, "%20" + id} {
		r := h.do(t, "DELETE", "/api/v1/subscribers/"+p, key, nil)
		require.Equal(t, 404, r.Status, "%s: %s", p, r.Body)
	}
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/subscribers/"+id, key, nil).Status, "the subscriber was still there")
}

func TestPublicHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://books.example.com": "books.example.com", "http://127.0.0.1:8080": "127.0.0.1:8080",
		"https://books.example.com/base": "books.example.com", "http://:8080": "", "http://0.0.0.0:8080": "",
		"http://[::]:8080": "", "http://[::1]:8080": "[::1]:8080",
	} {
		require.Equal(t, want, publicHost(in), in)
	}
}
