package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/internal/testutil"
	"flipbook/mcp"
)

// specTools are the 55 tools of spec §4.11.
var specTools = []string{
	"analytics_list_book_view_events", "analytics_list_interaction_events", "analytics_list_readers",
	"analytics_list_reader_pages", "analytics_list_reading_session_pages", "analytics_list_page_performance",
	"analytics_get_book_flow", "analytics_list_audit_log", "analytics_get_reader_journey",
	"books_get_batch",
	"books_list", "books_get", "books_get_active_upload_status", "books_get_upload_status", "books_upload_pdfs",
	"books_update_settings", "books_create_konva", "books_create_from_template",
	"brand_get", "brand_create", "brand_update", "brand_toggle_take_over_branding",
	"catalogs_list", "catalogs_get", "catalogs_list_items", "catalogs_get_sync_job", "catalogs_list_templates",
	"catalogs_create", "catalogs_render", "catalogs_bulk_upsert_items", "catalogs_update_item_availability",
	"books_list_embed_domains", "books_create_embed_domain",
	"exports_download_book_analytics_csv", "exports_download_book_leads_csv",
	"exports_download_book_interaction_events_csv", "exports_download_book_readers_csv",
	"exports_download_book_reader_pages_csv", "exports_download_book_page_performance_csv",
	"exports_download_book_audit_log_csv", "exports_download_book_access_audit_csv",
	"health_check", "identity_get",
	"subscribers_list", "subscribers_create",
	"books_list_tracked_links", "tracked_links_create",
	"webhooks_get_subscription_options", "webhooks_list_sample_events", "webhooks_list_subscriptions",
	"webhooks_list_subscription_deliveries", "webhooks_create_subscription", "webhooks_update_subscription",
	"webhooks_test_subscription", "webhooks_dispatch_sample",
}

// pendingTools are tools whose REST operations a later issue builds (none left: tools/list
// holds exactly the spec's 55).
var pendingTools = []string{}

// bearerTransport adds the API key to every request of the MCP client.
type bearerTransport struct {
	key  string
	base http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.key)
	return t.base.RoundTrip(r)
}

