package httpapi

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/internal/testutil"
)

// Bulk settings batches and the summary over HTTP (spec §3.4, §4.1, §4.1.1; docs/DECISIONS.md
// "Bulk settings").

const bulkPath = "/api/v1/books/bulk-settings/batches"

// bulkBooks is the books list of a batch: each id with the revision expected.
func bulkBooks(ids []string, revs ...string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		rev := "1"
		if i < len(revs) {
			rev = revs[i]
		}
		out[i] = map[string]any{"id": id, "settings_revision": rev}
	}
	return out
}

// makeBooks creates n draft books straight through the actors (faster than the editor
// operation); it returns their random ids in creation order.
func (h *harness) makeBooks(tb testing.TB, key string, n int, name string) []string {
	tb.Helper()
	tenant := h.principal(tb, key).Tenant
	ids := make([]string, n)
	for i := range ids {
		b, err := h.svc.Actors.CreateBook(tenant, newBook(fmt.Sprintf("%s %d", name, i), "editor", "draft"))
		require.NoError(tb, err)
		ids[i] = b.RandomID
	}
	return ids
}

// waitBulk polls a batch until it has finished and returns it.
func (h *harness) waitBulk(tb testing.TB, key, id string) map[string]any {
	tb.Helper()
	var b map[string]any
	testutil.Eventually(tb, 60*time.Second, 10*time.Millisecond, func() error {
		r := h.do(tb, "GET", bulkPath+"/"+id, key, nil)
		require.Equal(tb, 200, r.Status, "%s", r.Body)
		b = r.data()
		if st := b["status"]; st == "queued" || st == "running" {
			return fmt.Errorf("the bulk settings batch %s is still %v: %v", id, st, b["progress"])
		}
		return nil
	})
	return b
}

