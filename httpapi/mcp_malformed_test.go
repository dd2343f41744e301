package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// rpcAnswer is a JSON-RPC answer with its id as sent.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestMCPMalformedJSONRPC: every malformed message is answered before the SDK with a JSON-RPC
// error (application/json, the right HTTP status, code and id), never the SDK's plain text.
func TestMCPMalformedJSONRPC(t *testing.T) {
	t.Parallel()
	for _, sdkOnly := range []bool{false, true} {
		h := newHarness(t, func(c *Config) { c.MCPSDKOnly = sdkOnly })
		t.Run(map[bool]string{false: "fast path on", true: "SDK only"}[sdkOnly], func(t *testing.T) {
			t.Parallel()
			testMalformed(t, h)
		})
	}
}

func testMalformed(t *testing.T, h *harness) {
	key := h.workspace(t, "company", "live")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	initParams := `"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`
	deepArray := strings.Repeat("[", 1500) + strings.Repeat("]", 1500)
	cases := []struct {
		name    string
		body    string
		headers []string
		status  int
		code    int
		id      string // the answer's id as JSON text
	}{
		// Ids: a string or an integer within int64, else -32600 with id null.
		{"id object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, nil, 400, -32600, "null"},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, nil, 400, -32600, "null"},
		{"id bool", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, nil, 400, -32600, "null"},
		{"id null", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, nil, 400, -32600, "null"},
		{"id 1e40", `{"jsonrpc":"2.0","id":1e40,"method":"ping"}`, nil, 400, -32600, "null"},
		{"id 1.5", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, nil, 400, -32600, "null"},
		{"id past int64", `{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}`, nil, 400, -32600, "null"},
		{"id below int64", `{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}`, nil, 400, -32600, "null"},
		{"id huge exponent", `{"jsonrpc":"2.0","id":1e999999999,"method":"ping"}`, nil, 400, -32600, "null"},
		{"tools/call id 1.5", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"books_list"}}`, nil, 400, -32600, "null"},
		{"tools/call id object", `{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"books_list"}}`, nil, 400, -32600, "null"},
		{"response id null", `{"jsonrpc":"2.0","id":null,"result":{}}`, nil, 400, -32600, "null"},
		// Requests without an id, notifications with one.
		{"tools/call without id", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"books_list"}}`, nil, 400, -32600, "null"},
		{"tools/call id null", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"books_list"}}`, nil, 400, -32600, "null"},
		{"notification with id", `{"jsonrpc":"2.0","id":4,"method":"notifications/initialized"}`, nil, 400, -32600, "4"},
		{"unknown notification with id", `{"jsonrpc":"2.0","id":"n","method":"notifications/nope"}`, nil, 200, -32601, `"n"`},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":5}`, nil, 400, -32600, "1"},
		// Params.
		{"tools/call without params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, nil, 200, -32602, "1"},
		{"tools/call params null", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":null}`, nil, 200, -32602, "2"},
		{"tools/call params array", `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":["books_list"]}`, nil, 200, -32602, `"p"`},
		{"tools/list params number", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":5}`, nil, 200, -32602, "3"},
		{"initialize without params", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, nil, 200, -32602, "1"},
		{"initialize params mistyped", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`, nil, 200, -32602, "1"},
		{"initialize clientInfo mistyped", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":"me"}}`, nil, 200, -32602, "1"},
		{"initialize params string", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`, nil, 200, -32602, "1"},
		{"progress without params", `{"jsonrpc":"2.0","method":"notifications/progress"}`, nil, 400, -32602, "null"},
		// Batches: refused where MCP removed them, checked where the SDK still takes them.
		{"batch 2025-11-25", `[` + ping + `]`, []string{"MCP-Protocol-Version", "2025-11-25"}, 400, -32600, "null"},
		{"batch 2025-06-18", `[` + ping + `]`, []string{"MCP-Protocol-Version", "2025-06-18"}, 400, -32600, "null"},
		{"batch 2026-07-28", `[` + ping + `]`, []string{"MCP-Protocol-Version", "2026-07-28"}, 400, -32600, "null"},
		{"empty batch", `[]`, nil, 400, -32600, "null"},
		{"empty batch 2025-11-25", `[]`, []string{"MCP-Protocol-Version", "2025-11-25"}, 400, -32600, "null"},
		{"garbage batch", `[1,2,3]`, nil, 400, -32600, "null"},
		{"batch with a bad id", `[` + ping + `,{"jsonrpc":"2.0","id":{},"method":"ping"}]`, nil, 400, -32600, "null"},
		{"batch with a request without id", `[{"jsonrpc":"2.0","method":"tools/list"}]`, []string{"MCP-Protocol-Version", "2025-03-26"}, 400, -32600, "null"},
		{"batch with an unknown method", `[{"jsonrpc":"2.0","id":7,"method":"nope"}]`, nil, 400, -32601, "7"},
		{"batch with duplicate ids", `[` + ping + `,{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}]`, nil, 400, -32600, "1.0"},
		{"unclosed nesting", strings.Repeat("[", 3000), nil, 400, -32700, "null"},
		{"nesting past 1000", deepArray, nil, 400, -32700, "null"},
		{"params nesting past 1000", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":` + deepArray + `}}`, nil, 400, -32700, "null"},
		{"garbage", `{"jsonrpc":`, nil, 400, -32700, "null"},
		{"empty body", ``, nil, 400, -32700, "null"},
		// Media types.
		{"Accept JSON only", ping, []string{"Accept", "application/json"}, 406, -32600, "null"},
		{"Accept SSE only", ping, []string{"Accept", "text/event-stream"}, 406, -32600, "null"},
		{"no Accept", ping, []string{"Accept", ""}, 406, -32600, "null"},
		{"Content-Type text/plain", ping, []string{"Content-Type", "text/plain"}, 415, -32600, "null"},
		{"Content-Type form", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_list"}}`,
			[]string{"Content-Type", "application/x-www-form-urlencoded"}, 415, -32600, "null"},
		{"no Content-Type", ping, []string{"Content-Type", ""}, 415, -32600, "null"},
		{"Content-Type unparsable", ping, []string{"Content-Type", "application/json; ="}, 415, -32600, "null"},
	}
	for _, c := range cases {
		r := h.rpc(t, key, c.body, c.headers...)
		require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"), "%s: %s", c.name, r.Body)
		var a rpcAnswer
		require.NoError(t, json.Unmarshal(r.Body, &a), "%s: %s", c.name, r.Body)
		require.NotNil(t, a.Error, "%s: %s", c.name, r.Body)
		require.Equal(t, c.code, a.Error.Code, "%s: %s", c.name, r.Body)
		require.Equal(t, c.id, string(a.ID), "%s: %s", c.name, r.Body)
		require.Equal(t, "2.0", r.JSON["jsonrpc"], c.name)
		require.NotEmpty(t, a.Error.Message, c.name)
	}
	r := h.rpc(t, key, `[`+ping+`]`, "MCP-Protocol-Version", "2025-11-25")
	require.Contains(t, r.JSON["error"].(map[string]any)["message"], "batches are not supported")

	// Well-formed messages still get through, with their ids written back as sent.
	for _, id := range []string{`1.0`, `1e3`, `-7`, `0`, `9007199254740993`, `9223372036854775807`, `-9223372036854775808`, `"abc"`, `"<&>"`} {
		r := h.rpc(t, key, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		require.Equal(t, 200, r.Status, "%s: %s", id, r.Body)
		var a rpcAnswer
		require.NoError(t, json.Unmarshal(r.Body, &a))
		require.Nil(t, a.Error, "%s: %s", id, r.Body)
		require.Equal(t, id, string(a.ID), "%s", r.Body)
	}
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":2.0,"method":"initialize",`+initParams+`}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Contains(t, string(r.Body), `"id":2.0`)
	require.Equal(t, "2025-11-25", r.JSON["result"].(map[string]any)["protocolVersion"])

	// Notifications the server does not handle are accepted and ignored, as JSON-RPC says.
	r = h.rpc(t, key, `{"jsonrpc":"2.0","method":"notifications/whatever"}`)
	require.Equal(t, 202, r.Status, "%s", r.Body)
	r = h.rpc(t, key, `{"jsonrpc":"2.0","method":"no/such/method","params":{}}`)
	require.Equal(t, 202, r.Status, "%s", r.Body)

	// Batches of revisions that have them (2025-03-26, or no MCP-Protocol-Version): answered by
	// the SDK as one array, the ids as sent; ignored notifications are dropped.
	batch := `[{"jsonrpc":"2.0","id":1.0,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/whatever"},` +
		`{"jsonrpc":"2.0","id":"two","method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`
	for _, version := range []string{"", "2025-03-26"} {
		var hdr []string
		if version != "" {
			hdr = []string{"MCP-Protocol-Version", version}
		}
		status, body := h.rawRPC(t, key, batch, hdr...)
		require.Equal(t, 200, status, "%s", body)
		var answers []rpcAnswer
		require.NoError(t, json.Unmarshal(body, &answers), "%s", body)
		require.Len(t, answers, 2)
		ids := map[string]bool{}
		for _, a := range answers {
			require.Nil(t, a.Error, "%s", body)
			ids[string(a.ID)] = true
		}
		require.Equal(t, map[string]bool{`1.0`: true, `"two"`: true}, ids)
	}
	r = h.rpc(t, key, `[{"jsonrpc":"2.0","method":"notifications/whatever"}]`)
	require.Equal(t, 202, r.Status, "%s", r.Body)
}

// rawRPC posts a JSON-RPC body to the MCP endpoint and returns the answer undecoded (a batch
// answer is an array), checking it is JSON.
func (h *harness) rawRPC(tb testing.TB, key, body string, headers ...string) (int, []byte) {
	tb.Helper()
	r := h.rpc(tb, key, body, headers...)
	require.Equal(tb, "application/json", r.Header.Get("Content-Type"), "%s", r.Body)
	return r.Status, r.Body
}

// TestMCPIDsFastPathAndSDK: a tools/call answered by the fast path and by the SDK write back
// the same ids, as sent.
func TestMCPIDsFastPathAndSDK(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	ids := []string{`1.0`, `12e1`, `9007199254740993`, `"x"`}
	answers := func() []string {
		var out []string
		for _, id := range ids {
			r := h.rpc(t, key, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"books_list","arguments":{}}}`)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			var a rpcAnswer
			require.NoError(t, json.Unmarshal(r.Body, &a))
			require.Equal(t, id, string(a.ID), "%s", r.Body)
			require.NotEmpty(t, a.Result)
			out = append(out, string(r.Body))
		}
		return out
	}
	fast := answers()
	h.cfg.MCPSDKOnly = true
	h.restart(t)
	sdkOnly := answers()
	for i := range ids {
		require.JSONEq(t, sdkOnly[i], fast[i], ids[i])
	}
}

// TestMCPExportPathLimits: an output_path the file system would refuse is a 422 naming the
// argument before anything is made; a failure of the file system later is logged with the
// request id and answered -32603 without any server path.
func TestMCPExportPathLimits(t *testing.T) {
	t.Parallel()
	logs := &logSink{}
	h := newHarness(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	rid := h.konva(t, key, "exported", "publish")
	area := filepath.Join(h.cfg.DataDir, "exports", itoa(ws)+"-live")
	require.NoError(t, os.MkdirAll(area, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(area, "abc"), []byte("a file"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(area, "dir.csv"), 0o755))

	call := func(arg, p string) *resp {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call",
			"params": map[string]any{"name": "exports_download_book_leads_csv", "arguments": map[string]any{"book_id": rid, arg: p}}})
		require.NoError(t, err)
		return h.rpc(t, key, string(body))
	}
	for _, c := range []struct{ arg, path string }{
		{"output_path", strings.Repeat("y", 255) + ".csv"},    // longer than 255
		{"output_path", strings.Repeat("a/", 3000) + "x.csv"}, // deep and long
		{"output_path", "1/2/3/4/5/6/7/8/9.csv"},              // 9 names
		{"output_path", strings.Repeat("n", 101) + "/x.csv"},  // a name past 100 bytes
		{"output_path", "ok/" + strings.Repeat("f", 101)},     // a file name past 100 bytes
		{"output_path", "abc/x.csv"},                          // abc is a file
		{"output_path", "dir.csv"},                            // a directory
		{"output_path", "line\nbreak.csv"},                    // control characters
		{"output_object_key", strings.Repeat("k", 300)},       // the other argument name
		{"output_object_key", "abc/deeper/x.csv"},             // a file on the way
	} {
		r := call(c.arg, c.path)
		require.Equal(t, 200, r.Status, "%q: %s", c.path, r.Body)
		res, ok := r.JSON["result"].(map[string]any)
		require.True(t, ok, "%q: a tool result: %s", c.path, r.Body)
		require.Equal(t, true, res["isError"], "%q: %s", c.path, r.Body)
		text := res["content"].([]any)[0].(map[string]any)["text"].(string)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &out))
		e := out["error"].(map[string]any)
		require.Equal(t, api.TypeValidation, e["type"], "%q: %s", c.path, text)
		require.EqualValues(t, 422, e["status"], "%q: %s", c.path, text)
		require.Contains(t, e["details"], c.arg, "%q: %s", c.path, text)
		require.NotContains(t, text, h.cfg.DataDir, "%q: no server path", c.path)
	}
	// Nothing was made for the refused paths.
	entries, err := os.ReadDir(area)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"abc", "dir.csv"}, names)

	// The limits themselves are allowed: 8 names, 100-byte names.
	ok := "1/2/3/4/5/6/7/" + strings.Repeat("z", 96) + ".csv"
	r := call("output_path", ok)
	res := r.JSON["result"].(map[string]any)
	require.NotEqual(t, true, res["isError"], "%s", r.Body)
	_, err = os.Stat(filepath.Join(area, filepath.FromSlash(ok)))
	require.NoError(t, err)

	// A failure of the file system (the export root is not a directory) is logged with the
	// request id and answered -32603, without the path.
	exports := filepath.Join(h.cfg.DataDir, "exports")
	require.NoError(t, os.Rename(exports, exports+".away"))
	require.NoError(t, os.WriteFile(exports, []byte("not a directory"), 0o644))
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exports_download_book_leads_csv","arguments":{"book_id":"`+rid+`","output_path":"new/x.csv"}}}`,
		"X-Request-Id", "export-fails-1")
	require.NoError(t, os.Remove(exports))
	require.NoError(t, os.Rename(exports+".away", exports))
	require.Equal(t, -32603.0, rpcCode(t, r), "%s", r.Body)
	require.Equal(t, api.ErrInternal().Message, r.JSON["error"].(map[string]any)["message"])
	require.NotContains(t, string(r.Body), h.cfg.DataDir)
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), `"request_id":"export-fails-1"`) &&
			strings.Contains(logs.String(), "mcp export")
	}, 5*time.Second, 10*time.Millisecond, "the failure is logged with the request id")

	// Through the SDK too (its tool handler reads the request id from the request).
	h.cfg.MCPSDKOnly = true
	h.restart(t)
	require.NoError(t, os.Rename(exports, exports+".away"))
	require.NoError(t, os.WriteFile(exports, []byte("not a directory"), 0o644))
	r = h.rpc(t, key, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"exports_download_book_leads_csv","arguments":{"book_id":"`+rid+`","output_path":"new/x.csv"}}}`)
	require.NoError(t, os.Remove(exports))
	require.NoError(t, os.Rename(exports+".away", exports))
	require.Equal(t, -32603.0, rpcCode(t, r), "%s", r.Body)
	reqID := r.Header.Get("X-Request-Id")
	require.NotEmpty(t, reqID)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `"request_id":"`+reqID+`"`) }, 5*time.Second, 10*time.Millisecond)
}

// mcpAnswers posts each body to the MCP endpoint (headers given per body) and returns
// "status body" for each, the body re-encoded so that equal JSON compares equal.
func mcpAnswers(t *testing.T, h *harness, key string, bodies []string, headers [][]string) []string {
	t.Helper()
	out := make([]string, len(bodies))
	for i, b := range bodies {
		var hdr []string
		if headers != nil {
			hdr = headers[i]
		}
		r := h.rpc(t, key, b, hdr...)
		norm := string(r.Body)
		var v any
		if json.Unmarshal(r.Body, &v) == nil {
			if res, ok := v.(map[string]any)["result"].(map[string]any); ok {
				if c, ok := res["content"].([]any); ok && len(c) == 1 { // the text is JSON: compare it decoded
					text := c[0].(map[string]any)["text"].(string)
					var tv any
					if json.Unmarshal([]byte(text), &tv) == nil {
						c[0].(map[string]any)["text"] = tv
					}
				}
			}
			j, _ := json.Marshal(v)
			norm = string(j)
		}
		out[i] = fmt.Sprintf("%d %s", r.Status, norm)
	}
	return out
}

// TestMCPFastPathKeysAreCaseSensitive (found by a review): the tools/call fast path
// (mcp/fast.go) decoded the JSON-RPC envelope with sonic's default config, which matches object
// keys ignoring case, while
// the SDK (go-sdk internal/json: DontMatchCaseInsensitiveStructFields) and the pre-check
// (checkMessage: a map of exact keys) match them exactly. So the same bytes run a different tool,
// with different arguments, or answer a different id, depending on which path takes them: a
// message whose "method" is "ping" runs a tool on the fast path, and {"name":"books_get",
// "NAME":"books_update_settings"} changes a book while the SDK would read it.
func TestMCPFastPathKeysAreCaseSensitive(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "original", "draft")
	other := h.konva(t, key, "other", "draft")
	get := `{"name":"books_get","arguments":{"book_id":"` + rid + `"}}`
	bodies := []string{
		// another tool than the one "name" names
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_get","NAME":"books_update_settings","arguments":{"book_id":"` + rid + `","status":"draft","title":"changed by NAME"}}}`,
		// other arguments than "arguments"
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"books_get","arguments":{"book_id":"` + rid + `"},"Arguments":{"book_id":"` + other + `"}}}`,
		// a ping that runs a tool
		`{"jsonrpc":"2.0","id":3,"method":"ping","Method":"tools/call","params":` + get + `}`,
		// another id than "id"
		`{"jsonrpc":"2.0","id":4,"Id":"not my id","method":"tools/call","params":` + get + `}`,
		// keys only in another case: no method, no params, no name
		`{"jsonrpc":"2.0","id":5,"METHOD":"tools/call","params":` + get + `}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","Params":` + get + `}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"Name":"books_get","arguments":{"book_id":"` + rid + `"}}}`,
		`{"JSONRPC":"2.0","id":8,"method":"tools/call","params":` + get + `}`,
	}
	fastAndSDKAgree(t, h, key, bodies, nil, func() {
		r := h.do(t, "GET", "/api/v1/books/"+rid, key, nil)
		require.Equal(t, 200, r.Status)
		assert.Equal(t, "original", r.data()["name"], "a call whose name is books_get must not update the book")
	})
}

