package httpapi

// The viewer's text in headless Chromium (issue 28, docs/VIEWER.md "Text layer, search and
// reading mode"): the text layer over the page images, selection, search with highlights, the
// keyboard and screen readers, copy protection, the reading mode, and text fetched only near
// the pages on show.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// textRect is a box on the screen (CSS pixels).
type textRect struct{ Left, Top, Width, Height float64 }

// textWord is where a word's span of the text layer is, and the page image under it.
type textWord struct {
	Found      bool
	Span, Img  textRect
	Hit        bool // the span is what is on top at its centre (a click there reaches it)
	UserSelect string
}

// textWordJS finds the span of word %q on page %d and measures it with the page's image.
const textWordJS = `(() => {
	const r = e => { const b = e.getBoundingClientRect(); return {Left: b.left, Top: b.top, Width: b.width, Height: b.height}; };
	const page = document.querySelector('.page[data-n="%d"]');
	const s = page && [...page.querySelectorAll(".tl span")].find(e => e.textContent.trim() === %q);
	if (!s) return {Found: false};
	const b = s.getBoundingClientRect();
	return {Found: true, Span: r(s), Img: r(page.querySelector("img")), UserSelect: getComputedStyle(s).userSelect,
		Hit: document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2) === s};
})()`

// textWordOf waits until the text layer of page n has the word, and measures it.
func textWordOf(t *testing.T, ctx context.Context, n int, word string) textWord {
	t.Helper()
	var w textWord
	testutil.Eventually(t, 15*time.Second, 40*time.Millisecond, func() error {
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(textWordJS, n, word), &w)))
		if !w.Found {
			return fmt.Errorf("no %q in the text layer of page %d yet", word, n)
		}
		return nil
	})
	return w
}

// textWaitJS waits until the JavaScript expression js is true.
func textWaitJS(t *testing.T, ctx context.Context, js, what string) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, 40*time.Millisecond, func() error {
		var ok bool
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`!!(`+js+`)`, &ok)))
		if !ok {
			return fmt.Errorf("not yet: %s", what)
		}
		return nil
	})
}

// textDrag presses the mouse at from, moves to to in steps and lets go.
func textDrag(t *testing.T, ctx context.Context, fromX, fromY, toX, toY float64) {
	t.Helper()
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseEvent(input.MousePressed, fromX, fromY, chromedp.ButtonLeft, chromedp.ClickCount(1))))
	for i := 1; i <= 8; i++ {
		f := float64(i) / 8
		require.NoError(t, chromedp.Run(ctx, chromedp.MouseEvent(input.MouseMoved, fromX+(toX-fromX)*f, fromY+(toY-fromY)*f, chromedp.ButtonLeft)))
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseEvent(input.MouseReleased, toX, toY, chromedp.ButtonLeft, chromedp.ClickCount(1))))
}

// textPageWords is GET /view/{book}/text of one page: its words' boxes by text.
func (h *harness) textPageWords(t *testing.T, rid string, n int) map[string]map[string]any {
	t.Helper()
	r := h.do(t, "GET", fmt.Sprintf("/view/%s/text?from=%d", rid, n), "", nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	out := map[string]map[string]any{}
	for _, w := range r.list()[0].(map[string]any)["words"].([]any) {
		m := w.(map[string]any)
		out[m["text"].(string)] = m
	}
	return out
}

// TestViewerTextInBrowser converts a PDF with known text (seoPDF: four A4 pages) and reads it
// in headless Chromium.
func TestViewerTextInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 600 })
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "elephants.pdf", seoPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)
	browser := viewerBrowser(t, exe)
	view := h.base + "/view/" + rid

	t.Run("text layer over the page image", func(t *testing.T) { textLayerChecks(t, h, browser, rid, view) })
	t.Run("search and keyboard", func(t *testing.T) { textSearchChecks(t, browser, view) })
	t.Run("screen readers", func(t *testing.T) { textAccessibilityChecks(t, browser, view) })
	t.Run("copy protection and reading mode", func(t *testing.T) {
		up := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish",
			"accessibility_enabled": true, "copyright_enabled": true})
		require.Equal(t, 200, up.Status, "%s", up.Body)
		textReadingChecks(t, browser, view)
	})
	t.Run("text fetched near the pages on show", func(t *testing.T) {
		batch, rid := h.uploadOK(t, key, "thirty.pdf", manyPagesPDF(t, 30), "status", "publish")
		require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
		textLazyChecks(t, browser, h.base+"/view/"+rid)
	})
	t.Run("gated book, with the reader token", func(t *testing.T) {
		require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "ann@example.com"}).Status)
		ctx := viewerTab(t, browser, 1280, 900, false)
		require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(view), chromedp.WaitVisible("#gate", chromedp.ByID),
			chromedp.SendKeys("#gate-email", "ann@example.com", chromedp.ByID), chromedp.Click("#gate button", chromedp.ByQuery),
			chromedp.WaitVisible(".stf__parent", chromedp.ByQuery)))
		textWordOf(t, ctx, 1, "Elephants")
		require.NoError(t, chromedp.Run(ctx, chromedp.Click("#search-open", chromedp.ByID),
			chromedp.SendKeys("#search-q", "brûlée"+kb.Enter, chromedp.ByID)))
		textWaitJS(t, ctx, `document.querySelector("#search-hits .hit .hit-page")?.textContent === "Page 3"`, "the hit on page 3")
	})
}