func bulkItems(b map[string]any) []map[string]any {
	var out []map[string]any
	for _, x := range b["items"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

func bulkCounts(b map[string]any) map[string]any {
	return b["progress"].(map[string]any)["counts"].(map[string]any)
}

func (h *harness) revision(tb testing.TB, key, rid string) string {
	tb.Helper()
	r := h.do(tb, "GET", "/api/v1/books/"+rid, key, nil)
	require.Equal(tb, 200, r.Status, "%s", r.Body)
	return r.data()["settings_revision"].(string)
}

func TestBulkSettingsBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	ids := []string{h.konva(t, key, "one", "draft"), h.konva(t, key, "two", "publish"), h.konva(t, key, "three", "draft")}

	// The client reads the books (every book starts at revision 1) ...
	list := h.do(t, "GET", "/api/v1/books?limit=10", key, nil)
	require.Equal(t, 200, list.Status)
	for _, x := range list.list() {
		require.Equal(t, "1", x.(map[string]any)["settings_revision"])
	}
	// ... then someone changes book two with PUT: its revision moves on.
	put := h.do(t, "PUT", "/api/v1/books/"+ids[1], key, map[string]any{"status": "publish", "title": "two, edited"})
	require.Equal(t, 200, put.Status, "%s", put.Body)
	require.Equal(t, "2", put.data()["settings_revision"])
	// Subscribers and embed domains do not change it.
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": ids[0], "email": "a@example.com"}).Status)
	require.Equal(t, 200, h.do(t, "POST", "/api/v1/books/"+ids[0]+"/embed-domains", key, map[string]any{"domain": "example.com"}).Status)
	require.Equal(t, "1", h.revision(t, key, ids[0]))

	settings := map[string]any{
		"title": "Spring range", "description": "All of spring", "allow_fullscreen": false, "flip_sound": false,
		"copyright_enabled": true, "share_social_media": false, "downloadable_pdf": "spread",
		"pdf_privacy_status": "private", "animation_type": "slide", "mobile_animation_type": "fade",
		"background": "#102030", "image_display": "repeat", "watermark": "DRAFT", "magic_link_message": "Hello",
		"magic_link_error_message": "Sorry", "made_with_badge_enabled": true, "open_fullscreen_by_default": true,
		"pdf_password": "s3cret", "eod_enabled": false, "eod_lists": []any{"ignored@example.com"},
	}
	r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids), "settings": settings})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	require.Equal(t, map[string]any{}, r.meta())
	b := r.data()
	require.Regexp(t, `^bsb_[0-9A-Za-z]{20}$`, b["id"])
	require.Equal(t, "queued", b["status"])
	require.Nil(t, b["started_at"])
	require.Nil(t, b["finished_at"])
	require.Nil(t, b["cancelled_at"])
	require.Nil(t, b["retry_of_batch_id"])
	require.Equal(t, settings["title"], b["settings"].(map[string]any)["title"])
	require.Equal(t, map[string]any{"finished": "0", "percent": float64(0), "total": float64(3),
		"counts": map[string]any{"pending": float64(3), "succeeded": float64(0), "failed": float64(0), "cancelled": float64(0)}}, b["progress"])
	for i, it := range bulkItems(b) {
		require.Equal(t, map[string]any{"book_id": ids[i], "settings_revision": "1", "status": "pending", "error": nil,
			"new_settings_revision": nil, "current_settings_revision": nil, "finished_at": nil}, it)
	}
	id := b["id"].(string)

	b = h.waitBulk(t, key, id)
	require.Equal(t, "completed_with_errors", b["status"])
	require.NotNil(t, b["started_at"])
	require.NotNil(t, b["finished_at"])
	require.Nil(t, b["cancelled_at"])
	require.Equal(t, map[string]any{"finished": "3", "percent": float64(100), "total": float64(3),
		"counts": map[string]any{"pending": float64(0), "succeeded": float64(2), "failed": float64(1), "cancelled": float64(0)}}, b["progress"])
	items := bulkItems(b)
	for _, i := range []int{0, 2} {
		require.Equal(t, "succeeded", items[i]["status"], "%v", items[i])
		require.Equal(t, "2", items[i]["new_settings_revision"])
		require.Nil(t, items[i]["error"])
		require.NotNil(t, items[i]["finished_at"])
	}
	conflict := items[1]
	require.Equal(t, "failed", conflict["status"])
	require.Equal(t, "2", conflict["current_settings_revision"])
	require.Nil(t, conflict["new_settings_revision"])
	e := conflict["error"].(map[string]any)
	require.Equal(t, "settings_revision_conflict", e["code"])
	require.Contains(t, e["message"], `"2"`, "names the current revision")
	require.Contains(t, e["message"], `"1"`, "names the expected revision")

	// The settings landed on the books that matched, mapped like PUT /books/{book}.
	got := h.do(t, "GET", "/api/v1/books/"+ids[0], key, nil).data()
	require.Equal(t, "Spring range", got["name"])
	require.Equal(t, "All of spring", got["description"])
	require.Equal(t, "draft", got["status"], "the status is left alone")
	require.Equal(t, "2", got["settings_revision"])
	require.Equal(t, map[string]any{
		"background": "#102030", "downloadable": true, "fullscreen_enabled": false, "sound_enabled": false,
		"copyright_enabled": true, "share_social_media": false, "privacy": "private", "image_display": "repeat",
		"animation_type": "slide", "mobile_animation_type": "fade", "eod_enabled": true, "domains_enabled": true,
	}, got["settings"], "eod_enabled stays derived from the access list")
	stored, err := h.svc.Store.GetBook(h.principal(t, key).Tenant, ids[0])
	require.NoError(t, err)
	require.Equal(t, "spread", stored.Extra.DownloadMode)
	require.Equal(t, "DRAFT", *stored.Extra.Watermark)
	require.Equal(t, "Hello", *stored.Extra.MagicLinkMessage)
	require.True(t, stored.Extra.MadeWithBadgeEnabled)
	require.True(t, stored.Extra.OpenFullscreenByDefault)
	require.NotEmpty(t, stored.Extra.PDFPasswordHash)
	two := h.do(t, "GET", "/api/v1/books/"+ids[1], key, nil).data()
	require.Equal(t, "two, edited", two["name"], "the conflicting book is untouched")
	require.Equal(t, "2", two["settings_revision"])

	// A finished batch cannot be cancelled.
	r = h.do(t, "DELETE", bulkPath+"/"+id, key, nil)
	require.Equal(t, 409, r.Status)
	require.Equal(t, api.TypeConflict, r.errType())

	// Retry: a new batch of the failed book, expecting the revision the conflict reported.
	r = h.do(t, "POST", bulkPath+"/"+id+"/retry", key, nil)
	require.Equal(t, 202, r.Status, "%s", r.Body)
	retry := r.data()
	require.NotEqual(t, id, retry["id"])
	require.Equal(t, id, retry["retry_of_batch_id"])
	require.Equal(t, b["settings"], retry["settings"], "the same settings")
	require.Len(t, bulkItems(retry), 1)
	require.Equal(t, ids[1], bulkItems(retry)[0]["book_id"])
	require.Equal(t, "2", bulkItems(retry)[0]["settings_revision"])
	retry = h.waitBulk(t, key, retry["id"].(string))
	require.Equal(t, "completed", retry["status"])
	require.Equal(t, "3", bulkItems(retry)[0]["new_settings_revision"])
	require.Equal(t, "Spring range", h.do(t, "GET", "/api/v1/books/"+ids[1], key, nil).data()["name"])
	require.Equal(t, "publish", h.do(t, "GET", "/api/v1/books/"+ids[1], key, nil).data()["status"])
	// The original batch is unchanged; a batch without failures cannot be retried.
	require.Equal(t, b, h.do(t, "GET", bulkPath+"/"+id, key, nil).data())
	r = h.do(t, "POST", bulkPath+"/"+retry["id"].(string)+"/retry", key, nil)
	require.Equal(t, 409, r.Status, "%s", r.Body)
	require.Equal(t, api.TypeConflict, r.errType())

	// A retried book that changed again since the report conflicts again.
	r = h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids[:1], "1"), "settings": map[string]any{"flip_sound": true}})
	require.Equal(t, 202, r.Status)
	first := h.waitBulk(t, key, r.data()["id"].(string))
	require.Equal(t, "failed", first["status"], "all items failed")
	require.Equal(t, "2", bulkItems(first)[0]["current_settings_revision"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+ids[0], key, map[string]any{"status": "draft"}).Status)
	r = h.do(t, "POST", bulkPath+"/"+first["id"].(string)+"/retry", key, nil)
	require.Equal(t, 202, r.Status)
	again := h.waitBulk(t, key, r.data()["id"].(string))
	require.Equal(t, "failed", again["status"])
	require.Equal(t, "2", bulkItems(again)[0]["settings_revision"])
	require.Equal(t, "3", bulkItems(again)[0]["current_settings_revision"])

	// downloadable_pdf "false" turns downloads off.
	r = h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids[:1], "3"), "settings": map[string]any{"downloadable_pdf": "false", "background": nil}})
	require.Equal(t, 202, r.Status)
	require.Equal(t, "completed", h.waitBulk(t, key, r.data()["id"].(string))["status"])
	got = h.do(t, "GET", "/api/v1/books/"+ids[0], key, nil).data()
	require.Equal(t, false, got["settings"].(map[string]any)["downloadable"])
	require.Nil(t, got["settings"].(map[string]any)["background"], "null clears, as in PUT")
	require.Equal(t, "4", got["settings_revision"])

	// A deleted book fails with book_not_found.
	doomed := h.konva(t, key, "doomed", "draft")
	r = h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks([]string{doomed}), "settings": map[string]any{"title": "x"}})
	require.Equal(t, 202, r.Status)
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+doomed, key, nil).Status)
	gone := h.waitBulk(t, key, r.data()["id"].(string))
	if it := bulkItems(gone)[0]; it["status"] == "failed" { // the delete may come after the item
		require.Equal(t, "book_not_found", it["error"].(map[string]any)["code"])
	}

	// Another workspace sees none of it.
	other := h.workspace(t, "company", "live")
	for _, c := range []struct{ method, path string }{{"GET", bulkPath + "/" + id}, {"DELETE", bulkPath + "/" + id},
		{"POST", bulkPath + "/" + id + "/retry"}, {"GET", bulkPath + "/bsb_nope"}, {"DELETE", bulkPath + "/bsb_nope"},
		{"POST", bulkPath + "/bsb_nope/retry"}} {
		r := h.do(t, c.method, c.path, other, nil)
		require.Equal(t, 404, r.Status, "%s %s: %s", c.method, c.path, r.Body)
		require.Equal(t, api.TypeNotFound, r.errType())
	}
	// Nor does the same workspace's test mode.
	r = h.do(t, "GET", bulkPath+"/"+id, h.key(t, h.principal(t, key).Workspace.ID, "test", "*"), nil)
	require.Equal(t, 404, r.Status)
}

func TestBulkSettingsValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	ids := h.makeBooks(t, key, 2, "v")
	otherKey := h.workspace(t, "company", "live")
	foreign := h.makeBooks(t, otherKey, 1, "theirs")[0]
	ok := map[string]any{"title": "x"}
	long := func(n int) string { return strings.Repeat("a", n) }

	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"no books", map[string]any{"settings": ok}, "books"},
		{"no settings", map[string]any{"books": bulkBooks(ids)}, "settings"},
		{"empty settings", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{}}, "settings"},
		{"only unknown settings", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"colour": "red"}}, "settings"},
		{"settings not an object", map[string]any{"books": bulkBooks(ids), "settings": []any{}}, "settings"},
		{"empty books", map[string]any{"books": []any{}, "settings": ok}, "books"},
		{"too many books", map[string]any{"books": bulkBooks(make([]string, 1001)), "settings": ok}, "books"},
		{"book without id", map[string]any{"books": []any{map[string]any{"settings_revision": "1"}}, "settings": ok}, "books.0.id"},
		{"book without revision", map[string]any{"books": []any{map[string]any{"id": ids[0]}}, "settings": ok}, "books.0.settings_revision"},
		{"revision too long", map[string]any{"books": bulkBooks(ids, "1", long(65)), "settings": ok}, "books.1.settings_revision"},
		{"duplicate book", map[string]any{"books": bulkBooks([]string{ids[0], ids[1], ids[0]}), "settings": ok}, "books.2.id"},
		{"unknown book", map[string]any{"books": bulkBooks([]string{ids[0], "nope"}), "settings": ok}, "books.1.id"},
		{"another workspace's book", map[string]any{"books": bulkBooks([]string{foreign}), "settings": ok}, "books.0.id"},
		{"animation type", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"animation_type": "spin"}}, "settings.animation_type"},
		{"mobile animation type", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"mobile_animation_type": "spin"}}, "settings.mobile_animation_type"},
		{"downloadable_pdf boolean", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"downloadable_pdf": true}}, "settings.downloadable_pdf"},
		{"downloadable_pdf value", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"downloadable_pdf": "pages"}}, "settings.downloadable_pdf"},
		{"image_display", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"image_display": "tile"}}, "settings.image_display"},
		{"flip_sound type", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"flip_sound": "yes"}}, "settings.flip_sound"},
		{"empty title", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"title": ""}}, "settings.title"},
		{"title", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"title": long(256)}}, "settings.title"},
		{"description", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"description": long(50001)}}, "settings.description"},
		{"background", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"background": long(2049)}}, "settings.background"},
		{"watermark", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"watermark": long(2049)}}, "settings.watermark"},
		{"pdf_password", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"pdf_password": long(256)}}, "settings.pdf_password"},
		{"pdf_privacy_status", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"pdf_privacy_status": long(51)}}, "settings.pdf_privacy_status"},
		{"magic_link_message", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"magic_link_message": long(1001)}}, "settings.magic_link_message"},
		{"magic_link_error_message", map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"magic_link_error_message": long(1001)}}, "settings.magic_link_error_message"},
	}
	for _, c := range cases {
		r := h.do(t, "POST", bulkPath, key, c.body)
		require.Equal(t, 422, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, api.TypeValidation, r.errType(), c.name)
		require.Contains(t, r.details(), c.field, "%s: %s", c.name, r.Body)
	}
	r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks([]string{foreign}), "settings": ok})
	require.Contains(t, r.details()["books.0.id"].([]any)[0], "no such book", "a foreign book reads as unknown")
	// Limits hold at their edges.
	edge := map[string]any{"title": long(255), "description": long(50000), "background": "https://img.example/" + long(2048-len("https://img.example/")), "watermark": long(2048),
		"pdf_password": long(255), "pdf_privacy_status": long(50), "magic_link_message": long(1000),
		"magic_link_error_message": long(1000), "downloadable_pdf": "single", "image_display": "center/cover",
		"animation_type": "flick-through", "mobile_animation_type": "cut"}
	r = h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids, "1", long(64)), "settings": edge})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	b := h.waitBulk(t, key, r.data()["id"].(string))
	require.Equal(t, "completed_with_errors", b["status"], "the second book expected a revision it never had")

	// Scopes and credentials.
	read := h.key(t, ws, "live", "books:read")
	none := h.key(t, ws, "live", "subscribers:read")
	id := r.data()["id"].(string)
	for _, c := range []struct {
		method, path, key string
		body              any
		want              int
	}{
		{"POST", bulkPath, read, map[string]any{"books": bulkBooks(ids), "settings": ok}, 403},
		{"DELETE", bulkPath + "/" + id, read, nil, 403},
		{"POST", bulkPath + "/" + id + "/retry", read, nil, 403},
		{"GET", bulkPath + "/" + id, read, nil, 200},
		{"POST", "/api/v1/books/bulk-settings/summary", read, map[string]any{"book_ids": ids}, 200},
		{"GET", bulkPath + "/" + id, none, nil, 403},
		{"POST", "/api/v1/books/bulk-settings/summary", none, map[string]any{"book_ids": ids}, 403},
		{"POST", bulkPath, "", map[string]any{"books": bulkBooks(ids), "settings": ok}, 401},
		{"GET", bulkPath + "/" + id, "", nil, 401},
	} {
		r := h.do(t, c.method, c.path, c.key, c.body)
		require.Equal(t, c.want, r.Status, "%s %s: %s", c.method, c.path, r.Body)
		if c.want == 403 {
			require.Equal(t, api.TypeMissingScope, r.errType())
		}
	}
}

