package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/analytics"
	"flipbook/api"
)

// aggFixture is the fixed event set of the aggregate tests, posted through the email gate and
// /collect. Times are offsets in seconds from base (01:00 UTC yesterday, so every event but
// session S6's falls on that day; S6 is two days earlier).
//
// Book A "Guide" (4 pages, tracked link news-1, embed domain partner.example):
//
//	S1 Ann  direct      start@0; seg p1 4000@4, p2 6000@10, p3 2000@12, p2 1000@13;
//	                    link x@14; download@15; end@16
//	S2 Ann  direct      start@100; seg p1 3000@103, p4 5000@108; link x@109
//	S3 Bob  news-1      start@200; seg p1 2000@202, p2 8001@210; download@211
//	S4 anon embedded    start@300; seg p1 1000@301; link y@302
//	S5 anon direct      start@400 (nothing else: a bounce)
//	S6 Ann  direct      start@-172800; seg p1 6000@-172794, p2 3001@-172791
//
// Book B "Other" (2 pages):
//
//	S7 Ann  direct      start@500; seg p1 5000@505, p2 7000@520
//	S8 anon direct      start@600; seg p1 500@601
type aggFixture struct {
	h          *harness
	key        string
	ws         int64
	bookA      string
	bookB      string
	base       time.Time
	ann, bob   int64
	link       int64
	viewEvents map[string]int64 // session → view event id
}

const (
	urlX = "https://a.example/x"
	urlY = "https://b.example/y"
)

func newAggFixture(t *testing.T) *aggFixture {
	h := newHarness(t, nil)
	fx := &aggFixture{h: h}
	fx.key, fx.ws = h.workspaceKey(t, "company", "live", "*")
	create := func(title string, pages int) string {
		r := h.do(t, "POST", "/api/v1/books/konva", fx.key, konvaBody(title, "publish", pages))
		require.Equal(t, 201, r.Status, "%s", r.Body)
		return r.data()["random_id"].(string)
	}
	fx.bookA, fx.bookB = create("Guide", 4), create("Other", 2)
	tl := h.do(t, "POST", "/api/v1/books/"+fx.bookA+"/tracked-links", fx.key, map[string]any{"name": "news", "slug": "news-1"})
	require.Equal(t, 201, tl.Status, "%s", tl.Body)
	fx.link = int64(tl.data()["id"].(float64))
	require.Equal(t, 200, h.do(t, "POST", "/api/v1/books/"+fx.bookA+"/embed-domains", fx.key, map[string]any{"domain": "partner.example"}).Status)

	y := time.Now().UTC().AddDate(0, 0, -1)
	fx.base = time.Date(y.Year(), y.Month(), y.Day(), 1, 0, 0, 0, time.UTC)
	token := func(book, email, session string) (string, int64) {
		r := h.do(t, "POST", "/view/"+book+"/access", "", map[string]any{"email": email, "session_id": session})
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.data()["reader_token"].(string), int64(r.data()["viewer_id"].(float64))
	}
	annA, ann := token(fx.bookA, "ann@example.com", "S1")
	bobA, bob := token(fx.bookA, "bob@example.com", "S3")
	annB, _ := token(fx.bookB, "ann@example.com", "S7")
	fx.ann, fx.bob = ann, bob

	ev := func(typ string, page, ms, at int) map[string]any {
		e := map[string]any{"type": typ, "occurred_at": fx.at(at)}
		if page > 0 {
			e["page_number"] = page
		}
		if typ == "page_segment_completed" {
			e["active_ms"] = ms
		}
		return e
	}
	click := func(u string, at int) map[string]any {
		return map[string]any{"type": "link_clicked", "url": u, "occurred_at": fx.at(at)}
	}
	post := func(book, session string, extra map[string]any, events ...map[string]any) {
		b := collectBody(book, events...)
		b["session_id"] = session
		for k, v := range extra {
			b[k] = v
		}
		r := h.do(t, "POST", "/collect", "", b)
		require.Equal(t, 202, r.Status, "%s", r.Body)
	}
	const seg, start = "page_segment_completed", "session_started"
	post(fx.bookA, "S1", map[string]any{"reader_token": annA},
		ev(start, 1, 0, 0), ev(seg, 1, 4000, 4), ev(seg, 2, 6000, 10), ev(seg, 3, 2000, 12), ev(seg, 2, 1000, 13),
		click(urlX, 14), ev("document_downloaded", 0, 0, 15), ev("session_ended", 0, 0, 16))
	post(fx.bookA, "S2", map[string]any{"reader_token": annA},
		ev(start, 1, 0, 100), ev(seg, 1, 3000, 103), ev(seg, 4, 5000, 108), click(urlX, 109))
	post(fx.bookA, "S3", map[string]any{"reader_token": bobA, "tracked_link": "news-1"},
		ev(start, 1, 0, 200), ev(seg, 1, 2000, 202), ev(seg, 2, 8001, 210), ev("document_downloaded", 0, 0, 211))
	post(fx.bookA, "S4", map[string]any{"source_host": "www.partner.example"},
		ev(start, 1, 0, 300), ev(seg, 1, 1000, 301), click(urlY, 302))
	post(fx.bookA, "S5", nil, ev(start, 1, 0, 400))
	post(fx.bookA, "S6", map[string]any{"reader_token": annA},
		ev(start, 1, 0, -172800), ev(seg, 1, 6000, -172794), ev(seg, 2, 3001, -172791))
	post(fx.bookB, "S7", map[string]any{"reader_token": annB},
		ev(start, 1, 0, 500), ev(seg, 1, 5000, 505), ev(seg, 2, 7000, 520))
	post(fx.bookB, "S8", nil, ev(start, 1, 0, 600), ev(seg, 1, 500, 601))
	h.logged(t)

	fx.viewEvents = map[string]int64{}
	for _, book := range []string{fx.bookA, fx.bookB} {
		for _, v := range h.walk(t, fx.key, "/api/v1/analytics/book-view-events?book_id="+book, 500) {
			fx.viewEvents[v["session_id"].(string)] = int64(v["id"].(float64))
		}
	}
	require.Len(t, fx.viewEvents, 8)
	return fx
}

