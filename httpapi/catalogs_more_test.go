package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// Over-HTTP tests of every status code and limit of the 11 catalog and template operations
// (spec §2.5, §3.5, §4.8; api/table_catalogs.go). Helpers of catalogs_test.go: catProduct,
// waitJob, num, tenantOf.

// catFixture is a catalog with items, created through the API.
type catFixture struct {
	id    int64
	items map[string]int64 // external_item_key → item id
	job   int64            // the job that imported the items
}

// newCatalog creates a catalog with the given items and waits for its import.
func newCatalog(t *testing.T, h *harness, key, name string, items ...map[string]any) catFixture {
	t.Helper()
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = it
	}
	r := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": name, "items": list})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	f := catFixture{id: num(r.data()["catalog"].(map[string]any)["id"]), items: map[string]int64{},
		job: num(r.data()["sync_job"].(map[string]any)["id"])}
	j := waitJob(t, h, key, f.id, f.job)
	require.Equal(t, "completed", j["status"], "%v", j)
	for _, it := range catItems(t, h, key, f.id) {
		f.items[it["external_item_key"].(string)] = num(it["id"])
	}
	require.Len(t, f.items, len(items))
	return f
}

// catItems lists every item of a catalog (pages of 200), newest first.
func catItems(t *testing.T, h *harness, key string, catalog int64) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		path := fmt.Sprintf("/api/v1/catalogs/%d/items?limit=200", catalog)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := h.do(t, "GET", path, key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, x := range r.list() {
			out = append(out, x.(map[string]any))
		}
		next, _ := r.meta()["next_cursor"].(string)
		if next == "" {
			require.Equal(t, false, r.meta()["has_more"])
			return out
		}
		cursor = next
	}
}

// upsertWait bulk-upserts items and returns the finished job.
func upsertWait(t *testing.T, h *harness, key string, catalog int64, items ...any) map[string]any {
	t.Helper()
	r := h.do(t, "POST", fmt.Sprintf("/api/v1/catalogs/%d/items:bulk-upsert", catalog), key, map[string]any{"items": items})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	return waitJob(t, h, key, catalog, num(r.data()["sync_job"].(map[string]any)["id"]))
}

// availabilityWait sends an availability update and returns the finished job.
func availabilityWait(t *testing.T, h *harness, key string, catalog int64, body map[string]any) map[string]any {
	t.Helper()
	r := h.do(t, "PATCH", fmt.Sprintf("/api/v1/catalogs/%d/items/availability", catalog), key, body)
	require.Equal(t, 202, r.Status, "%s", r.Body)
	return waitJob(t, h, key, catalog, num(r.data()["sync_job"].(map[string]any)["id"]))
}

// require422 checks a validation error naming field in its details (and in the second layout's
// errors).
func require422(t *testing.T, r *resp, field string) {
	t.Helper()
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Equal(t, "ValidationException", r.errType(), "%s", r.Body)
	require.Contains(t, r.details(), field, "%s", r.Body)
	msgs, _ := r.details()[field].([]any)
	require.NotEmpty(t, msgs, "%s", r.Body)
	errs, _ := r.JSON["errors"].(map[string]any)
	require.Contains(t, errs, field, "%s", r.Body)
}

func require404(t *testing.T, r *resp, what string) {
	t.Helper()
	require.Equal(t, 404, r.Status, "%s: %s", what, r.Body)
	require.Equal(t, "NotFound", r.errType(), "%s: %s", what, r.Body)
}

// catRoute is one request of a catalog operation.
type catRoute struct {
	name, method, path string
	body               any
}

// catalogRoutes are the operations that name a catalog in their path, with a valid request.
func catalogRoutes(catalog, item, job int64) []catRoute {
	c := "/api/v1/catalogs/" + itoa(catalog)
	return []catRoute{
		{"get", "GET", c, nil},
		{"items", "GET", c + "/items", nil},
		{"availability", "PATCH", c + "/items/availability", map[string]any{"items": []any{map[string]any{"external_product_id": "p1", "available": false}}}},
		{"delete item", "DELETE", c + "/items/" + itoa(item), nil},
		{"bulk upsert", "POST", c + "/items:bulk-upsert", map[string]any{"items": []any{catProduct("p1", "", "Changed")}}},
		{"render", "POST", c + "/render", map[string]any{"items": []any{"p1"}}},
		{"sync job", "GET", c + "/sync-jobs/" + itoa(job), nil},
		{"delete", "DELETE", c, nil},
	}
}

// allCatalogOps are the 11 catalog and template operations.
func allCatalogOps(catalog, item, job int64) []catRoute {
	return append([]catRoute{
		{"list", "GET", "/api/v1/catalogs", nil},
		{"create", "POST", "/api/v1/catalogs", map[string]any{"name": "X"}},
		{"templates", "GET", "/api/v1/templates", nil},
	}, catalogRoutes(catalog, item, job)...)
}

func TestCatalogXAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "pro", "live", "*")
	f := newCatalog(t, h, key, "Auth", catProduct("p1", "", "Mug"), catProduct("p2", "", "Cap"))
	item := f.items["p2"]

	t.Run("401 without a key", func(t *testing.T) {
		for _, op := range allCatalogOps(f.id, item, f.job) {
			r := h.do(t, op.method, op.path, "", op.body)
			require.Equal(t, 401, r.Status, "%s: %s", op.name, r.Body)
			require.Equal(t, "Unauthenticated", r.errType(), "%s: %s", op.name, r.Body)
			r = h.do(t, op.method, op.path, "wsk_live_notakey0000000000000000", op.body)
			require.Equal(t, 401, r.Status, "%s with a bad key: %s", op.name, r.Body)
		}
	})

	reads := map[string]bool{"list": true, "templates": true, "get": true, "items": true, "sync job": true}
	missing := func(t *testing.T, r *resp, scope, what string) {
		t.Helper()
		require.Equal(t, 403, r.Status, "%s: %s", what, r.Body)
		require.Equal(t, "MissingScope", r.errType(), "%s: %s", what, r.Body)
		e := r.JSON["error"].(map[string]any)
		require.Equal(t, scope, e["required_scope"], "%s: %s", what, r.Body)
		require.Contains(t, e["message"], scope, "%s", what)
	}

	t.Run("403 without catalogs:read or catalogs:write", func(t *testing.T) {
		other := h.key(t, ws, "live", "books:read", "books:write")
		for _, op := range allCatalogOps(f.id, item, f.job) {
			want := "catalogs:write"
			if reads[op.name] || op.name == "render" { // render needs catalogs:read first
				want = "catalogs:read"
			}
			missing(t, h.do(t, op.method, op.path, other, op.body), want, op.name)
		}
	})

	t.Run("catalogs:read alone reads but cannot write", func(t *testing.T) {
		ro := h.key(t, ws, "live", "catalogs:read")
		for _, op := range allCatalogOps(f.id, item, f.job) {
			r := h.do(t, op.method, op.path, ro, op.body)
			switch {
			case reads[op.name]:
				require.Equal(t, 200, r.Status, "%s: %s", op.name, r.Body)
			case op.name == "render":
				missing(t, r, "books:write", op.name)
			default:
				missing(t, r, "catalogs:write", op.name)
			}
		}
	})

	t.Run("catalogs:write alone cannot read", func(t *testing.T) {
		wo := h.key(t, ws, "live", "catalogs:write")
		for _, op := range allCatalogOps(f.id, item, f.job) {
			if reads[op.name] || op.name == "render" {
				missing(t, h.do(t, op.method, op.path, wo, op.body), "catalogs:read", op.name)
			}
		}
	})

	t.Run("render with catalogs:read and books:write", func(t *testing.T) {
		rw := h.key(t, ws, "live", "catalogs:read", "books:write")
		r := h.do(t, "POST", "/api/v1/catalogs/"+itoa(f.id)+"/render", rw, map[string]any{"items": []any{"p1"}})
		require.Equal(t, 202, r.Status, "%s", r.Body)
	})

	// Nothing of the above changed the catalog.
	g := h.do(t, "GET", "/api/v1/catalogs/"+itoa(f.id), key, nil)
	require.Equal(t, 200, g.Status, "%s", g.Body)
	require.EqualValues(t, 2, g.data()["catalog"].(map[string]any)["items_count"])
}

func TestCatalogXValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")
	f := newCatalog(t, h, key, "Valid", catProduct("p1", "", "Mug"))
	c := "/api/v1/catalogs/" + itoa(f.id)
	long := func(n int) string { return strings.Repeat("a", n) }
	products := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = catProduct("n"+strconv.Itoa(i), "", "T")
		}
		return out
	}
	upsert := func(items ...any) *resp {
		return h.do(t, "POST", c+"/items:bulk-upsert", key, map[string]any{"items": items})
	}

	t.Run("bulk upsert", func(t *testing.T) {
		require422(t, upsert(), "items")
		require422(t, h.do(t, "POST", c+"/items:bulk-upsert", key, map[string]any{}), "items")
		require422(t, upsert(products(501)...), "items")
		require422(t, upsert(map[string]any{"title": "No id"}), "items.0.external_product_id")
		require422(t, upsert(catProduct("ok", "", "ok"), map[string]any{"external_product_id": "x"}), "items.1.title")
		require422(t, upsert(catProduct("", "", "empty id")), "items.0.external_product_id")
		require422(t, upsert(catProduct("x", "", long(501))), "items.0.title")
		require422(t, upsert(catProduct("x", "", "t", "image", "not a uri")), "items.0.image")
		require422(t, upsert(catProduct("x", "", "t", "url", "::nope")), "items.0.url")
		gallery := make([]any, 21)
		for i := range gallery {
			gallery[i] = fmt.Sprintf("https://img.example/%d.png", i)
		}
		require422(t, upsert(catProduct("x", "", "t", "gallery", gallery)), "items.0.gallery")
		require422(t, upsert(catProduct("x", "", "t", "gallery", []any{"https://img.example/a.png", "bad uri"})), "items.0.gallery.1")
		require422(t, upsert(catProduct("x", "", "t", "css", "body{}")), "items.0.css")
		require422(t, upsert(catProduct("x", "", "t"), catProduct("y", "", "t", "template_key", "product-grid")), "items.1.template_key")
		require422(t, upsert(catProduct("x", "", "t", "sku", long(256))), "items.0.sku")
		require422(t, upsert(catProduct("x", "", "t", "stock_quantity", "many")), "items.0.stock_quantity")
		// Every failure of one request is reported at once.
		r := upsert(map[string]any{"title": "No id"}, catProduct("x", "", long(501)), catProduct("y", "", "t", "theme", "dark"))
		require422(t, r, "items.0.external_product_id")
		require.Contains(t, r.details(), "items.1.title")
		require.Contains(t, r.details(), "items.2.theme")
		// 500 entries is the most, and fine.
		ok := upsert(products(500)...)
		require.Equal(t, 202, ok.Status, "%s", ok.Body)
		require.Equal(t, "500", ok.data()["summary"].(map[string]any)["total_items"])
		waitJob(t, h, key, f.id, num(ok.data()["sync_job"].(map[string]any)["id"]))
	})

	t.Run("body caps", func(t *testing.T) {
		// 500 entries within every field limit can still pass the operation's body cap (8 MiB):
		// the whole request is refused with 413.
		big := make([]any, 500)
		for i := range big {
			big[i] = catProduct("b"+strconv.Itoa(i), "", "T", "description", long(17000))
		}
		r := upsert(big...)
		require.Equal(t, 413, r.Status, "%s", r.Body)
		require.Equal(t, "PayloadTooLarge", r.errType())
		avail := make([]any, 1000)
		for i := range avail {
			avail[i] = map[string]any{"external_product_id": long(255), "stock_status": long(100),
				"availability": []any{map[string]any{"note": long(4000)}}}
		}
		r = h.do(t, "PATCH", c+"/items/availability", key, map[string]any{"items": avail})
		require.Equal(t, 413, r.Status, "%s", r.Body)
	})

	t.Run("availability", func(t *testing.T) {
		avail := func(n int) []any {
			out := make([]any, n)
			for i := range out {
				out[i] = map[string]any{"external_product_id": "p1", "available": true}
			}
			return out
		}
		require422(t, h.do(t, "PATCH", c+"/items/availability", key, map[string]any{"items": avail(1001)}), "items")
		require422(t, h.do(t, "PATCH", c+"/items/availability", key, map[string]any{"items": []any{}}), "items")
		require422(t, h.do(t, "PATCH", c+"/items/availability", key, map[string]any{}), "items")
		require422(t, h.do(t, "PATCH", c+"/items/availability", key,
			map[string]any{"items": avail(1), "snapshot_at": "yesterday"}), "snapshot_at")
		require422(t, h.do(t, "PATCH", c+"/items/availability", key,
			map[string]any{"items": avail(1), "snapshot_at": "2026-13-01T00:00:00Z"}), "snapshot_at")
		require422(t, h.do(t, "PATCH", c+"/items/availability", key,
			map[string]any{"items": []any{map[string]any{"available": true}}}), "items.0.external_product_id")
		require422(t, h.do(t, "PATCH", c+"/items/availability", key,
			map[string]any{"items": []any{map[string]any{"external_product_id": "p1", "available": "yes"}}}), "items.0.available")
		ok := h.do(t, "PATCH", c+"/items/availability", key, map[string]any{"items": avail(1000), "snapshot_at": "2026-01-02T03:04:05Z"})
		require.Equal(t, 202, ok.Status, "%s", ok.Body)
		waitJob(t, h, key, f.id, num(ok.data()["sync_job"].(map[string]any)["id"]))
	})

	t.Run("render", func(t *testing.T) {
		render := func(body map[string]any) *resp {
			if _, ok := body["items"]; !ok {
				body["items"] = []any{"p1"}
			}
			return h.do(t, "POST", c+"/render", key, body)
		}
		refs := func(n int) []any {
			out := make([]any, n)
			for i := range out {
				out[i] = "p1"
			}
			return out
		}
		require422(t, render(map[string]any{"items": []any{}}), "items")
		require422(t, h.do(t, "POST", c+"/render", key, map[string]any{}), "items")
		require422(t, render(map[string]any{"items": refs(251)}), "items")
		require422(t, render(map[string]any{"items": []any{long(256)}}), "items.0")
		require422(t, render(map[string]any{"items": []any{"p1", 7}}), "items.1")
		require422(t, render(map[string]any{"cover": map[string]any{"title": long(256)}}), "cover.title")
		require422(t, render(map[string]any{"cover": map[string]any{"description": long(5001)}}), "cover.description")
		require422(t, render(map[string]any{"cover": map[string]any{"website": "not a url"}}), "cover.website")
		require422(t, render(map[string]any{"status": "schedule"}), "status")
		require422(t, render(map[string]any{"status": "live"}), "status")
		require422(t, render(map[string]any{"template_id": 0}), "template_id")
		require422(t, render(map[string]any{"template_id": -1}), "template_id")
		require422(t, render(map[string]any{"template_id": 99}), "template_id")
		require422(t, render(map[string]any{"template_id": 3}), "template_id") // a post template
		require422(t, render(map[string]any{"template_id": 4}), "template_id") // a post template
		require422(t, render(map[string]any{"title": long(256)}), "title")
		// The limits themselves are fine: 250 items (one product, 250 times), 255-char strings.
		ok := render(map[string]any{"items": refs(250), "template_id": 2, "title": long(255),
			"cover": map[string]any{"title": long(255), "description": long(5000)}})
		require.Equal(t, 202, ok.Status, "%s", ok.Body)
		require.Equal(t, "2", ok.data()["template_id"])
		require.EqualValues(t, 250, ok.meta()["items"])
	})

	t.Run("templates", func(t *testing.T) {
		require422(t, h.do(t, "GET", "/api/v1/templates?type=video", key, nil), "type")
		require422(t, h.do(t, "GET", "/api/v1/templates?type="+long(65), key, nil), "type")
		all := h.do(t, "GET", "/api/v1/templates", key, nil)
		require.Equal(t, 200, all.Status, "%s", all.Body)
		require.Len(t, all.list(), 4)
		posts := h.do(t, "GET", "/api/v1/templates?type=post", key, nil)
		require.Equal(t, 200, posts.Status, "%s", posts.Body)
		require.Len(t, posts.list(), 2)
		for _, x := range posts.list() {
			require.Equal(t, "post", x.(map[string]any)["type"])
		}
		// A template's thumbnail has one address: other spellings of its id are 404s, not
		// more renders kept in the cache (found by a review: memory without bound).
		require.Equal(t, 200, h.getPage(t, "/template-thumbnails/2-small.jpg").Status)
		for _, alias := range []string{"02", "002", "+2", "2 "} {
			require.Equal(t, 404, h.getPage(t, "/template-thumbnails/"+alias+"-small.jpg").Status, alias)
		}
	})

	t.Run("create", func(t *testing.T) {
		create := func(body map[string]any) *resp { return h.do(t, "POST", "/api/v1/catalogs", key, body) }
		require422(t, create(map[string]any{"source": "custom"}), "name")
		require422(t, create(map[string]any{"name": ""}), "name")
		require422(t, create(map[string]any{"name": long(256)}), "name")
		require422(t, create(map[string]any{"name": "X", "source": "magento"}), "source")
		require422(t, create(map[string]any{"name": "X", "source_url": "not a url"}), "source_url")
		require422(t, create(map[string]any{"name": "X", "source_url": "https://x.example/" + long(2048)}), "source_url")
		require422(t, create(map[string]any{"name": "X", "external_id": long(256)}), "external_id")
		require422(t, create(map[string]any{"name": "X", "template_key": "no-such-template"}), "template_key")
		require422(t, create(map[string]any{"name": "X", "template_key": "article"}), "template_key") // a post template
		require422(t, create(map[string]any{"name": "X", "metadata": []any{map[string]any{"theme": "dark"}}}), "metadata.0.theme")
		require422(t, create(map[string]any{"name": "X", "metadata": []any{map[string]any{"feed": "a"}, map[string]any{"css": "x"}}}), "metadata.1.css")
		require422(t, create(map[string]any{"name": "X", "items": []any{catProduct("x", "", "t", "layout", "grid")}}), "items.0.layout")
		require422(t, create(map[string]any{"name": "X", "items": products(501)}), "items")
		// Nothing was created by the refused requests.
		l := h.do(t, "GET", "/api/v1/catalogs", key, nil)
		require.Equal(t, 200, l.Status)
		require.Len(t, l.list(), 1)
		// A template key or id that names a product template is accepted.
		for _, k := range []string{"product-grid", "2"} {
			r := create(map[string]any{"name": "T " + k, "template_key": k})
			require.Equal(t, 202, r.Status, "%s", r.Body)
			require.Equal(t, k, r.data()["catalog"].(map[string]any)["template_key"])
		}
	})
}

func TestCatalogXNotFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")
	other := h.workspace(t, "pro", "live")
	a := newCatalog(t, h, key, "A", catProduct("p1", "", "Mug"), catProduct("p2", "", "Cap"), catProduct("p3", "v1", "Shirt"))
	b := newCatalog(t, h, key, "B", catProduct("q1", "", "Pen"))

	t.Run("another workspace's catalog on every route", func(t *testing.T) {
		for _, op := range catalogRoutes(a.id, a.items["p2"], a.job) {
			require404(t, h.do(t, op.method, op.path, other, op.body), op.name)
		}
		// The other workspace has none of its own to list.
		l := h.do(t, "GET", "/api/v1/catalogs", other, nil)
		require.Equal(t, 200, l.Status)
		require.Empty(t, l.list())
	})

	t.Run("unknown catalog", func(t *testing.T) {
		for _, op := range catalogRoutes(999999, a.items["p2"], a.job) {
			require404(t, h.do(t, op.method, op.path, key, op.body), op.name)
		}
	})

	t.Run("render with items of another catalog", func(t *testing.T) {
		r := h.do(t, "POST", "/api/v1/catalogs/"+itoa(b.id)+"/render", key, map[string]any{"items": []any{itoa(a.items["p1"])}})
		require404(t, r, "item id of catalog A")
		r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(b.id)+"/render", key, map[string]any{"items": []any{"q1", "p1"}})
		require404(t, r, "external key of catalog A")
		require.Contains(t, r.JSON["error"].(map[string]any)["message"], "p1")
		r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(a.id)+"/render", key, map[string]any{"items": []any{"p3"}})
		require404(t, r, "a variant item named without its variant")
		r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(a.id)+"/render", key, map[string]any{"items": []any{"p3:v2"}})
		require404(t, r, "an unknown variant")
		r = h.do(t, "POST", "/api/v1/catalogs/"+itoa(a.id)+"/render", key, map[string]any{"items": []any{"p3:v1", itoa(a.items["p1"])}})
		require.Equal(t, 202, r.Status, "%s", r.Body)
	})

	t.Run("delete an item of another catalog", func(t *testing.T) {
		require404(t, h.do(t, "DELETE", "/api/v1/catalogs/"+itoa(b.id)+"/items/"+itoa(a.items["p1"]), key, nil), "item of A through B")
		require.Len(t, catItems(t, h, key, a.id), 3)
	})

	t.Run("sync job of another catalog", func(t *testing.T) {
		ok := h.do(t, "GET", "/api/v1/catalogs/"+itoa(a.id)+"/sync-jobs/"+itoa(a.job), key, nil)
		require.Equal(t, 200, ok.Status, "%s", ok.Body)
		require404(t, h.do(t, "GET", "/api/v1/catalogs/"+itoa(b.id)+"/sync-jobs/"+itoa(a.job), key, nil), "job of A under B")
		require404(t, h.do(t, "GET", "/api/v1/catalogs/"+itoa(a.id)+"/sync-jobs/999999", key, nil), "unknown job")
	})

	t.Run("deleted item", func(t *testing.T) {
		id := a.items["p2"]
		d := h.do(t, "DELETE", "/api/v1/catalogs/"+itoa(a.id)+"/items/"+itoa(id), key, nil)
		require.Equal(t, 200, d.Status, "%s", d.Body)
		require.NotEmpty(t, d.data()["message"])
		require404(t, h.do(t, "DELETE", "/api/v1/catalogs/"+itoa(a.id)+"/items/"+itoa(id), key, nil), "deleted twice")
		require404(t, h.do(t, "POST", "/api/v1/catalogs/"+itoa(a.id)+"/render", key, map[string]any{"items": []any{itoa(id)}}), "render by id")
		require404(t, h.do(t, "POST", "/api/v1/catalogs/"+itoa(a.id)+"/render", key, map[string]any{"items": []any{"p2"}}), "render by key")
		// Availability of the deleted item is an item error of the job.
		j := availabilityWait(t, h, key, a.id, map[string]any{"items": []any{map[string]any{"external_product_id": "p2", "available": true}}})
		require.Equal(t, "failed", j["status"])
		require.Equal(t, "item_not_found", j["errors"].([]any)[0].(map[string]any)["code"])
		g := h.do(t, "GET", "/api/v1/catalogs/"+itoa(a.id), key, nil)
		require.EqualValues(t, 2, g.data()["catalog"].(map[string]any)["items_count"])
		for _, it := range catItems(t, h, key, a.id) {
			require.NotEqual(t, "p2", it["external_item_key"])
		}
		// Upserting it again makes a new item.
		upsertWait(t, h, key, a.id, catProduct("p2", "", "Cap again"))
		items := catItems(t, h, key, a.id)
		require.Len(t, items, 3)
		require.Equal(t, "p2", items[0]["external_item_key"])
		require.NotEqual(t, id, num(items[0]["id"]))
	})

	t.Run("deleted catalog", func(t *testing.T) {
		d := h.do(t, "DELETE", "/api/v1/catalogs/"+itoa(b.id), key, nil)
		require.Equal(t, 200, d.Status, "%s", d.Body)
		for _, op := range catalogRoutes(b.id, b.items["q1"], b.job) {
			require404(t, h.do(t, op.method, op.path, key, op.body), op.name)
		}
		// A is untouched.
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/catalogs/"+itoa(a.id), key, nil).Status)
	})
}