// textLayerChecks: a known word's span lies over the image where the PDF put it, the text is
// selectable by a drag that starts on a word (no page turns), and a click on a word still
// turns the page.
func textLayerChecks(t *testing.T, h *harness, browser context.Context, rid, view string) {
	ctx := viewerTab(t, browser, 1280, 900, false)
	viewerOpen(t, ctx, view, "1 / 4")
	require.Equal(t, "true", viewerEval(t, ctx, `String(document.getElementById("reading").hidden)`),
		"no reading mode without accessibility_enabled")
	w := textWordOf(t, ctx, 1, "Elephants")
	require.True(t, w.Hit, "the word's span is on top at its centre: %+v", w)
	require.NotEqual(t, "none", w.UserSelect, "selectable")
	fx, fy := (w.Span.Left-w.Img.Left)/w.Img.Width, (w.Span.Top-w.Img.Top)/w.Img.Height
	fw, fh := w.Span.Width/w.Img.Width, w.Span.Height/w.Img.Height
	t.Logf("Elephants at %.4f,%.4f size %.4f×%.4f of the page image %+v", fx, fy, fw, fh, w.Img)
	// seoPDF writes it at 72 pt from the left of 595 pt, on a baseline 200 pt from the top of
	// 842 pt, in 14 pt Helvetica: the box is a little above the baseline.
	require.InDelta(t, 72/595.28, fx, 0.01, "left edge")
	require.True(t, fy > 180/841.89 && fy < 200/841.89, "top %.4f", fy)
	require.True(t, fx+fw <= 1 && fy+fh <= 1, "inside the page image")
	// And it is the box the text route gives, stretched with its space up to the next word.
	words := h.textPageWords(t, rid, 1)
	box := words["Elephants"]
	require.InDelta(t, box["x"].(float64), fx, 0.005)
	require.InDelta(t, box["y"].(float64), fy, 0.01)
	require.InDelta(t, words["roam"]["x"].(float64)-box["x"].(float64), fw, 0.005, "the span reaches the next word")
	require.InDelta(t, box["h"].(float64), fh, 0.01)
	require.Equal(t, "true", viewerEval(t, ctx, `String(document.getElementById("book-text").inert)`),
		"the server's copy of the text is no longer heard once the layer is there")

	// A drag from "Elephants" to "savanna" selects the words between; the page stays.
	sv := textWordOf(t, ctx, 1, "savanna")
	y := w.Span.Top + w.Span.Height/2
	textDrag(t, ctx, w.Span.Left+1, y, sv.Span.Left+sv.Span.Width-2, y)
	sel := viewerEval(t, ctx, `getSelection().toString()`)
	require.Contains(t, sel, "Elephants roam the savann", "the selection")
	viewerWaitCounter(t, ctx, "1 / 4")
	viewerScreenshot(t, ctx, "viewer-text-selection.png", "")

	// A click on a word turns the page, as a click anywhere on the page does.
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseClickXY(w.Span.Left+w.Span.Width/2, y)))
	viewerWaitCounter(t, ctx, "2–3 / 4")
	textWordOf(t, ctx, 2, "Okavango")
}

