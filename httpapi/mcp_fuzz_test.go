package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"flipbook/mcp"
)

// Fuzzing of the MCP endpoint of a real service (issue 27): raw JSON-RPC bodies POSTed as an
// MCP client sends them, through the message checks of mcp/jsonrpc.go, the tools/call fast
// path of mcp/fast.go and the SDK.

// mcpVersions are the MCP-Protocol-Version headers the fuzzed requests carry ("" none).
var mcpVersions = []string{"", "2025-11-25", "2026-07-28", "2025-03-26"}

// rpcMessage is what the checks read of an answer.
type rpcMessage struct {
	JSONRPC *string          `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Result  *json.RawMessage `json:"result"`
	Error   *struct {
		Code    *json.Number `json:"code"`
		Message *string      `json:"message"`
		Type    *string      `json:"type"` // the API envelope (401, 413)
	} `json:"error"`
}

// sameID reports whether an answer's id is the request's id, as JSON values.
func sameID(a, b json.RawMessage) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return x == y
}

// checkRPCAnswer checks one JSON-RPC answer object of a 200 (or of a batch answer): jsonrpc
// 2.0, an id, exactly one of result and error, an error with an integer code and a message,
// never -32603 (an internal failure) except for a tool whose operation documents 502; a tool
// result with isError carries the error envelope with a status under 500.
func checkRPCAnswer(t *testing.T, raw json.RawMessage, tool string, body []byte) {
	t.Helper()
	var m rpcMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("an answer that is not a JSON-RPC object: %s (%v)\nrequest: %q", raw, err, body)
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" || m.ID == nil || (m.Result == nil) == (m.Error == nil) {
		t.Fatalf("not a JSON-RPC 2.0 answer (jsonrpc, id, exactly one of result and error): %s\nrequest: %q", raw, body)
	}
	if m.Error != nil {
		if m.Error.Code == nil || m.Error.Message == nil {
			t.Fatalf("a JSON-RPC error without code or message: %s\nrequest: %q", raw, body)
		}
		code, err := m.Error.Code.Int64()
		if err != nil {
			t.Fatalf("a JSON-RPC error code that is not an integer: %s\nrequest: %q", raw, body)
		}
		if code == -32603 && tool != "webhooks_dispatch_sample" {
			t.Fatalf("an internal error (-32603): %s\nrequest: %q", raw, body)
		}
		return
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(*m.Result, &res) != nil || !res.IsError {
		return
	}
	if len(res.Content) == 0 {
		t.Fatalf("a tool error without content: %s\nrequest: %q", raw, body)
	}
	var env struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Status  int    `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].Text), &env); err != nil || env.Error.Message == "" || env.Error.Type == "" {
		t.Fatalf("a tool error that is not the error envelope: %q (%v)\nrequest: %q", res.Content[0].Text, err, body)
	}
	if env.Error.Status >= 500 || env.Error.Status < 400 {
		t.Fatalf("a tool error with status %d: %s\nrequest: %q", env.Error.Status, res.Content[0].Text, body)
	}
}