func TestCatalogXPagination(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")

	// 26 catalogs, 26 items in the last one.
	var ids []int64
	for i := 0; i < 25; i++ {
		r := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": fmt.Sprintf("C%02d", i)})
		require.Equal(t, 202, r.Status, "%s", r.Body)
		ids = append(ids, num(r.data()["catalog"].(map[string]any)["id"]))
	}
	items := make([]map[string]any, 26)
	for i := range items {
		items[i] = catProduct(fmt.Sprintf("p%02d", i), "", fmt.Sprintf("Item %02d", i))
	}
	last := newCatalog(t, h, key, "C25", items...)
	ids = append(ids, last.id)

	t.Run("catalogs newest first, default 25, cursor", func(t *testing.T) {
		r := h.do(t, "GET", "/api/v1/catalogs", key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		require.Len(t, r.list(), 25)
		require.Equal(t, true, r.meta()["has_more"])
		for i, x := range r.list() {
			require.Equal(t, ids[len(ids)-1-i], num(x.(map[string]any)["id"]), "position %d", i)
		}
		var got []int64
		cursor := ""
		for page := 0; ; page++ {
			path := "/api/v1/catalogs?limit=10"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			r := h.do(t, "GET", path, key, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			require.LessOrEqual(t, len(r.list()), 10)
			for _, x := range r.list() {
				got = append(got, num(x.(map[string]any)["id"]))
			}
			next, _ := r.meta()["next_cursor"].(string)
			if next == "" {
				require.Equal(t, 2, page)
				break
			}
			cursor = next
		}
		require.Len(t, got, 26)
		for i := range got {
			require.Equal(t, ids[len(ids)-1-i], got[i])
		}
		one := h.do(t, "GET", "/api/v1/catalogs?limit=200", key, nil)
		require.Len(t, one.list(), 26)
		require.Equal(t, false, one.meta()["has_more"])
		require.Nil(t, one.meta()["next_cursor"])
	})

	t.Run("items newest first, default 25, cursor", func(t *testing.T) {
		r := h.do(t, "GET", "/api/v1/catalogs/"+itoa(last.id)+"/items", key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		require.Len(t, r.list(), 25)
		require.Equal(t, true, r.meta()["has_more"])
		all := catItems(t, h, key, last.id)
		require.Len(t, all, 26)
		for i := 1; i < len(all); i++ {
			require.Greater(t, num(all[i-1]["id"]), num(all[i]["id"]), "newest first")
		}
		// The request's order is the creation order: the last entry is the newest.
		require.Equal(t, "p25", all[0]["external_item_key"])
		require.Equal(t, "p00", all[25]["external_item_key"])
		var walked []string
		cursor := ""
		for {
			path := "/api/v1/catalogs/" + itoa(last.id) + "/items?limit=7"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			r := h.do(t, "GET", path, key, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			for _, x := range r.list() {
				walked = append(walked, x.(map[string]any)["external_item_key"].(string))
			}
			next, _ := r.meta()["next_cursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		require.Len(t, walked, 26)
		for i, k := range walked {
			require.Equal(t, all[i]["external_item_key"], k)
		}
	})

	t.Run("limit and cursor validation", func(t *testing.T) {
		for _, base := range []string{"/api/v1/catalogs", "/api/v1/catalogs/" + itoa(last.id) + "/items"} {
			require422(t, h.do(t, "GET", base+"?limit=0", key, nil), "limit")
			require422(t, h.do(t, "GET", base+"?limit=201", key, nil), "limit")
			require422(t, h.do(t, "GET", base+"?limit=-1", key, nil), "limit")
			require422(t, h.do(t, "GET", base+"?limit=ten", key, nil), "limit")
			require422(t, h.do(t, "GET", base+"?cursor=forged", key, nil), "cursor")
			require422(t, h.do(t, "GET", base+"?cursor="+strings.Repeat("A", 40), key, nil), "cursor")
			require422(t, h.do(t, "GET", base+"?cursor="+strings.Repeat("A", 257), key, nil), "cursor")
			require.Equal(t, 200, h.do(t, "GET", base+"?limit=1", key, nil).Status)
			require.Equal(t, 200, h.do(t, "GET", base+"?limit=200", key, nil).Status)
		}
		// A real cursor of one list is refused by another list.
		cl := h.do(t, "GET", "/api/v1/catalogs?limit=1", key, nil)
		catCursor := cl.meta()["next_cursor"].(string)
		il := h.do(t, "GET", "/api/v1/catalogs/"+itoa(last.id)+"/items?limit=1", key, nil)
		itemCursor := il.meta()["next_cursor"].(string)
		require422(t, h.do(t, "GET", "/api/v1/catalogs/"+itoa(last.id)+"/items?cursor="+url.QueryEscape(catCursor), key, nil), "cursor")
		require422(t, h.do(t, "GET", "/api/v1/catalogs?cursor="+url.QueryEscape(itemCursor), key, nil), "cursor")
		require422(t, h.do(t, "GET", "/api/v1/catalogs/"+itoa(ids[0])+"/items?cursor="+url.QueryEscape(itemCursor), key, nil), "cursor")
		// Nor does another workspace's cursor work here.
		other := h.workspace(t, "pro", "live")
		require422(t, h.do(t, "GET", "/api/v1/catalogs?cursor="+url.QueryEscape(catCursor), other, nil), "cursor")
		// A well-formed cursor whose position was changed (the MAC no longer matches) is refused.
		raw, err := base64.RawURLEncoding.DecodeString(catCursor)
		require.NoError(t, err)
		raw[8] ^= 1 // the low byte of the catalog id
		forged := base64.RawURLEncoding.EncodeToString(raw)
		require422(t, h.do(t, "GET", "/api/v1/catalogs?cursor="+url.QueryEscape(forged), key, nil), "cursor")
	})
}

func TestCatalogXSyncRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")

	t.Run("stale snapshot", func(t *testing.T) {
		f := newCatalog(t, h, key, "Snap", catProduct("p1", "", "Mug"), catProduct("p2", "", "Cap"))
		j := availabilityWait(t, h, key, f.id, map[string]any{"snapshot_at": "2026-05-01T12:00:00Z",
			"items": []any{map[string]any{"external_product_id": "p1", "available": false, "stock_quantity": 0}}})
		require.Equal(t, "completed", j["status"], "%v", j)
		// An older snapshot does not overwrite it; the same item in a newer one does.
		j = availabilityWait(t, h, key, f.id, map[string]any{"snapshot_at": "2026-05-01T11:59:59Z",
			"items": []any{map[string]any{"external_product_id": "p1", "available": true, "stock_quantity": 9},
				map[string]any{"external_product_id": "p2", "available": true, "stock_quantity": 4}}})
		require.Equal(t, "completed_with_errors", j["status"], "%v", j)
		errs := j["errors"].([]any)
		require.Len(t, errs, 1)
		e := errs[0].(map[string]any)
		require.Equal(t, "stale_snapshot", e["code"])
		require.EqualValues(t, 0, e["index"])
		require.Equal(t, "p1", e["external_product_id"])
		require.EqualValues(t, f.items["p1"], e["item_id"])
		p := j["progress"].(map[string]any)
		require.EqualValues(t, 2, p["total"])
		require.EqualValues(t, 2, p["processed"])
		require.EqualValues(t, 1, p["accepted"])
		require.EqualValues(t, 1, p["failed"])
		byKey := map[string]map[string]any{}
		for _, it := range catItems(t, h, key, f.id) {
			byKey[it["external_item_key"].(string)] = it
		}
		require.Equal(t, false, byKey["p1"]["available"])
		require.EqualValues(t, 0, byKey["p1"]["stock_quantity"])
		require.Equal(t, "2026-05-01T12:00:00.000000Z", byKey["p1"]["last_availability_synced_at"])
		require.Equal(t, true, byKey["p2"]["available"])
		require.EqualValues(t, 4, byKey["p2"]["stock_quantity"])
		g := h.do(t, "GET", "/api/v1/catalogs/"+itoa(f.id), key, nil).data()["catalog"].(map[string]any)
		require.Equal(t, "completed_with_errors", g["last_sync_status"])
		require.Contains(t, g["last_sync_error"], "newer than snapshot_at")
		// The same snapshot time again is not stale.
		j = availabilityWait(t, h, key, f.id, map[string]any{"snapshot_at": "2026-05-01T12:00:00Z",
			"items": []any{map[string]any{"external_product_id": "p1", "available": true}}})
		require.Equal(t, "completed", j["status"], "%v", j)
		// Only the stale item fails: all of a request stale is a failed job.
		j = availabilityWait(t, h, key, f.id, map[string]any{"snapshot_at": "2020-01-01T00:00:00Z",
			"items": []any{map[string]any{"external_product_id": "p1", "available": false}}})
		require.Equal(t, "failed", j["status"], "%v", j)
		require.Equal(t, "stale_snapshot", j["errors"].([]any)[0].(map[string]any)["code"])
	})

	t.Run("catalog full", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxCatalogItems = 3 })
		key := h.workspace(t, "pro", "live")
		f := newCatalog(t, h, key, "Full", catProduct("p1", "", "One"), catProduct("p2", "", "Two"))
		j := upsertWait(t, h, key, f.id, catProduct("p3", "", "Three"), catProduct("p4", "", "Four"),
			catProduct("p1", "", "One updated"), catProduct("p5", "", "Five"))
		require.Equal(t, "completed_with_errors", j["status"], "%v", j)
		p := j["progress"].(map[string]any)
		require.EqualValues(t, 4, p["total"])
		require.EqualValues(t, 4, p["processed"])
		require.EqualValues(t, 2, p["accepted"])
		require.EqualValues(t, 2, p["failed"])
		errs := j["errors"].([]any)
		require.Len(t, errs, 2)
		for i, want := range []struct {
			index int
			pid   string
		}{{1, "p4"}, {3, "p5"}} {
			e := errs[i].(map[string]any)
			require.Equal(t, "catalog_full", e["code"])
			require.EqualValues(t, want.index, e["index"])
			require.Equal(t, want.pid, e["external_product_id"])
		}
		items := catItems(t, h, key, f.id)
		require.Len(t, items, 3)
		titles := map[string]any{}
		for _, it := range items {
			titles[it["external_item_key"].(string)] = it["title"]
		}
		require.Equal(t, map[string]any{"p1": "One updated", "p2": "Two", "p3": "Three"}, titles)
		g := h.do(t, "GET", "/api/v1/catalogs/"+itoa(f.id), key, nil).data()["catalog"].(map[string]any)
		require.EqualValues(t, 3, g["items_count"])
		// A full catalog still updates; new items fail until one is deleted.
		j = upsertWait(t, h, key, f.id, catProduct("p6", "", "Six"))
		require.Equal(t, "failed", j["status"], "%v", j)
		j = upsertWait(t, h, key, f.id, catProduct("p2", "", "Two updated"))
		require.Equal(t, "completed", j["status"], "%v", j)
		require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/catalogs/"+itoa(f.id)+"/items/"+itoa(f.items["p2"]), key, nil).Status)
		j = upsertWait(t, h, key, f.id, catProduct("p6", "", "Six"))
		require.Equal(t, "completed", j["status"], "%v", j)
		require.Len(t, catItems(t, h, key, f.id), 3)
	})

	t.Run("duplicate keys in one request", func(t *testing.T) {
		f := newCatalog(t, h, key, "Dup", catProduct("p1", "", "Old"))
		j := upsertWait(t, h, key, f.id,
			catProduct("p1", "", "First", "price", "1.00"), catProduct("n1", "v1", "New A"),
			catProduct("p1", "", "Second"), catProduct("n1", "v1", "New B", "sku", "S-1"),
			catProduct("n1", "v2", "Other variant"), catProduct("p1", "", "Last"))
		require.Equal(t, "completed", j["status"], "%v", j)
		require.EqualValues(t, 6, j["progress"].(map[string]any)["accepted"])
		items := catItems(t, h, key, f.id)
		byKey := map[string]map[string]any{}
		for _, it := range items {
			k := it["external_item_key"].(string)
			require.NotContains(t, byKey, k, "one item per key")
			byKey[k] = it
		}
		require.Len(t, byKey, 3)
		require.Equal(t, "Last", byKey["p1"]["title"])
		require.Equal(t, f.items["p1"], num(byKey["p1"]["id"]), "the existing item was updated")
		require.Equal(t, "New B", byKey["n1:v1"]["title"])
		require.Equal(t, "S-1", byKey["n1:v1"]["sku"])
		require.Equal(t, "v1", byKey["n1:v1"]["external_variant_id"])
		require.Equal(t, "Other variant", byKey["n1:v2"]["title"])
		// Fields not sent keep their values; the price of "First" was overwritten by the later
		// entries' default price (catProduct sends one).
		require.Equal(t, "10.00", byKey["p1"]["price"])
		g := h.do(t, "GET", "/api/v1/catalogs/"+itoa(f.id), key, nil).data()["catalog"].(map[string]any)
		require.EqualValues(t, 3, g["items_count"])

		// Across the chunks of one job (250 items each) as well.
		list := make([]any, 0, 500)
		for i := 0; i < 500; i++ {
			list = append(list, catProduct(fmt.Sprintf("c%d", i%200), "", fmt.Sprintf("v%d", i)))
		}
		j = upsertWait(t, h, key, f.id, list...)
		require.Equal(t, "completed", j["status"], "%v", j)
		require.EqualValues(t, 500, j["progress"].(map[string]any)["accepted"])
		titles := map[string]string{}
		for _, it := range catItems(t, h, key, f.id) {
			k := it["external_item_key"].(string)
			_, dup := titles[k]
			require.False(t, dup, "one item per key: %s", k)
			titles[k] = it["title"].(string)
		}
		require.Len(t, titles, 203)
		for i := 0; i < 200; i++ {
			last := 400 + i
			if last >= 500 {
				last -= 200
			}
			require.Equal(t, fmt.Sprintf("v%d", last), titles[fmt.Sprintf("c%d", i)])
		}
		g = h.do(t, "GET", "/api/v1/catalogs/"+itoa(f.id), key, nil).data()["catalog"].(map[string]any)
		require.EqualValues(t, 203, g["items_count"])
	})

	t.Run("idempotent bulk upsert", func(t *testing.T) {
		f := newCatalog(t, h, key, "Idem")
		body := map[string]any{"items": []any{catProduct("p1", "", "Mug")}}
		path := "/api/v1/catalogs/" + itoa(f.id) + "/items:bulk-upsert"
		first := h.do(t, "POST", path, key, body, "Idempotency-Key", "a8f5e3f0-5b7c-4c61-9d1e-1f2a3b4c5d6e")
		require.Equal(t, 202, first.Status, "%s", first.Body)
		require.Empty(t, first.Header.Get("X-Idempotent-Replay"))
		job := num(first.data()["sync_job"].(map[string]any)["id"])
		waitJob(t, h, key, f.id, job)
		again := h.do(t, "POST", path, key, body, "Idempotency-Key", "a8f5e3f0-5b7c-4c61-9d1e-1f2a3b4c5d6e")
		require.Equal(t, 202, again.Status, "%s", again.Body)
		require.Equal(t, "true", again.Header.Get("X-Idempotent-Replay"))
		require.Equal(t, job, num(again.data()["sync_job"].(map[string]any)["id"]))
		require.Equal(t, first.Body, again.Body)
		// The same key with another body is refused; without a key a new job is made.
		diff := h.do(t, "POST", path, key, map[string]any{"items": []any{catProduct("p2", "", "Cap")}},
			"Idempotency-Key", "a8f5e3f0-5b7c-4c61-9d1e-1f2a3b4c5d6e")
		require.Equal(t, 422, diff.Status, "%s", diff.Body)
		fresh := h.do(t, "POST", path, key, body)
		require.Equal(t, 202, fresh.Status, "%s", fresh.Body)
		require.NotEqual(t, job, num(fresh.data()["sync_job"].(map[string]any)["id"]))
		waitJob(t, h, key, f.id, num(fresh.data()["sync_job"].(map[string]any)["id"]))
		require.Len(t, catItems(t, h, key, f.id), 1)
	})

	t.Run("test-mode keys do not see live catalogs", func(t *testing.T) {
		live, ws := h.workspaceKey(t, "pro", "live", "*")
		test := h.key(t, ws, "test", "*")
		f := newCatalog(t, h, live, "Live", catProduct("p1", "", "Mug"))
		l := h.do(t, "GET", "/api/v1/catalogs", test, nil)
		require.Equal(t, 200, l.Status, "%s", l.Body)
		require.Empty(t, l.list())
		for _, op := range catalogRoutes(f.id, f.items["p1"], f.job) {
			require404(t, h.do(t, op.method, op.path, test, op.body), "test mode: "+op.name)
		}
		// The same source and external id in test mode is another catalog.
		mk := func(k string) int64 {
			r := h.do(t, "POST", "/api/v1/catalogs", k, map[string]any{"name": "S", "source": "shopify", "external_id": "shop-9"})
			require.Equal(t, 202, r.Status, "%s", r.Body)
			return num(r.data()["catalog"].(map[string]any)["id"])
		}
		liveID, testID := mk(live), mk(test)
		require.NotEqual(t, liveID, testID)
		require.Equal(t, liveID, mk(live))
		require.Equal(t, testID, mk(test))
		tl := h.do(t, "GET", "/api/v1/catalogs", test, nil)
		require.Len(t, tl.list(), 1)
		ll := h.do(t, "GET", "/api/v1/catalogs", live, nil)
		require.Len(t, ll.list(), 2)
		// And the live catalog is intact.
		g := h.do(t, "GET", "/api/v1/catalogs/"+itoa(f.id), live, nil)
		require.Equal(t, 200, g.Status)
		require.EqualValues(t, 1, g.data()["catalog"].(map[string]any)["items_count"])
	})

	t.Run("items keep their creation order", func(t *testing.T) {
		f := newCatalog(t, h, key, "Order", catProduct("a", "", "A"), catProduct("b", "", "B"))
		upsertWait(t, h, key, f.id, catProduct("a", "", "A2"), catProduct("c", "", "C"))
		items := catItems(t, h, key, f.id)
		var keys []string
		for _, it := range items {
			keys = append(keys, it["external_item_key"].(string))
		}
		require.Equal(t, []string{"c", "b", "a"}, keys, "newest first by creation; an update does not move an item")
		require.Equal(t, "A2", items[2]["title"])
		j := h.do(t, "GET", "/api/v1/catalogs/"+itoa(f.id)+"/sync-jobs/"+itoa(f.job), key, nil).data()["sync_job"].(map[string]any)
		require.Equal(t, "create", j["type"])
		require.NotNil(t, j["started_at"])
		require.NotNil(t, j["finished_at"])
		started, err := time.Parse(time.RFC3339Nano, j["started_at"].(string))
		require.NoError(t, err)
		finished, err := time.Parse(time.RFC3339Nano, j["finished_at"].(string))
		require.NoError(t, err)
		require.False(t, finished.Before(started))
	})
}

func TestCatalogXFields(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")

	t.Run("create with a known source and external id updates the given fields", func(t *testing.T) {
		r := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop", "source": "ecwid", "external_id": "e-1",
			"source_url": "https://a.example/", "metadata": []any{map[string]any{"feed": "one"}}, "template_key": "product-grid",
			"items": []any{catProduct("p1", "", "One")}})
		require.Equal(t, 202, r.Status, "%s", r.Body)
		require.Equal(t, false, r.meta()["updated"])
		id := num(r.data()["catalog"].(map[string]any)["id"])
		waitJob(t, h, key, id, num(r.data()["sync_job"].(map[string]any)["id"]))

		// Only the name: the other fields stay; the new items are imported by an update job.
		u := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop 2", "source": "ecwid", "external_id": "e-1",
			"items": []any{catProduct("p2", "", "Two"), catProduct("p1", "", "One again")}})
		require.Equal(t, 202, u.Status, "%s", u.Body)
		require.Equal(t, true, u.meta()["updated"])
		c := u.data()["catalog"].(map[string]any)
		require.Equal(t, id, num(c["id"]))
		require.Equal(t, "Shop 2", c["name"])
		require.Equal(t, "https://a.example/", c["source_url"])
		require.Equal(t, "product-grid", c["template_key"])
		require.Equal(t, []any{map[string]any{"feed": "one"}}, c["metadata"])
		job := u.data()["sync_job"].(map[string]any)
		require.Equal(t, "update", job["type"])
		j := waitJob(t, h, key, id, num(job["id"]))
		require.Equal(t, "completed", j["status"], "%v", j)
		items := catItems(t, h, key, id)
		require.Len(t, items, 2)
		require.Equal(t, "One again", items[1]["title"])

		// Given fields change, null clears.
		u = h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop 3", "source": "ecwid", "external_id": "e-1",
			"source_url": nil, "metadata": []any{map[string]any{"feed": "two"}}, "template_key": "1"})
		require.Equal(t, 202, u.Status, "%s", u.Body)
		c = u.data()["catalog"].(map[string]any)
		require.Nil(t, c["source_url"])
		require.Equal(t, "1", c["template_key"])
		require.Equal(t, []any{map[string]any{"feed": "two"}}, c["metadata"])
		require.Equal(t, "ecwid", c["source"])
		require.Equal(t, "e-1", c["external_id"])

		// Another source with the same external id, or no external id, is another catalog.
		o := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop", "source": "shopify", "external_id": "e-1"})
		require.Equal(t, 202, o.Status, "%s", o.Body)
		require.NotEqual(t, id, num(o.data()["catalog"].(map[string]any)["id"]))
		n := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop 3"})
		require.Equal(t, 202, n.Status, "%s", n.Body)
		require.NotEqual(t, id, num(n.data()["catalog"].(map[string]any)["id"]))
		require.Equal(t, "custom", n.data()["catalog"].(map[string]any)["source"])
	})

	t.Run("absent fields keep their values, null clears them", func(t *testing.T) {
		f := newCatalog(t, h, key, "Fields", catProduct("p1", "", "Mug", "sku", "S-1", "stock_quantity", 5,
			"gallery", []any{"https://img.example/1.png"}, "categories", []any{"Cups"}, "available", true))
		upsertWait(t, h, key, f.id, map[string]any{"external_product_id": "p1", "title": "Mug 2", "sku": nil, "gallery": nil})
		it := catItems(t, h, key, f.id)[0]
		require.Equal(t, "Mug 2", it["title"])
		require.Nil(t, it["sku"])
		require.Nil(t, it["gallery"])
		require.Equal(t, []any{"Cups"}, it["categories"])
		require.EqualValues(t, 5, it["stock_quantity"])
		require.Equal(t, true, it["available"])
		require.Equal(t, "10.00", it["price"])
		require.Equal(t, "EUR", it["currency"])
		require.Equal(t, "completed", it["last_sync_status"])
		require.NotNil(t, it["last_synced_at"])
	})

	t.Run("availability matches product and variant", func(t *testing.T) {
		f := newCatalog(t, h, key, "Variants", catProduct("p1", "", "Base"), catProduct("p1", "red", "Red"), catProduct("p1", "blue", "Blue"))
		j := availabilityWait(t, h, key, f.id, map[string]any{"items": []any{
			map[string]any{"external_product_id": "p1", "external_variant_id": "red", "available": false, "stock_status": "outofstock"},
			map[string]any{"external_product_id": "p1", "external_variant_id": "green", "available": true},
			map[string]any{"external_product_id": "p1", "stock_quantity": 3, "availability": []any{map[string]any{"location": "Berlin", "qty": 3}}},
		}})
		require.Equal(t, "completed_with_errors", j["status"], "%v", j)
		errs := j["errors"].([]any)
		require.Len(t, errs, 1)
		e := errs[0].(map[string]any)
		require.Equal(t, "item_not_found", e["code"])
		require.EqualValues(t, 1, e["index"])
		require.Equal(t, "green", e["external_variant_id"])
		byKey := map[string]map[string]any{}
		for _, it := range catItems(t, h, key, f.id) {
			byKey[it["external_item_key"].(string)] = it
		}
		require.Equal(t, false, byKey["p1:red"]["available"])
		require.Equal(t, "outofstock", byKey["p1:red"]["stock_status"])
		require.NotNil(t, byKey["p1:red"]["last_availability_synced_at"])
		require.Nil(t, byKey["p1:blue"]["available"])
		require.Nil(t, byKey["p1:blue"]["last_availability_synced_at"])
		require.EqualValues(t, 3, byKey["p1"]["stock_quantity"])
		require.Equal(t, []any{map[string]any{"location": "Berlin", "qty": float64(3)}}, byKey["p1"]["availability"])
		require.Equal(t, "Base", byKey["p1"]["title"], "availability changes no product field")
	})

	t.Run("render defaults", func(t *testing.T) {
		plain := newCatalog(t, h, key, "Plain name", catProduct("p1", "", "Mug"))
		render := func(catalog int64, body map[string]any) map[string]any {
			t.Helper()
			body["items"] = []any{"p1"}
			r := h.do(t, "POST", "/api/v1/catalogs/"+itoa(catalog)+"/render", key, body)
			require.Equal(t, 202, r.Status, "%s", r.Body)
			return r.data()
		}
		d := render(plain.id, map[string]any{})
		require.Equal(t, "1", d["template_id"], "the default product template")
		b := d["book"].(map[string]any)
		require.Equal(t, "Plain name", b["name"], "no cover title: the catalog's name")
		require.Equal(t, "draft", b["status"])
		require.Equal(t, plain.id, num(b["external_catalog_id"]))
		require.NotEmpty(t, d["batch_id"])
		d = render(plain.id, map[string]any{"title": "Own title", "cover": map[string]any{"title": "Cover title"}, "status": "publish"})
		require.Equal(t, "Own title", d["book"].(map[string]any)["name"])
		require.Equal(t, "publish", d["book"].(map[string]any)["status"])
		d = render(plain.id, map[string]any{"cover": map[string]any{"title": "Cover title"}})
		require.Equal(t, "Cover title", d["book"].(map[string]any)["name"])

		r := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Grid", "template_key": "product-grid",
			"items": []any{catProduct("p1", "", "Mug")}})
		require.Equal(t, 202, r.Status, "%s", r.Body)
		grid := num(r.data()["catalog"].(map[string]any)["id"])
		waitJob(t, h, key, grid, num(r.data()["sync_job"].(map[string]any)["id"]))
		require.Equal(t, "2", render(grid, map[string]any{})["template_id"], "the catalog's template_key")
		require.Equal(t, "1", render(grid, map[string]any{"template_id": 1})["template_id"], "template_id wins")
	})
	t.Run("render links are on unless settings turn them off", func(t *testing.T) {
		f := newCatalog(t, h, key, "Links", catProduct("p1", "", "Mug", "url", "https://shop.example/mug"),
			catProduct("p2", "", "Cap", "url", "https://shop.example/cap"), catProduct("p3", "", "Pen"))
		links := func(settings map[string]any) []any {
			t.Helper()
			body := map[string]any{"items": []any{"p1", "p2", "p3"}, "template_id": 2, "status": "publish"}
			if settings != nil {
				body["settings"] = settings
			}
			r := h.do(t, "POST", "/api/v1/catalogs/"+itoa(f.id)+"/render", key, body)
			require.Equal(t, 202, r.Status, "%s", r.Body)
			rid := r.data()["book"].(map[string]any)["random_id"].(string)
			testutil.Eventually(t, 60*time.Second, 10*time.Millisecond, func() error {
				b := h.do(t, "GET", "/api/v1/books/"+rid, key, nil)
				require.NotEqual(t, "failed", b.data()["page_images_status"], "%s", b.Body)
				if st := b.data()["page_images_status"]; st != "ready" {
					return fmt.Errorf("the render's page images are %v, want ready", st)
				}
				return nil
			})
			pl := h.do(t, "GET", "/view/"+rid+"/pages", "", nil)
			require.Equal(t, 200, pl.Status, "%s", pl.Body)
			pages := pl.data()["pages"].([]any)
			require.Len(t, pages, 2)
			l, _ := pages[1].(map[string]any)["links"].([]any)
			return l
		}
		on := links(nil)
		require.Len(t, on, 2, "a product without a url has no link: %v", on)
		require.Equal(t, "https://shop.example/mug", on[0].(map[string]any)["url"])
		require.Equal(t, "https://shop.example/cap", on[1].(map[string]any)["url"])
		require.Empty(t, links(map[string]any{"auto_links_enabled": false}))
	})
}