// textSearchChecks: Tab reaches the page buttons and the search button (with a visible focus);
// the search lists hits, a hit turns to its page with the words highlighted; Escape closes the
// panel; arrow keys turn pages and each turn is announced.
func textSearchChecks(t *testing.T, browser context.Context, view string) {
	ctx := viewerTab(t, browser, 1280, 900, false)
	viewerOpen(t, ctx, view, "1 / 4")
	var seen []string
	for i := 0; i < 12 && (len(seen) == 0 || seen[len(seen)-1] != "search-open"); i++ {
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Tab)))
		seen = append(seen, viewerEval(t, ctx, `document.activeElement.id || document.activeElement.tagName`))
	}
	require.Subset(t, seen, []string{"prev", "next", "search-open"}, "reached by Tab: %v", seen)
	require.Equal(t, "search-open", seen[len(seen)-1], "%v", seen)
	outline := viewerEval(t, ctx, `(s => s.outlineStyle + " " + s.outlineWidth)(getComputedStyle(document.activeElement))`)
	require.NotContains(t, outline, "none", "a visible focus")
	require.NotEqual(t, "0px", strings.Fields(outline)[1])
	require.Equal(t, "Search", viewerEval(t, ctx, `document.activeElement.textContent`))

	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Enter)))
	textWaitJS(t, ctx, `document.activeElement.id === "search-q"`, "the search field has the focus")
	require.NoError(t, chromedp.Run(ctx, chromedp.SendKeys("#search-q", "okavango"+kb.Enter, chromedp.ByID)))
	textWaitJS(t, ctx, `document.querySelectorAll("#search-hits .hit").length === 1`, "one hit listed")
	require.Equal(t, "Page 2 Page two tells of the Okavango delta.",
		viewerEval(t, ctx, `[...document.querySelector("#search-hits .hit").children].map(e => e.textContent).join(" ")`))
	require.Contains(t, viewerEval(t, ctx, `document.getElementById("search-status").textContent`), "1 page")
	require.NoError(t, chromedp.Run(ctx, chromedp.Focus("#search-hits .hit", chromedp.ByQuery), chromedp.KeyEvent(kb.Enter)))
	viewerWaitCounter(t, ctx, "2–3 / 4")
	// The highlight is on page 2, over the word's span, and on show.
	var hl struct {
		Count     int
		Box, Word textRect
		Top       bool
	}
	testutil.Eventually(t, 15*time.Second, 40*time.Millisecond, func() error { // page-flip draws the pages on show at the next frame
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`(() => {
		const r = e => { const b = e.getBoundingClientRect(); return {Left: b.left, Top: b.top, Width: b.width, Height: b.height}; };
		const all = document.querySelectorAll(".tl .hl"), m = document.querySelector('.page[data-n="2"] .tl .hl');
		const w = [...document.querySelectorAll('.page[data-n="2"] .tl span')].find(e => e.textContent.trim() === "Okavango");
		const b = m.getBoundingClientRect();
		const top = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
		return {Count: all.length, Box: r(m), Word: r(w), Top: !!top && top.closest('.page[data-n="2"]') !== null};
	})()`, &hl)))
		if hl.Box.Width == 0 || !hl.Top {
			return fmt.Errorf("the highlight is not on show yet: %+v", hl)
		}
		return nil
	})
	require.Equal(t, 1, hl.Count, "one word highlighted")
	require.Greater(t, hl.Box.Width, 10.0)
	require.True(t, hl.Top, "the highlighted page is on show")
	require.InDelta(t, hl.Word.Left, hl.Box.Left, 2)
	require.InDelta(t, hl.Word.Top, hl.Box.Top, 2)
	viewerScreenshot(t, ctx, "viewer-search-hit.png", "")

	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Escape)))
	textWaitJS(t, ctx, `document.getElementById("search-panel").hidden && document.activeElement.id === "search-open"`,
		"Escape closes the panel and gives the focus back to the search button")
	require.Equal(t, "polite", viewerEval(t, ctx, `document.getElementById("announce").getAttribute("aria-live")`))
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	viewerWaitCounter(t, ctx, "4 / 4")
	require.Equal(t, "Page 4 of 4", viewerEval(t, ctx, `document.getElementById("announce").textContent`))
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowLeft)))
	viewerWaitCounter(t, ctx, "2–3 / 4")
	require.Equal(t, "Pages 2 and 3 of 4", viewerEval(t, ctx, `document.getElementById("announce").textContent`))
	// Arrows typed in the search field move in the field, not through the book.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Enter))) // the focused search button
	textWaitJS(t, ctx, `document.activeElement.id === "search-q"`, "the search field has the focus again")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	// A turn would have begun at the key (page-flip's state "flipping"): there is none.
	require.Equal(t, "read 2–3 / 4", viewerEval(t, ctx, `window.flipbook.pageFlip.getState() + " " + document.getElementById("pageinfo").textContent`))
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Escape)))
}