// TestBulkSettingsQueuedCancelAndLimit holds the supervisor so batches stay queued: the tenth
// unfinished batch is the last one allowed, a queued batch is cancelled at once, and queued
// batches run after a restart.
func TestBulkSettingsQueuedCancelAndLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	ids := h.makeBooks(t, key, 3, "q")
	require.NoError(t, h.svc.Actors.PauseBulk(true))
	var batches []string
	for i := 0; i < 10; i++ {
		r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids[i%3 : i%3+1]), "settings": map[string]any{"title": fmt.Sprint("t", i)}})
		require.Equal(t, 202, r.Status, "%s", r.Body)
		batches = append(batches, r.data()["id"].(string))
	}
	r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"title": "one too many"}})
	require.Equal(t, 409, r.Status, "%s", r.Body)
	require.Equal(t, api.TypeConflict, r.errType())
	require.Contains(t, r.JSON["error"].(map[string]any)["message"], "10 unfinished")
	// Another workspace has its own allowance.
	other := h.workspace(t, "company", "live")
	r = h.do(t, "POST", bulkPath, other, map[string]any{"books": bulkBooks(h.makeBooks(t, other, 1, "o")), "settings": map[string]any{"title": "mine"}})
	require.Equal(t, 202, r.Status, "%s", r.Body)

	// Cancel a queued batch: nothing was applied, every item is cancelled.
	r = h.do(t, "DELETE", bulkPath+"/"+batches[9], key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	c := r.data()
	require.Equal(t, "cancelled", c["status"])
	require.NotNil(t, c["cancelled_at"])
	require.NotNil(t, c["finished_at"])
	require.Nil(t, c["started_at"])
	require.Equal(t, map[string]any{"pending": float64(0), "succeeded": float64(0), "failed": float64(0), "cancelled": float64(1)}, bulkCounts(c))
	require.Equal(t, "cancelled", bulkItems(c)[0]["status"])
	require.Equal(t, c, h.do(t, "GET", bulkPath+"/"+batches[9], key, nil).data(), "the cancel is stored")
	require.Equal(t, 409, h.do(t, "DELETE", bulkPath+"/"+batches[9], key, nil).Status, "already cancelled")
	r = h.do(t, "POST", bulkPath+"/"+batches[9]+"/retry", key, nil)
	require.Equal(t, 409, r.Status, "a cancelled batch has no failed items: %s", r.Body)
	r = h.do(t, "POST", bulkPath+"/"+batches[0]+"/retry", key, nil)
	require.Equal(t, 409, r.Status, "a queued batch cannot be retried: %s", r.Body)
	// The cancel freed a place.
	r = h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"title": "fits"}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	batches[9] = r.data()["id"].(string)
	require.Equal(t, "queued", h.do(t, "GET", bulkPath+"/"+batches[0], key, nil).data()["status"])

	// Queued batches are durable: a restart runs them (the pause is not). Every batch expected
	// revision 1, so of the batches naming a book exactly one changed it; the others conflict.
	h.restart(t)
	wins := map[string]int{}
	for i, id := range batches {
		b := h.waitBulk(t, key, id)
		require.Contains(t, []string{"completed", "failed", "completed_with_errors"}, b["status"], "batch %d", i)
		for _, it := range bulkItems(b) {
			switch it["status"] {
			case "succeeded":
				wins[it["book_id"].(string)]++
			case "failed":
				require.Equal(t, "settings_revision_conflict", it["error"].(map[string]any)["code"])
			default:
				t.Fatalf("batch %d: item %v", i, it)
			}
		}
	}
	for _, rid := range ids {
		require.Equal(t, 1, wins[rid], "book %s changed by exactly one batch", rid)
		require.Equal(t, "2", h.revision(t, key, rid))
	}
}