func (fx *aggFixture) at(sec int) string {
	return fx.base.Add(time.Duration(sec) * time.Second).Format(time.RFC3339)
}

// get calls an analytics operation and returns the decoded body (200 required).
func (fx *aggFixture) get(t *testing.T, path string) map[string]any {
	t.Helper()
	r := fx.h.do(t, "GET", "/api/v1/analytics/"+path, fx.key, nil)
	require.Equal(t, 200, r.Status, "%s: %s", path, r.Body)
	return r.JSON
}

// normalize makes a response deterministic for a golden file: book ids, view event ids,
// reader page ids, viewer ids and timestamps (as offsets from base; server times as "<server
// time>") are replaced by names.
func (fx *aggFixture) normalize(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = fx.normalize(e, k)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fx.normalize(e, key)
		}
		return out
	case string:
		switch x {
		case fx.bookA:
			return "<book A>"
		case fx.bookB:
			return "<book B>"
		}
		if ts, err := time.Parse(time.RFC3339Nano, x); err == nil {
			if key == "recorded_at" || key == "updated_at" {
				return "<server time>"
			}
			return fmt.Sprintf("<base%+gs>", ts.Sub(fx.base).Seconds())
		}
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			if s := fx.nameOf(n, key); s != "" {
				return s
			}
		}
		for _, p := range []struct {
			id   int64
			name string
		}{{fx.ann, "ann"}, {fx.bob, "bob"}} {
			if x == "viewer-"+strconv.FormatInt(p.id, 10) {
				return "viewer-<" + p.name + ">"
			}
		}
		return x
	case float64:
		if s := fx.nameOf(int64(x), key); s != "" {
			return s
		}
		return x
	}
	return v
}

func (fx *aggFixture) nameOf(n int64, key string) string {
	switch key {
	case "id", "view_event_id":
		for s, id := range fx.viewEvents {
			if id == n {
				return "<view event " + s + ">"
			}
		}
		if key == "id" && n > 1<<20 {
			return "<hash>"
		}
	case "viewer_id":
		switch n {
		case fx.ann:
			return "<ann>"
		case fx.bob:
			return "<bob>"
		}
	}
	return ""
}

// golden compares a normalized response with testdata/analytics/<name>.golden.json
// (golden_test.go; -update rewrites it).
func (fx *aggFixture) golden(t *testing.T, name string, body map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(fx.normalize(body, "")))
	checkGolden(t, "analytics/"+name+".golden.json", buf.Bytes())
}

// rowsBy indexes a list by one field.
func rowsBy(body map[string]any, field string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range body["data"].([]any) {
		m := r.(map[string]any)
		out[fmt.Sprint(m[field])] = m
	}
	return out
}

func fields(m map[string]any, names ...string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = m[n]
	}
	return out
}

