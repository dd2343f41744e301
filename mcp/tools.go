package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flipbook/api"
)

// toolOf describes op as a tool: its arguments (REST parameters under their tool names, file
// parts replaced by the tool-only arguments), its output and its hints.
func toolOf(op *api.Operation) *sdk.Tool {
	in := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, list := range [][]api.Param{op.Params, op.ToolParams} {
		for i := range list {
			p := &list[i]
			if p.Kind == api.KFile {
				continue
			}
			in.Properties[p.ArgName()] = api.ParamSchema(p)
			if p.Required {
				in.Required = append(in.Required, p.ArgName())
			}
		}
	}
	// A required file part is required as its first tool argument (files; pdfs is its alias,
	// accepted by bind). Not "anyOf: [required files, required pdfs]": the Anthropic Messages
	// API refuses a tool whose input_schema has anyOf, oneOf or allOf at the top level, and a
	// client that passes the tool list through would fail every request.
	for _, fp := range fileParams(op) {
		if fp.required {
			in.Required = append(in.Required, fp.args[0])
		}
	}
	if op.Write {
		in.Properties[api.IdempotencyKeyArg] = &jsonschema.Schema{Type: "string", MaxLength: ptr(api.MaxIdempotencyKey),
			Description: "a fresh UUID per logical operation: a retry with the same key returns the first result instead of acting twice (24 hours)"}
	}
	// The output schema is the structured content exactly: the body of the REST answer (bare
	// for health_check), or the export result.
	var out *jsonschema.Schema
	if op.CSV {
		out = exportSchema
	} else if op.Response != nil {
		out = api.ResultSchema(op)
	}
	desc := op.Summary + " REST: " + op.Method + " " + op.Base + op.Path + "."
	if op.Scope != "" {
		desc += " Scope " + op.Scope + "."
	}
	if op.AlsoScope != "" {
		desc += " Also needs scope " + op.AlsoScope + "."
	}
	if op.Plan != "" {
		desc += " Needs the " + op.Plan + " plan or higher."
	}
	if op.CSV {
		desc += fmt.Sprintf(" Returns the CSV inline up to %s; pass output_path to store a larger one in the workspace's export area.", "1 MiB")
	}
	// Both schemas in the portable subset hosts map tool schemas onto (docs/CLIENTS.md).
	t := &sdk.Tool{Name: op.Tool, Description: desc, InputSchema: api.Portable(in),
		Annotations: &sdk.ToolAnnotations{
			Title:           op.Summary,
			ReadOnlyHint:    op.ReadOnly,
			DestructiveHint: ptr(op.Destructive),
			IdempotentHint:  op.Idempotent(),
			OpenWorldHint:   ptr(op.OpenWorld),
		}}
	if out != nil {
		t.OutputSchema = api.Portable(out)
	}
	return t
}

// exportSchema is the structured result of an export tool.
var exportSchema = &jsonschema.Schema{Type: "object", Required: []string{"data"}, Properties: map[string]*jsonschema.Schema{
	"data": {Type: "object", Required: []string{"format", "rows", "bytes"}, Properties: map[string]*jsonschema.Schema{
		"format":     {Type: "string", Description: "csv"},
		"filename":   {Type: "string"},
		"rows":       {Type: "integer", Description: "data rows, the header not counted"},
		"bytes":      {Type: "integer"},
		"csv":        {Type: "string", Description: "the CSV itself, when no output_path was given"},
		"path":       {Type: "string", Description: "where the CSV was stored, relative to the workspace's export area"},
		"object_key": {Type: "string"},
		"location":   {Type: "string", Description: "the stored file's path relative to the service's data directory (exports/<workspace>-<mode>/<path>)"},
	}},
}}

// handler is op's tool for the SDK's server.
func (s *Server) handler(op *api.Operation) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p, err := principalOf(req)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		reqID := ""
		if req.Extra != nil {
			reqID = req.Extra.Header.Get("X-Request-Id")
		}
		res, err := s.run(ctx, op, p, req.Params.Arguments, reqID)
		if err != nil {
			return nil, err
		}
		return res.sdk(), nil
	}
}

