package httpapi

// The table of contents and the click heatmap in headless Chromium (issue 29, docs/VIEWER.md
// "Contents and clicks"): the outline heads the pages panel and turns to its pages; a click on
// a page is posted with its position and shows in the page's heatmap.

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

func TestViewerOutlineAndClicksInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "menu.pdf", bookmarkedPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)
	ctx := viewerTab(t, viewerBrowser(t, exe), 1280, 900, false)
	viewerOpen(t, ctx, h.base+"/view/"+rid, "1 / 5")

	// The contents: four entries, indented by depth; one turns to its page.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#thumbs-open", chromedp.ByID),
		chromedp.WaitVisible("#toc", chromedp.ByID)))
	var entries []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(
		`[...document.querySelectorAll("#toc-list .toc-entry")].map(b => b.getAttribute("aria-label"))`, &entries)))
	require.Equal(t, []string{"Welcome, page 1", "Menu, page 2", "Starters, page 2", "Desserts, page 4"}, entries)
	require.Equal(t, "true", viewerEval(t, ctx, `String(parseFloat(document.querySelectorAll(".toc-entry")[2].style.paddingLeft) >
		parseFloat(document.querySelectorAll(".toc-entry")[1].style.paddingLeft))`), "a deeper entry is indented")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click(`.toc-entry[aria-label="Desserts, page 4"]`, chromedp.ByQuery)))
	viewerWaitCounter(t, ctx, "4–5 / 5")
	require.Equal(t, "true", viewerEval(t, ctx, `String(document.getElementById("thumbs-panel").hidden)`))

	// A click at a quarter across and three quarters down page 4 (the left page of the spread).
	var box struct{ Left, Top, Width, Height float64 }
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`(() => { const b = document.querySelector('.page[data-n="4"]').getBoundingClientRect();
		return {Left: b.left, Top: b.top, Width: b.width, Height: b.height}; })()`, &box)))
	require.Positive(t, box.Width)
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseClickXY(box.Left+0.26*box.Width, box.Top+0.76*box.Height)))
	var queued string
	testutil.Eventually(t, 5*time.Second, 30*time.Millisecond, func() error {
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(
			`JSON.stringify(flipbook.queue.filter(e => e.type === "page_clicked"))`, &queued)))
		if queued == "[]" {
			return fmt.Errorf("no page_clicked queued")
		}
		return nil
	})
	var evs []struct {
		Page int     `json:"page_number"`
		X    float64 `json:"x"`
		Y    float64 `json:"y"`
		Zoom float64 `json:"zoom"`
	}
	require.NoError(t, json.Unmarshal([]byte(queued), &evs))
	require.Equal(t, 4, evs[0].Page)
	require.InDelta(t, 0.26, evs[0].X, 0.01)
	require.InDelta(t, 0.76, evs[0].Y, 0.01)
	require.Equal(t, 1.0, evs[0].Zoom)
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`flipbook.flush(), true`, nil)))
	var r *resp
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error { // the post is on its way
		h.logged(t)
		r = h.do(t, "GET", "/api/v1/analytics/page-heatmap?book_id="+rid+"&page_number=4", key, nil)
		if r.Status != 200 || r.data()["total"] != 1.0 {
			return fmt.Errorf("heatmap %d: %s", r.Status, r.Body)
		}
		return nil
	})
	require.EqualValues(t, 1, r.data()["cells"].([]any)[15].([]any)[5], "row floor(0.76×20), column floor(0.26×20)")
}
