package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/internal/testutil"
)

// bookFields and settingsFields are spec §2.1 exactly, plus settings_revision (spec §4.1).
var (
	bookFields = []string{"batch_id", "billing_expires_at", "created_at", "description", "embed_code",
		"expires_at", "external_catalog_id", "id", "name", "page_count", "page_images_status", "preview_url",
		"published_date", "random_id", "settings", "settings_revision", "status", "thumbnail_url", "updated_at"}
	settingsFields = []string{"animation_type", "background", "copyright_enabled", "domains_enabled",
		"downloadable", "eod_enabled", "fullscreen_enabled", "image_display", "mobile_animation_type",
		"privacy", "share_social_media", "sound_enabled"}
)

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestBookShape(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.PublicURL = "https://books.example.com/" })
	key := h.workspace(t, "company", "live")
	r := h.do(t, "POST", "/api/v1/books/konva", key, konvaBody("Spring catalogue", "", 3))
	require.Equal(t, 201, r.Status)
	b := r.data()
	require.Equal(t, bookFields, keys(b))
	require.Equal(t, settingsFields, keys(b["settings"].(map[string]any)))
	rid := b["random_id"].(string)
	require.Regexp(t, `^[0-9A-Za-z]{20}$`, rid)
	require.Equal(t, "Spring catalogue", b["name"])
	require.Equal(t, "draft", b["status"])
	require.Equal(t, float64(3), b["page_count"])
	require.Equal(t, "ready", b["page_images_status"])
	require.Equal(t, "https://books.example.com/view/"+rid, b["preview_url"])
	require.Contains(t, b["embed_code"], `<iframe src="https://books.example.com/view/`+rid+`"`)
	require.True(t, strings.HasPrefix(b["thumbnail_url"].(string), "https://books.example.com/files/"+rid+"/"))
	require.Nil(t, b["published_date"])
	require.Equal(t, false, b["settings"].(map[string]any)["downloadable"], "konva books have no PDF to download")
	_, err := time.Parse(time.RFC3339Nano, b["created_at"].(string))
	require.NoError(t, err)
	// GET returns the same object.
	require.Equal(t, b, h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data())
	// Numeric ids are not accepted as {book}.
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+itoa(int64(b["id"].(float64))), key, nil).Status)

	// Random ids of many books are distinct.
	seen := map[string]bool{rid: true}
	for i := 0; i < 20; i++ {
		id := h.konva(t, key, "x", "")
		require.False(t, seen[id])
		seen[id] = true
	}
}

func TestUpdateBookSettings(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "orig", "draft")
	r := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{
		"status": "publish", "title": "New title", "description": "About it", "slug": "new-title",
		"allow_fullscreen": false, "flip_sound": false, "copyright_enabled": true, "downloadable_pdf": true,
		"share_social_media": false, "animation_type": "slide", "mobile_animation_type": "fade",
		"background": "#112233", "image_display": "repeat", "pdf_privacy_status": "private",
		"pdf_password": "s3cret", "watermark": "CONFIDENTIAL", "magic_link_message": "hi",
		"eod_enabled": true, "domains_enabled": true, "domain_lists": []any{"a.com"}, "eod_lists": []any{},
	})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	b := r.data()
	s := b["settings"].(map[string]any)
	require.Equal(t, "New title", b["name"])
	require.Equal(t, "About it", b["description"])
	require.Equal(t, "publish", b["status"])
	require.NotNil(t, b["published_date"], "publishing stamps published_date")
	require.Equal(t, map[string]any{
		"background": "#112233", "downloadable": true, "fullscreen_enabled": false, "sound_enabled": false,
		"copyright_enabled": true, "share_social_media": false, "privacy": "private", "image_display": "repeat",
		"animation_type": "slide", "mobile_animation_type": "fade", "eod_enabled": false, "domains_enabled": false,
	}, s, "read-only eod_enabled/domains_enabled are ignored")
	require.NotContains(t, string(r.Body), "s3cret", "the PDF password is never returned")
	stored, err := h.svc.Store.GetBook(h.principal(t, key).Tenant, rid)
	require.NoError(t, err)
	require.Equal(t, "new-title", *stored.Extra.Slug)
	require.Equal(t, "CONFIDENTIAL", *stored.Extra.Watermark)
	require.NotEmpty(t, stored.Extra.PDFPasswordHash)

	// Only given fields change; null clears nullable ones.
	r = h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "background": nil, "description": nil})
	require.Equal(t, 200, r.Status)
	require.Nil(t, r.data()["settings"].(map[string]any)["background"])
	require.Nil(t, r.data()["description"])
	require.Equal(t, "New title", r.data()["name"])
	require.Equal(t, "slide", r.data()["settings"].(map[string]any)["animation_type"])
	require.Equal(t, b["published_date"], r.data()["published_date"], "re-publishing keeps the date")
	require.Greater(t, r.data()["updated_at"].(string), b["created_at"].(string))
}

