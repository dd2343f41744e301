package httpapi

import (
	"fmt"
	"image/color"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/internal/testutil"
)

// Wire-format promises of docs/API.md that the OpenAPI check cannot see: the timestamp layout,
// the books of every form of an upload batch, and the documented default page sizes.

var sixDecimals = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// timestamps collects every string value of a key ending in _at under v (path → value),
// leaving out webhook payloads, which are not API objects (docs/API.md, Timestamps).
func timestamps(v any, path string, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "payload" {
				continue
			}
			if s, ok := x.(string); ok && strings.HasSuffix(k, "_at") {
				out[path+"."+k] = s
				continue
			}
			timestamps(x, path+"."+k, out)
		}
	case []any:
		for i, x := range v {
			timestamps(x, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// requireSixDecimals checks every timestamp of an answer's data and returns them by path.
func requireSixDecimals(t *testing.T, r *resp, what string) map[string]string {
	t.Helper()
	got := map[string]string{}
	timestamps(r.JSON["data"], "data", got)
	for p, s := range got {
		require.Regexp(t, sixDecimals, s, "%s: %s is RFC 3339 UTC with six decimals", what, p)
	}
	return got
}

// TestTimestampsHaveSixDecimals: catalogs, catalog items, sync jobs, webhook subscriptions and
// deliveries (with their attempts) write their times as every other object does.
func TestTimestampsHaveSixDecimals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "hooked", "publish")

	// Catalogs, items, sync jobs.
	cr := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop",
		"items": []any{catProduct("p1", "", "Mug")}})
	require.Equal(t, 202, cr.Status, "%s", cr.Body)
	requireSixDecimals(t, cr, "POST /catalogs")
	cat := num(cr.data()["catalog"].(map[string]any)["id"])
	waitJob(t, h, key, cat, num(cr.data()["sync_job"].(map[string]any)["id"]))
	av := h.do(t, "PATCH", "/api/v1/catalogs/"+itoa(cat)+"/items/availability", key, map[string]any{
		"items":       []any{map[string]any{"external_product_id": "p1", "available": false}},
		"snapshot_at": "2026-05-01T14:00:00+02:00"})
	require.Equal(t, 202, av.Status, "%s", av.Body)
	job := num(av.data()["sync_job"].(map[string]any)["id"])
	waitJob(t, h, key, cat, job)

	r := h.do(t, "GET", fmt.Sprintf("/api/v1/catalogs/%d/sync-jobs/%d", cat, job), key, nil)
	got := requireSixDecimals(t, r, "sync job")
	require.Equal(t, "2026-05-01T12:00:00.000000Z", got["data.sync_job.snapshot_at"], "a whole second keeps its decimals")
	for _, f := range []string{"started_at", "finished_at", "created_at", "updated_at"} {
		require.Contains(t, got, "data.sync_job."+f)
	}
	r = h.do(t, "GET", "/api/v1/catalogs/"+itoa(cat), key, nil)
	got = requireSixDecimals(t, r, "catalog")
	for _, f := range []string{"last_synced_at", "created_at", "updated_at"} {
		require.Contains(t, got, "data.catalog."+f)
	}
	requireSixDecimals(t, h.do(t, "GET", "/api/v1/catalogs", key, nil), "catalog list")
	r = h.do(t, "GET", "/api/v1/catalogs/"+itoa(cat)+"/items", key, nil)
	got = requireSixDecimals(t, r, "catalog items")
	require.Equal(t, "2026-05-01T12:00:00.000000Z", got["data[0].last_availability_synced_at"])
	for _, f := range []string{"last_synced_at", "created_at", "updated_at"} {
		require.Contains(t, got, "data[0]."+f)
	}
	up := h.do(t, "POST", "/api/v1/catalogs/"+itoa(cat)+"/items:bulk-upsert", key, map[string]any{
		"items": []any{catProduct("p2", "", "Cup")}})
	require.Equal(t, 202, up.Status, "%s", up.Body)
	requireSixDecimals(t, up, "bulk upsert")

	// Webhook subscriptions and deliveries.
	rc := newReceiver(t, "whsec_0123456789abcdef")
	sub := h.do(t, "POST", "/api/v1/webhook-subscriptions", key, map[string]any{"name": "crm", "provider": "generic",
		"target_url": rc.url(), "event_types": []string{"flipbook_opened"}})
	require.Equal(t, 201, sub.Status, "%s", sub.Body)
	got = requireSixDecimals(t, sub, "subscription")
	require.Contains(t, got, "data.created_at")
	require.Contains(t, got, "data.updated_at")
	id := itoa(num(sub.data()["id"]))
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", collectBody(rid, map[string]any{"type": "session_started", "page_number": 1})).Status)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(1, "the delivery arrived"))
	var deliveries *resp
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		deliveries = h.do(t, "GET", "/api/v1/webhook-subscriptions/"+id+"/deliveries", key, nil)
		if l := deliveries.list(); len(l) != 1 || l[0].(map[string]any)["status"] != "succeeded" {
			return fmt.Errorf("the delivery is not recorded as succeeded: %s", deliveries.Body)
		}
		return nil
	})
	got = requireSixDecimals(t, deliveries, "deliveries")
	for _, f := range []string{"data[0].created_at", "data[0].delivered_at", "data[0].history[0].attempted_at"} {
		require.Contains(t, got, f)
	}
	requireSixDecimals(t, h.do(t, "GET", "/api/v1/webhook-subscriptions", key, nil), "subscription list")
	test := h.do(t, "POST", "/api/v1/webhook-subscriptions/"+id+"/test", key, nil)
	require.Equal(t, 202, test.Status, "%s", test.Body)
	requireSixDecimals(t, test, "test delivery")
}

