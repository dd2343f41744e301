package httpapi

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/mcp"
)

// MCP toolsets (issue 28): the default tools/list is the spec's 55; groups by ?toolsets= or
// X-MCP-Toolsets, read-only tools by X-MCP-Readonly, extras adding the page text and search
// tools; a tool outside the session's set is unknown on both paths.

// listToolNames lists every tool of the session, sorted.
func listToolNames(t *testing.T, cs *sdk.ClientSession) ([]string, map[string]*sdk.Tool) {
	t.Helper()
	var names []string
	tools := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
		tools[tool.Name] = tool
	}
	sort.Strings(names)
	return names, tools
}

// specWithPrefix are the spec's tools whose names start with one of prefixes.
func specWithPrefix(prefixes ...string) []string {
	var out []string
	for _, n := range specTools {
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) {
				out = append(out, n)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// extraToolNames are the extras served with the table as it is: the tools of the extension
// operations.
func extraToolNames(*harness) []string {
	out := []string{"books_get_page_text", "books_list_pages", "books_search", "workspace_search", "books_get_outline",
		"analytics_get_page_heatmap"}
	sort.Strings(out)
	return out
}

func TestMCPToolsetsListing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MCPPageSize = 9 })
	key := h.workspace(t, "company", "live")

	// The default: exactly the spec's 55, on every page.
	def, all55 := listToolNames(t, h.mcpSessionAt(t, key, ""))
	want := slices.Clone(specTools)
	sort.Strings(want)
	require.Equal(t, want, def)

	// Groups on the URL, in the header, and both (the union).
	books := []string{"books_create_from_template", "books_create_konva", "books_get", "books_get_active_upload_status",
		"books_get_batch", "books_get_upload_status", "books_list", "books_update_settings", "books_upload_pdfs"}
	got, _ := listToolNames(t, h.mcpSessionAt(t, key, "?toolsets=books,analytics"))
	require.Equal(t, sortedUnion(books, specWithPrefix("analytics_")), got)
	got, _ = listToolNames(t, h.mcpSessionAt(t, key, "", mcp.HeaderToolsets, "webhooks"))
	require.Equal(t, specWithPrefix("webhooks_"), got)
	got, _ = listToolNames(t, h.mcpSessionAt(t, key, "?toolsets=brand", mcp.HeaderToolsets, " Exports , account"))
	require.Equal(t, sortedUnion(specWithPrefix("brand_", "exports_"), []string{"health_check", "identity_get"}), got)
	got, _ = listToolNames(t, h.mcpSessionAt(t, key, "?toolsets=access,catalogs"))
	require.Equal(t, sortedUnion(specWithPrefix("subscribers_", "tracked_links_", "catalogs_"),
		[]string{"books_list_embed_domains", "books_create_embed_domain", "books_list_tracked_links"}), got)

	// Every spec tool is in exactly one domain group.
	groups := []string{"books", "access", "brand", "analytics", "exports", "catalogs", "webhooks", "account"}
	var union []string
	for _, g := range groups {
		got, _ = listToolNames(t, h.mcpSessionAt(t, key, "?toolsets="+g))
		require.NotEmpty(t, got, g)
		union = append(union, got...)
	}
	sort.Strings(union)
	require.Equal(t, want, union, "the groups partition the 55")

	// Read-only: the tools whose operations are read-only, alone or with groups.
	var ro []string
	for _, n := range def {
		if all55[n].Annotations.ReadOnlyHint {
			ro = append(ro, n)
		}
	}
	require.Greater(t, len(ro), 20)
	require.Less(t, len(ro), 55)
	got, _ = listToolNames(t, h.mcpSessionAt(t, key, "", mcp.HeaderReadonly, "true"))
	require.Equal(t, ro, got)
	got, tools := listToolNames(t, h.mcpSessionAt(t, key, "?toolsets=books&readonly=1"))
	require.Equal(t, []string{"books_get", "books_get_active_upload_status", "books_get_batch", "books_get_upload_status", "books_list"}, got)
	for _, tool := range tools {
		require.True(t, tool.Annotations.ReadOnlyHint)
	}
	got, _ = listToolNames(t, h.mcpSessionAt(t, key, "", mcp.HeaderReadonly, "false"))
	require.Equal(t, want, got)

	// extras alone, with default, and all.
	extras := extraToolNames(h)
	got, tools = listToolNames(t, h.mcpSessionAt(t, key, "?toolsets=extras"))
	require.Equal(t, extras, got)
	require.Contains(t, tools["books_get_page_text"].Description, "GET /api/v1/books/{book}/pages/{page}")
	require.NotNil(t, tools["books_get_page_text"].OutputSchema)
	all := sortedUnion(want, extras)
	got, _ = listToolNames(t, h.mcpSessionAt(t, key, "?toolsets=all"))
	require.Equal(t, all, got)
	got, _ = listToolNames(t, h.mcpSessionAt(t, key, "?toolsets=default,extras"))
	require.Equal(t, all, got)
	got, _ = listToolNames(t, h.mcpSessionAt(t, key, "?toolsets=extras", mcp.HeaderReadonly, "true"))
	require.Equal(t, extras, got, "the extras are reads")
}

