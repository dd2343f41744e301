package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/bytedance/sonic"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/valyala/fasthttp"

	"flipbook/api"
)

// The tools/call fast path. The SDK's Streamable HTTP handler builds a session for every
// request of a stateless server, decodes the body three times and re-encodes the tool's
// schema to check parameter headers: measured in the mcp benchmark at 0.13x of REST's req/s
// (2025-11-25) and 0.09x (2026-07-28), against a target of 0.7x (docs/DECISIONS.md, "MCP
// transport"). So a well-formed tools/call of a known tool is answered here, by the same run
// as the SDK's tool handler and in the SDK's own result shape; anything else (initialize,
// server/discover, tools/list, ping, notifications, a malformed or unusual call) goes to the
// SDK, which answers it or its error.

// revisionStateless is the first revision with per-request protocol metadata (SEP-2575).
const revisionStateless = "2026-07-28"

// legacyRevisions are the older revisions the SDK negotiates.
var legacyRevisions = map[string]bool{"2025-11-25": true, "2025-06-18": true, "2025-03-26": true, "2024-11-05": true}

const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

type fastCall struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *struct {
		Name      string                     `json:"name"`
		Arguments map[string]any             `json:"arguments"` // decoded here: not an object is the SDK's to answer
		Meta      map[string]json.RawMessage `json:"_meta"`
		// The SDK's other parameters (CallToolParamsRaw), which it checks and this path does
		// not read: a call carrying either is the SDK's (found by a review: "requestState": 5
		// ran here, and is the SDK's -32602).
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   json.RawMessage `json:"requestState"`
	} `json:"params"`
}

// fastJSON decodes as the SDK does: keys match exactly (sonic ignores their case by default,
// and "NAME" or "Method" beside "name" or "method" ran another tool than the SDK would: found
// by a review), numbers as written, strings copied and checked.
var fastJSON = sonic.Config{UseNumber: true, CopyString: true, ValidateString: true, CaseSensitive: true}.Froze()

// serveFast answers a plain tools/call and reports whether it did.
// tools are the request's toolset: a tool not among them is the SDK's to refuse, as an
// unknown tool.
func (s *Server) serveFast(ctx *fasthttp.RequestCtx, p *api.Principal, reqID string, tools map[string]*api.Operation) bool {
	h := &ctx.Request.Header
	// A Content-Type with parameters is the SDK path's to read (mime.ParseMediaType refuses
	// some with a 415 there: found by a review); clients send none, or charset=utf-8.
	if ct, params, _ := bytes.Cut(h.ContentType(), []byte(";")); !bytes.EqualFold(bytes.TrimSpace(ct), []byte("application/json")) ||
		(len(params) > 0 && !bytes.EqualFold(bytes.TrimSpace(params), []byte("charset=utf-8"))) {
		return false
	}
	if !acceptsBoth(h.Peek("Accept")) {
		return false
	}
	body := ctx.PostBody()
	if !bytes.Contains(body, []byte(`"tools/call"`)) {
		return false
	}
	var m fastCall
	if err := fastJSON.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" || m.Method != "tools/call" || m.Params == nil ||
		m.Params.InputResponses != nil || m.Params.RequestState != nil {
		return false
	}
	if id := validID(m.ID); id == nil {
		return false
	}
	op := tools[m.Params.Name]
	if op == nil {
		return false
	}
	if s.opts.Observe != nil {
		s.opts.Observe(ctx, p, op)
	}
	version := string(h.Peek("MCP-Protocol-Version"))
	modern := false
	switch {
	case version == revisionStateless:
		if string(h.Peek("Mcp-Method")) != "tools/call" || string(h.Peek("Mcp-Name")) != m.Params.Name {
			return false
		}
		if !isJSONString(m.Params.Meta[metaProtocolVersion], version) {
			return false
		}
		if !isObject(m.Params.Meta[metaClientCapabilities]) || !isObject(m.Params.Meta[metaClientInfo]) {
			return false
		}
		modern = true
	case version == "" || legacyRevisions[version]:
		if _, ok := m.Params.Meta[metaProtocolVersion]; ok {
			return false
		}
	default:
		return false
	}
	res, err := s.runArgs(ctx, op, p, m.Params.Arguments, reqID)
	buf := fastBufs.Get().(*[]byte)
	out := (*buf)[:0]
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, bytes.TrimSpace(m.ID)...)
	if err != nil {
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		msg, _ := fastJSON.Marshal(je.Message)
		out = append(out, `,"error":{"code":`...)
		out = append(out, []byte(itoa(int(je.Code)))...)
		out = append(out, `,"message":`...)
		out = append(out, msg...)
		out = append(out, `}}`...)
	} else {
		out = append(out, `,"result":{`...)
		if modern {
			out = append(out, s.serverMeta...)
			out = append(out, ',')
		}
		out = appendToolResult(out, res)
		if modern {
			out = append(out, `,"resultType":"complete"`...)
		}
		out = append(out, `}}`...)
	}
	ctx.Response.Header.Set("Cache-Control", "no-cache, no-transform")
	ctx.SetContentType("application/json")
	ctx.SetStatusCode(200)
	// The response takes out as its body (no copy) and gives back the buffer it had, which
	// goes to the pool in out's place.
	prev := ctx.Response.SwapBody(out)
	if cap(prev) <= maxPooledFastBuf {
		*buf = prev[:0]
		fastBufs.Put(buf)
	}
	return true
}

