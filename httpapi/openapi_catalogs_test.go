package httpapi

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// checkCatalogResponses checks a success of every catalog and template operation (and their
// errors) against the document and returns the operations covered.
func checkCatalogResponses(t *testing.T, c *openAPIChecker) {
	h := c.h
	key := h.workspace(t, "pro", "live")
	cr := c.check(t, 202, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop", "source": "woocommerce",
		"external_id": "w1", "source_url": "https://shop.example/", "metadata": []any{map[string]any{"feed": "x"}},
		"items": []any{catProduct("p1", "", "Mug", "image", "https://img.example/mug.png", "url", "https://shop.example/mug",
			"gallery", []any{"https://img.example/a.png"}, "categories", []any{"Kitchen"}, "stock_quantity", 3, "available", true)}})
	cat := num(cr.data()["catalog"].(map[string]any)["id"])
	ci := itoa(cat)
	waitJob(t, h, key, cat, num(cr.data()["sync_job"].(map[string]any)["id"]))
	up := c.check(t, 202, "POST", "/api/v1/catalogs/"+ci+"/items:bulk-upsert", key, map[string]any{
		"items": []any{catProduct("p2", "v", "Shirt")}})
	waitJob(t, h, key, cat, num(up.data()["sync_job"].(map[string]any)["id"]))
	av := c.check(t, 202, "PATCH", "/api/v1/catalogs/"+ci+"/items/availability", key, map[string]any{
		"items": []any{map[string]any{"external_product_id": "zz"}}, "snapshot_at": time.Now().UTC().Format(time.RFC3339)})
	job := num(av.data()["sync_job"].(map[string]any)["id"])
	waitJob(t, h, key, cat, job)
	c.check(t, 200, "GET", fmt.Sprintf("/api/v1/catalogs/%d/sync-jobs/%d", cat, job), key, nil)
	c.check(t, 200, "GET", "/api/v1/catalogs", key, nil)
	c.check(t, 200, "GET", "/api/v1/catalogs/"+ci, key, nil)
	items := c.check(t, 200, "GET", "/api/v1/catalogs/"+ci+"/items?limit=5", key, nil)
	require.Len(t, items.list(), 2)
	c.check(t, 200, "GET", "/api/v1/templates", key, nil)
	c.check(t, 422, "GET", "/api/v1/templates?type=video", key, nil)
	c.check(t, 202, "POST", "/api/v1/catalogs/"+ci+"/render", key, map[string]any{"items": []any{"p1"}, "title": "Mugs"})
	c.check(t, 404, "POST", "/api/v1/catalogs/"+ci+"/render", key, map[string]any{"items": []any{"p404"}})
	c.check(t, 422, "POST", "/api/v1/catalogs/"+ci+"/items:bulk-upsert", key, map[string]any{"items": []any{}})
	first := strconv.FormatInt(num(items.list()[0].(map[string]any)["id"]), 10)
	c.check(t, 200, "DELETE", "/api/v1/catalogs/"+ci+"/items/"+first, key, nil)
	c.check(t, 200, "DELETE", "/api/v1/catalogs/"+ci, key, nil)
	c.check(t, 404, "GET", "/api/v1/catalogs/"+ci, key, nil)
}