// mcpSession connects the official SDK client to the endpoint under a protocol revision
// ("" = the SDK's newest, 2026-07-28, through server/discover).
func (h *harness) mcpSession(tb testing.TB, key, version string) *sdk.ClientSession {
	tb.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: h.base + mcp.Path,
		HTTPClient: &http.Client{Timeout: 60 * time.Second, Transport: bearerTransport{key: key, base: http.DefaultTransport}}}
	var opts *sdk.ClientSessionOptions
	if version != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(context.Background(), tr, opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and decodes its text content as JSON.
func callTool(tb testing.TB, cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, map[string]any) {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(tb, err, name)
	require.NotEmpty(tb, res.Content, name)
	text, ok := res.Content[0].(*sdk.TextContent)
	require.True(tb, ok, name)
	var out map[string]any
	require.NoError(tb, json.Unmarshal([]byte(text.Text), &out), "%s: %s", name, text.Text)
	return res, out
}

func toolErrType(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

func TestMCPToolsMatchSpec(t *testing.T) {
	t.Parallel()
	require.Len(t, specTools, 55)
	h := newHarness(t, func(c *Config) { c.MCPPageSize = 7 })
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "")
	var served []string
	pages := 0
	var cursor string
	for {
		res, err := cs.ListTools(context.Background(), &sdk.ListToolsParams{Cursor: cursor})
		require.NoError(t, err)
		pages++
		for _, tool := range res.Tools {
			served = append(served, tool.Name)
			require.NotEmpty(t, tool.Description, tool.Name)
			require.NotNil(t, tool.InputSchema, tool.Name)
			require.NotNil(t, tool.Annotations, tool.Name)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	require.Greater(t, pages, 1, "tools/list is paginated")
	want := slices.DeleteFunc(slices.Clone(specTools), func(n string) bool { return slices.Contains(pendingTools, n) })
	sort.Strings(want)
	sort.Strings(served)
	require.Equal(t, want, served, "exactly the spec's tools whose REST operations exist")
}

func TestMCPToolSchemas(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "2025-11-25")
	tools := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		tools[tool.Name] = tool
	}
	schema := func(name string) map[string]any {
		b, err := json.Marshal(tools[name].InputSchema)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	// Path values under their tool names, with bounds, enums and required.
	get := schema("books_get")
	require.Equal(t, []any{"book_id"}, get["required"])
	list := schema("books_list")["properties"].(map[string]any)
	require.EqualValues(t, 200, list["limit"].(map[string]any)["maximum"])
	require.Contains(t, list["sort"].(map[string]any)["enum"], "-created_at")
	upd := schema("books_update_settings")
	require.ElementsMatch(t, []any{"book_id", "status"}, upd["required"])
	props := upd["properties"].(map[string]any)
	// A nullable value is anyOf a single-type branch and null (docs/CLIENTS.md), not a type array.
	expires := props["expires_at"].(map[string]any)
	require.NotContains(t, expires, "type")
	require.Equal(t, []any{map[string]any{"type": "string", "format": "date-time"}, map[string]any{"type": "null"}}, expires["anyOf"])
	require.NotEmpty(t, expires["description"], "annotations stay on the outer schema")
	require.Contains(t, props, api.IdempotencyKeyArg)
	// Tool-only arguments.
	require.Contains(t, schema("books_upload_pdfs")["properties"], "files")
	require.Contains(t, schema("books_upload_pdfs")["properties"], "pdfs")
	require.Contains(t, schema("exports_download_book_analytics_csv")["properties"], "output_path")
	require.Contains(t, schema("exports_download_book_analytics_csv")["properties"], "source")
	// Hints and output schemas.
	require.True(t, tools["books_get"].Annotations.ReadOnlyHint)
	require.True(t, tools["books_update_settings"].Annotations.IdempotentHint)
	require.False(t, tools["books_create_konva"].Annotations.IdempotentHint)
	require.NotNil(t, tools["books_get"].OutputSchema)
	require.NotNil(t, tools["exports_download_book_leads_csv"].OutputSchema)
	// Webhook event types are an enum (or {value} objects), not a bare true.
	items := schema("webhooks_create_subscription")["properties"].(map[string]any)["event_types"].(map[string]any)["items"].(map[string]any)
	require.Len(t, items["anyOf"], 2)
	require.Len(t, items["anyOf"].([]any)[0].(map[string]any)["enum"], 9)
	// health_check answers its data bare: so is its outputSchema (no data envelope).
	health := mustJSON(t, tools["health_check"].OutputSchema)
	var hs map[string]any
	require.NoError(t, json.Unmarshal([]byte(health), &hs))
	require.ElementsMatch(t, []any{"status", "timestamp", "version", "details"}, hs["required"])
}

// TestMCPToolSchemasPortable holds every tool schema to the rules of mcp-inspector --strict
// (its schemaLint: no boolean schema, no type array, no schema without a validation keyword,
// no remote $ref), without Node: the Inspector itself runs in clients_mcp_test.go.
func TestMCPToolSchemasPortable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "2025-11-25")
	constraining := []string{"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
		"exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "contentMediaType", "contentEncoding",
		"contentSchema", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties",
		"minProperties", "required", "dependentRequired", "allOf", "anyOf", "oneOf", "not", "items", "prefixItems",
		"contains", "additionalItems", "unevaluatedItems", "properties", "patternProperties", "additionalProperties",
		"unevaluatedProperties", "propertyNames", "dependentSchemas", "dependencies", "$ref", "$dynamicRef", "$recursiveRef"}
	var problems []string
	var walk func(tool, path string, node any, keyword string)
	walk = func(tool, path string, node any, keyword string) {
		m, ok := node.(map[string]any)
		if !ok {
			if _, isBool := node.(bool); isBool && keyword != "additionalProperties" && keyword != "unevaluatedProperties" {
				problems = append(problems, tool+" "+path+": a boolean schema")
			}
			return
		}
		if _, isArray := m["type"].([]any); isArray {
			problems = append(problems, tool+" "+path+": a type array")
		}
		if ref, _ := m["$ref"].(string); ref != "" && !strings.HasPrefix(ref, "#") {
			problems = append(problems, tool+" "+path+": a remote $ref")
		}
		if keyword != "not" && !slices.ContainsFunc(constraining, func(k string) bool { _, ok := m[k]; return ok }) {
			problems = append(problems, tool+" "+path+": no validation keyword")
		}
		for _, k := range []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"} {
			if sub, ok := m[k].(map[string]any); ok {
				for name, s := range sub {
					walk(tool, path+"."+k+"."+name, s, k)
				}
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
			if list, ok := m[k].([]any); ok {
				for i, s := range list {
					walk(tool, fmt.Sprintf("%s.%s[%d]", path, k, i), s, k)
				}
			}
		}
		for _, k := range []string{"items", "contains", "not", "propertyNames", "if", "then", "else", "additionalProperties",
			"unevaluatedProperties", "additionalItems", "unevaluatedItems", "contentSchema"} {
			if s, ok := m[k]; ok {
				walk(tool, path+"."+k, s, k)
			}
		}
	}
	n := 0
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		n++
		for name, s := range map[string]any{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema} {
			var v any
			require.NoError(t, json.Unmarshal([]byte(mustJSON(t, s)), &v))
			walk(tool.Name, name, v, "")
		}
	}
	require.Equal(t, len(specTools), n)
	require.Empty(t, problems)
}