// textAccessibilityChecks reads Chromium's accessibility tree: the page on show is a region
// named "Page 1" holding its words, every button has a name, and the live region is there.
func textAccessibilityChecks(t *testing.T, browser context.Context, view string) {
	ctx := viewerTab(t, browser, 1280, 900, false)
	viewerOpen(t, ctx, view, "1 / 4")
	textWordOf(t, ctx, 1, "Elephants")
	// Accessibility.getFullAXTree, read into a few fields (cdproto's own types refuse the
	// property names this Chromium sends).
	var tree struct {
		Nodes []*textAXNode `json:"nodes"`
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		return cdp.Execute(ctx, "Accessibility.getFullAXTree", nil, &tree)
	})))
	nodes := tree.Nodes
	byID := map[string]*textAXNode{}
	for _, n := range nodes {
		byID[n.NodeID] = n
	}
	var texts func(n *textAXNode) string
	texts = func(n *textAXNode) string {
		var b strings.Builder
		if n.Role.str() == "StaticText" {
			b.WriteString(n.Name.str())
		}
		for _, c := range n.ChildIDs {
			if cn := byID[c]; cn != nil {
				b.WriteString(texts(cn))
			}
		}
		return b.String()
	}
	var regions, buttons []string
	pageText := ""
	for _, n := range nodes {
		if n.Ignored {
			continue
		}
		switch n.Role.str() {
		case "region":
			regions = append(regions, n.Name.str())
			if n.Name.str() == "Page 1" {
				pageText = texts(n)
			}
		case "button":
			buttons = append(buttons, n.Name.str())
			require.NotEmpty(t, strings.TrimSpace(n.Name.str()), "a button without a name")
		}
	}
	t.Logf("regions %q, buttons %q", regions, buttons)
	require.Contains(t, regions, "Page 1")
	require.NotContains(t, regions, "Page 2", "pages not on show are out of the tree")
	require.Contains(t, pageText, "Elephants roam the savanna in large herds.", "the page's words, as text")
	require.Contains(t, buttons, "Previous page")
	require.Contains(t, buttons, "Next page")
	require.Contains(t, buttons, "Search")
}

// textAXNode is a node of Chromium's accessibility tree (the fields the test reads).
type textAXNode struct {
	NodeID   string    `json:"nodeId"`
	Ignored  bool      `json:"ignored"`
	Role     textAXVal `json:"role"`
	Name     textAXVal `json:"name"`
	ChildIDs []string  `json:"childIds"`
}

// textAXVal is an accessibility value (a role, a name).
type textAXVal struct {
	Value any `json:"value"`
}

func (v textAXVal) str() string { s, _ := v.Value.(string); return s }