// toolResult is a tool's answer: JSON that is both the text content and, unless isError, the
// structured content (the REST body: the {data, meta} envelope, or the error envelope).
type toolResult struct {
	json []byte
	// raw, when json is nil, is the data already encoded (a cached book): the JSON is the
	// {data} envelope around it, framed where it is written (appendToolResult, body).
	raw     []byte
	isError bool
}

// body is the result's JSON.
func (r toolResult) body() []byte {
	if r.json != nil || r.raw == nil {
		return r.json
	}
	return api.FrameData(make([]byte, 0, len(r.raw)+10), r.raw)
}

func (r toolResult) sdk() *sdk.CallToolResult {
	body := r.body()
	res := &sdk.CallToolResult{IsError: r.isError, Content: []sdk.Content{&sdk.TextContent{Text: string(body)}}}
	if !r.isError {
		res.StructuredContent = json.RawMessage(body)
	}
	return res
}

// run is one tool call: arguments → api.Input → Call → result. Failures of the operation are
// tool results with isError; a JSON-RPC error is returned for arguments that are not an
// object (-32602) and for internal failures (-32603).
func (s *Server) run(ctx context.Context, op *api.Operation, p *api.Principal, raw json.RawMessage, reqID string) (toolResult, error) {
	args := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := api.RequestJSON.Unmarshal(raw, &args); err != nil {
			return toolResult{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments must be a JSON object: " + err.Error()}
		}
	}
	return s.runArgs(ctx, op, p, args, reqID)
}

// runArgs is run on decoded arguments (the fast path decodes them with the envelope).
func (s *Server) runArgs(ctx context.Context, op *api.Operation, p *api.Principal, args map[string]any, reqID string) (toolResult, error) {
	if args == nil {
		args = map[string]any{}
	}
	values := valueMaps.Get().(map[string]any)
	defer func() { // nothing holds the map after Call: its values were validated into others
		clear(values)
		valueMaps.Put(values)
	}()
	in := api.Input{Op: op, Principal: p, Args: api.Args{Values: values}, RequestID: reqID}
	forms, aerr := s.bind(op, args, &in)
	defer func() {
		for _, f := range forms {
			_ = f.RemoveAll() // the temp files of a large decoded upload
		}
	}()
	if aerr != nil {
		return toolError(aerr), nil
	}
	res, err := s.caller.Call(ctx, &in)
	if err != nil {
		ae := err.(*api.Error)
		if ae.Status >= 500 {
			return toolResult{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ae.Message}
		}
		return toolError(ae), nil
	}
	if res.Stream != nil {
		return s.export(ctx, p, args, res, reqID)
	}
	// The envelope the REST body carries, as structured content and as text.
	if res.Body == nil && len(res.Raw) > 0 {
		return toolResult{raw: res.Raw}, nil
	}
	return toolResult{json: res.Body}, nil
}

// valueMaps hold the values of tool calls (Args.Values), reused from call to call.
var valueMaps = sync.Pool{New: func() any { return make(map[string]any, 4) }}

// isArg reports whether name is an argument of op's tool: a parameter's argument name, a
// tool-only argument, or the idempotency key of a write.
func isArg(op *api.Operation, name string) bool {
	for i := range op.Params {
		if op.Params[i].ArgName() == name {
			return true
		}
	}
	for i := range op.ToolParams {
		if op.ToolParams[i].Name == name {
			return true
		}
	}
	return op.Write && name == api.IdempotencyKeyArg
}