// TestBulkSettingsCancelRunning cancels a batch held mid-run: the items applied stay applied,
// those not started are cancelled, and the answer comes once the runner stopped.
func TestBulkSettingsCancelRunning(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	ids := h.makeBooks(t, key, 20, "c")
	const held = 5
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	releaseAll := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseAll) // before the harness stops (it waits for the runner), even on failure
	h.svc.Actors.SetBulkHook(func(_ string, index int) {
		if index == held {
			once.Do(func() { close(reached) })
			<-release
		}
	})
	defer h.svc.Actors.SetBulkHook(nil)
	r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"flip_sound": false}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	id := r.data()["id"].(string)
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the runner never reached the held item")
	}
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if counts := bulkCounts(h.do(t, "GET", bulkPath+"/"+id, key, nil).data()); counts["succeeded"] != float64(held) {
			return fmt.Errorf("the items before the held one are not applied: counts %v, want %d succeeded", counts, held)
		}
		return nil
	})
	b := h.do(t, "GET", bulkPath+"/"+id, key, nil).data()
	require.Equal(t, "running", b["status"])
	require.Equal(t, "5", b["progress"].(map[string]any)["finished"])
	require.Equal(t, float64(25), b["progress"].(map[string]any)["percent"])

	done := make(chan *resp, 1)
	go func() { done <- h.do(t, "DELETE", bulkPath+"/"+id, key, nil) }()
	// The cancel is recorded at once (the batch shows cancelled_at while its runner stops) ...
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if b := h.do(t, "GET", bulkPath+"/"+id, key, nil).data(); b["cancelled_at"] == nil {
			return fmt.Errorf("the cancel is not recorded: status %v, no cancelled_at", b["status"])
		}
		return nil
	})
	select {
	case <-done:
		t.Fatal("the cancel answered before the runner stopped")
	case <-time.After(50 * time.Millisecond):
	}
	// ... and answered when the runner has stopped.
	releaseAll()
	r = <-done
	require.Equal(t, 200, r.Status, "%s", r.Body)
	b = r.data()
	require.Equal(t, "cancelled", b["status"])
	require.Equal(t, map[string]any{"pending": float64(0), "succeeded": float64(held), "failed": float64(0), "cancelled": float64(len(ids) - held)}, bulkCounts(b))
	require.Equal(t, map[string]any{"finished": "20", "percent": float64(100), "total": float64(20), "counts": bulkCounts(b)}, b["progress"])
	for i, it := range bulkItems(b) {
		want, rev := "succeeded", "2"
		if i >= held {
			want, rev = "cancelled", "1"
		}
		require.Equal(t, want, it["status"], "item %d", i)
		require.Equal(t, rev, h.revision(t, key, ids[i]), "book %d: applied settings stay, the others were not touched", i)
	}
	require.Equal(t, b, h.do(t, "GET", bulkPath+"/"+id, key, nil).data())
	require.Equal(t, 409, h.do(t, "DELETE", bulkPath+"/"+id, key, nil).Status)
}

