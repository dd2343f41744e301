package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A body that ends before its declared Content-Length (the client's connection closed midway)
// is refused with a 400, small or large: what had arrived was taken for the whole body, and a
// PUT cut short was applied.
func TestShortBodyIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "b.pdf", rtlPDF(t, 1))
	h.waitBatch(t, key, batch)
	for _, missing := range []int{10, 100 << 10} {
		body := fmt.Sprintf(`{"name":"cut-%d","status":"draft"}`, missing)
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "PUT /api/v1/books/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", rid, key, len(body)+missing, body)
		require.NoError(t, err)
		require.NoError(t, conn.(*net.TCPConn).CloseWrite()) // the rest never comes
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		conn.Close()
		require.Equal(t, 400, res.StatusCode, "%d bytes missing: %s", missing, b)
		require.Contains(t, string(b), fmt.Sprintf("ended after %d of its declared %d bytes", len(body), len(body)+missing))
		require.Equal(t, "b", h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()["name"], "not applied")
	}
}
