package httpapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/mcp"
)

// rpc posts one raw JSON-RPC body to the MCP endpoint and decodes the answer.
func (h *harness) rpc(tb testing.TB, key, body string, headers ...string) *resp {
	tb.Helper()
	hdr := append([]string{"Accept", "application/json, text/event-stream"}, headers...)
	return h.do(tb, "POST", mcp.Path, key, body, hdr...)
}

func rpcCode(tb testing.TB, r *resp) float64 {
	tb.Helper()
	e, ok := r.JSON["error"].(map[string]any)
	require.True(tb, ok, "a JSON-RPC error: %s", r.Body)
	return e["code"].(float64)
}

const newMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"%s","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

func TestMCPRawJSONRPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")

	// Transport: credentials, methods, Origin, protocol versions.
	r := h.rpc(t, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	require.Equal(t, 401, r.Status)
	require.Equal(t, api.TypeUnauthenticated, r.errType())
	require.NotEmpty(t, r.Header.Get("WWW-Authenticate"))
	r = h.rpc(t, "wsk_live_wrong", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	require.Equal(t, 401, r.Status)
	r = h.do(t, "GET", mcp.Path, key, nil)
	require.Equal(t, 405, r.Status)
	require.Equal(t, "POST", r.Header.Get("Allow"))
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Origin", "https://evil.example")
	require.Equal(t, 403, r.Status)
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Origin", h.cfg.PublicURL)
	require.Equal(t, 200, r.Status, "the service's own origin: %s", r.Body)
	// DNS rebinding: a page of another name resolved to this server sends Origin equal to
	// its Host header; only the public host (or the allowed list) is trusted.
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Origin", "http://rebind.attacker.example", "Host", "rebind.attacker.example")
	require.Equal(t, 403, r.Status, "%s", r.Body)
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "MCP-Protocol-Version", "1999-01-01")
	require.Equal(t, 400, r.Status)
	require.Contains(t, string(r.Body), "2025-11-25")
	require.Contains(t, string(r.Body), "2026-07-28")

	// The 2025-11-25 handshake: initialize negotiates, notifications/initialized is 202.
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "2025-11-25", r.JSON["result"].(map[string]any)["protocolVersion"])
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "2025-11-25", r.JSON["result"].(map[string]any)["protocolVersion"], "an unknown version is answered with the newest of the handshake")
	r = h.rpc(t, key, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, 202, r.Status)
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	require.Equal(t, 200, r.Status)
	require.EqualValues(t, 7, r.JSON["id"])

	// The stateless 2026-07-28 revision: no initialize, the version in every request.
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+fmt.Sprintf(newMeta, "2026-07-28")+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Contains(t, r.JSON["result"].(map[string]any)["supportedVersions"], "2026-07-28")
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+fmt.Sprintf(newMeta, "2026-07-28")+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.NotEmpty(t, r.JSON["result"].(map[string]any)["tools"])
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+fmt.Sprintf(newMeta, "2099-01-01")+`}}`,
		"MCP-Protocol-Version", "2099-01-01", "Mcp-Method", "tools/list")
	require.Equal(t, 400, r.Status, "%s", r.Body)
	require.Contains(t, string(r.Body), "2026-07-28", "names the supported versions")

	// Every JSON-RPC error code where it belongs.
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,`)
	require.Equal(t, -32700.0, rpcCode(t, r))
	r = h.rpc(t, key, `{"jsonrpc":"1.0","id":1,"method":"ping"}`)
	require.Equal(t, -32600.0, rpcCode(t, r))
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1}`)
	require.Equal(t, -32600.0, rpcCode(t, r))
	r = h.rpc(t, key, `"ping"`)
	require.Equal(t, -32600.0, rpcCode(t, r))
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"books/get"}`)
	require.Equal(t, -32601.0, rpcCode(t, r))
	require.EqualValues(t, 1, r.JSON["id"])
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool"}}`)
	require.Equal(t, -32602.0, rpcCode(t, r))
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_get","arguments":[1]}}`)
	require.Equal(t, -32602.0, rpcCode(t, r))

	// A tool call that fails inside the service (the file store is broken) is -32603; a
	// validation failure is a tool result with isError, not a protocol error.
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_list","arguments":{"limit":0}}}`)
	require.Equal(t, 200, r.Status)
	require.Equal(t, true, r.JSON["result"].(map[string]any)["isError"])
	blobs := filepath.Join(h.cfg.DataDir, "blobs")
	require.NoError(t, os.Rename(blobs, blobs+".away"))
	require.NoError(t, os.WriteFile(blobs, []byte("not a directory"), 0o644))
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call",
		"params": map[string]any{"name": "books_create_konva", "arguments": konvaBody("broken", "draft", 1)}})
	require.NoError(t, err)
	r = h.rpc(t, key, string(body))
	require.NoError(t, os.Remove(blobs))
	require.NoError(t, os.Rename(blobs+".away", blobs))
	require.Equal(t, -32603.0, rpcCode(t, r), "%s", r.Body)
}

// TestMCPFastPathMatchesSDK: the tools/call fast path answers exactly what the SDK's handler
// answers, for results, tool errors and protocol errors, under both revisions.
func TestMCPFastPathMatchesSDK(t *testing.T) {
	t.Parallel()
	fast := newHarness(t, nil)
	key := fast.workspace(t, "company", "live")
	rid := fast.konva(t, key, "same answers", "draft")
	type call struct{ body, version string }
	meta := fmt.Sprintf(newMeta, "2026-07-28")
	calls := []call{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_get","arguments":{"book_id":"` + rid + `"}}}`, "2025-11-25"},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"books_get","arguments":{"book_id":"nope"}}}`, ""},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"books_list","arguments":{"limit":"many"}}}`, "2025-06-18"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"books_get","arguments":[]}}`, "2025-11-25"},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"books_get","arguments":{"book_id":"` + rid + `"},` + meta + `}}`, "2026-07-28"},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"subscribers_list",` + meta + `}}`, "2026-07-28"},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"exports_download_book_leads_csv","arguments":{"book_id":"` + rid + `"}}}`, "2025-11-25"},
	}
	answers := func(h *harness) []string {
		var out []string
		for _, c := range calls {
			var hdr []string
			if c.version != "" {
				hdr = append(hdr, "MCP-Protocol-Version", c.version)
			}
			if c.version == "2026-07-28" {
				var m struct {
					Params struct{ Name string } `json:"params"`
				}
				require.NoError(t, json.Unmarshal([]byte(c.body), &m))
				hdr = append(hdr, "Mcp-Method", "tools/call", "Mcp-Name", m.Params.Name)
			}
			r := h.rpc(t, key, c.body, hdr...)
			out = append(out, fmt.Sprintf("%d %s", r.Status, r.Body))
		}
		return out
	}
	got := answers(fast)
	fast.cfg.MCPSDKOnly = true // the same data and address, every message through the SDK
	fast.restart(t)
	want := answers(fast)
	for i := range calls {
		gs, gb, _ := strings.Cut(got[i], " ")
		ws, wb, _ := strings.Cut(want[i], " ")
		require.Equal(t, ws, gs, "status of %s", calls[i].body)
		require.JSONEq(t, wb, gb, "body of %s", calls[i].body)
	}
}