func sortedUnion(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	sort.Strings(out)
	return slices.Compact(out)
}

// TestMCPToolsetsCalls: a tool outside the session's set is an unknown tool (-32602) on the
// fast path and through the SDK; the extras are called like any tool.
func TestMCPToolsetsCalls(t *testing.T) {
	t.Parallel()
	for _, sdkOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast", true: "sdk"}[sdkOnly], func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *Config) { c.MCPSDKOnly = sdkOnly })
			key := h.workspace(t, "company", "live")
			batch, pdf := h.uploadOK(t, key, "report.pdf", samplePDF(t))
			require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
			ctx := context.Background()

			// Raw tools/call (the shape the fast path answers).
			call := func(tool string, headers ...string) *resp {
				return h.rpc(t, key, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tool+
					`","arguments":{"book_id":"`+pdf+`","page":2}}}`, headers...)
			}
			r := call("books_get_page_text")
			require.Equal(t, 200, r.Status)
			require.EqualValues(t, jsonrpc.CodeInvalidParams, rpcCode(t, r), "not in the default set: %s", r.Body)
			require.Contains(t, string(r.Body), `unknown tool \"books_get_page_text\"`)
			r = call("books_get_page_text", mcp.HeaderToolsets, "extras")
			require.Equal(t, 200, r.Status)
			res := r.JSON["result"].(map[string]any)
			require.Nil(t, res["isError"], "%s", r.Body)
			data := res["structuredContent"].(map[string]any)["data"].(map[string]any)
			require.Contains(t, data["text"], "Page two has a link annotation below.")
			r = h.rpc(t, key, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"books_get","arguments":{"book_id":"`+pdf+`"}}}`,
				mcp.HeaderToolsets, "webhooks")
			require.EqualValues(t, jsonrpc.CodeInvalidParams, rpcCode(t, r), "%s", r.Body)
			require.Contains(t, string(r.Body), `unknown tool \"books_get\"`)
			r = h.rpc(t, key, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"books_update_settings","arguments":{"book_id":"`+pdf+`","name":"x"}}}`,
				mcp.HeaderReadonly, "true")
			require.EqualValues(t, jsonrpc.CodeInvalidParams, rpcCode(t, r), "a write is not in a read-only set: %s", r.Body)

			// Through the Go SDK client (URL toolsets).
			cs := h.mcpSessionAt(t, key, "?toolsets=books,extras")
			out, body := callTool(t, cs, "books_get_page_text", map[string]any{"book_id": pdf, "page": 1})
			require.False(t, out.IsError, "%v", body)
			require.Contains(t, body["data"].(map[string]any)["text"], "Page one")
			_, body = callTool(t, cs, "books_list_pages", map[string]any{"book_id": pdf})
			require.Len(t, body["data"], 3)
			_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "webhooks_list_subscriptions", Arguments: map[string]any{}})
			require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr(t, err).Code)
			// Another workspace's book through an extra: the tool's 404.
			other := h.workspace(t, "company", "live")
			out, body = callTool(t, h.mcpSessionAt(t, other, "?toolsets=extras"), "books_get_page_text", map[string]any{"book_id": pdf, "page": 1})
			require.True(t, out.IsError)
			require.Equal(t, api.TypeNotFound, toolErrType(body))
		})
	}
}

// TestMCPToolsetsRefused: an unknown toolset or a readonly value that is not a boolean is a
// 400 in the API's error envelope, naming the known toolsets.
func TestMCPToolsetsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	r := h.rpc(t, key, list, mcp.HeaderToolsets, "books,nonsense")
	require.Equal(t, 400, r.Status, "%s", r.Body)
	require.Equal(t, api.TypeBadRequest, r.errType())
	require.Contains(t, errMessage(r), "unknown toolset nonsense")
	for _, g := range []string{"access", "account", "all", "analytics", "books", "brand", "catalogs", "default", "exports", "extras", "webhooks"} {
		require.Contains(t, errMessage(r), g)
	}
	r = h.do(t, "POST", mcp.Path+"?toolsets=Books,,x1", key, list, "Accept", "application/json, text/event-stream")
	require.Equal(t, 400, r.Status)
	require.Contains(t, errMessage(r), "unknown toolset x1")
	r = h.rpc(t, key, list, mcp.HeaderReadonly, "maybe")
	require.Equal(t, 400, r.Status)
	require.Equal(t, api.TypeBadRequest, r.errType())
	// Credentials first: no key is still 401.
	r = h.rpc(t, "", list, mcp.HeaderToolsets, "nonsense")
	require.Equal(t, 401, r.Status)
	// An empty list is the default.
	r = h.rpc(t, key, list, mcp.HeaderToolsets, " , ")
	require.Equal(t, 200, r.Status)
}

// errMessage is the message of an error envelope.
func errMessage(r *resp) string {
	e, _ := r.JSON["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}
