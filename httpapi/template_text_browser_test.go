package httpapi

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// The viewer in Chromium lays its text layer over a template book's page from the words the
// page was drawn with: a Hebrew word's span is where the render put it (right to left, so
// right of the next word), and the search finds an Arabic word on its page.
func TestTemplateBookTextInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	body := postsBody(1, "")
	post := body["content"].([]any)[0].(map[string]any)
	post["title"] = "מאמר חדש"
	post["content"] = "<p>مرحبا بكم في المدونة</p>"
	rid := createTemplate(t, h, key, body)["random_id"].(string)
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)

	ctx := viewerTab(t, viewerBrowser(t, exe), 1280, 900, false)
	viewerOpen(t, ctx, h.base+"/view/"+rid, "1 / 2")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	viewerWaitCounter(t, ctx, "2 / 2")
	first, second := textWordOf(t, ctx, 2, "מאמר"), textWordOf(t, ctx, 2, "חדש")
	words := h.textPageWords(t, rid, 2)
	t.Logf("מאמר %+v, חדש %+v; boxes %v and %v", first, second, words["מאמר"], words["חדש"])
	require.Greater(t, first.Span.Left, second.Span.Left, "the first word on the right")
	for _, w := range []struct {
		word string
		at   textWord
	}{{"מאמר", first}, {"חדש", second}} {
		require.True(t, w.at.Hit, "%s's span is on top at its centre", w.word)
		require.InDelta(t, words[w.word]["x"].(float64), (w.at.Span.Left-w.at.Img.Left)/w.at.Img.Width, 0.01, w.word)
		require.InDelta(t, words[w.word]["y"].(float64), (w.at.Span.Top-w.at.Img.Top)/w.at.Img.Height, 0.01, w.word)
	}

	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#search-open", chromedp.ByID),
		chromedp.SendKeys("#search-q", "المدونة"+kb.Enter, chromedp.ByID)))
	textWaitJS(t, ctx, `document.querySelector("#search-hits .hit .hit-page")?.textContent === "Page 2"`, "the hit on page 2")
}
