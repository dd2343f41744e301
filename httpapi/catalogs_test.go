package httpapi

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
	"flipbook/storage"
)

func catProduct(pid, variant, title string, extra ...any) map[string]any {
	m := map[string]any{"external_product_id": pid, "title": title, "price": "10.00", "currency": "EUR"}
	if variant != "" {
		m["external_variant_id"] = variant
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// waitJob polls a sync job until it has finished and returns it.
func waitJob(t *testing.T, h *harness, key string, catalog, job int64) map[string]any {
	t.Helper()
	var j map[string]any
	testutil.Eventually(t, 30*time.Second, 10*time.Millisecond, func() error {
		r := h.do(t, "GET", fmt.Sprintf("/api/v1/catalogs/%d/sync-jobs/%d", catalog, job), key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		j = r.data()["sync_job"].(map[string]any)
		if s := j["status"].(string); s == "queued" || s == "running" {
			return fmt.Errorf("catalog %d's sync job %d is still %s", catalog, job, s)
		}
		return nil
	})
	return j
}

func num(v any) int64 { f, _ := v.(float64); return int64(f) }

func TestCatalogLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")

	// Create with two initial items.
	r := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{
		"name": "Shop", "source": "shopify", "external_id": "shop-1", "source_url": "https://shop.example/",
		"metadata": []any{map[string]any{"feed": "main"}},
		"items":    []any{catProduct("p1", "", "Mug"), catProduct("p2", "v1", "Shirt S")},
	})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	cat := r.data()["catalog"].(map[string]any)
	catID := num(cat["id"])
	job := r.data()["sync_job"].(map[string]any)
	require.Equal(t, "create", job["type"])
	j := waitJob(t, h, key, catID, num(job["id"]))
	require.Equal(t, "completed", j["status"])
	require.EqualValues(t, 2, j["progress"].(map[string]any)["accepted"])

	// Same source + external id updates that catalog.
	r = h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop renamed", "source": "shopify", "external_id": "shop-1"})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	require.EqualValues(t, catID, r.data()["catalog"].(map[string]any)["id"])
	require.Equal(t, "Shop renamed", r.data()["catalog"].(map[string]any)["name"])
	waitJob(t, h, key, catID, num(r.data()["sync_job"].(map[string]any)["id"]))

	g := h.do(t, "GET", "/api/v1/catalogs/"+itoa(catID), key, nil)
	require.Equal(t, 200, g.Status)
	c := g.data()["catalog"].(map[string]any)
	require.EqualValues(t, 2, c["items_count"])
	require.Equal(t, "completed", c["last_sync_status"])

	// Bulk upsert: one update, one new.
	r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(catID)+"/items:bulk-upsert", key, map[string]any{
		"items": []any{catProduct("p1", "", "Mug XL", "sale_price", "8.00"), catProduct("p3", "", "Cap")}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	require.Equal(t, "2", r.data()["summary"].(map[string]any)["total_items"])
	j = waitJob(t, h, key, catID, num(r.data()["sync_job"].(map[string]any)["id"]))
	require.Equal(t, "completed", j["status"])

	items := h.do(t, "GET", "/api/v1/catalogs/"+itoa(catID)+"/items?limit=2", key, nil)
	require.Equal(t, 200, items.Status)
	require.Len(t, items.list(), 2)
	require.Equal(t, true, items.meta()["has_more"])
	first := items.list()[0].(map[string]any)
	require.Equal(t, "Cap", first["title"]) // newest first
	next := h.do(t, "GET", "/api/v1/catalogs/"+itoa(catID)+"/items?limit=2&cursor="+items.meta()["next_cursor"].(string), key, nil)
	require.Len(t, next.list(), 1)
	require.Equal(t, "Mug XL", next.list()[0].(map[string]any)["title"])
	require.Equal(t, "8.00", next.list()[0].(map[string]any)["sale_price"])
	require.Equal(t, "p2:v1", items.list()[1].(map[string]any)["external_item_key"])

	// Availability: one known, one missing.
	r = h.do(t, "PATCH", "/api/v1/catalogs/"+itoa(catID)+"/items/availability", key, map[string]any{
		"items": []any{map[string]any{"external_product_id": "p3", "available": false, "stock_quantity": 0},
			map[string]any{"external_product_id": "nope"}}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	j = waitJob(t, h, key, catID, num(r.data()["sync_job"].(map[string]any)["id"]))
	require.Equal(t, "completed_with_errors", j["status"])
	errs := j["errors"].([]any)
	require.Len(t, errs, 1)
	require.Equal(t, "item_not_found", errs[0].(map[string]any)["code"])
	require.EqualValues(t, 1, errs[0].(map[string]any)["index"])

	// Template fields are refused.
	r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(catID)+"/items:bulk-upsert", key, map[string]any{
		"items": []any{catProduct("p9", "", "X", "template_id", 2)}})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "items.0.template_id")

	// Render.
	capID := strconv.FormatInt(num(first["id"]), 10)
	r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(catID)+"/render", key, map[string]any{
		"items": []any{capID, "p1", "p2:v1"}, "template_id": 2,
		"cover": map[string]any{"title": "Spring", "description": "New things", "website": "https://shop.example/"}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	book := r.data()["book"].(map[string]any)
	rid := book["random_id"].(string)
	require.EqualValues(t, catID, book["external_catalog_id"])
	testutil.Eventually(t, 60*time.Second, 10*time.Millisecond, func() error {
		if st := h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()["page_images_status"]; st != "ready" {
			return fmt.Errorf("the render's page images are %v, want ready", st)
		}
		return nil
	})
	b := h.do(t, "GET", "/api/v1/books/"+rid, key, nil)
	require.EqualValues(t, 2, b.data()["page_count"]) // cover + one grid page
	require.Equal(t, "Spring", b.data()["name"])

	r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(catID)+"/render", key, map[string]any{"items": []any{"missing"}})
	require.Equal(t, 404, r.Status, "%s", r.Body)
	r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(catID)+"/render", key, map[string]any{"items": []any{"p1"}, "template_id": 3})
	require.Equal(t, 422, r.Status, "%s", r.Body)

	// Templates.
	tl := h.do(t, "GET", "/api/v1/templates?type=product", key, nil)
	require.Equal(t, 200, tl.Status, "%s", tl.Body)
	require.Len(t, tl.list(), 2)
	require.Equal(t, "1", tl.meta()["default_template_id"])
	thumb := tl.list()[1].(map[string]any)["thumbnails"].(map[string]any)["small"].(string)
	res, err := h.http.Get(thumb)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "image/jpeg", res.Header.Get("Content-Type"))

	// Delete an item, then the catalog.
	d := h.do(t, "DELETE", "/api/v1/catalogs/"+itoa(catID)+"/items/"+capID, key, nil)
	require.Equal(t, 200, d.Status, "%s", d.Body)
	d = h.do(t, "DELETE", "/api/v1/catalogs/"+itoa(catID)+"/items/"+capID, key, nil)
	require.Equal(t, 404, d.Status)

	other := h.workspace(t, "pro", "live")
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/catalogs/"+itoa(catID), other, nil).Status)
	require.Equal(t, 404, h.do(t, "POST", "/api/v1/catalogs/"+itoa(catID)+"/items:bulk-upsert", other,
		map[string]any{"items": []any{catProduct("x", "", "x")}}).Status)

	d = h.do(t, "DELETE", "/api/v1/catalogs/"+itoa(catID), key, nil)
	require.Equal(t, 200, d.Status, "%s", d.Body)
	require.Equal(t, "archived", d.data()["catalog"].(map[string]any)["status"])
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/catalogs/"+itoa(catID), key, nil).Status)
	l := h.do(t, "GET", "/api/v1/catalogs", key, nil)
	require.Len(t, l.list(), 0)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		ids, err := h.svc.Store.CatalogItemIDs(tenantOf(t, h, key), catID, 10)
		require.NoError(t, err)
		if len(ids) != 0 {
			return fmt.Errorf("items not purged: %d (of up to 10 read) left", len(ids))
		}
		return nil
	})
}

