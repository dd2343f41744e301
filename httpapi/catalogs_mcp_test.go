package httpapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// TestCatalogTools drives the 9 catalog tools through a real MCP client session.
func TestCatalogTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")
	cs := h.mcpSession(t, key, "2025-11-25")

	res, out := callTool(t, cs, "catalogs_create", map[string]any{"name": "Agent shop", "source": "custom",
		"items": []any{catProduct("a1", "", "Lamp"), catProduct("a2", "", "Desk")}})
	require.False(t, res.IsError, "%v", out)
	data := out["data"].(map[string]any)
	catID := num(data["catalog"].(map[string]any)["id"])
	jobID := num(data["sync_job"].(map[string]any)["id"])
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
		_, out := callTool(t, cs, "catalogs_get_sync_job", map[string]any{"catalog_id": catID, "sync_job_id": jobID})
		if st := out["data"].(map[string]any)["sync_job"].(map[string]any)["status"]; st != "completed" {
			return fmt.Errorf("the create job is %v, want completed", st)
		}
		return nil
	})

	_, out = callTool(t, cs, "catalogs_bulk_upsert_items", map[string]any{"catalog_id": catID,
		"items": []any{catProduct("a3", "", "Chair")}})
	require.Equal(t, "1", out["data"].(map[string]any)["summary"].(map[string]any)["total_items"])
	up := num(out["data"].(map[string]any)["sync_job"].(map[string]any)["id"])
	waitJob(t, h, key, catID, up)
	_, out = callTool(t, cs, "catalogs_update_item_availability", map[string]any{"catalog_id": catID,
		"items": []any{map[string]any{"external_product_id": "a3", "available": false}}})
	waitJob(t, h, key, catID, num(out["data"].(map[string]any)["sync_job"].(map[string]any)["id"]))

	_, out = callTool(t, cs, "catalogs_list", map[string]any{"limit": 5})
	require.Len(t, out["data"].([]any), 1)
	_, out = callTool(t, cs, "catalogs_get", map[string]any{"catalog_id": catID})
	require.EqualValues(t, 3, out["data"].(map[string]any)["catalog"].(map[string]any)["items_count"])
	_, out = callTool(t, cs, "catalogs_list_items", map[string]any{"catalog_id": catID, "limit": 10})
	items := out["data"].([]any)
	require.Len(t, items, 3)
	require.Equal(t, false, items[0].(map[string]any)["available"])
	_, out = callTool(t, cs, "catalogs_list_templates", map[string]any{"type": "product"})
	require.Len(t, out["data"].([]any), 2)
	res, out = callTool(t, cs, "catalogs_render", map[string]any{"catalog_id": catID, "items": []any{"a1", "a3"}})
	require.False(t, res.IsError, "%v", out)
	require.NotEmpty(t, out["data"].(map[string]any)["batch_id"])

	// Template fields are refused through the tool as over REST.
	res, out = callTool(t, cs, "catalogs_bulk_upsert_items", map[string]any{"catalog_id": catID,
		"items": []any{catProduct("a4", "", "X", "style", "bold")}})
	require.True(t, res.IsError)
	require.Equal(t, "ValidationException", toolErrType(out))

	// A key without books:write may not render.
	ro := h.key(t, tenantOf(t, h, key).Workspace, "live", "catalogs:read")
	cs2 := h.mcpSession(t, ro, "2025-11-25")
	res, _ = callTool(t, cs2, "catalogs_render", map[string]any{"catalog_id": catID, "items": []any{"a1"}})
	require.True(t, res.IsError)
}
