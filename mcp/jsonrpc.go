package mcp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/valyala/fasthttp"
)

// JSON-RPC error codes this endpoint answers before the SDK sees a message: the SDK's
// transport refuses malformed bodies and unknown methods with plain-text 400s, which MCP
// clients cannot read as JSON-RPC errors.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
)

// serverMethods are the requests the SDK's server answers (its serverMethodInfos);
// notifications/* are passed through whatever their name.
var serverMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true,
	"tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true, "subscriptions/listen": true,
}

// rpcMessage is the envelope of one JSON-RPC message.
type rpcMessage struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// checkMessage answers a body that is not a JSON-RPC message of a known method and reports
// whether it did.
func checkMessage(ctx *fasthttp.RequestCtx) bool {
	body := bytes.TrimSpace(ctx.PostBody())
	if len(body) > 0 && body[0] == '[' {
		return false // a batch (2025-03-26): the SDK answers it per its revision
	}
	if !json.Valid(body) {
		rpcError(ctx, 400, nil, codeParseError, "Parse error: the body is not valid JSON")
		return true
	}
	var m rpcMessage
	if err := json.Unmarshal(body, &m); err != nil {
		rpcError(ctx, 400, nil, codeInvalidRequest, "Invalid Request: a JSON-RPC 2.0 message is a JSON object")
		return true
	}
	id := validID(m.ID)
	switch {
	case m.JSONRPC == nil || *m.JSONRPC != "2.0":
		rpcError(ctx, 400, id, codeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
		return true
	case m.Method == nil && m.Result == nil && m.Error == nil:
		rpcError(ctx, 400, id, codeInvalidRequest, "Invalid Request: no method")
		return true
	case m.Method != nil && *m.Method == "":
		rpcError(ctx, 400, id, codeInvalidRequest, "Invalid Request: empty method")
		return true
	case m.Method != nil && m.ID != nil && !serverMethods[*m.Method] && !strings.HasPrefix(*m.Method, "notifications/"):
		rpcError(ctx, 200, id, codeMethodNotFound, "Method not found: "+*m.Method)
		return true
	}
	return false
}

// validID is the request's id when it is a string or a number, else null.
func validID(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '{' || raw[0] == '[' || string(raw) == "null" || string(raw) == "true" || string(raw) == "false" {
		return nil
	}
	return raw
}

func rpcError(ctx *fasthttp.RequestCtx, status int, id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg}})
	ctx.Response.Header.Set("Content-Type", "application/json")
	ctx.SetStatusCode(status)
	ctx.SetBody(body)
}