// tenantOf is the storage tenant of a key (from /me).
func tenantOf(t *testing.T, h *harness, key string) storage.Tenant {
	t.Helper()
	me := h.do(t, "GET", "/api/v1/me", key, nil)
	require.Equal(t, 200, me.Status)
	tn := storage.Tenant{Workspace: num(me.data()["workspace"].(map[string]any)["id"]), Mode: storage.ModeLive}
	if me.data()["mode"] == "test" {
		tn.Mode = storage.ModeTest
	}
	return tn
}

// Render references are external item keys first: a numeric product id names that product even
// when an item has the same id, and product ids may contain colons.
func TestCatalogRenderReferences(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")
	r := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Refs", "items": []any{
		catProduct("a", "", "A", "url", "https://shop.example/a"),
		catProduct("b", "", "B", "url", "https://shop.example/b"),
		catProduct("1", "", "One", "url", "https://shop.example/one"),
		catProduct("c:d", "", "Colon", "url", "https://shop.example/colon"),
		catProduct("e", "f:g", "Variant", "url", "https://shop.example/variant"),
	}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	catID := num(r.data()["catalog"].(map[string]any)["id"])
	waitJob(t, h, key, catID, num(r.data()["sync_job"].(map[string]any)["id"]))
	items := h.do(t, "GET", "/api/v1/catalogs/"+itoa(catID)+"/items?limit=10", key, nil).list()
	idOfA := ""
	for _, it := range items {
		if it.(map[string]any)["external_product_id"] == "a" {
			idOfA = strconv.FormatInt(num(it.(map[string]any)["id"]), 10)
		}
	}
	r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(catID)+"/render", key, map[string]any{
		"items": []any{"1", "c:d", "e:f:g", idOfA}, "template_id": 2, "status": "publish"})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	rid := r.data()["book"].(map[string]any)["random_id"].(string)
	testutil.Eventually(t, 60*time.Second, 10*time.Millisecond, func() error {
		if st := h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()["page_images_status"]; st != "ready" {
			return fmt.Errorf("the render's page images are %v, want ready", st)
		}
		return nil
	})
	pl := h.do(t, "GET", "/view/"+rid+"/pages", "", nil)
	require.Equal(t, 200, pl.Status, "%s", pl.Body)
	var urls []string
	for _, l := range pl.data()["pages"].([]any)[1].(map[string]any)["links"].([]any) {
		urls = append(urls, l.(map[string]any)["url"].(string))
	}
	want := []string{"https://shop.example/one", "https://shop.example/colon", "https://shop.example/variant"}
	if idOfA != "1" {
		want = append(want, "https://shop.example/a")
	} else {
		want = append(want, "https://shop.example/one")
	}
	require.Equal(t, want, urls)
}

