package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// toolErr is the error object of a tool result.
func toolErr(out map[string]any) map[string]any {
	e, _ := out["error"].(map[string]any)
	return e
}

// TestMCPErrorsNameToolArguments: a tool's validation errors name its arguments (book_id,
// batch_id, catalog_id, sync_job_id, subscription_id: spec §4.11) in details and message, not
// the REST path names; REST keeps its names.
func TestMCPErrorsNameToolArguments(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "2025-11-25")
	for _, c := range []struct {
		tool string
		args map[string]any
		arg  string // the argument named
		rest string // its REST name, never named
	}{
		{"books_get", map[string]any{}, "book_id", "book"},
		{"books_get_upload_status", map[string]any{}, "batch_id", "batchId"},
		{"books_get_batch", map[string]any{}, "batch_id", "batchId"},
		{"catalogs_get", map[string]any{}, "catalog_id", "catalog"},
		{"catalogs_get_sync_job", map[string]any{"catalog_id": 1}, "sync_job_id", "syncJob"},
		{"webhooks_list_subscription_deliveries", map[string]any{}, "subscription_id", "subscription"},
		{"books_update_settings", map[string]any{"status": "draft"}, "book_id", "book"},
	} {
		res, out := callTool(t, cs, c.tool, c.args)
		require.True(t, res.IsError, "%s: %v", c.tool, out)
		e := toolErr(out)
		require.Equal(t, api.TypeValidation, e["type"], "%s: %v", c.tool, out)
		require.EqualValues(t, 422, e["status"], c.tool)
		details := e["details"].(map[string]any)
		require.Equal(t, []any{"is required"}, details[c.arg], "%s: %v", c.tool, out)
		require.NotContains(t, details, c.rest, c.tool)
		require.Contains(t, e["message"], c.arg+" is required", c.tool)
		require.Contains(t, out["errors"], c.arg, "the second layout too: %s", c.tool)
	}
	// Several failures: each under its argument name, the message counts them.
	res, out := callTool(t, cs, "books_update_settings", map[string]any{"title": ""})
	require.True(t, res.IsError)
	details := toolErr(out)["details"].(map[string]any)
	require.Contains(t, details, "book_id")
	require.Contains(t, details, "status")
	require.Contains(t, details, "title")
	require.NotContains(t, details, "book")

	// The file argument is named as sent: pdfs, not files.
	res, out = callTool(t, cs, "books_upload_pdfs", map[string]any{"pdfs": []any{"%%%"}})
	require.True(t, res.IsError)
	require.Contains(t, toolErr(out)["details"], "pdfs", "%v", out)
	require.NotContains(t, toolErr(out)["details"], "files", "%v", out)

	// REST names REST parameters as REST does.
	rid := h.konva(t, key, "named", "draft")
	r := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"title": ""})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "status")
	require.NotContains(t, r.details(), "book_id")
}

// TestMCPUploadSchemaRequiresFiles: books_upload_pdfs declares its file argument required
// (spec §4.11 marks files required), and no tool's input schema has anyOf, oneOf or allOf at
// the top level (the Anthropic Messages API refuses such a tool, and with it the whole list).
func TestMCPUploadSchemaRequiresFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "")
	n := 0
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		n++
		b, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		for _, k := range []string{"anyOf", "oneOf", "allOf"} {
			require.NotContains(t, m, k, "%s: top-level %s", tool.Name, k)
		}
		props := m["properties"].(map[string]any)
		req, _ := m["required"].([]any)
		for _, r := range req {
			require.Contains(t, props, r, "%s: required %s is a declared argument", tool.Name, r)
		}
		switch tool.Name {
		case "books_upload_pdfs":
			require.Contains(t, req, "files", "%s: %s", tool.Name, b)
			require.NotContains(t, req, "pdfs", "pdfs is an alias: either is enough")
		case "brand_create", "brand_update":
			require.NotContains(t, req, "logo_base64", "%s: the logo is optional", tool.Name)
		}
	}
	require.Len(t, specTools, n)

	// The alias alone is still accepted by the server.
	res, out := callTool(t, cs, "books_upload_pdfs", map[string]any{"pdfs": []any{pngBase64(40, 60)}, "status": "draft"})
	require.False(t, res.IsError, "%v", out)
}

// TestMCPIdempotencyHashesFileContent: with one idempotency_key, the same upload replays, and
// a different file of the same size is refused (422), as REST does with a multipart body.
func TestMCPIdempotencyHashesFileContent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	cs := h.mcpSession(t, key, "")
	first, err := base64.StdEncoding.DecodeString(pngBase64(300, 400))
	require.NoError(t, err)
	other := append([]byte(nil), first...)
	other[len(other)/2] ^= 0xff // same size, other content
	upload := func(content []byte, idem string) (*sdk.CallToolResult, map[string]any) {
		return callTool(t, cs, "books_upload_pdfs", map[string]any{"files": []any{base64.StdEncoding.EncodeToString(content)},
			"original_filename": "cover.png", "status": "draft", api.IdempotencyKeyArg: idem})
	}
	res, out := upload(first, "same-size-1")
	require.False(t, res.IsError, "%v", out)
	batch := out["data"].(map[string]any)["batch_id"]

	res, out = upload(first, "same-size-1")
	require.False(t, res.IsError, "%v", out)
	require.Equal(t, batch, out["data"].(map[string]any)["batch_id"], "the same file replays")

	res, out = upload(other, "same-size-1")
	require.True(t, res.IsError, "a different file of the same size is not a replay: %v", out)
	require.Equal(t, api.TypeValidation, toolErrType(out))
	require.Contains(t, toolErr(out)["details"], api.IdempotencyKeyArg, "named as the tool argument")

	// The same content under another name is another request too.
	res, out = callTool(t, cs, "books_upload_pdfs", map[string]any{"files": []any{base64.StdEncoding.EncodeToString(first)},
		"original_filename": "renamed.png", "status": "draft", api.IdempotencyKeyArg: "same-size-1"})
	require.True(t, res.IsError, "%v", out)
	require.Equal(t, api.TypeValidation, toolErrType(out))
}