// fastAndSDKAgree sends bodies (with their headers) with the tools/call fast path on, runs
// between (if not nil), restarts the service on the same data with every message through the
// SDK, sends them again, and checks that both answered each the same.
func fastAndSDKAgree(t *testing.T, h *harness, key string, bodies []string, headers [][]string, between func()) {
	t.Helper()
	fast := mcpAnswers(t, h, key, bodies, headers)
	if between != nil {
		between()
	}
	h.cfg.MCPSDKOnly = true
	h.restart(t)
	sdkOnly := mcpAnswers(t, h, key, bodies, headers)
	for i := range bodies {
		assert.Equal(t, sdkOnly[i], fast[i], "fast path and SDK answer %s (headers %v) differently", bodies[i], headers)
	}
}

// TestMCPFastPathCheckedParams (found by a review): the SDK decodes tools/call params into
// CallToolParamsRaw and answers -32602 when a field it knows has the wrong type (requestState,
// inputResponses); the fast path, which reads only name, arguments and _meta, ran the tool.
func TestMCPFastPathCheckedParams(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_list","arguments":{},"requestState":5}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"books_list","arguments":{},"inputResponses":"x"}}`,
	}
	fastAndSDKAgree(t, h, key, bodies, nil, nil)
}

// TestMCPFastPathContentType (found by a review): checkMessage refuses a Content-Type that mime
// cannot parse (415) before the SDK sees it; the fast path compared only the text before the
// first ";", so the same tools/call was answered 200 with the fast path on and 415 with it off.
func TestMCPFastPathContentType(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_list","arguments":{}}}`
	cts := []string{"application/json; =", "application/json; charset", "application/json; a=1; a=2"}
	bodies := make([]string, len(cts))
	headers := make([][]string, len(cts))
	for i, ct := range cts {
		bodies[i], headers[i] = body, []string{"Content-Type", ct}
	}
	fastAndSDKAgree(t, h, key, bodies, headers, nil)
}

// TestMCPIdempotencyKeyNamedAsArgument (found by a review): docs/API.md says a tool result's
// details keys name the tool's arguments, not the REST names; the idempotency key's errors named
// the REST header.
func TestMCPIdempotencyKeyNamedAsArgument(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "idem", "draft")
	call := func(title, idem string) map[string]any {
		r := h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_update_settings","arguments":{"book_id":"`+
			rid+`","status":"draft","title":"`+title+`","idempotency_key":"`+idem+`"}}}`)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.JSON["result"].(map[string]any)
	}
	res := call("one", "k1")
	require.NotEqual(t, true, res["isError"], "%v", res)
	for _, c := range []struct{ title, idem string }{{"two", "k1"}, {"three", strings.Repeat("k", 256)}} {
		res := call(c.title, c.idem)
		require.Equal(t, true, res["isError"], "%v", res)
		text := res["content"].([]any)[0].(map[string]any)["text"].(string)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &out))
		details := out["error"].(map[string]any)["details"].(map[string]any)
		require.Contains(t, details, "idempotency_key", "details name the tool argument: %s", text)
	}
}