func TestBulkSettingsSummary(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	ids := []string{h.konva(t, key, "alpha", "draft"), h.konva(t, key, "beta", "draft"), h.konva(t, key, "gamma", "draft")}
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+ids[1], key, map[string]any{"status": "draft", "animation_type": "fade",
		"downloadable_pdf": true, "pdf_password": "pw"}).Status)
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": ids[2], "email": "b@example.com"}).Status)
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": ids[2], "email": "example.org", "type": "domain"}).Status)

	r := h.do(t, "POST", "/api/v1/books/bulk-settings/summary", key, map[string]any{"book_ids": ids})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, map[string]any{"count": float64(3)}, r.meta())
	d := r.data()
	books := d["books"].([]any)
	require.Len(t, books, 3)
	first := books[0].(map[string]any)
	require.Equal(t, ids[0], first["id"])
	require.Equal(t, "alpha", first["name"])
	require.Equal(t, "1", first["settings_revision"])
	require.Equal(t, "2", books[1].(map[string]any)["settings_revision"])
	require.Equal(t, map[string]any{
		"allow_fullscreen": true, "animation_type": "flip", "mobile_animation_type": nil, "background": nil,
		"copyright_enabled": false, "description": nil, "downloadable_pdf": "false", "eod_enabled": false,
		"eod_lists": []any{}, "flip_sound": true, "image_display": nil, "made_with_badge_enabled": false,
		"magic_link_error_message": nil, "magic_link_message": nil, "open_fullscreen_by_default": false,
		"pdf_password": false, "pdf_privacy_status": nil, "share_social_media": true, "title": "alpha", "watermark": nil,
	}, first["settings"], "every key of the bulk settings object")
	third := books[2].(map[string]any)["settings"].(map[string]any)
	require.Equal(t, true, third["eod_enabled"])
	require.Equal(t, []any{"b@example.com", "example.org"}, third["eod_lists"])
	s := d["settings"].(map[string]any)
	common, differing := s["common"].(map[string]any), s["differing"].(map[string]any)
	require.Equal(t, []any{"alpha", "beta", "gamma"}, differing["title"])
	require.Equal(t, []any{"flip", "fade"}, differing["animation_type"])
	require.Equal(t, []any{"false", "full"}, differing["downloadable_pdf"])
	require.Equal(t, []any{false, true}, differing["pdf_password"])
	require.Equal(t, []any{false, true}, differing["eod_enabled"])
	require.Equal(t, true, common["allow_fullscreen"])
	require.Equal(t, false, common["copyright_enabled"])
	require.Contains(t, common, "background")
	require.Nil(t, common["background"])
	require.Len(t, common, 20-len(differing), "every key is common or differing")
	require.Len(t, differing, 6, "%v", differing)

	// One book: everything is common.
	r = h.do(t, "POST", "/api/v1/books/bulk-settings/summary", key, map[string]any{"book_ids": ids[:1]})
	require.Equal(t, 200, r.Status)
	require.Len(t, r.data()["settings"].(map[string]any)["common"], 20)
	require.Empty(t, r.data()["settings"].(map[string]any)["differing"])

	// Unknown and foreign ids are 404s naming the book; duplicates and sizes are 422s.
	other := h.workspace(t, "company", "live")
	foreign := h.konva(t, other, "theirs", "draft")
	for _, bad := range []string{"nope", foreign} {
		r = h.do(t, "POST", "/api/v1/books/bulk-settings/summary", key, map[string]any{"book_ids": []string{ids[0], bad}})
		require.Equal(t, 404, r.Status, "%s", r.Body)
		require.Equal(t, api.TypeNotFound, r.errType())
		require.Contains(t, r.JSON["error"].(map[string]any)["message"], bad)
	}
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"book_ids": []string{ids[0], ids[1], ids[0]}}, "book_ids.2"},
		{map[string]any{"book_ids": []string{}}, "book_ids"},
		{map[string]any{}, "book_ids"},
		{map[string]any{"book_ids": make([]string, 1001)}, "book_ids"},
		{map[string]any{"book_ids": []any{1}}, "book_ids.0"},
	} {
		r = h.do(t, "POST", "/api/v1/books/bulk-settings/summary", key, c.body)
		require.Equal(t, 422, r.Status, "%s", r.Body)
		require.Contains(t, r.details(), c.field, "%s", r.Body)
	}
}