// A product's url is a link target, not HTML: rendering must keep its query string as sent.
// oneLine (PlainText → html.UnescapeString) decodes legacy entities without a semicolon, so
// "&section=2" became "§ion=2", "&currency=EUR" "¤cy=EUR", "&region=us" "®ion=us": the
// rendered page linked to another address than the product's (found by a review).
func TestCatalogRenderLinkKeepsQuery(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.NoPageText = true })
	key := h.workspace(t, "pro", "live")
	const productURL = "https://shop.example/p?id=5&section=2&currency=EUR&region=us"
	f := newCatalog(t, h, key, "Links", catProduct("p1", "", "Mug", "url", productURL))
	r := h.do(t, "POST", fmt.Sprintf("/api/v1/catalogs/%d/render", f.id), key, map[string]any{
		"items": []any{"p1"}, "template_id": 1, "status": "publish"})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	rid := r.data()["book"].(map[string]any)["random_id"].(string)
	testutil.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		if st := h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()["page_images_status"]; st != "ready" {
			return fmt.Errorf("the render's page images are %v, want ready", st)
		}
		return nil
	})
	pl := h.do(t, "GET", "/view/"+rid+"/pages", "", nil)
	require.Equal(t, 200, pl.Status, "%s", pl.Body)
	links := pl.data()["pages"].([]any)[1].(map[string]any)["links"].([]any)
	require.Len(t, links, 1)
	require.Equal(t, productURL, links[0].(map[string]any)["url"], "the product page's link must be its url as sent")
}