func (h *harness) principal(tb testing.TB, key string) *api.Principal {
	p, aerr := h.svc.caller.Authenticate(key, "127.0.0.1")
	require.Nil(tb, aerr)
	return p
}

func TestScheduleAndExpiry(t *testing.T) {
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "timed", "draft")
	status := func() string { return h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()["status"].(string) }
	statusIs := func(want, what string) func() error {
		return func() error {
			if st := status(); st != want {
				return fmt.Errorf("%s: book status %q, want %q", what, st, want)
			}
			return nil
		}
	}

	// The times below are set before the PUT that carries them: they leave room for it on a
	// loaded machine (the first PUT of a book spawns its actor; under -race and load it took
	// over 400 ms), or the date has passed when the PUT is handled (published at once; an
	// expiry refused).
	at := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	r := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "schedule", "published_date": at})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "schedule", r.data()["status"])
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, statusIs("publish", "the scheduled book publishes at published_date"))

	exp := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	r = h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "expires_at": exp})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "publish", r.data()["status"])
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, statusIs("draft", "expires_at passing unpublishes"))
	b := h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()
	require.NotNil(t, b["expires_at"], "the expiry stays visible")
	// Listing by status follows the transitions.
	require.Len(t, h.do(t, "GET", "/api/v1/books?filter[status]=draft", key, nil).list(), 1)
	require.Empty(t, h.do(t, "GET", "/api/v1/books?filter[status]=publish", key, nil).list())

	// A schedule whose date has passed publishes at once.
	r = h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "schedule", "published_date": "2020-01-01T00:00:00Z", "expires_at": nil})
	require.Equal(t, 200, r.Status)
	require.Equal(t, "publish", r.data()["status"])

	// A schedule pending over a restart still fires. The date leaves room for the PUT and the
	// restart (Pebble and DuckDB closed and opened again): had it passed before the service is
	// back, the book would publish at start and not be seen pending.
	at = time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "schedule", "published_date": at}).Status)
	h.restart(t)
	require.Equal(t, "schedule", status())
	testutil.Eventually(t, 15*time.Second, 10*time.Millisecond, statusIs("publish", "the schedule fires after a restart"))
}