// TestUploadStatusCarriesBooks: every form of a batch carries the books it produced
// (docs/DECISIONS.md, Uploads), so polling the status ends with the book.
func TestUploadStatusCarriesBooks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "pro", "live")
	body, ctype := multipartBody([]filePart{{"files", "cover.png", solidPNG(200, 300, color.RGBA{20, 60, 200, 255})}}, nil)
	up := h.do(t, "POST", "/api/v1/books", key, body, "Content-Type", ctype)
	require.Equal(t, 202, up.Status, "%s", up.Body)
	batch := up.data()["batch_id"].(string)
	rid := up.data()["book_ids"].([]any)[0].(string)
	h.waitBatch(t, key, batch)

	status := h.do(t, "GET", "/api/v1/books/uploads/"+batch+"/status", key, nil)
	require.Equal(t, 200, status.Status, "%s", status.Body)
	require.Equal(t, "completed", status.data()["status"])
	books, ok := status.data()["books"].([]any)
	require.True(t, ok, "books is present: %s", status.Body)
	require.Len(t, books, 1)
	b := books[0].(map[string]any)
	require.Equal(t, rid, b["random_id"])
	require.Equal(t, "ready", b["page_images_status"])
	require.EqualValues(t, 1, b["page_count"])
	require.NotNil(t, b["thumbnail_url"])
	get := h.do(t, "GET", "/api/v1/batches/"+batch, key, nil)
	require.Equal(t, get.data(), status.data(), "the same object as GET /batches/{id}")

	// A deleted book leaves the list; the field stays.
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil).Status)
	status = h.do(t, "GET", "/api/v1/books/uploads/"+batch+"/status", key, nil)
	books, ok = status.data()["books"].([]any)
	require.True(t, ok, "%s", status.Body)
	require.Empty(t, books)
}

var documentedDefault = regexp.MustCompile(`\(default (\d+)\)`)

// TestListDefaultLimits: every list operation's documented default page size (its limit
// parameter's description, hence the OpenAPI document and the tool schema) is the one it uses,
// and every cursor-paginated list reports it in meta.limit.
func TestListDefaultLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "listed", "publish")
	cr := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop"})
	require.Equal(t, 202, cr.Status, "%s", cr.Body)
	cat := itoa(num(cr.data()["catalog"].(map[string]any)["id"]))
	rc := newReceiver(t, "whsec_0123456789abcdef")
	sub := h.do(t, "POST", "/api/v1/webhook-subscriptions", key, map[string]any{"name": "crm", "provider": "generic",
		"target_url": rc.url(), "event_types": []string{"flipbook_opened"}})
	require.Equal(t, 201, sub.Status, "%s", sub.Body)
	wh := itoa(num(sub.data()["id"]))

	// Every operation with a page size, called without one.
	paths := map[string]string{
		"books.list":                   "/books",
		"subscribers.list":             "/subscribers",
		"analytics.book_view_events":   "/analytics/book-view-events?book_id=" + rid,
		"analytics.interaction_events": "/analytics/interaction-events?book_id=" + rid,
		"analytics.audit_log":          "/analytics/audit-log?book_id=" + rid,
		"analytics.readers":            "/analytics/readers?book_id=" + rid,
		"catalogs.list":                "/catalogs",
		"catalogs.items":               "/catalogs/" + cat + "/items",
		"webhooks.deliveries":          "/webhook-subscriptions/" + wh + "/deliveries",
		"webhooks.sample_events":       "/webhook-subscriptions/sample-events",
		"search":                       "/search?q=listed",
	}
	var seen []string
	for _, op := range h.svc.Operations() {
		if op.Internal || op.Base != APIBase {
			continue
		}
		for _, p := range op.Params {
			metaKey := map[string]string{"limit": "limit", "pagination[per_page]": "per_page"}[p.Name]
			if metaKey == "" || p.In != api.InQuery {
				continue
			}
			seen = append(seen, op.ID)
			path, ok := paths[op.ID]
			require.True(t, ok, "%s has a page size: add it to this test", op.ID)
			m := documentedDefault.FindStringSubmatch(p.Desc)
			require.NotNil(t, m, "%s: the description of %s gives the default: %q", op.ID, p.Name, p.Desc)
			want, _ := strconv.Atoi(m[1])
			r := h.do(t, "GET", APIBase+path, key, nil)
			require.Equal(t, 200, r.Status, "%s: %s", op.ID, r.Body)
			require.EqualValues(t, want, r.meta()[metaKey], "%s: meta.%s without a %s", op.ID, metaKey, p.Name)
			if op.ResponseMeta != nil && op.ResponseMeta.Properties["next_cursor"] != nil {
				require.Contains(t, op.ResponseMeta.Required, "limit", "%s: a cursor list declares meta.limit", op.ID)
			}
		}
	}
	sort.Strings(seen)
	want := make([]string, 0, len(paths))
	for id := range paths {
		want = append(want, id)
	}
	sort.Strings(want)
	require.Equal(t, want, seen, "the operations with a page size")

	// A limit given is the one reported.
	r := h.do(t, "GET", APIBase+"/catalogs/"+cat+"/items?limit=7", key, nil)
	require.EqualValues(t, 7, r.meta()["limit"])
	r = h.do(t, "GET", APIBase+"/webhook-subscriptions/"+wh+"/deliveries?limit=3", key, nil)
	require.EqualValues(t, 3, r.meta()["limit"])
}
