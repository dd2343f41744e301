package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"mime"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"
)

// JSON-RPC error codes this endpoint answers before the SDK sees a message: the SDK's
// transport refuses malformed bodies, unknown methods, batches, media types and ids with
// plain-text 400s (or odd codes), which MCP clients cannot read as JSON-RPC errors.
// docs/DECISIONS.md, "MCP endpoint".
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// maxDepth is the deepest nesting the SDK's JSON decoder accepts (its internal/json
// defaultMaxDepth); a deeper body is a parse error here rather than its plain-text 400.
const maxDepth = 1000

// requestMethods are the requests the SDK's server answers (serverMethodInfos of go-sdk
// v1.8.0), true when they need params (the SDK's methods without missingParamsOK).
var requestMethods = map[string]bool{
	"initialize": true, "ping": false, "server/discover": false,
	"tools/list": false, "tools/call": true,
	"prompts/list": false, "prompts/get": true,
	"resources/list": false, "resources/templates/list": false, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true, "subscriptions/listen": true,
}

// notificationMethods are the notifications the SDK's server handles, true when they need
// params. Other notifications are accepted (202) and ignored, as JSON-RPC has a server do
// with a notification it does not know; the SDK would refuse them in plain text.
var notificationMethods = map[string]bool{
	"notifications/initialized": false, "notifications/cancelled": false,
	"notifications/roots/list_changed": false, "notifications/progress": true,
}

// batchesRemoved is the first revision without JSON-RPC batches. The SDK still takes a batch
// from older revisions (and without MCP-Protocol-Version, which it takes as 2025-03-26).
const batchesRemoved = "2025-06-18"

// rpcFailure is an answer of the pre-check: an HTTP status and a JSON-RPC error.
type rpcFailure struct {
	status int
	code   int
	id     json.RawMessage // nil: null
	msg    string
}

func fail(status, code int, id json.RawMessage, msg string) *rpcFailure {
	return &rpcFailure{status: status, code: code, id: id, msg: msg}
}

// checked is what the pre-check learnt of a well-formed message.
type checked struct {
	id      json.RawMessage // the id as sent, nil without one
	ignored bool            // a notification the server does not handle
}

// idFixes maps the id the SDK writes in its answer to the id the request carried, for ids
// the SDK would not echo exactly: it reads a numeric id as a float64 and writes it back as an
// int64, so 1.0 comes back as 1 and 9007199254740993 as 9007199254740992.
type idFixes map[string]json.RawMessage

// checkMessage answers a request the SDK would refuse without a JSON-RPC error (media types,
// malformed JSON-RPC, ids, missing or mistyped params, batches of revisions without them,
// methods it does not know) and reports whether it did. Otherwise it returns the ids to restore
// in the SDK's answer (restoreIDs), and may have dropped ignored notifications from a batch.
func checkMessage(ctx *fasthttp.RequestCtx) (bool, idFixes) {
	h := &ctx.Request.Header
	if mt, _, err := mime.ParseMediaType(string(h.ContentType())); err != nil || mt != "application/json" {
		rpcError(ctx, 415, nil, codeInvalidRequest, "Unsupported Media Type: Content-Type must be application/json")
		return true, nil
	}
	var accept []string
	for _, v := range h.PeekAll("Accept") {
		accept = append(accept, string(v))
	}
	if !acceptsBoth([]byte(strings.Join(accept, ","))) {
		rpcError(ctx, 406, nil, codeInvalidRequest, "Not Acceptable: Accept must list both application/json and text/event-stream")
		return true, nil
	}
	body := bytes.TrimSpace(ctx.PostBody())
	if !json.Valid(body) {
		rpcError(ctx, 400, nil, codeParseError, "Parse error: the body is not valid JSON")
		return true, nil
	}
	if tooDeep(body) {
		rpcError(ctx, 400, nil, codeParseError, fmt.Sprintf("Parse error: the body nests deeper than %d levels", maxDepth))
		return true, nil
	}
	if body[0] == '[' {
		return checkBatch(ctx, body)
	}
	m, f := checkOne(body)
	if f != nil {
		rpcError(ctx, f.status, f.id, f.code, f.msg)
		return true, nil
	}
	if m.ignored {
		ctx.SetStatusCode(fasthttp.StatusAccepted)
		return true, nil
	}
	fixes := idFixes{}
	fixes.add(m.id)
	return false, fixes
}