func TestListPaginationAndSorting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	names := []string{"delta", "Alpha", "charlie", "bravo", "echo", "alpha two", "Foxtrot"}
	var rids []string
	for i, n := range names {
		st := []string{"draft", "publish"}[i%2]
		rids = append(rids, h.konva(t, key, n, st))
	}
	// Touch one so updated_at order differs from created_at order.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rids[0], key, map[string]any{"status": "draft"}).Status)

	walk := func(query string, limit int) []map[string]any {
		var out []map[string]any
		cursor := ""
		for page := 0; page < 20; page++ {
			q := "/api/v1/books?limit=" + itoa(int64(limit)) + query
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			r := h.do(t, "GET", q, key, nil)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			for _, b := range r.list() {
				out = append(out, b.(map[string]any))
			}
			m := r.meta()
			if !m["has_more"].(bool) {
				require.Nil(t, m["next_cursor"])
				return out
			}
			cursor = m["next_cursor"].(string)
		}
		t.Fatal("too many pages")
		return nil
	}
	field := func(bs []map[string]any, f string) []string {
		out := make([]string, len(bs))
		for i, b := range bs {
			out[i] = b[f].(string)
		}
		return out
	}
	// Default: newest first; every book exactly once whatever the page size.
	for _, limit := range []int{1, 2, 3, 200} {
		got := field(walk("", limit), "random_id")
		want := append([]string(nil), rids...)
		for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
			want[i], want[j] = want[j], want[i]
		}
		require.Equal(t, want, got, "limit %d", limit)
	}
	require.Equal(t, []string{"Alpha", "alpha two", "bravo", "charlie", "delta", "echo", "Foxtrot"}, field(walk("&sort=name", 2), "name"))
	require.Equal(t, []string{"Foxtrot", "echo", "delta", "charlie", "bravo", "alpha two", "Alpha"}, field(walk("&sort=-name", 3), "name"))
	require.Equal(t, rids, field(walk("&sort=created_at", 2), "random_id"))
	upd := field(walk("&sort=-updated_at", 2), "random_id")
	require.Equal(t, rids[0], upd[0], "the touched book is the most recently updated")
	st := field(walk("&sort=status", 2), "status")
	require.True(t, sort.StringsAreSorted(st), "%v", st)
	st = field(walk("&sort=-status", 4), "status")
	require.Equal(t, "publish", st[0])
	pub := walk("&filter[status]=publish", 1)
	require.Len(t, pub, 3)
	for _, b := range pub {
		require.Equal(t, "publish", b["status"])
	}
	require.Equal(t, []string{"Alpha", "alpha two"}, field(walk("&filter[name]=ALPHA&sort=name", 1), "name"))
	require.Empty(t, walk("&filter[name]=zulu", 5))

	// A cursor only works with the query it came from.
	r := h.do(t, "GET", "/api/v1/books?limit=1&sort=name", key, nil)
	c := r.meta()["next_cursor"].(string)
	require.Equal(t, 422, h.do(t, "GET", "/api/v1/books?limit=1&sort=-name&cursor="+c, key, nil).Status)
	other := h.workspace(t, "company", "live")
	require.Equal(t, 422, h.do(t, "GET", "/api/v1/books?limit=1&sort=name&cursor="+c, other, nil).Status)
	// A forged cursor: one character in the middle changed (the last characters of unpadded
	// base64 may carry ignored bits, so changing them could leave the bytes as they were).
	forged := []byte(c)
	if forged[len(c)/2] == 'A' {
		forged[len(c)/2] = 'B'
	} else {
		forged[len(c)/2] = 'A'
	}
	require.Equal(t, 422, h.do(t, "GET", "/api/v1/books?limit=1&sort=name&cursor="+string(forged), key, nil).Status)
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books?limit=5&sort=name&cursor="+c, key, nil).Status, "the limit may change")
}

func TestDeleteBookRemovesFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "bye", "publish")
	dir := filepath.Join(h.cfg.DataDir, "blobs", rid)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 3, "two pages and a thumbnail")
	thumb := h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()["thumbnail_url"].(string)

	r := h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "The flipbook was deleted.", r.data()["message"])
	require.Equal(t, rid, r.meta()["book_id"])
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+rid, key, nil).Status)
	require.Equal(t, 404, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "draft"}).Status)
	require.Equal(t, 404, h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil).Status)
	require.Empty(t, h.do(t, "GET", "/api/v1/books", key, nil).list())
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "the book's files are gone")
	res, err := http.Get(thumb)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 404, res.StatusCode)
}

func TestFilesAreCacheable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	body := konvaBody("thumb", "", 1)
	body["thumbnail"] = pngBase64(10, 10)
	r := h.do(t, "POST", "/api/v1/books/konva", key, body)
	require.Equal(t, 201, r.Status)
	u := r.data()["thumbnail_url"].(string)
	require.True(t, strings.HasSuffix(u, ".png"), "a given thumbnail is kept as sent: %s", u)
	res, err := http.Get(u)
	require.NoError(t, err)
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "image/png", res.Header.Get("Content-Type"))
	require.Equal(t, "public, max-age=31536000, s-maxage=3600, immutable", res.Header.Get("Cache-Control"))
	etag := res.Header.Get("ETag")
	require.NotEmpty(t, etag)
	require.NotEmpty(t, data)
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("If-None-Match", etag)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 304, res.StatusCode)
	for _, bad := range []string{"/files/" + "x/..%2F..%2Fstate", "/files/nope/nope.png", "/files/.x/y"} {
		res, err := http.Get(h.base + bad)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, 404, res.StatusCode, bad)
	}
}