// TestMCPCapabilities: tools without listChanged (the list never changes, and no stream could
// carry the notification), logging (logging/setLevel is answered), resources, prompts and
// completions (issue 28; without listChanged or subscribe), nothing else.
func TestMCPCapabilities(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	for _, version := range []string{"2025-11-25", ""} {
		cs := h.mcpSession(t, key, version)
		caps := mustJSON(t, cs.InitializeResult().Capabilities)
		require.JSONEq(t, `{"logging":{},"tools":{},"resources":{},"prompts":{},"completions":{}}`, caps, "revision %q", version)
	}
}

func TestMCPCallsUnderBothRevisions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("v"+version, func(t *testing.T) {
			cs := h.mcpSession(t, key, version)
			if version != "" {
				require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
			} else {
				require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
			}
			if version != "" { // 2026-07-28 has no session to keep alive: ping needs one
				require.NoError(t, cs.Ping(context.Background(), nil))
			}

			// General.
			_, out := callTool(t, cs, "health_check", nil)
			require.Equal(t, "ok", out["status"])
			_, out = callTool(t, cs, "identity_get", nil)
			require.Equal(t, "live", out["data"].(map[string]any)["mode"])

			// Books: create, get, update, list (the same results as REST).
			res, out := callTool(t, cs, "books_create_konva", konvaBody("mcp book", "draft", 1))
			require.False(t, res.IsError, "%v", out)
			rid := out["data"].(map[string]any)["random_id"].(string)
			res, out = callTool(t, cs, "books_get", map[string]any{"book_id": rid})
			require.False(t, res.IsError)
			rest := h.do(t, "GET", "/api/v1/books/"+rid, key, nil)
			require.JSONEq(t, string(rest.Body), mustJSON(t, out))
			require.NotNil(t, res.StructuredContent)
			_, out = callTool(t, cs, "books_update_settings", map[string]any{"book_id": rid, "status": "publish", "title": "renamed"})
			require.Equal(t, "renamed", out["data"].(map[string]any)["name"])
			_, out = callTool(t, cs, "books_list", map[string]any{"limit": 10})
			require.NotEmpty(t, out["data"])

			// Subscribers, embed domains, tracked links, brand.
			res, out = callTool(t, cs, "subscribers_create", map[string]any{"book_id": rid, "email": "reader@example.com", "type": "email"})
			require.False(t, res.IsError, "%v", out)
			_, out = callTool(t, cs, "subscribers_list", nil)
			require.NotEmpty(t, out["data"])
			res, out = callTool(t, cs, "books_create_embed_domain", map[string]any{"book_id": rid, "domain": "https://shop.example.com/x"})
			require.False(t, res.IsError, "%v", out)
			_, out = callTool(t, cs, "books_list_embed_domains", map[string]any{"book_id": rid})
			require.NotEmpty(t, out["data"])
			res, out = callTool(t, cs, "tracked_links_create", map[string]any{"book_id": rid, "name": "newsletter " + version})
			require.False(t, res.IsError, "%v", out)
			_, out = callTool(t, cs, "books_list_tracked_links", map[string]any{"book_id": rid})
			require.NotEmpty(t, out["data"])
			_, out = callTool(t, cs, "brand_get", nil)
			require.Contains(t, out["data"], "brand")

			// Analytics and an inline export.
			res, out = callTool(t, cs, "analytics_list_page_performance", map[string]any{"book_id": rid})
			require.False(t, res.IsError, "%v", out)
			res, out = callTool(t, cs, "exports_download_book_leads_csv", map[string]any{"book_id": rid})
			require.False(t, res.IsError, "%v", out)
			require.Contains(t, out["data"].(map[string]any)["csv"], "email")

			// Validation and not-found errors carry REST's type and message.
			res, out = callTool(t, cs, "books_get", map[string]any{"book_id": "nope"})
			require.True(t, res.IsError)
			require.Equal(t, api.TypeNotFound, toolErrType(out))
			res, out = callTool(t, cs, "books_list", map[string]any{"limit": 500})
			require.True(t, res.IsError)
			require.Equal(t, api.TypeValidation, toolErrType(out))
			restErr := h.do(t, "GET", "/api/v1/books?limit=500", key, nil)
			require.Equal(t, restErr.JSON["error"].(map[string]any)["message"], out["error"].(map[string]any)["message"])
			res, out = callTool(t, cs, "books_get", map[string]any{"book_id": rid, "bogus": 1})
			require.True(t, res.IsError)
			require.Contains(t, out["error"].(map[string]any)["details"], "bogus")
		})
	}
}