// FuzzMCPEndpoint posts fuzzed bodies to the MCP endpoint with a valid key (under each
// protocol version header). Property: a 200 is JSON-RPC (an answer object, or an array of them
// for a batch), with the request's id written back, never an internal error; a 202 answers
// only notifications (messages without an id); any other answer is a 4xx whose body is a
// JSON-RPC error or the API's error envelope; never a 5xx.
func FuzzMCPEndpoint(f *testing.F) {
	h := newHarness(f, nil)
	key := h.workspace(f, "company", "live")
	rid := h.konva(f, key, "mcp book", "publish")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"fuzz","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	call := func(id, tool, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"p","method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"x"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"books_list","arguments":{"limit":2},` + meta + `}}`,
		call(`5`, "books_list", `{"filter[status]":"publish","sort":"-name","limit":1}`),
		call(`"g"`, "books_get", `{"book_id":"`+rid+`"}`),
		call(`1.0`, "books_update_settings", `{"book_id":"`+rid+`","status":"publish","title":"renamed","published_date":"2026-01-01T00:00:00Z","flip_sound":true}`),
		call(`7`, "analytics_list_readers", `{"book_id":"`+rid+`","include_anonymous":true,"limit":5,"cursor":"AQID"}`),
		call(`8`, "catalogs_create", `{"name":"Shop","items":[{"external_product_id":"p1","title":"Mug"}]}`),
		call(`9`, "subscribers_create", `{"book_id":"`+rid+`","email":"ann@example.com"}`),
		call(`10`, "webhooks_create_subscription", `{"name":"crm","provider":"generic","target_url":"https://hooks.invalid/x","event_types":["flipbook_opened"]}`),
		call(`11`, "identity_get", `{}`),
		call(`12`, "health_check", `null`),
		call(`13`, "books_get", `[1]`),
		call(`14`, "no_such_tool", `{}`),
		call(`15`, "books_list", `{"limit":0,"unknown":1}`),
		call(`16`, "exports_download_book_leads_csv", `{"book_id":"`+rid+`","output_path":"leads.csv"}`),
		`{"jsonrpc":"2.0","id":17,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":18,"method":"resources/list"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/whatever"},{"jsonrpc":"2.0","id":"two","method":"tools/list"}]`,
		`[]`, `[1,2]`, `{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":4,"method":"notifications/initialized"}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,`, `"ping"`, ``, strings.Repeat("[", 1200),
	}
	for _, s := range seeds {
		for v := range mcpVersions {
			f.Add(uint8(v), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		version := mcpVersions[int(sel)%len(mcpVersions)]
		// What the request is, as far as it is a JSON object: method, tool name and id.
		var obj, params map[string]json.RawMessage
		single := json.Unmarshal(body, &obj) == nil && obj != nil
		var method, tool string
		_ = json.Unmarshal(obj["method"], &method)
		_ = json.Unmarshal(obj["params"], &params)
		_ = json.Unmarshal(params["name"], &tool)
		id, hasID := obj["id"]
		hdr := []string{"Accept", "application/json, text/event-stream"}
		if version != "" {
			hdr = append(hdr, "MCP-Protocol-Version", version)
			// The headers the 2026-07-28 revision repeats from the body (when they can be sent
			// as header values at all).
			if version == "2026-07-28" && method != "" && httpguts.ValidHeaderFieldValue(method) {
				hdr = append(hdr, "Mcp-Method", method)
				if tool != "" && httpguts.ValidHeaderFieldValue(tool) {
					hdr = append(hdr, "Mcp-Name", tool)
				}
			}
		}
		r := h.do(t, "POST", mcp.Path, key, body, hdr...)
		switch {
		case r.Status >= 500:
			t.Fatalf("%d: %s\nrequest: %q", r.Status, r.Body, body)
		case r.Status == 202:
			if hasID && string(bytes.TrimSpace(id)) != "null" {
				t.Fatalf("202 for a message with an id: %q", body)
			}
			return
		case r.Status == 200:
			if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("200 with Content-Type %q: %s\nrequest: %q", r.Header.Get("Content-Type"), r.Body, body)
			}
			trimmed := bytes.TrimSpace(r.Body)
			if len(trimmed) > 0 && trimmed[0] == '[' {
				var batch []json.RawMessage
				if err := json.Unmarshal(trimmed, &batch); err != nil || len(batch) == 0 {
					t.Fatalf("a batch answer that is not a non-empty array: %s\nrequest: %q", r.Body, body)
				}
				for _, a := range batch {
					checkRPCAnswer(t, a, "", body)
				}
				return
			}
			checkRPCAnswer(t, r.Body, tool, body)
			var a rpcMessage
			_ = json.Unmarshal(r.Body, &a)
			if single && hasID && a.ID != nil && !sameID(id, *a.ID) {
				t.Fatalf("the answer's id %s is not the request's %s\nrequest: %q", *a.ID, id, body)
			}
		case r.Status >= 400:
			var a rpcMessage
			if err := json.Unmarshal(r.Body, &a); err != nil || a.Error == nil || a.Error.Message == nil || *a.Error.Message == "" ||
				(a.Error.Code == nil && a.Error.Type == nil) {
				t.Fatalf("%d without a JSON-RPC error or the error envelope: %s\nrequest: %q", r.Status, r.Body, body)
			}
			if a.Error.Code != nil && (a.JSONRPC == nil || *a.JSONRPC != "2.0") {
				t.Fatalf("%d: a JSON-RPC error without jsonrpc 2.0: %s\nrequest: %q", r.Status, r.Body, body)
			}
		default:
			t.Fatalf("status %d: %s\nrequest: %q", r.Status, r.Body, body)
		}
	})
}
