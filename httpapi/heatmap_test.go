package httpapi

import (
	"bytes"
	"encoding/csv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Clicks posted by the viewer (page_clicked, with their position) make the page's heatmap:
// counts per cell of the 20 × 20 grid, checked by hand, filtered by page and date, as JSON and
// as CSV; the spec's interaction events do not list them; bad clicks are refused.
func TestPageHeatmap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	other, _ := h.workspaceKey(t, "company", "live", "*")
	r := h.do(t, "POST", "/api/v1/books/konva", key, konvaBody("Map", "publish", 3))
	require.Equal(t, 201, r.Status, "%s", r.Body)
	book := r.data()["random_id"].(string)

	y := time.Now().UTC().AddDate(0, 0, -1)
	yesterday := time.Date(y.Year(), y.Month(), y.Day(), 10, 0, 0, 0, time.UTC)
	click := func(page int, x, yy float64, at time.Time) map[string]any {
		return map[string]any{"type": "page_clicked", "page_number": page, "x": x, "y": yy, "zoom": 1.5,
			"occurred_at": at.Format(time.RFC3339)}
	}
	// Page 2, yesterday: (0.01, 0.01) twice → row 0, col 0; (0.99, 0.5) → row 10, col 19;
	// (1, 1) → the last cell; (0.5, 0.26) → row 5, col 10. Page 2 today: one more at (0.01, 0.01).
	// Page 1: one click that page 2's map must not count.
	now := time.Now().UTC().Add(-time.Minute)
	body := collectBody(book, click(2, 0.01, 0.01, yesterday), click(2, 0.012, 0.04, yesterday),
		click(2, 0.99, 0.5, yesterday), click(2, 1, 1, yesterday), click(2, 0.5, 0.26, yesterday),
		click(2, 0.01, 0.01, now), click(1, 0.5, 0.5, yesterday),
		map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 1000})
	r = h.do(t, "POST", "/collect", "", body)
	require.Equal(t, 202, r.Status, "%s", r.Body)
	h.logged(t)

	want := map[[2]int]int64{{0, 0}: 2, {10, 19}: 1, {19, 19}: 1, {5, 10}: 1}
	day := yesterday.Format(time.DateOnly)
	r = h.do(t, "GET", "/api/v1/analytics/page-heatmap?book_id="+book+"&page_number=2&date="+day, key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	d := r.data()
	require.EqualValues(t, 20, d["grid"])
	require.EqualValues(t, 5, d["total"])
	require.EqualValues(t, 2, d["page_number"])
	cells := d["cells"].([]any)
	require.Len(t, cells, 20)
	for row, rr := range cells {
		cols := rr.([]any)
		require.Len(t, cols, 20)
		for col, n := range cols {
			require.EqualValues(t, want[[2]int{row, col}], n, "cell %d,%d", row, col)
		}
	}
	// Every day: today's click too.
	r = h.do(t, "GET", "/api/v1/analytics/page-heatmap?book_id="+book+"&page_number=2", key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.EqualValues(t, 6, r.data()["total"])
	require.EqualValues(t, 3, r.data()["cells"].([]any)[0].([]any)[0])

	// CSV: 400 rows, one per cell, the same counts.
	r = h.do(t, "GET", "/api/v1/exports/books/"+book+"/page-heatmap?page_number=2&date="+day, key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	recs, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 401)
	require.Equal(t, []string{"book_id", "page_number", "row", "column", "clicks"}, recs[0])
	require.Equal(t, []string{book, "2", "0", "0", "2"}, recs[1])
	require.Equal(t, []string{book, "2", "10", "19", "1"}, recs[1+10*20+19])

	// The spec's interaction events leave clicks out.
	r = h.do(t, "GET", "/api/v1/analytics/interaction-events?book_id="+book, key, nil)
	require.Equal(t, 200, r.Status)
	require.Len(t, r.list(), 1)

	// Refusals: no page, a page past the book, another workspace's book, bad clicks.
	require.Equal(t, 422, h.do(t, "GET", "/api/v1/analytics/page-heatmap?book_id="+book, key, nil).Status)
	require.Equal(t, 422, h.do(t, "GET", "/api/v1/analytics/page-heatmap?book_id="+book+"&page_number=4", key, nil).Status)
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/analytics/page-heatmap?book_id="+book+"&page_number=1", other, nil).Status)
	for name, e := range map[string]map[string]any{
		"no position": {"type": "page_clicked", "page_number": 1},
		"no page":     {"type": "page_clicked", "x": 0.5, "y": 0.5},
		"x past 1":    {"type": "page_clicked", "page_number": 1, "x": 1.5, "y": 0.5},
		"zoom 0":      {"type": "page_clicked", "page_number": 1, "x": 0.5, "y": 0.5, "zoom": 0},
		// Strings are read as numbers, and "NaN" passed both bounds (it compares false): it was
		// stored, and the page's heatmap failed for good (found by a review).
		"x NaN":         {"type": "page_clicked", "page_number": 1, "x": "NaN", "y": 0.5},
		"y Inf":         {"type": "page_clicked", "page_number": 1, "x": 0.5, "y": "Inf"},
		"zoom Infinity": {"type": "page_clicked", "page_number": 1, "x": 0.5, "y": 0.5, "zoom": "+Infinity"},
	} {
		r = h.do(t, "POST", "/collect", "", collectBody(book, e))
		require.Equal(t, 422, r.Status, "%s: %s", name, r.Body)
	}
}