// TestBulkSettingsThousandBooks runs a batch of the most books a batch may hold and reports
// how long it takes; every book changes exactly once.
func TestBulkSettingsThousandBooks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	ids := h.makeBooks(t, key, 1000, "k")
	start := time.Now()
	r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"title": "Thousand", "animation_type": "zoom"}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	created := time.Since(start)
	id := r.data()["id"].(string)
	tenant := h.principal(t, key).Tenant
	testutil.Eventually(t, 120*time.Second, 10*time.Millisecond, func() error { // the record alone: polling the API would compete for the CPU
		rec, err := h.svc.Store.BulkBatch(tenant, id)
		require.NoError(t, err)
		if rec.Active() {
			return fmt.Errorf("the batch has not finished: %s", rec.Status)
		}
		return nil
	})
	total := time.Since(start)
	b := h.do(t, "GET", bulkPath+"/"+id, key, nil).data()
	require.Equal(t, "completed", b["status"])
	started, _ := time.Parse(time.RFC3339Nano, b["started_at"].(string))
	finished, _ := time.Parse(time.RFC3339Nano, b["finished_at"].(string))
	t.Logf("1,000 books: created in %s (202), run %s (started_at → finished_at), %s from the request until finished",
		created.Round(time.Millisecond), finished.Sub(started).Round(time.Millisecond), total.Round(time.Millisecond))
	sum := h.do(t, "POST", "/api/v1/books/bulk-settings/summary", key, map[string]any{"book_ids": ids})
	require.Equal(t, 200, sum.Status)
	common := sum.data()["settings"].(map[string]any)["common"].(map[string]any)
	require.Equal(t, "Thousand", common["title"])
	require.Equal(t, "zoom", common["animation_type"])
	for _, x := range sum.data()["books"].([]any) {
		require.Equal(t, "2", x.(map[string]any)["settings_revision"])
	}
}