func TestMCPUploadAndIdempotency(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "")
	png := pngBase64(300, 400)
	args := map[string]any{"files": []any{png}, "original_filename": "cover.png", "status": "publish", api.IdempotencyKeyArg: "up-1"}
	res, out := callTool(t, cs, "books_upload_pdfs", args)
	require.False(t, res.IsError, "%v", out)
	batch := out["data"].(map[string]any)["batch_id"].(string)
	// The same key replays the first result instead of uploading twice.
	_, again := callTool(t, cs, "books_upload_pdfs", args)
	require.Equal(t, batch, again["data"].(map[string]any)["batch_id"])
	testutil.Eventually(t, 60*time.Second, 10*time.Millisecond, func() error {
		_, out := callTool(t, cs, "books_get_batch", map[string]any{"batch_id": batch})
		if st := out["data"].(map[string]any)["status"]; st != "completed" {
			return fmt.Errorf("the uploaded image's batch is %v, want completed", st)
		}
		return nil
	})
	_, out = callTool(t, cs, "books_get_upload_status", map[string]any{"batch_id": batch})
	require.Equal(t, "completed", out["data"].(map[string]any)["status"])
	require.Len(t, h.do(t, "GET", "/api/v1/books", key, nil).list(), 1, "one book, not two")

	// pdfs is the other name of files; bad base64 and two files are refused.
	res, out = callTool(t, cs, "books_upload_pdfs", map[string]any{"pdfs": []any{"%%%"}})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeValidation, toolErrType(out))
	res, out = callTool(t, cs, "books_upload_pdfs", map[string]any{"files": []any{png, png}})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeValidation, toolErrType(out))
	res, out = callTool(t, cs, "books_upload_pdfs", map[string]any{"status": "draft"})
	require.True(t, res.IsError)
	require.Contains(t, out["error"].(map[string]any)["details"], "files")

	// The plan's limits apply: a free workspace publishes one book at most (actors.Plans).
	free := h.workspace(t, "free", "live")
	fcs := h.mcpSession(t, free, "")
	var refused map[string]any
	for i := 0; i < 5 && refused == nil; i++ {
		res, out := callTool(t, fcs, "books_upload_pdfs", map[string]any{"files": []any{png}, "status": "publish"})
		if res.IsError {
			refused = out
		}
	}
	require.NotNil(t, refused, "the free plan's published-book limit refuses an upload")
	require.Equal(t, api.TypePlanRequired, toolErrType(refused))

	// A brand logo as base64.
	res, out = callTool(t, cs, "brand_create", map[string]any{"company_name": "Acme", "logo_base64": png})
	require.False(t, res.IsError, "%v", out)
	require.NotNil(t, out["data"].(map[string]any)["brand"].(map[string]any)["logo"])
}

