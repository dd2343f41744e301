package httpapi

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The viewer does not move under the reader as its script starts (Lighthouse's cumulative
// layout shift, 0.33 on a phone when the page tools appeared after load): the tools are in the
// HTML as sent for a book a reader can open at once, hidden for a gated one.
func TestViewerLayoutStableInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Stable", "publish")
	html := string(h.getPage(t, "/view/"+rid).Body)
	for _, id := range []string{"zoom-in", "thumbs-open"} {
		i := strings.Index(html, `<button id="`+id+`"`)
		require.Positive(t, i, id)
		tag := html[i : i+strings.Index(html[i:], ">")]
		require.NotContains(t, tag, " hidden", "%s is shown as sent", id)
	}
	ctx := viewerTab(t, viewerBrowser(t, exe), 390, 844, true)
	viewerOpen(t, ctx, h.base+"/view/"+rid, "1 / 2")
	var cls float64
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`new Promise(done => {
		let sum = 0;
		new PerformanceObserver(l => { for (const e of l.getEntries()) if (!e.hadRecentInput) sum += e.value; })
			.observe({type: "layout-shift", buffered: true});
		requestAnimationFrame(() => requestAnimationFrame(() => done(sum)));
	})`, &cls, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })))
	t.Logf("cumulative layout shift on a 390×844 phone: %.3f", cls)
	require.Less(t, cls, 0.1)

	require.Equal(t, 200, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "a@b.example"}).Status/100*100)
	gated := string(h.getPage(t, "/view/"+rid).Body)
	i := strings.Index(gated, `<button id="zoom-in"`)
	require.Contains(t, gated[i:i+strings.Index(gated[i:], ">")], " hidden", "a gated book's tools wait for the gate")
}
