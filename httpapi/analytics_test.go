package httpapi

import (
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// walk follows next_cursor from path until the last page; it returns every row.
func (h *harness) walk(t *testing.T, key, path string, limit int) []map[string]any {
	t.Helper()
	return h.walkFrom(t, key, path, limit, "")
}

// walkFrom is walk starting at a cursor.
func (h *harness) walkFrom(t *testing.T, key, path string, limit int, cursor string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1000, "pagination does not end")
		p := path + "&limit=" + strconv.Itoa(limit)
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r := h.do(t, "GET", p, key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		rows := r.JSON["data"].([]any)
		require.LessOrEqual(t, len(rows), limit)
		for _, row := range rows {
			out = append(out, row.(map[string]any))
		}
		meta := r.JSON["meta"].(map[string]any)
		if meta["has_more"] != true {
			require.Nil(t, meta["next_cursor"])
			return out
		}
		cursor = meta["next_cursor"].(string)
	}
}

// TestAnalyticsRawLists: interaction events (newest first), the audit log (chronological) and
// view events over a fixed event set posted through /collect and the email gate; pagination
// walks that see every row once, also while events keep arriving; filters; gates.
func TestAnalyticsRawLists(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	rid := h.konva(t, key, "Report", "publish")
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	at := func(s int) string { return base.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }
	post := func(session string, events ...map[string]any) {
		b := collectBody(rid, events...)
		b["session_id"] = session
		require.Equal(t, 202, h.do(t, "POST", "/collect", "", b).Status)
	}
	// 3 sessions, 12 interaction events, of which 3 audited (a download, a click, a checkout).
	post("s1",
		map[string]any{"type": "session_started", "page_number": 1, "occurred_at": at(0)},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 4000, "occurred_at": at(4)},
		map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 6000, "occurred_at": at(10)},
		map[string]any{"type": "link_clicked", "page_number": 2, "url": "https://example.com/a", "occurred_at": at(11)},
		map[string]any{"type": "session_ended", "exit_reason": "closed", "occurred_at": at(12)})
	post("s2",
		map[string]any{"type": "session_started", "page_number": 1, "occurred_at": at(20)},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 1500, "occurred_at": at(22)},
		map[string]any{"type": "document_downloaded", "page_number": 1, "occurred_at": at(23)},
		map[string]any{"type": "lead_form_submitted", "page_number": 1, "form": map[string]any{"name": "Ada", "email": "ada@example.com"}, "occurred_at": at(24)})
	post("s3",
		map[string]any{"type": "session_started", "page_number": 1, "occurred_at": at(30)},
		map[string]any{"type": "checkout_redirect_clicked", "page_number": 1, "url": "https://shop.example.com", "occurred_at": at(31)},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 30000, "occurred_at": at(32)})
	h.logged(t)

	q := "/api/v1/analytics/interaction-events?book_id=" + rid
	all := h.walk(t, key, q, 500)
	require.Len(t, all, 12)
	for i := 1; i < len(all); i++ {
		require.GreaterOrEqual(t, all[i-1]["occurred_at"], all[i]["occurred_at"], "newest first")
	}
	require.Equal(t, "page_segment_completed", all[0]["event_type"])
	require.Equal(t, 30.0, all[0]["active_seconds"])
	lead := all[3]
	require.Equal(t, "lead_form_submitted", lead["event_type"])
	require.Equal(t, []any{map[string]any{"name": "email", "value": "ada@example.com"}, map[string]any{"name": "name", "value": "Ada"}}, lead["metadata"])
	require.Nil(t, all[1]["active_ms"])
	require.Equal(t, "direct", all[0]["source_type"])

	// Every page size walks every row once, in the same order.
	for _, limit := range []int{1, 5, 7} {
		got := h.walk(t, key, q, limit)
		require.Equal(t, all, got, "limit %d", limit)
	}
	// Filters.
	require.Len(t, h.walk(t, key, q+"&session_id=s2", 500), 4)
	require.Len(t, h.walk(t, key, q+"&event_type=page_segment_completed", 500), 4)
	require.Len(t, h.walk(t, key, q+"&page_number=2", 500), 2)
	require.Len(t, h.walk(t, key, q+"&date="+base.Format(time.DateOnly), 500), 12)
	require.Len(t, h.walk(t, key, q+"&date=2020-01-01..2020-01-31", 500), 0)

	// A walk while events keep arriving: rows never repeat or go missing.
	r := h.do(t, "GET", q+"&limit=5", key, nil)
	first := r.JSON["data"].([]any)
	cursor := r.JSON["meta"].(map[string]any)["next_cursor"].(string)
	post("s4", map[string]any{"type": "session_started", "page_number": 1})
	post("s5", map[string]any{"type": "session_started", "page_number": 1, "occurred_at": at(15)})
	h.logged(t)
	rest := h.walkFrom(t, key, q, 5, cursor)
	seen := map[float64]bool{}
	for _, row := range append(first, anySlice(rest)...) {
		id := row.(map[string]any)["id"].(float64)
		require.False(t, seen[id], "row %v seen twice", id)
		seen[id] = true
	}
	for _, row := range all {
		require.True(t, seen[row["id"].(float64)], "row %v skipped", row["id"])
	}

	// Audit log: chronological, audited types only.
	audit := h.walk(t, key, "/api/v1/analytics/audit-log?book_id="+rid, 2)
	var types []string
	for _, a := range audit {
		types = append(types, a["event_type"].(string))
	}
	require.Equal(t, []string{"link_clicked", "document_downloaded", "lead_form_submitted", "checkout_redirect_clicked"}, types)
	require.Equal(t, "interaction", audit[0]["source"])
	require.Equal(t, "interaction-"+strconv.FormatInt(int64(audit[0]["source_event_id"].(float64)), 10), audit[0]["id"])
	require.Equal(t, map[string]any{"name": "Ada", "email": "ada@example.com"}, audit[2]["metadata"])
	require.Len(t, h.walk(t, key, "/api/v1/analytics/audit-log?book_id="+rid+"&event_type=document_downloaded", 10), 1)

	// View events: one per session, newest session first.
	views := h.walk(t, key, "/api/v1/analytics/book-view-events?book_id="+rid, 2)
	require.Len(t, views, 5)
	byS := map[string]map[string]any{}
	for _, v := range views {
		byS[v["session_id"].(string)] = v
		require.Equal(t, "Report", v["book_title"])
	}
	require.Equal(t, "s5", views[0]["session_id"])
	s1 := byS["s1"]
	require.Equal(t, []any{1.0, 1.0, 1.0, 2.0, 10.0, "75.00"}, []any{s1["impressions"], s1["reads"], s1["clicks"], s1["pages_viewed"], s1["duration_seconds"], s1["engagement_score"]})
	require.Equal(t, false, s1["from_embedded"])
	require.Nil(t, s1["tracked_link"])

	// Gates: plan, scope, another workspace's book, bad parameters.
	require.Equal(t, 403, h.do(t, "GET", q, h.workspace(t, "pro", "live"), nil).Status)
	require.Equal(t, 403, h.do(t, "GET", q, h.key(t, ws, "live", "books:read"), nil).Status)
	require.Equal(t, 404, h.do(t, "GET", q, h.workspace(t, "company", "live"), nil).Status, "another workspace's book")
	require.Equal(t, 404, h.do(t, "GET", q, h.key(t, ws, "test", "*"), nil).Status, "the test sandbox does not see live books")
	runValidation(t, h, key, "", []vcase{
		{"no book", "GET", "/api/v1/analytics/interaction-events", nil, 422, "book_id"},
		{"bad date", "GET", q + "&date=yesterday", nil, 422, "date"},
		{"reversed range", "GET", q + "&date=2026-02-01..2026-01-01", nil, 422, "date"},
		{"limit 0", "GET", q + "&limit=0", nil, 422, "limit"},
		{"limit 501", "GET", q + "&limit=501", nil, 422, "limit"},
		{"bad type", "GET", q + "&event_type=access_granted", nil, 422, "event_type"},
		{"forged cursor", "GET", q + "&cursor=abc", nil, 422, "cursor"},
		{"cursor of other filters", "GET", q + "&session_id=s1&cursor=" + url.QueryEscape(cursor), nil, 422, "cursor"},
		{"page 0", "GET", q + "&page_number=0", nil, 422, "page_number"},
	})
}

func anySlice(rows []map[string]any) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}