// TestAnalyticsAggregates checks the six aggregate operations against the fixed event set of
// aggFixture: the key numbers computed by hand here (docs/ANALYTICS.md defines each), and the
// whole responses against golden files.
func TestAnalyticsAggregates(t *testing.T) {
	t.Parallel()
	fx := newAggFixture(t)
	A, B := fx.bookA, fx.bookB
	day := fx.base.Format(time.DateOnly)
	ann, bob := float64(fx.ann), float64(fx.bob)

	t.Run("page-performance", func(t *testing.T) {
		body := fx.get(t, "page-performance?book_id="+A)
		fx.golden(t, "page_performance", body)
		pages := body["data"].([]any)
		require.Len(t, pages, 4, "every page of the book")
		cols := []string{"id", "page_number", "unique_readers", "total_segments", "total_active_ms", "avg_active_ms_per_reader",
			"avg_active_ms_per_segment", "median_active_ms_per_segment"}
		// p1: 4000, 3000, 2000, 1000, 6000 from Ann (3 sessions), Bob, S4: 3 readers.
		// p2: 6000, 1000, 8001, 3001 from Ann and Bob; median (3001+6000)/2 = 4500.5 → 4501.
		want := [][]any{
			{1.0, 1.0, 3.0, 5.0, 16000.0, 5333.0, 3200.0, 3000.0},
			{2.0, 2.0, 2.0, 4.0, 18002.0, 9001.0, 4501.0, 4501.0},
			{3.0, 3.0, 1.0, 1.0, 2000.0, 2000.0, 2000.0, 2000.0},
			{4.0, 4.0, 1.0, 1.0, 5000.0, 5000.0, 5000.0, 5000.0},
		}
		for i, p := range pages {
			require.Equal(t, want[i], fields(p.(map[string]any), cols...), "page %d", i+1)
		}
		p2 := pages[1].(map[string]any)
		require.Equal(t, []any{18.002, 9.001, 4.501, 4.501}, fields(p2, "total_active_seconds", "avg_active_seconds_per_reader",
			"avg_active_seconds_per_segment", "median_active_seconds_per_segment"))

		// One day (without S6): p1 4000, 3000, 2000, 1000; p2 6000, 1000, 8001.
		body = fx.get(t, "page-performance?book_id="+A+"&date="+day)
		fx.golden(t, "page_performance_day", body)
		pages = body["data"].([]any)
		require.Equal(t, []any{3.0, 4.0, 10000.0, 3333.0, 2500.0, 2500.0}, fields(pages[0].(map[string]any), cols[2:]...))
		require.Equal(t, []any{2.0, 3.0, 15001.0, 7501.0, 5000.0, 6000.0}, fields(pages[1].(map[string]any), cols[2:]...))

		// The tracked link: Bob only; pages without segments have zeros.
		pages = fx.get(t, "page-performance?book_id="+A+"&tracked_link_id="+itoa(fx.link))["data"].([]any)
		require.Equal(t, []any{1.0, 1.0, 2000.0, 2000.0, 2000.0, 2000.0}, fields(pages[0].(map[string]any), cols[2:]...))
		require.Equal(t, []any{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, fields(pages[3].(map[string]any), cols[2:]...))
		require.Equal(t, 0.0, pages[3].(map[string]any)["median_active_seconds_per_segment"])
	})

	t.Run("book-flow", func(t *testing.T) {
		body := fx.get(t, "book-flow?book_id="+A)
		fx.golden(t, "book_flow", body)
		flow := body["data"].(map[string]any)
		// Readers: Ann, Bob, S4, S5 (S5 has no page view); 6 sessions.
		require.Equal(t, []any{4.0, 3.0, 6.0, 4.0}, fields(flow, "readers", "readers_with_page_views", "sessions", "page_count"))
		// Reached: p1 Ann, Bob, S4; p2 Ann, Bob; p3, p4 Ann. Last page: Ann p4 (S2@108), Bob p2, S4 p1.
		want := [][]any{
			{1.0, 3.0, 0.75, 1.0, 0.3333},
			{2.0, 2.0, 0.5, 1.0, 0.5},
			{3.0, 1.0, 0.25, 0.0, 0.0},
			{4.0, 1.0, 0.25, 1.0, 1.0},
		}
		for i, p := range flow["pages"].([]any) {
			require.Equal(t, want[i], fields(p.(map[string]any), "page_number", "readers", "reach_rate", "drop_offs", "drop_off_rate"))
		}
		// S1: 1→2, 2→3, 3→2; S2: 1→4; S3: 1→2; S6: 1→2.
		var moves [][]any
		for _, m := range flow["transitions"].([]any) {
			moves = append(moves, fields(m.(map[string]any), "from_page", "to_page", "count", "readers"))
		}
		require.Equal(t, [][]any{{1.0, 2.0, 3.0, 2.0}, {1.0, 4.0, 1.0, 1.0}, {2.0, 3.0, 1.0, 1.0}, {3.0, 2.0, 1.0, 1.0}}, moves)
		require.Equal(t, map[string]any{"count": 2.0, "unique_readers": 2.0}, flow["downloads"])
		require.Equal(t, map[string]any{"count": 3.0, "unique_readers": 2.0, "top_urls": []any{
			map[string]any{"url": urlX, "count": 2.0, "unique_readers": 1.0},
			map[string]any{"url": urlY, "count": 1.0, "unique_readers": 1.0},
		}}, flow["link_clicks"])

		// One day: Ann's last page is still p4; S6's 1→2 is gone.
		flow = fx.get(t, "book-flow?book_id="+A+"&date="+day)["data"].(map[string]any)
		require.Equal(t, 5.0, flow["sessions"])
		require.Equal(t, 2.0, flow["transitions"].([]any)[0].(map[string]any)["count"])
		// The tracked link: Bob alone, 1→2, drops off at p2.
		flow = fx.get(t, "book-flow?book_id="+A+"&tracked_link_id="+itoa(fx.link))["data"].(map[string]any)
		require.Equal(t, []any{1.0, 1.0}, fields(flow, "readers", "sessions"))
		require.Equal(t, []any{2.0, 1.0, 1.0, 1.0}, fields(flow["pages"].([]any)[1].(map[string]any), "page_number", "readers", "reach_rate", "drop_off_rate"))
	})

	t.Run("readers", func(t *testing.T) {
		body := fx.get(t, "readers?book_id="+A)
		fx.golden(t, "readers", body)
		rows := body["data"].([]any)
		require.Len(t, rows, 2, "identified readers only by default")
		// Most recent first: Bob (last event @211), Ann (@109).
		bobRow, annRow := rows[0].(map[string]any), rows[1].(map[string]any)
		require.Equal(t, []any{"viewer-" + itoa(fx.bob), bob, "bob@example.com", nil, false}, fields(bobRow, "id", "viewer_id", "viewer_email", "session_id", "anonymous"))
		cols := []string{"sessions", "pages_viewed", "total_active_ms", "duration_seconds", "downloads", "link_clicks", "engagement_score"}
		// Ann: 4 of 4 pages, 30,001 ms: 100 × (½ × 1 + ½ × 30001/40000) = 87.50.
		require.Equal(t, []any{3.0, 4.0, 30001.0, 30.0, 1.0, 2.0, "87.50"}, fields(annRow, cols...))
		require.Equal(t, fx.at(-172800), strings.Replace(annRow["first_seen_at"].(string), ".000000Z", "Z", 1))
		// Bob: 2 of 4 pages, 10,001 ms: 100 × (½ × ½ + ½ × 10001/40000) = 37.50.
		require.Equal(t, []any{1.0, 2.0, 10001.0, 10.0, 1.0, 0.0, "37.50"}, fields(bobRow, cols...))

		all := rowsBy(fx.get(t, "readers?book_id="+A+"&include_anonymous=true&sort=engagement"), "id")
		require.Len(t, all, 4)
		// S4: 1 page, 1000 ms: 100 × (⅛ + ½ × 1/40) = 13.75; S5: nothing viewed.
		require.Equal(t, []any{1.0, 1.0, 1000.0, 1.0, 0.0, 1.0, "13.75", "S4", true}, fields(all["session-S4"], append(cols, "session_id", "anonymous")...))
		require.Equal(t, []any{1.0, 0.0, 0.0, 0.0, 0.0, 0.0, "0.00", nil}, fields(all["session-S5"], append(cols, "viewer_id")...))
		fx.golden(t, "readers_engagement_all", fx.get(t, "readers?book_id="+A+"&include_anonymous=true&sort=engagement"))

		// One day: Ann without S6: 21,000 ms → 100 × (½ + ½ × 21000/40000) = 76.25.
		oneDay := rowsBy(fx.get(t, "readers?book_id="+A+"&date="+day), "id")
		require.Equal(t, []any{2.0, 4.0, 21000.0, "76.25"}, fields(oneDay["viewer-"+itoa(fx.ann)], "sessions", "pages_viewed", "total_active_ms", "engagement_score"))
		// Filters: a viewer, a session (anonymous or not), the tracked link.
		require.Len(t, fx.get(t, "readers?book_id="+A+"&viewer_id="+itoa(fx.bob))["data"], 1)
		s4 := fx.get(t, "readers?book_id="+A+"&session_id=S4")["data"].([]any)
		require.Len(t, s4, 1, "a session filter shows its anonymous reader")
		s2 := fx.get(t, "readers?book_id="+A+"&session_id=S2")["data"].([]any)
		require.Equal(t, []any{"viewer-" + itoa(fx.ann), 1.0, 2.0, 8000.0}, fields(s2[0].(map[string]any), "id", "sessions", "pages_viewed", "total_active_ms"))
		linked := fx.get(t, "readers?book_id="+A+"&tracked_link_id="+itoa(fx.link))["data"].([]any)
		require.Len(t, linked, 1)
		require.Equal(t, bob, linked[0].(map[string]any)["viewer_id"])
	})

	t.Run("reader-pages", func(t *testing.T) {
		body := fx.get(t, "reader-pages?book_id="+A)
		fx.golden(t, "reader_pages", body)
		rows := body["data"].([]any)
		// Ann (lower viewer id first) p1..p4, then Bob p1, p2.
		require.Len(t, rows, 6)
		byKey := map[string]map[string]any{}
		for _, r := range rows {
			m := r.(map[string]any)
			byKey[fmt.Sprint(m["viewer_id"], "/", m["page_number"])] = m
			require.Equal(t, float64(analytics.ReaderPageID(A, m["reader_id"].(string), int64(m["page_number"].(float64)))), m["id"])
		}
		cols := []string{"segments", "total_active_ms", "avg_active_ms_per_segment", "avg_active_seconds_per_segment"}
		// Ann p1: 4000 (S1), 3000 (S2), 6000 (S6); p2: 6000, 1000 (S1), 3001 (S6): 10001/3 → 3334.
		require.Equal(t, []any{3.0, 13000.0, 4333.0, 4.333}, fields(byKey[fmt.Sprint(ann, "/", 1.0)], cols...))
		require.Equal(t, []any{3.0, 10001.0, 3334.0, 3.334}, fields(byKey[fmt.Sprint(ann, "/", 2.0)], cols...))
		require.Equal(t, []any{1.0, 8001.0, 8001.0, 8.001}, fields(byKey[fmt.Sprint(bob, "/", 2.0)], cols...))
		a1 := byKey[fmt.Sprint(ann, "/", 1.0)]
		require.Equal(t, []any{"ann@example.com", nil}, fields(a1, "viewer_email", "session_id"))
		require.True(t, strings.HasPrefix(a1["first_viewed_at"].(string), fx.base.Add(-172794*time.Second).Format("2006-01-02T15:04:05")))
		require.True(t, strings.HasPrefix(a1["last_viewed_at"].(string), fx.base.Add(103*time.Second).Format("2006-01-02T15:04:05")))

		withAnon := fx.get(t, "reader-pages?book_id="+A+"&include_anonymous=true")["data"].([]any)
		require.Len(t, withAnon, 7)
		last := withAnon[6].(map[string]any)
		require.Equal(t, []any{nil, "S4", "session-S4", 1.0, 1000.0}, fields(last, "viewer_id", "session_id", "reader_id", "page_number", "total_active_ms"))
		require.Len(t, fx.get(t, "reader-pages?book_id="+A+"&page_number=2")["data"], 2)
		require.Len(t, fx.get(t, "reader-pages?book_id="+A+"&viewer_id="+itoa(fx.bob))["data"], 2)
		require.Len(t, fx.get(t, "reader-pages?book_id="+A+"&session_id=S4")["data"], 1)
		require.Len(t, fx.get(t, "reader-pages?book_id="+A+"&date="+day)["data"], 6)
		// S6 alone (the other day): Ann p1 6000, p2 3001.
		old := fx.get(t, "reader-pages?book_id="+A+"&session_id=S6")["data"].([]any)
		require.Equal(t, []any{2.0, 3001.0}, fields(old[1].(map[string]any), "page_number", "total_active_ms"))
	})

	t.Run("reading-session-pages", func(t *testing.T) {
		body := fx.get(t, "reading-session-pages?book_id="+A+"&view_event_id="+itoa(fx.viewEvents["S1"]))
		fx.golden(t, "reading_session_pages", body)
		var got [][]any
		for _, p := range body["data"].([]any) {
			got = append(got, fields(p.(map[string]any), "page_number", "visit_order", "segments", "total_active_ms", "avg_active_ms_per_segment"))
		}
		require.Equal(t, [][]any{{1.0, 1.0, 1.0, 4000.0, 4000.0}, {2.0, 2.0, 2.0, 7000.0, 3500.0}, {3.0, 3.0, 1.0, 2000.0, 2000.0}}, got)
		meta := body["meta"].(map[string]any)
		// S1: 3 of 4 pages, 13,000 ms: 100 × (½ × ¾ + ½ × 13/40) = 53.75.
		require.Equal(t, []any{float64(fx.viewEvents["S1"]), "S1", ann, "Guide", 3.0, 13.0, 1.0, 1.0, "53.75"},
			fields(meta, "id", "session_id", "viewer_id", "book_title", "pages_viewed", "duration_seconds", "clicks", "reads", "engagement_score"))
		// S3 came through the tracked link; S5 viewed no page.
		meta = fx.get(t, "reading-session-pages?book_id="+A+"&view_event_id="+itoa(fx.viewEvents["S3"]))["meta"].(map[string]any)
		require.Equal(t, map[string]any{"id": float64(fx.link), "name": "news", "slug": "news-1"}, meta["tracked_link"])
		s5 := fx.get(t, "reading-session-pages?book_id="+A+"&view_event_id="+itoa(fx.viewEvents["S5"]))
		require.Empty(t, s5["data"])
		require.Equal(t, 0.0, s5["meta"].(map[string]any)["pages_viewed"])
		// Another book's view event, an event that is not a session's first, an unknown id.
		for _, id := range []int64{fx.viewEvents["S7"], fx.viewEvents["S1"] + 1024, 999999999} {
			r := fx.h.do(t, "GET", "/api/v1/analytics/reading-session-pages?book_id="+A+"&view_event_id="+itoa(id), fx.key, nil)
			require.Equal(t, 404, r.Status, "%d: %s", id, r.Body)
		}
	})

	t.Run("reader-journey", func(t *testing.T) {
		body := fx.get(t, "reader-journey?viewer_id="+itoa(fx.ann))
		fx.golden(t, "reader_journey", body)
		j := body["data"].(map[string]any)
		require.Equal(t, map[string]any{"id": itoa(fx.ann), "email": "ann@example.com"}, j["viewer"])
		// A: 87.50 (as in readers); B: 2 of 2 pages, 12,000 ms of 20,000: 100 × (½ + ½ × 0.6) = 80.00.
		require.Equal(t, map[string]any{"total_books": "2", "total_pages_viewed": "6", "total_duration_seconds": "42",
			"overall_engagement_score": "83.75", "total_visits": "4"}, j["aggregates"])
		books := j["books"].([]any)
		require.Equal(t, []any{B, "Other", "1", "2", "12", "80.00"}, fields(books[0].(map[string]any), "book_id", "title", "visits", "pages_viewed", "duration_seconds", "engagement_score"))
		require.Equal(t, []any{A, "Guide", "3", "4", "30", "87.50"}, fields(books[1].(map[string]any), "book_id", "title", "visits", "pages_viewed", "duration_seconds", "engagement_score"))
		var timeline [][]any
		for _, v := range j["timeline"].([]any) {
			timeline = append(timeline, fields(v.(map[string]any), "session_id", "pages_viewed", "duration_seconds", "engagement_score"))
		}
		// S6: 2 of 4 pages, 9,001 ms: 36.25; S2: 2 pages, 8,000 ms: 35.00.
		require.Equal(t, [][]any{{"S6", "2", "9", "36.25"}, {"S1", "3", "13", "53.75"}, {"S2", "2", "8", "35.00"}, {"S7", "2", "12", "80.00"}}, timeline)
		for _, v := range j["timeline"].([]any) {
			m := v.(map[string]any)
			require.Equal(t, itoa(fx.viewEvents[m["session_id"].(string)]), m["view_event_id"])
		}
		// One day: A without S6 (76.25); mean (76.25 + 80.00) / 2 = 78.125 → 78.13.
		j = fx.get(t, "reader-journey?viewer_id="+itoa(fx.ann)+"&date="+day)["data"].(map[string]any)
		require.Equal(t, map[string]any{"total_books": "2", "total_pages_viewed": "6", "total_duration_seconds": "33",
			"overall_engagement_score": "78.13", "total_visits": "3"}, j["aggregates"])
		// An anonymous session: no viewer; 500 ms rounds up to 1 s; 100 × (¼ + ½ × 500/20000) = 26.25.
		body = fx.get(t, "reader-journey?session_id=S8")
		fx.golden(t, "reader_journey_session", body)
		j = body["data"].(map[string]any)
		require.Equal(t, map[string]any{"id": "", "email": ""}, j["viewer"])
		require.Equal(t, []any{B, "1", "1", "1", "26.25"}, fields(j["books"].([]any)[0].(map[string]any), "book_id", "visits", "pages_viewed", "duration_seconds", "engagement_score"))
		// An identified session, Bob, a reader with nothing.
		j = fx.get(t, "reader-journey?session_id=S1")["data"].(map[string]any)
		require.Equal(t, itoa(fx.ann), j["viewer"].(map[string]any)["id"])
		require.Equal(t, "1", j["aggregates"].(map[string]any)["total_visits"])
		j = fx.get(t, "reader-journey?viewer_id="+itoa(fx.bob))["data"].(map[string]any)
		require.Equal(t, "37.50", j["aggregates"].(map[string]any)["overall_engagement_score"])
		// A known reader with no visits in range is still named; an unknown viewer is a 404.
		j = fx.get(t, "reader-journey?viewer_id="+itoa(fx.ann)+"&date=2001-01-01")["data"].(map[string]any)
		require.Equal(t, map[string]any{"id": itoa(fx.ann), "email": "ann@example.com"}, j["viewer"])
		require.Equal(t, map[string]any{"total_books": "0", "total_pages_viewed": "0", "total_duration_seconds": "0",
			"overall_engagement_score": "0.00", "total_visits": "0"}, j["aggregates"])
		require.Empty(t, j["books"])
		require.Empty(t, j["timeline"])
		r := fx.h.do(t, "GET", "/api/v1/analytics/reader-journey?viewer_id=999999", fx.key, nil)
		require.Equal(t, 404, r.Status, "%s", r.Body)
		require.Equal(t, api.TypeNotFound, r.errType())
	})

	t.Run("gates", func(t *testing.T) {
		h := fx.h
		ops := []string{"page-performance?book_id=" + A, "book-flow?book_id=" + A, "readers?book_id=" + A,
			"reader-pages?book_id=" + A, "reading-session-pages?book_id=" + A + "&view_event_id=" + itoa(fx.viewEvents["S1"]),
			"reader-journey?viewer_id=" + itoa(fx.ann)}
		pro := h.workspace(t, "pro", "live")
		scoped := h.key(t, fx.ws, "live", "books:read")
		other := h.workspace(t, "company", "live")
		for _, op := range ops {
			p := "/api/v1/analytics/" + op
			require.Equal(t, 403, h.do(t, "GET", p, pro, nil).Status, op)
			r := h.do(t, "GET", p, scoped, nil)
			require.Equal(t, 403, r.Status, op)
			require.Equal(t, api.TypeMissingScope, r.errType())
			if strings.Contains(op, "book_id") {
				require.Equal(t, 404, h.do(t, "GET", p, other, nil).Status, "another workspace's book: %s", op)
			}
		}
		// To another workspace, and to the test-mode sandbox of this one, Ann does not exist.
		sandbox := h.key(t, fx.ws, "test", "*")
		for _, k := range []string{other, sandbox} {
			j := h.do(t, "GET", "/api/v1/analytics/reader-journey?viewer_id="+itoa(fx.ann), k, nil)
			require.Equal(t, 404, j.Status, "%s", j.Body)
			require.NotContains(t, string(j.Body), "ann@example.com")
		}
		require.Equal(t, 404, h.do(t, "GET", "/api/v1/analytics/readers?book_id="+A, sandbox, nil).Status)

		q := "/api/v1/analytics/readers?book_id=" + A
		first := fx.get(t, "readers?book_id="+A+"&limit=1")
		cursor := first["meta"].(map[string]any)["next_cursor"].(string)
		runValidation(t, h, fx.key, "", []vcase{
			{"flow without book", "GET", "/api/v1/analytics/book-flow", nil, 422, "book_id"},
			{"pages bad date", "GET", "/api/v1/analytics/page-performance?book_id=" + A + "&date=tomorrow", nil, 422, "date"},
			{"pages bad link", "GET", "/api/v1/analytics/page-performance?book_id=" + A + "&tracked_link_id=x", nil, 422, "tracked_link_id"},
			{"readers sort", "GET", q + "&sort=oldest", nil, 422, "sort"},
			{"readers limit 0", "GET", q + "&limit=0", nil, 422, "limit"},
			{"readers limit 501", "GET", q + "&limit=501", nil, 422, "limit"},
			{"readers limit 500", "GET", q + "&limit=500", nil, 200, ""},
			{"readers anon", "GET", q + "&include_anonymous=maybe", nil, 422, "include_anonymous"},
			{"readers forged cursor", "GET", q + "&cursor=abc", nil, 422, "cursor"},
			{"readers cursor of another sort", "GET", q + "&sort=engagement&cursor=" + url.QueryEscape(cursor), nil, 422, "cursor"},
			{"readers cursor of other filters", "GET", q + "&include_anonymous=true&cursor=" + url.QueryEscape(cursor), nil, 422, "cursor"},
			{"readers session max", "GET", q + "&session_id=" + long(256), nil, 422, "session_id"},
			{"reader pages page 0", "GET", "/api/v1/analytics/reader-pages?book_id=" + A + "&page_number=0", nil, 422, "page_number"},
			{"session pages without id", "GET", "/api/v1/analytics/reading-session-pages?book_id=" + A, nil, 422, "view_event_id"},
			{"session pages bad id", "GET", "/api/v1/analytics/reading-session-pages?book_id=" + A + "&view_event_id=x", nil, 422, "view_event_id"},
			{"journey without reader", "GET", "/api/v1/analytics/reader-journey", nil, 422, "viewer_id"},
			{"journey with both", "GET", "/api/v1/analytics/reader-journey?viewer_id=1&session_id=S1", nil, 422, "session_id"},
			{"journey bad date", "GET", "/api/v1/analytics/reader-journey?viewer_id=1&date=2026-13-01", nil, 422, "date"},
		})
	})
}

// TestAnalyticsReadersPagination walks the readers list with several page sizes and both
// sorts (every reader once, in the order of the full list), and keeps walking while events
// arrive that change the values the list is sorted by: a walk reads the snapshot of its first
// page, so it still returns every reader of that snapshot exactly once.
func TestAnalyticsReadersPagination(t *testing.T) {
	t.Parallel()
	fx := newAggFixture(t)
	h := fx.h
	// 12 more anonymous readers on book A with distinct engagement and recency, and 3 ties.
	for i := 0; i < 12; i++ {
		b := collectBody(fx.bookA,
			map[string]any{"type": "session_started", "page_number": 1, "occurred_at": fx.at(1000 + i%9)},
			map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 1000 * (i % 5), "occurred_at": fx.at(1001 + i%9)})
		b["session_id"] = fmt.Sprintf("P%02d", i)
		require.Equal(t, 202, h.do(t, "POST", "/collect", "", b).Status)
	}
	h.logged(t)
	const total = 16 // Ann, Bob, S4, S5 and P00..P11
	for _, sort := range []string{"recent", "engagement"} {
		q := "/api/v1/analytics/readers?book_id=" + fx.bookA + "&include_anonymous=true&sort=" + sort
		all := h.walk(t, fx.key, q, 500)
		require.Len(t, all, total)
		for i := 1; i < len(all); i++ {
			a, b := all[i-1], all[i]
			key := "last_seen_at"
			if sort == "engagement" {
				key = "engagement_score"
			}
			va, vb := a[key].(string), b[key].(string)
			if sort == "engagement" {
				fa, _ := strconv.ParseFloat(va, 64)
				fb, _ := strconv.ParseFloat(vb, 64)
				require.True(t, fa > fb || fa == fb && a["id"].(string) < b["id"].(string), "%s: order at %d", sort, i)
			} else {
				require.True(t, va > vb || va == vb && a["id"].(string) < b["id"].(string), "%s: order at %d", sort, i)
			}
		}
		for _, limit := range []int{1, 2, 3, 5, 16} {
			require.Equal(t, all, h.walk(t, fx.key, q, limit), "%s, limit %d", sort, limit)
		}
	}

	// A walk while events arrive: P00 (engagement 0, seen late in an engagement walk) becomes
	// the most engaged and most recent reader, Ann's values grow, a new reader appears.
	for _, sort := range []string{"engagement", "recent"} {
		q := "/api/v1/analytics/readers?book_id=" + fx.bookA + "&include_anonymous=true&sort=" + sort
		before := h.walk(t, fx.key, q, 500)
		r := h.do(t, "GET", q+"&limit=3", fx.key, nil)
		require.Equal(t, 200, r.Status)
		first := r.list()
		cursor := r.meta()["next_cursor"].(string)
		now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
		for _, s := range []struct {
			session string
			token   string
		}{{"P00", ""}, {"NEW-" + sort, ""}} {
			b := collectBody(fx.bookA,
				map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 40000, "occurred_at": now},
				map[string]any{"type": "page_segment_completed", "page_number": 3, "active_ms": 40000, "occurred_at": now},
				map[string]any{"type": "page_segment_completed", "page_number": 4, "active_ms": 40000, "occurred_at": now})
			b["session_id"] = s.session
			require.Equal(t, 202, h.do(t, "POST", "/collect", "", b).Status)
		}
		h.logged(t)
		rest := h.walkFrom(t, fx.key, q, 3, cursor)
		got := append(anySlice(nil), first...)
		got = append(got, anySlice(rest)...)
		require.Len(t, got, len(before), sort)
		for i := range got {
			require.Equal(t, before[i], got[i], "%s: the walk reads its first page's snapshot (row %d)", sort, i)
		}
		// A new walk sees the new state.
		after := h.walk(t, fx.key, q, 4)
		require.Len(t, after, len(before)+1)
		if sort == "engagement" {
			require.Equal(t, []any{"session-P00", "100.00"}, fields(after[0], "id", "engagement_score"))
		} else {
			require.Contains(t, after[0]["last_seen_at"], strings.TrimSuffix(now, "Z"), "the new activity comes first")
		}
		ids := map[string]bool{}
		for _, r := range after {
			require.False(t, ids[r["id"].(string)], "duplicate %s", r["id"])
			ids[r["id"].(string)] = true
		}
	}

	// A session that starts anonymous and passes the email gate midway belongs to the viewer,
	// all of it (as its view event does).
	tok := h.do(t, "POST", "/view/"+fx.bookA+"/access", "", map[string]any{"email": "ann@example.com", "session_id": "S9"})
	require.Equal(t, 200, tok.Status)
	anon := collectBody(fx.bookA, map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 700, "occurred_at": fx.at(700)})
	anon["session_id"] = "S9"
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", anon).Status)
	known := collectBody(fx.bookA, map[string]any{"type": "page_segment_completed", "page_number": 3, "active_ms": 300, "occurred_at": fx.at(701)})
	known["session_id"], known["reader_token"] = "S9", tok.data()["reader_token"]
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", known).Status)
	h.logged(t)
	s9 := fx.get(t, "readers?book_id="+fx.bookA+"&session_id=S9")["data"].([]any)
	require.Len(t, s9, 1)
	require.Equal(t, []any{"viewer-" + itoa(fx.ann), 1.0, 2.0, 1000.0}, fields(s9[0].(map[string]any), "id", "sessions", "pages_viewed", "total_active_ms"))
	for _, p := range fx.get(t, "reader-pages?book_id="+fx.bookA+"&session_id=S9")["data"].([]any) {
		require.Equal(t, float64(fx.ann), p.(map[string]any)["viewer_id"])
	}
	for _, v := range h.walk(t, fx.key, "/api/v1/analytics/book-view-events?book_id="+fx.bookA, 500) {
		if v["session_id"] == "S9" {
			require.Equal(t, float64(fx.ann), v["viewer_id"])
		}
	}
	require.Len(t, fx.get(t, "readers?book_id="+fx.bookA+"&include_anonymous=true&session_id=S9")["data"], 1, "no anonymous half")
}
