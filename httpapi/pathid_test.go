package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// TestPathIDNotFound: a path id that is not a valid id (not an integer, out of range, too
// long) is 404 NotFound in the error envelope, as an unknown id is (spec §7: "404 on every
// operation with a path id"), over REST and MCP alike, and the OpenAPI document declares it.
func TestPathIDNotFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	c := newOpenAPIChecker(t, h)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "with domains", "publish")
	long := strings.Repeat("x", 65)
	for _, tc := range []struct {
		method, path string
		body         any
		what         string
	}{
		{"DELETE", "/api/v1/books/" + rid + "/embed-domains/abc", nil, "embed domain"},
		{"DELETE", "/api/v1/books/" + rid + "/embed-domains/0", nil, "embed domain"},
		{"GET", "/api/v1/catalogs/0", nil, "catalog"},
		{"GET", "/api/v1/catalogs/abc", nil, "catalog"},
		{"GET", "/api/v1/catalogs/1.5", nil, "catalog"},
		{"GET", "/api/v1/catalogs/99999999999999999999", nil, "catalog"},
		{"DELETE", "/api/v1/catalogs/-1", nil, "catalog"},
		{"GET", "/api/v1/catalogs/abc/items", nil, "catalog"},
		{"GET", "/api/v1/catalogs/1/sync-jobs/abc", nil, "sync job"},
		{"DELETE", "/api/v1/catalogs/1/items/zero", nil, "catalog item"},
		{"PUT", "/api/v1/webhook-subscriptions/abc", map[string]any{"name": "x"}, "webhook subscription"},
		{"GET", "/api/v1/webhook-subscriptions/0/deliveries", nil, "webhook subscription"},
		{"DELETE", "/api/v1/subscribers/abc", nil, "subscriber"},
		{"GET", "/api/v1/books/" + long, nil, "book"},
		{"GET", "/api/v1/batches/" + long, nil, "batch"},
		{"GET", "/api/v1/books/uploads/" + long + "/status", nil, "batch"},
		// The path id's 404 wins over the body's 422.
		{"PATCH", "/api/v1/catalogs/abc/items/availability", map[string]any{}, "catalog"},
	} {
		r := c.check(t, 404, tc.method, tc.path, key, tc.body)
		require.Equal(t, api.TypeNotFound, r.errType(), "%s %s: %s", tc.method, tc.path, r.Body)
		require.Equal(t, tc.what+" not found", r.JSON["error"].(map[string]any)["message"], "%s %s", tc.method, tc.path)
		require.Nil(t, r.details(), "%s %s", tc.method, tc.path)
	}
	// Authentication and scope still come first.
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/catalogs/abc", "", nil).Status)
	ro := h.key(t, tenantOf(t, h, key).Workspace, "live", "books:read")
	require.Equal(t, 403, h.do(t, "GET", "/api/v1/catalogs/abc", ro, nil).Status)
	// Other parameters' failures stay 422.
	r := h.do(t, "GET", "/api/v1/catalogs/1/items?limit=0", key, nil)
	require.Equal(t, 422, r.Status, "%s", r.Body)

	// MCP: the same 404 for a malformed id; a missing one is 422 naming the argument.
	cs := h.mcpSession(t, key, "2025-11-25")
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"catalogs_get", map[string]any{"catalog_id": "abc"}},
		{"catalogs_get", map[string]any{"catalog_id": 0}},
		{"catalogs_get", map[string]any{"catalog_id": 1.5}},
		{"catalogs_get_sync_job", map[string]any{"catalog_id": 1, "sync_job_id": "abc"}},
		{"webhooks_update_subscription", map[string]any{"subscription_id": -2, "name": "x"}},
		{"books_get", map[string]any{"book_id": long}},
	} {
		res, out := callTool(t, cs, tc.tool, tc.args)
		require.True(t, res.IsError, "%s %v: %v", tc.tool, tc.args, out)
		require.Equal(t, api.TypeNotFound, toolErrType(out), "%s %v: %v", tc.tool, tc.args, out)
		require.EqualValues(t, 404, toolErr(out)["status"])
	}
	res, out := callTool(t, cs, "catalogs_get", map[string]any{})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeValidation, toolErrType(out))
	require.Contains(t, toolErr(out)["details"], "catalog_id")
}