// bind moves tool arguments to the call: REST parameters by their tool names, the
// idempotency key, and tool-only arguments (files as base64). Unknown arguments are refused.
func (s *Server) bind(op *api.Operation, args map[string]any, in *api.Input) ([]*multipart.Form, *api.Error) {
	var forms []*multipart.Form
	var v api.Validation // made at the first refusal: a valid call allocates none
	add := func(field, msg string) {
		if v == nil {
			v = api.Validation{}
		}
		v.Add(field, msg)
	}
	for i := range op.Params {
		p := &op.Params[i]
		if val, ok := args[p.ArgName()]; ok && p.Kind != api.KFile {
			in.Args.Values[p.Name] = val
		}
	}
	if op.Write {
		if k, ok := args[api.IdempotencyKeyArg]; ok {
			ks, isStr := k.(string)
			if !isStr {
				add(api.IdempotencyKeyArg, "must be a string")
			}
			in.IdempotencyKey = ks
		}
	}
	for name := range args {
		if !isArg(op, name) {
			add(name, "is not an argument of "+op.Tool)
		}
	}
	for _, fp := range fileParams(op) {
		b64, name, err := fileArg(args, fp.args)
		if err != "" {
			add(name, err)
			continue
		}
		if b64 == nil {
			continue
		}
		filename := "upload"
		if fn, _ := args["original_filename"].(string); fn != "" {
			filename = fn
		}
		fh, form, ferr := fileHeader(fp.param, filename, b64)
		if ferr != nil {
			add(name, ferr.Error())
			continue
		}
		forms = append(forms, form)
		in.Args.Values[fp.param] = []*multipart.FileHeader{fh}
	}
	if err := v.Err(); err != nil {
		return forms, err.(*api.Error)
	}
	return forms, nil
}

// fileParam maps a file part of the REST form to the tool arguments that carry it as base64.
type fileParam struct {
	param    string   // the KFile parameter
	args     []string // tool arguments, in order of preference
	required bool     // the file part is required
}

func fileParams(op *api.Operation) []fileParam {
	var out []fileParam
	for i := range op.Params {
		p := &op.Params[i]
		if p.Kind != api.KFile {
			continue
		}
		switch p.Name {
		case "files":
			out = append(out, fileParam{"files", []string{"files", "pdfs"}, p.Required})
		case "file":
			out = append(out, fileParam{"file", []string{"logo_base64"}, p.Required})
		}
	}
	return out
}

// fileArg finds the base64 content among names (a string or a one-element array) and decodes
// it; nil without error when none was given.
func fileArg(args map[string]any, names []string) ([]byte, string, string) {
	for _, name := range names {
		raw, ok := args[name]
		if !ok || raw == nil {
			continue
		}
		var s string
		switch x := raw.(type) {
		case string:
			s = x
		case []any:
			if len(x) != 1 {
				return nil, name, "send exactly one file per call"
			}
			str, ok := x[0].(string)
			if !ok {
				return nil, name, "must be base64 strings"
			}
			s = str
		default:
			return nil, name, "must be an array of base64 strings"
		}
		if i := strings.Index(s, ";base64,"); strings.HasPrefix(s, "data:") && i > 0 {
			s = s[i+len(";base64,"):]
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(s), "=")); err != nil {
				return nil, name, "is not valid base64"
			}
		}
		return b, name, ""
	}
	return nil, "", ""
}

// fileHeader makes content a multipart file part, the value REST handlers read, by writing
// and parsing a one-part form (a FileHeader cannot be made otherwise). Past fileInMemory bytes
// the part is a temp file, removed with the form (form.RemoveAll) once the call is done.
func fileHeader(field, filename string, content []byte) (*multipart.FileHeader, *multipart.Form, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	part, err := w.CreateFormFile(field, filename)
	if err != nil {
		return nil, nil, err
	}
	if _, err := part.Write(content); err != nil {
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	form, err := multipart.NewReader(&buf, w.Boundary()).ReadForm(fileInMemory)
	if err != nil {
		return nil, nil, err
	}
	fs := form.File[field]
	if len(fs) != 1 {
		_ = form.RemoveAll()
		return nil, nil, fmt.Errorf("cannot be read")
	}
	return fs[0], form, nil
}

// fileInMemory is the largest decoded file kept in memory for the call.
const fileInMemory = 8 << 20

// toolError is an API error as a tool result (isError): the REST error envelope, with the
// status it would have had, as text (structured content is left for successes: clients check
// it against the tool's outputSchema).
func toolError(e *api.Error) toolResult {
	return toolResult{json: e.Envelope("", true), isError: true}
}

func ptr[T any](v T) *T { return &v }