// checkBatch checks a JSON-RPC batch: refused from the revisions that removed batches, else
// every message is checked and one malformed message refuses the whole batch (nothing of it
// runs). Ignored notifications are dropped from the body the SDK gets.
func checkBatch(ctx *fasthttp.RequestCtx, body []byte) (bool, idFixes) {
	version := string(ctx.Request.Header.Peek("MCP-Protocol-Version"))
	if version == "" {
		version = "2025-03-26" // the SDK's (and the spec's) assumption without the header
	}
	if version >= batchesRemoved {
		rpcError(ctx, 400, nil, codeInvalidRequest, "Invalid Request: batches are not supported (JSON-RPC batching was removed in MCP "+
			batchesRemoved+"; this request's protocol version is "+version+")")
		return true, nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil || len(msgs) == 0 {
		rpcError(ctx, 400, nil, codeInvalidRequest, "Invalid Request: empty batch")
		return true, nil
	}
	fixes := idFixes{}
	seen := map[string]bool{}
	kept := make([]json.RawMessage, 0, len(msgs))
	for i, raw := range msgs {
		m, f := checkOne(bytes.TrimSpace(raw))
		if f != nil {
			rpcError(ctx, 400, f.id, f.code, fmt.Sprintf("batch message %d: %s", i+1, f.msg))
			return true, nil
		}
		if m.ignored {
			continue
		}
		if m.id != nil {
			key := sdkIDKey(m.id)
			if seen[key] {
				rpcError(ctx, 400, m.id, codeInvalidRequest, fmt.Sprintf("Invalid Request: batch message %d: the id %s is used twice in the batch", i+1, m.id))
				return true, nil
			}
			seen[key] = true
			fixes.add(m.id)
		}
		kept = append(kept, raw)
	}
	if len(kept) == 0 {
		ctx.SetStatusCode(fasthttp.StatusAccepted)
		return true, nil
	}
	if len(kept) < len(msgs) {
		b, _ := json.Marshal(kept)
		ctx.Request.SetBody(b)
	}
	return false, fixes
}

// checkOne checks one JSON-RPC message (a request, a notification or a response).
func checkOne(raw []byte) (checked, *rpcFailure) {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return checked{}, fail(400, codeInvalidRequest, nil, "Invalid Request: a JSON-RPC 2.0 message is a JSON object")
	}
	rawID, hasID := fields["id"]
	id, idOK := checkID(rawID)
	var version string
	if json.Unmarshal(fields["jsonrpc"], &version) != nil || version != "2.0" {
		return checked{}, fail(400, codeInvalidRequest, id, `Invalid Request: "jsonrpc" must be "2.0"`)
	}
	if hasID && !idOK {
		return checked{}, fail(400, codeInvalidRequest, nil, `Invalid Request: "id" must be a string or an integer within 64 bits`)
	}
	rawMethod, hasMethod := fields["method"]
	if !hasMethod {
		_, hasResult := fields["result"]
		_, hasError := fields["error"]
		switch {
		case !hasResult && !hasError:
			return checked{}, fail(400, codeInvalidRequest, id, "Invalid Request: no method")
		case !hasID:
			return checked{}, fail(400, codeInvalidRequest, nil, "Invalid Request: a response needs the id of its request")
		}
		return checked{id: id}, nil // a response: the SDK takes it (202)
	}
	var method string
	if json.Unmarshal(rawMethod, &method) != nil {
		return checked{}, fail(400, codeInvalidRequest, id, `Invalid Request: "method" must be a string`)
	}
	if method == "" {
		return checked{}, fail(400, codeInvalidRequest, id, "Invalid Request: empty method")
	}
	needsParams, isRequest := requestMethods[method]
	if nParams, isNotification := notificationMethods[method]; isNotification {
		needsParams = nParams
		if hasID {
			return checked{}, fail(400, codeInvalidRequest, id, "Invalid Request: "+method+" is a notification: it takes no id")
		}
	} else if !isRequest {
		if !hasID {
			return checked{ignored: true}, nil
		}
		return checked{}, fail(200, codeMethodNotFound, id, "Method not found: "+method)
	} else if !hasID {
		return checked{}, fail(400, codeInvalidRequest, nil, "Invalid Request: "+method+" is a request: it needs an id")
	}
	// A JSON-RPC error answers a request (HTTP 200, as the SDK answers the params it cannot
	// read); a notification has no answer to carry one, so it is refused with 400.
	pstatus := 200
	if !hasID {
		pstatus = 400
	}
	params := bytes.TrimSpace(fields["params"])
	if len(params) == 0 || string(params) == "null" {
		if needsParams {
			return checked{}, fail(pstatus, codeInvalidParams, id, "Invalid params: "+method+` needs "params"`)
		}
		return checked{id: id}, nil
	}
	if params[0] != '{' {
		return checked{}, fail(pstatus, codeInvalidParams, id, `Invalid params: "params" must be a JSON object`)
	}
	if method == "initialize" {
		// The SDK reads initialize's params with its own decoder and answers a mistyped field
		// with error code 0; the other methods' params it answers with -32602 itself.
		var p initializeParams
		if err := json.Unmarshal(params, &p); err != nil {
			return checked{}, fail(pstatus, codeInvalidParams, id, "Invalid params: "+typeErrorText(err))
		}
	}
	return checked{id: id}, nil
}