// textReadingChecks, with copyright_enabled and accessibility_enabled on: the words cannot be
// selected, a click on a word still turns the page, and the reading mode shows the pages' text
// as HTML and goes back to the flipbook.
func textReadingChecks(t *testing.T, browser context.Context, view string) {
	ctx := viewerTab(t, browser, 1280, 900, false)
	viewerOpen(t, ctx, view, "1 / 4")
	w := textWordOf(t, ctx, 1, "Elephants")
	require.Equal(t, "none", w.UserSelect, "copy protection")
	sv := textWordOf(t, ctx, 1, "savanna")
	y := w.Span.Top + w.Span.Height/2
	textDrag(t, ctx, w.Span.Left+1, y, sv.Span.Left+sv.Span.Width-2, y)
	textWaitJS(t, ctx, `window.flipbook.pageFlip.getState() === "read"`, "the drag has ended") // page-flip may have folded the page
	require.Empty(t, strings.TrimSpace(viewerEval(t, ctx, `getSelection().toString()`)), "nothing selected")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Home)))
	viewerWaitCounter(t, ctx, "1 / 4")
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseClickXY(w.Span.Left+w.Span.Width/2, y)))
	viewerWaitCounter(t, ctx, "2–3 / 4")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Home)))
	viewerWaitCounter(t, ctx, "1 / 4")

	// Reading mode.
	require.Equal(t, "false", viewerEval(t, ctx, `String(document.getElementById("reading").hidden)`))
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#reading", chromedp.ByID)))
	textWaitJS(t, ctx, `document.querySelectorAll("#reader .rp[data-done]").length === 4`, "the four pages' text")
	require.Equal(t, "true", viewerEval(t, ctx, `String(document.getElementById("book-wrap").hidden)`))
	require.Equal(t, "true", viewerEval(t, ctx, `document.getElementById("reading").getAttribute("aria-pressed")`))
	var pages []struct {
		Heading    string
		Paragraphs []string
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll("#reader .rp")].map(s => ({
		Heading: s.querySelector("h2").textContent, Paragraphs: [...s.querySelectorAll("p")].map(p => p.textContent)}))`, &pages)))
	require.Len(t, pages, 4)
	require.Equal(t, "Page 1", pages[0].Heading)
	require.Equal(t, []string{"Les Éléphants d'Afrique", "Elephants roam the savanna in large herds. They travel far for water."}, pages[0].Paragraphs)
	require.Equal(t, "Page 4", pages[3].Heading)
	require.Equal(t, []string{"Page four is the last, with a zebra."}, pages[3].Paragraphs)
	require.Equal(t, "none", viewerEval(t, ctx, `getComputedStyle(document.getElementById("reader")).userSelect`))
	viewerScreenshot(t, ctx, "viewer-reading-mode.png", "")
	// Search works there too: a hit goes to its page's section.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#search-open", chromedp.ByID),
		chromedp.SendKeys("#search-q", "zebra"+kb.Enter, chromedp.ByID)))
	textWaitJS(t, ctx, `document.querySelectorAll("#search-hits .hit").length === 1`, "the hit on page 4")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#search-hits .hit", chromedp.ByQuery)))
	textWaitJS(t, ctx, `document.activeElement.id === "rp-4"`, "page 4's heading has the focus")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Escape)))
	textWaitJS(t, ctx, `document.getElementById("search-panel").hidden`, "the panel closed")
	// In reading mode the arrows are the reader's (scrolling), not page turns: back to the
	// flipbook, at the page read.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#reading", chromedp.ByID)))
	textWaitJS(t, ctx, `document.getElementById("reader").hidden && !document.getElementById("book-wrap").hidden`, "the flipbook again")
	viewerWaitCounter(t, ctx, "1 / 4") // all four pages fit in the window: page 1 was the first in view
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	viewerWaitCounter(t, ctx, "2–3 / 4")
	// On a phone every tool still fits: the header grows rather than the page.
	phone := viewerTab(t, browser, 390, 844, true)
	viewerOpen(t, phone, view, "1 / 4")
	require.Equal(t, "true", viewerEval(t, phone, `String(document.documentElement.scrollWidth <= innerWidth && document.documentElement.scrollHeight <= innerHeight)`),
		"the page does not scroll")
	require.Equal(t, "true", viewerEval(t, phone, `String([...document.querySelectorAll("header button:not([hidden])")].every(b => {
		const r = b.getBoundingClientRect(); return r.left >= 0 && r.right <= innerWidth && r.width > 0; }))`))
	viewerScreenshot(t, phone, "viewer-text-tools-390x844.png", "")
}

// textLazyChecks opens a 30-page book at page 20: the viewer asks for the text of pages 18 to
// 24 only, and after a turn for the pages that came near.
func textLazyChecks(t *testing.T, browser context.Context, view string) {
	ctx := viewerTab(t, browser, 1280, 900, false)
	viewerOpen(t, ctx, view+"#page=20", "20–21 / 30")
	textWordOf(t, ctx, 21, "fox")
	calls := func() []string {
		var out []string
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`performance.getEntriesByType("resource").map(e => e.name)
			.filter(u => u.includes("/text?")).map(u => u.slice(u.indexOf("/text?")))`, &out)))
		return out
	}
	require.Equal(t, []string{"/text?from=18&to=24"}, calls())
	require.Equal(t, "0", viewerEval(t, ctx, `String(document.querySelectorAll('.page[data-n="1"] .tl span').length)`))
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	viewerWaitCounter(t, ctx, "22–23 / 30")
	textWordOf(t, ctx, 25, "fox")
	require.Equal(t, []string{"/text?from=18&to=24", "/text?from=25&to=26"}, calls())
}