// fastBufs hold the fast path's answers while they are built; one above maxPooledFastBuf
// (a large list) is left to the collector.
var fastBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledFastBuf = 64 << 10

// appendToolResult writes a tool result's fields as the SDK does: content, structuredContent
// and isError.
func appendToolResult(out []byte, res toolResult) []byte {
	out = append(out, `"content":[{"type":"text","text":"`...)
	if res.json == nil && res.raw != nil {
		out = append(out, `{\"data\":`...)
		out = appendEscaped(out, res.raw)
		out = append(out, '}')
	} else {
		out = appendEscaped(out, res.json)
	}
	out = append(out, `"}]`...)
	if !res.isError {
		out = append(out, `,"structuredContent":`...)
		if res.json == nil && res.raw != nil {
			out = append(out, `{"data":`...)
			out = append(out, res.raw...)
			out = append(out, '}')
		} else {
			out = append(out, res.json...)
		}
	} else {
		out = append(out, `,"isError":true`...)
	}
	return out
}

// appendEscaped appends JSON text as the inside of a JSON string. The text is valid JSON, so it
// holds no raw control characters: only quotes and backslashes need escaping.
// One pass over the bytes: JSON text is full of quotes, and a search per quote (IndexAny)
// cost a fifth of a tools/call. Testing eight bytes at a time for a quote was slower on book
// JSON (1.1 µs against 0.63 µs a kilobyte: BenchmarkAppendEscaped), a quote being in most words.
func appendEscaped(out, text []byte) []byte {
	out = slices.Grow(out, len(text)+len(text)/8)
	start := 0
	for i, c := range text {
		if c == '"' || c == '\\' {
			out = append(out, text[start:i]...)
			out = append(out, '\\', c)
			start = i + 1
		}
	}
	return append(out, text[start:]...)
}

// acceptsBoth reports whether an Accept header takes both JSON and an event stream (the
// Streamable HTTP transport's requirement). It reads the header in place: it runs on every
// tools/call of the fast path.
func acceptsBoth(accept []byte) bool {
	jsonOK, streamOK := false, false
	for len(accept) > 0 {
		var raw []byte
		raw, accept, _ = bytes.Cut(accept, []byte(","))
		base, _, _ := bytes.Cut(raw, []byte(";"))
		base = bytes.TrimSpace(base)
		switch {
		case bytes.EqualFold(base, []byte("application/json")), bytes.EqualFold(base, []byte("application/*")):
			jsonOK = true
		case bytes.EqualFold(base, []byte("text/event-stream")), bytes.EqualFold(base, []byte("text/*")):
			streamOK = true
		case bytes.Equal(base, []byte("*/*")):
			jsonOK, streamOK = true, true
		}
	}
	return jsonOK && streamOK
}

// isJSONString reports whether raw is the JSON string s. The plain form ("s", without escapes)
// is compared in place: decoding it was about 7% of the fast path's time on 2026-07-28 calls.
func isJSONString(raw json.RawMessage, s string) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == len(s)+2 && raw[0] == '"' && raw[len(raw)-1] == '"' && string(raw[1:len(raw)-1]) == s {
		return true
	}
	var v string
	return json.Unmarshal(raw, &v) == nil && v == s
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
