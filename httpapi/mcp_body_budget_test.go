package httpapi

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawCallBytes sends one request over its own connection (the bytes built beforehand).
func rawCallBytes(t *testing.T, h *harness, path, key, ctype, accept string, body []byte) (int, string) {
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(60*time.Second)))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n",
		path, key, ctype, accept, len(body))
	go func() { _, _ = c.Write(append([]byte(head), body...)) }()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// measureHeap runs f and reports bytes allocated and the peak of live heap objects (GOGC
// low so the peak is close to what is live).
func measureHeap(f func()) (alloc, peak uint64) {
	old := debug.SetGCPercent(5)
	defer debug.SetGCPercent(old)
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	base := s[0].Value.Uint64()
	var top atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			rtmetrics.Read(ss)
			if v := ss[0].Value.Uint64(); v > top.Load() {
				top.Store(v)
			}
			time.Sleep(200 * time.Microsecond) // sleep: sampling interval, waits for nothing
		}
	}()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	close(stop)
	<-done
	p := top.Load()
	if p > base {
		p -= base
	} else {
		p = 0
	}
	return m1.TotalAlloc - m0.TotalAlloc, p
}

// A tools/call carrying a file as base64 that goes to the SDK's handler (any request the fast
// path leaves to it: here a Content-Type parameter other than charset) held about 8 times its
// body at its peak, while the body budget reserved 3 times (found by a review). An MCP body now
// reserves mcpBufferedFactor times, and the peak stays within it.
func TestMCPBodyBudgetCoversTheSDKPath(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 64 << 20 })
	key := h.workspace(t, "company", "live")
	file := make([]byte, 12<<20)
	for i := range file {
		file[i] = byte('a' + i%26)
	}
	params := map[string]any{"name": "books_upload_pdfs", "arguments": map[string]any{
		"pdfs": base64.StdEncoding.EncodeToString(file), "original_filename": "x.bin"}}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	require.NoError(t, err)
	n := float64(len(body))
	best := map[string]uint64{}
	for range 2 {
		for _, c := range []struct{ name, ctype string }{
			{"fast path", "application/json"},
			{"SDK path", "application/json; x=y"},
		} {
			var st int
			var out string
			alloc, peak := measureHeap(func() {
				st, out = rawCallBytes(t, h, "/mcp/public-api", key, c.ctype, "application/json, text/event-stream", body)
			})
			require.Equal(t, 200, st)
			require.Contains(t, out, "is not a PDF", "the call ran")
			if v, ok := best[c.name]; !ok || peak < v {
				best[c.name] = peak
			}
			t.Logf("MCP %s: body %.1f MiB, allocated %.1f MiB (%.1f× body, the test's own copy of the body included), peak live heap %.1f MiB (%.1f× body)",
				c.name, n/(1<<20), float64(alloc)/(1<<20), float64(alloc)/n, float64(peak)/(1<<20), float64(peak)/n)
		}
	}
	require.LessOrEqual(t, float64(best["SDK path"]), mcpBufferedFactor*n,
		"the SDK path held %.1f× its body at its peak; an MCP body reserves %d×", float64(best["SDK path"])/n, mcpBufferedFactor)
}