func TestBookActorsPassivate(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BookIdle = 150 * time.Millisecond })
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "idle", "draft")
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "draft", "title": "one"}).Status)
	require.EqualValues(t, 1, h.svc.Actors.LiveBookActors())
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		if n := h.svc.Actors.LiveBookActors(); n != 0 {
			return fmt.Errorf("the idle book actor has not stopped: %d book actors live", n)
		}
		return nil
	})
	r := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "title": "two"})
	require.Equal(t, 200, r.Status)
	require.Equal(t, "two", r.data()["name"])
	require.Equal(t, "publish", r.data()["status"], "the new actor reloaded the record")
}

// raceHarness is a harness without the page-text and renditions backfills (they would spend
// the CPU the racing requests need).
func raceHarness(t *testing.T) *harness {
	return newHarness(t, func(c *Config) { c.NoPageText, c.NoRenditions = true, true })
}

// rdo is h.do for goroutines: a transport failure is reported with t.Errorf (nil answer).
func rdo(t *testing.T, h *harness, method, path, key string, body any, headers ...string) *resp {
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			t.Errorf("marshal: %v", err)
			return nil
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), tbKey{}, t), method, h.base+path, rd)
	if err != nil {
		t.Errorf("request: %v", err)
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := h.http.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return nil
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Errorf("%s %s: read: %v", method, path, err)
		return nil
	}
	out := &resp{Status: res.StatusCode, Header: res.Header, Body: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			out.JSON, _ = v.(map[string]any)
		}
	}
	return out
}

// A list filtered by status holds only books of that status, whatever PUTs run meanwhile.
// storage.ListBooks walks the status index in the iterator's snapshot but returns each book as
// GetBook reads it now (cache or latest Pebble state): a book whose status changed in between
// was returned under a filter it no longer matched (found by a review; it failed within 2-7 s
// each time, so 8 s of racing here).
func TestListStatusFilterWhileStatusesChange(t *testing.T) {
	h := raceHarness(t)
	key := h.workspace(t, "company", "live")
	const books = 120
	rids := make([]string, books)
	for i := range rids {
		r := h.do(t, "POST", "/api/v1/books/konva", key, konvaBody("b"+strconv.Itoa(i), "draft", 1))
		require.Equal(t, 201, r.Status, "%s", r.Body)
		rids[i] = r.data()["random_id"].(string)
	}
	const writers, listers = 6, 2
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var puts atomic.Int64
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; ; n++ {
				st := "publish"
				if n%2 == 1 {
					st = "draft"
				}
				for i := w; i < books; i += writers {
					select {
					case <-stop:
						return
					default:
					}
					rdo(t, h, "PUT", "/api/v1/books/"+rids[i], key, map[string]any{"status": st})
					puts.Add(1)
				}
			}
		}(w)
	}
	// Up to 30 s of lists (a few thousand), ending at the first book of the wrong status.
	var lists, wrong atomic.Int64
	var first atomic.Value
	deadline := time.Now().Add(8 * time.Second)
	var lw sync.WaitGroup
	for l := 0; l < listers; l++ {
		lw.Add(1)
		go func(l int) {
			defer lw.Done()
			for it := l; wrong.Load() == 0 && time.Now().Before(deadline); it++ {
				want := []string{"draft", "publish"}[it%2]
				r := rdo(t, h, "GET", "/api/v1/books?limit=200&filter[status]="+want, key, nil)
				if r == nil || r.Status != 200 {
					continue
				}
				lists.Add(1)
				for _, b := range r.list() {
					if m := b.(map[string]any); m["status"] != want {
						wrong.Add(1)
						first.CompareAndSwap(nil, fmt.Sprintf("GET /books?filter[status]=%s returned book %v with status %v", want, m["random_id"], m["status"]))
					}
				}
			}
		}(l)
	}
	lw.Wait()
	close(stop)
	wg.Wait()
	t.Logf("%d lists while %d PUTs ran", lists.Load(), puts.Load())
	if wrong.Load() > 0 {
		t.Fatalf("%s (%d such books)", first.Load(), wrong.Load())
	}
}