// checkBulkResponses checks a success of every bulk settings operation (and their errors)
// against the served OpenAPI document and returns the operations covered.
func checkBulkResponses(t *testing.T) map[string]bool {
	h := newHarness(t, nil)
	c := newOpenAPIChecker(t, h)
	key := h.workspace(t, "company", "live")
	ids := []string{h.konva(t, key, "a", "draft"), h.konva(t, key, "b", "draft")}
	c.check(t, 200, "GET", "/api/v1/books/"+ids[0], key, nil)
	c.check(t, 200, "POST", "/api/v1/books/bulk-settings/summary", key, map[string]any{"book_ids": ids})
	r := c.check(t, 202, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids, "1", "7"),
		"settings": map[string]any{"title": "T", "downloadable_pdf": "full"}})
	id := r.data()["id"].(string)
	h.waitBulk(t, key, id)
	c.check(t, 200, "GET", bulkPath+"/"+id, key, nil)
	c.check(t, 409, "DELETE", bulkPath+"/"+id, key, nil)
	retry := c.check(t, 202, "POST", bulkPath+"/"+id+"/retry", key, nil)
	h.waitBulk(t, key, retry.data()["id"].(string))
	require.NoError(t, h.svc.Actors.PauseBulk(true))
	q := c.check(t, 202, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids[:1]), "settings": map[string]any{"flip_sound": false}})
	c.check(t, 200, "DELETE", bulkPath+"/"+q.data()["id"].(string), key, nil)
	require.NoError(t, h.svc.Actors.PauseBulk(false))
	c.check(t, 404, "GET", bulkPath+"/bsb_none", key, nil)
	c.check(t, 404, "POST", "/api/v1/books/bulk-settings/summary", key, map[string]any{"book_ids": []string{"none"}})
	c.check(t, 422, "POST", bulkPath, key, map[string]any{"books": bulkBooks([]string{"none"}), "settings": map[string]any{"title": "T"}})
	c.check(t, 409, "POST", bulkPath+"/"+retry.data()["id"].(string)+"/retry", key, nil)
	return c.covered
}

func TestBulkSettingsOpenAPI(t *testing.T) {
	t.Parallel()
	covered := checkBulkResponses(t)
	for _, op := range []string{"bulk_settings_create", "bulk_settings_get", "bulk_settings_cancel", "bulk_settings_retry", "bulk_settings_summary"} {
		require.True(t, covered[op], op)
	}
}

// TestBulkBatchKeepsNoPDFPassword: a bulk settings batch keeps its pdf_password ("stored only
// as a salted hash", "never returned") only hashed, and shows whether one is set: the batch
// record, its 202 answer and GET batch held it in the clear (found by a review).
func TestBulkBatchKeepsNoPDFPassword(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	reader := h.key(t, ws, "live", "books:read")
	ids := h.makeBooks(t, key, 2, "locked")
	const secret = "Tr0ub4dor-and-3-horses"

	r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids), "settings": map[string]any{"pdf_password": secret}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	id := r.data()["id"].(string)
	b := h.waitBulk(t, key, id)
	require.Equal(t, "completed", b["status"])

	got := h.do(t, "GET", bulkPath+"/"+id, reader, nil)
	require.Equal(t, 200, got.Status, "%s", got.Body)
	require.NotContains(t, string(got.Body), secret, "GET batch (books:read) returns the PDF password in the clear")
	require.NotContains(t, string(r.Body), secret, "the 202 answer echoes the PDF password")
	for _, kv := range tenantValues(t, h, ws, 'l') {
		require.NotContains(t, string(kv), secret, "a Pebble record holds the PDF password in the clear")
	}
}

// TestBulkBatchKeepsNoAccessLists: eod_lists and eod_enabled are "accepted and ignored" by a
// bulk settings batch, and not kept either: the batch stored them as given, so the addresses a
// client put there stayed in Pebble and in GET batch after customers/redact erased that
// customer (found by a review).
func TestBulkBatchKeepsNoAccessLists(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	const ann, shop = "ann.bulk@example.com", "acme.myshopify.com"
	ids := h.makeBooks(t, key, 1, "gated")
	r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks(ids),
		"settings": map[string]any{"title": "Spring", "eod_lists": []any{ann}}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	id := r.data()["id"].(string)
	h.waitBulk(t, key, id)

	h.shopifyCall(t, key, 202, shopifyBody("customers/redact", shop, map[string]any{"email": ann}, 0))
	got := h.do(t, "GET", bulkPath+"/"+id, key, nil)
	require.Equal(t, 200, got.Status, "%s", got.Body)
	require.NotContains(t, string(got.Body), ann, "GET batch still returns the erased customer's address")
	for _, kv := range tenantValues(t, h, ws, 'l') {
		require.NotContains(t, string(kv), ann, "a Pebble record still names the erased customer")
	}
}
