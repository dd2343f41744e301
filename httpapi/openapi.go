package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"sort"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"flipbook/api"
)

// The OpenAPI 3.1 document (spec §9), generated from the operation table: every public REST
// operation with its parameters, request body, response schema, scope, plan and the statuses
// it can answer. httpapi/openapi_test.go loads it with kin-openapi and checks a real response
// of every operation against it. /api/docs renders it with a vendored Redoc bundle
// (httpapi/apidocs, redoc 2.5.1 from npm), so the reference works offline.

//go:embed apidocs/redoc.standalone.js
var redocJS []byte

// openAPIDoc is the document, built once.
type openAPIDoc struct {
	once sync.Once
	body []byte
}

func (s *Service) serveOpenAPI(ctx *fasthttp.RequestCtx) {
	s.openapi.once.Do(func() {
		b, err := json.MarshalIndent(s.OpenAPI(), "", "  ")
		if err != nil {
			panic(err) // maps of strings and schemas always encode
		}
		s.openapi.body = b
	})
	ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
	ctx.Response.Header.Set("Access-Control-Allow-Origin", "*")
	ctx.SetContentType("application/json")
	ctx.SetBody(s.openapi.body)
}

func (s *Service) serveAPIDocs(ctx *fasthttp.RequestCtx) {
	switch name, _ := ctx.UserValue("name").(string); name {
	case "":
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.Response.Header.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' blob:; worker-src 'self' blob:; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:")
		ctx.SetBodyString(fmt.Sprintf(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Flipbook API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="%s"></redoc><script src="/api/docs/redoc.standalone.js"></script></body></html>
`, html.EscapeString(APIBase+"/openapi.json")))
	case "redoc.standalone.js":
		ctx.SetContentType("application/javascript")
		ctx.Response.Header.Set("Cache-Control", "public, max-age=86400")
		ctx.SetBody(redocJS)
	default:
		s.writeError(ctx, api.ErrNotFound("file"))
	}
}

// OpenAPI is the OpenAPI 3.1 document of the public operations.
func (s *Service) OpenAPI() map[string]any {
	paths := map[string]map[string]any{}
	tags := map[string]bool{}
	for _, op := range s.ops {
		if op.Internal || op.Base != APIBase {
			continue
		}
		tags[tagOf(op)] = true
		item := paths[op.Path]
		if item == nil {
			item = map[string]any{}
			paths[op.Path] = item
		}
		item[strings.ToLower(op.Method)] = openAPIOperation(op)
	}
	scopes := strings.Join(api.Scopes, ", ")
	return map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{
			"title":   "Flipbook service public API",
			"version": Version,
			"description": "REST API of the flipbook publishing service. Success bodies are `{data, meta}`; errors are " +
				"`{error: {message, type, details}}` (spec §7). Write operations accept `Idempotency-Key`. " +
				"The same operations are MCP tools at `/mcp/public-api`.",
			"license": apiLicense,
		},
		"tags":     tagList(tags),
		"servers":  []any{map[string]any{"url": s.cfg.PublicURL + APIBase}},
		"security": []any{map[string]any{"bearerAuth": []string{}}},
		"paths":    paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"bearerAuth": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "API key (wsk_live_… or wsk_test_…)",
					"description": "An API key of one workspace. Each operation needs the scope its x-scope names (one of " + scopes + ", or *)."},
				"apiKeyQuery": map[string]any{"type": "apiKey", "in": "query", "name": "api_key",
					"description": "The key as a query parameter: accepted, but it leaks into logs (spec §5.4)."},
			},
			"schemas": map[string]any{"Error": errorSchema},
			"responses": func() map[string]any {
				out := map[string]any{}
				for code, text := range errorResponses {
					out[fmt.Sprint(code)] = map[string]any{"description": text,
						"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
				}
				return out
			}(),
		},
	}
}

// apiLicense is the document's info.license (redocly's info-license and info-license-strict
// rules): the service is not published under an open licence, so the SPDX identifier is a
// LicenseRef of its own (docs/API.md).
var apiLicense = map[string]any{"name": "Proprietary", "identifier": "LicenseRef-Proprietary"}

// tagDescriptions describe the tags tagOf gives operations (redocly's tag-description rule).
var tagDescriptions = map[string]string{
	"general":       "Service health and the calling key.",
	"books":         "Flipbooks: uploads, the editor, templates, batches and publishing.",
	"subscribers":   "Access lists: who may open a gated flipbook.",
	"embed domains": "Sites allowed to embed a flipbook.",
	"tracked links": "Links that attribute readers to a channel.",
	"brand":         "The workspace's brand (logo, colours, take-over branding).",
	"analytics":     "Reading analytics (Company plan).",
	"exports":       "CSV exports of analytics and audit data.",
	"webhooks":      "Webhook subscriptions and deliveries.",
	"catalogs":      "Product catalogs and catalog-rendered flipbooks.",
	"templates":     "Catalog templates.",
	"bulk settings": "Settings applied to many flipbooks at once.",
	"integrations":  "Connectors to other platforms (Shopify).",
}

// tagList is the document's tags, sorted, each with its description.
func tagList(used map[string]bool) []any {
	names := make([]string, 0, len(used))
	for t := range used {
		names = append(names, t)
	}
	sort.Strings(names)
	out := make([]any, 0, len(names))
	for _, t := range names {
		d := tagDescriptions[t]
		if d == "" {
			d = "Operations on " + t + "."
		}
		out = append(out, map[string]any{"name": t, "description": d})
	}
	return out
}

// errorResponses are the error statuses an operation may answer, with their meaning.
var errorResponses = map[int]string{
	400: "The body cannot be read (not JSON, or not the expected media type).",
	401: "Missing, wrong or revoked credentials.",
	403: "The key lacks the operation's scope (the body lists the key's scopes), or the workspace's plan is below the operation's.",
	404: "Not found (objects of other workspaces are not found either).",
	409: "A request with the same Idempotency-Key is still running, or the object's state forbids the change.",
	413: "The request body is over the operation's limit (any operation: a body sent where none is expected counts against the 1 MiB default).",
	422: "Validation failed: error.details maps each field to its messages.",
	429: "Rate limit exceeded: wait Retry-After seconds.",
	502: "The send to the given URL failed: error.message says why.",
	500: "Internal error: the request id identifies it in the server log.",
	503: "The service is busy or stopping: retry shortly.",
}

var errorSchema = map[string]any{
	"type": "object", "required": []string{"error"},
	"properties": map[string]any{
		"error": map[string]any{"type": "object", "required": []string{"message", "type"},
			"properties": map[string]any{
				"message":        map[string]any{"type": "string"},
				"type":           map[string]any{"type": "string", "description": "stable error type (docs/API.md lists them)"},
				"details":        map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
				"required_scope": map[string]any{"type": "string"},
				"scopes":         map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"request_id":     map[string]any{"type": "string"},
			}},
		"message": map[string]any{"type": "string", "description": "validation errors: the second layout of spec §7.1"},
		"errors":  map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
	},
}

func openAPIOperation(op *api.Operation) map[string]any {
	o := map[string]any{
		"operationId": strings.ReplaceAll(op.ID, ".", "_"),
		"summary":     op.Summary,
		"tags":        []string{tagOf(op)},
	}
	var desc []string
	if op.Extension {
		o["x-extension"] = true
		desc = append(desc, "An extension of this service: not in the public API specification.")
	}
	if op.Scope != "" {
		scopes := []string{op.Scope}
		if op.AlsoScope != "" {
			scopes = append(scopes, op.AlsoScope)
			desc = append(desc, "Scopes: `"+op.Scope+"` and `"+op.AlsoScope+"`.")
		} else {
			desc = append(desc, "Scope: `"+op.Scope+"`.")
		}
		o["x-scope"] = strings.Join(scopes, " ")
		o["security"] = []any{map[string]any{"bearerAuth": scopes}, map[string]any{"apiKeyQuery": scopes}}
	}
	if op.Auth == api.AuthNone {
		o["security"] = []any{map[string]any{}}
		desc = append(desc, "No credentials needed.")
	} else if op.Scope == "" {
		desc = append(desc, "Any valid key; no scope needed.")
	}
	if op.Plan != "" {
		desc = append(desc, "Needs the "+op.Plan+" plan or higher.")
		o["x-plan"] = op.Plan
	}
	if op.Tool != "" {
		desc = append(desc, "MCP tool: `"+op.Tool+"`.")
		o["x-mcp-tool"] = op.Tool
	}
	if op.Write {
		desc = append(desc, "Accepts `Idempotency-Key`.")
	}
	o["description"] = strings.Join(desc, " ")

	var params []any
	var body []api.Param
	for i := range op.Params {
		p := &op.Params[i]
		switch p.In {
		case api.InPath, api.InQuery:
			in := "query"
			if p.In == api.InPath {
				in = "path"
			}
			params = append(params, map[string]any{"name": p.Name, "in": in, "required": p.Required || p.In == api.InPath,
				"description": p.Desc, "schema": api.ParamSchema(p)})
		case api.InBody:
			body = append(body, *p)
		}
	}
	if op.Write {
		params = append(params, map[string]any{"name": "Idempotency-Key", "in": "header", "required": false,
			"description": "a fresh UUID per logical operation; a replay returns the first 2xx response with X-Idempotent-Replay: true (24 hours)",
			"schema":      map[string]any{"type": "string", "maxLength": api.MaxIdempotencyKey}})
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if len(body) > 0 {
		content := map[string]any{}
		if op.Multipart {
			content["multipart/form-data"] = map[string]any{"schema": api.ObjectSchema(body, false)}
			if !hasRequiredFile(body) {
				// Without a file to send, the same fields may come as JSON (the brand).
				content["application/json"] = map[string]any{"schema": api.ObjectSchema(withoutFiles(body), false)}
			}
		} else {
			content["application/json"] = map[string]any{"schema": api.ObjectSchema(body, false)}
		}
		o["requestBody"] = map[string]any{"required": anyRequired(body), "content": content}
	}

	responses := map[string]any{}
	success := map[string]any{"description": "Success."}
	switch {
	case op.CSV:
		success["content"] = map[string]any{"text/csv": map[string]any{"schema": map[string]any{"type": "string"}}}
		success["description"] = "The CSV, streamed (Content-Disposition: attachment)."
	case op.Bare:
		success["content"] = map[string]any{"application/json": map[string]any{"schema": op.Response}}
	default:
		success["content"] = map[string]any{"application/json": map[string]any{"schema": api.Envelope(op)}}
	}
	responses[fmt.Sprint(op.SuccessStatus())] = success
	if op.OtherStatus != 0 {
		responses[fmt.Sprint(op.OtherStatus)] = success
	}
	for _, code := range errorStatuses(op) {
		responses[fmt.Sprint(code)] = map[string]any{"$ref": fmt.Sprintf("#/components/responses/%d", code)}
	}
	o["responses"] = responses
	return o
}

// errorStatuses are the error statuses op can answer.
func errorStatuses(op *api.Operation) []int {
	// Every operation caps the body it is sent (none expected: DefaultMaxJSONBody) with a 413.
	set := map[int]bool{413: true, 500: true}
	if op.Auth == api.AuthKey {
		set[401], set[403], set[429], set[503] = true, true, true, true
	}
	if op.HasBody() {
		set[400] = true
	}
	for i := range op.Params {
		p := &op.Params[i]
		if p.In == api.InPath || p.Name == "book_id" {
			set[404] = true
		}
		if p.In != api.InPath { // a malformed path id is a 404, not a 422
			set[422] = true
		}
	}
	if op.Write {
		set[409], set[422] = true, true
	}
	if op.ID == "brand.update" || op.ID == "brand.toggle_take_over" {
		set[404] = true
	}
	for _, c := range op.ExtraErrors {
		set[c] = true
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

func tagOf(op *api.Operation) string {
	g, _, _ := strings.Cut(op.ID, ".")
	switch g {
	case "health", "me":
		return "general"
	case "batches":
		return "books"
	}
	return strings.ReplaceAll(g, "_", " ")
}

func hasRequiredFile(ps []api.Param) bool {
	for _, p := range ps {
		if p.Kind == api.KFile && p.Required {
			return true
		}
	}
	return false
}

func withoutFiles(ps []api.Param) []api.Param {
	var out []api.Param
	for _, p := range ps {
		if p.Kind != api.KFile {
			out = append(out, p)
		}
	}
	return out
}

func anyRequired(ps []api.Param) bool {
	for _, p := range ps {
		if p.Required {
			return true
		}
	}
	return false
}