func TestMCPExportToPath(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	cs := h.mcpSession(t, key, "")
	rid := h.konva(t, key, "exported", "publish")
	res, out := callTool(t, cs, "exports_download_book_analytics_csv", map[string]any{"book_id": rid,
		"source": "interaction_events", "output_path": "reports/nov/events.csv"})
	require.False(t, res.IsError, "%v", out)
	d := out["data"].(map[string]any)
	require.Equal(t, "reports/nov/events.csv", d["path"])
	require.EqualValues(t, 0, d["rows"])
	file := filepath.Join(h.cfg.DataDir, "exports", itoa(ws)+"-live", "reports", "nov", "events.csv")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "exports/"+itoa(ws)+"-live/reports/nov/events.csv", d["location"], "relative to the data directory")
	for k, v := range d {
		if s, ok := v.(string); ok {
			require.NotContains(t, s, h.cfg.DataDir, "%s names no server path", k)
		}
	}
	require.True(t, strings.HasPrefix(string(b), "id,"), "%s", b)
	require.EqualValues(t, len(b), d["bytes"])

	// Paths that leave the export area are refused, and nothing is written.
	for _, p := range []string{"../escape.csv", "a/../../escape.csv", "/etc/passwd", "..\\x.csv", "reports/"} {
		res, out := callTool(t, cs, "exports_download_book_leads_csv", map[string]any{"book_id": rid, "output_path": p})
		require.True(t, res.IsError, p)
		require.Equal(t, api.TypeValidation, toolErrType(out), p)
	}
	res, out = callTool(t, cs, "exports_download_book_leads_csv", map[string]any{"book_id": rid, "output_object_key": "../../k.csv"})
	require.True(t, res.IsError)
	require.Contains(t, out["error"].(map[string]any)["details"], "output_object_key")
	_, err = os.Stat(filepath.Join(h.cfg.DataDir, "exports", "escape.csv"))
	require.True(t, os.IsNotExist(err))
	// A symlink inside the area that points out of it is refused too.
	area := filepath.Join(h.cfg.DataDir, "exports", itoa(ws)+"-live")
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(area, "out")))
	res, out = callTool(t, cs, "exports_download_book_leads_csv", map[string]any{"book_id": rid, "output_path": "out/leads.csv"})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeValidation, toolErrType(out))
}

func TestMCPScopeAndPlanRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	readOnly, ws := h.workspaceKey(t, "company", "live", "books:read")
	cs := h.mcpSession(t, readOnly, "")
	res, out := callTool(t, cs, "subscribers_list", nil)
	require.True(t, res.IsError)
	require.Equal(t, api.TypeMissingScope, toolErrType(out))
	require.Contains(t, out["error"].(map[string]any)["message"], "subscribers:read")
	// health_check and identity_get need no scope.
	res, _ = callTool(t, cs, "identity_get", nil)
	require.False(t, res.IsError)
	res, _ = callTool(t, cs, "health_check", nil)
	require.False(t, res.IsError)
	_ = ws

	free := h.workspace(t, "free", "live")
	fcs := h.mcpSession(t, free, "2025-11-25")
	rid := h.konva(t, free, "b", "draft")
	res, out = callTool(t, fcs, "analytics_list_page_performance", map[string]any{"book_id": rid})
	require.True(t, res.IsError)
	require.Equal(t, api.TypePlanRequired, toolErrType(out))
	// Another workspace's book is not found.
	other := h.workspace(t, "company", "live")
	ocs := h.mcpSession(t, other, "")
	res, out = callTool(t, ocs, "books_get", map[string]any{"book_id": rid})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeNotFound, toolErrType(out))
}

func mustJSON(tb testing.TB, v any) string {
	b, err := json.Marshal(v)
	require.NoError(tb, err)
	return string(b)
}

// TestMCPLargeUpload: a file past what the tool call keeps in memory (8 MiB) goes through a
// temp file and converts like a REST upload.
func TestMCPLargeUpload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "2025-11-25")
	big := paddedPNG(t, 9<<20)
	res, out := callTool(t, cs, "books_upload_pdfs", map[string]any{"pdfs": base64.StdEncoding.EncodeToString(big), "original_filename": "big.png"})
	require.False(t, res.IsError, "%v", out)
	batch := out["data"].(map[string]any)["batch_id"].(string)
	b := h.waitBatch(t, key, batch)
	require.Equal(t, "completed", b["status"], "%v", b)
	require.EqualValues(t, len(big), batchFile(b)["size"])
}