// initializeParams is the shape the SDK reads initialize's params into (initializeParamsV2).
type initializeParams struct {
	sdk.InitializeParams
	Capabilities *struct {
		sdk.ClientCapabilities
		//lint:ignore SA1019 older clients still declare roots (deprecated, not removed, by SEP-2577)
		Roots *sdk.RootCapabilities `json:"roots,omitempty"`
	} `json:"capabilities"`
}

// typeErrorText describes a decoding error of initialize's params without Go type names.
func typeErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("initialize: %q cannot be a JSON %s", te.Field, te.Value)
	}
	return "initialize: the params do not have the shape of InitializeRequestParams"
}

// checkID is the request's id when it is a string or an integer within int64 (as sent, in
// whatever notation: 1.0 and 1e3 are integers), and whether it is one.
func checkID(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '"' {
		return raw, true
	}
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return nil, false // null, true, false, an object or an array
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return raw, true
	}
	// Another notation (fraction, exponent) or out of range. Bound the work first: an
	// exponent is at most a few hundred, the text at most 100 characters.
	if len(raw) > 100 {
		return nil, false
	}
	if i := bytes.IndexAny(raw, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(string(raw[i+1:]), "+"))
		if err != nil || e > 400 || e < -400 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(string(raw))
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return nil, false
	}
	return raw, true
}

// validID is the request's id when it is one checkID accepts, else nil.
func validID(raw json.RawMessage) json.RawMessage {
	id, _ := checkID(raw)
	return id
}

// sdkIDKey is the id the SDK writes back for id (a checked id): a string as it is, a number
// as the int64 of its float64.
func sdkIDKey(id json.RawMessage) string {
	if id[0] == '"' {
		var s string
		_ = json.Unmarshal(id, &s)
		b, _ := json.Marshal(s)
		return string(b)
	}
	f, _ := strconv.ParseFloat(string(id), 64)
	return strconv.FormatInt(int64(f), 10)
}

// add records id when the SDK would not write it back as sent.
func (f idFixes) add(id json.RawMessage) {
	if id == nil || id[0] == '"' {
		return
	}
	if key := sdkIDKey(id); key != string(id) {
		f[key] = id
	}
}

// restoreIDs puts the ids as sent back in the SDK's JSON answer (a message or a batch).
func restoreIDs(ctx *fasthttp.RequestCtx, fixes idFixes) {
	if len(fixes) == 0 || !bytes.HasPrefix(ctx.Response.Header.ContentType(), []byte("application/json")) {
		return
	}
	body := bytes.TrimSpace(ctx.Response.Body())
	if len(body) == 0 {
		return
	}
	var out []byte
	if body[0] == '[' {
		var msgs []json.RawMessage
		if json.Unmarshal(body, &msgs) != nil {
			return
		}
		for i := range msgs {
			msgs[i] = restoreID(msgs[i], fixes)
		}
		out = marshalNoEscape(msgs)
	} else {
		out = restoreID(body, fixes)
	}
	if out != nil {
		ctx.Response.SetBody(out)
	}
}

func restoreID(msg json.RawMessage, fixes idFixes) json.RawMessage {
	// The SDK writes "jsonrpc" then "id" first: splice, keeping its order.
	const head = `{"jsonrpc":"2.0","id":`
	if rest, ok := bytes.CutPrefix(msg, []byte(head)); ok {
		if end := bytes.IndexAny(rest, ",}"); end > 0 {
			if orig, ok := fixes[string(rest[:end])]; ok {
				return append(append([]byte(head), orig...), rest[end:]...)
			}
		}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	orig, ok := fixes[string(bytes.TrimSpace(m["id"]))]
	if !ok {
		return msg
	}
	m["id"] = orig
	if b := marshalNoEscape(m); b != nil {
		return b
	}
	return msg
}

// marshalNoEscape is json.Marshal without HTML escaping (the SDK's encoding).
func marshalNoEscape(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// tooDeep reports whether JSON text (already valid) nests arrays and objects deeper than
// maxDepth.
func tooDeep(body []byte) bool {
	if len(body) <= 2*maxDepth {
		return false // too short to open maxDepth+1 levels and close them
	}
	depth, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > maxDepth {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

func rpcError(ctx *fasthttp.RequestCtx, status int, id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	body := marshalNoEscape(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg}})
	ctx.Response.Header.Set("Content-Type", "application/json")
	ctx.SetStatusCode(status)
	ctx.SetBody(body)
}
