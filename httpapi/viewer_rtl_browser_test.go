package httpapi

// Right-to-left books in headless Chromium (issue 29, docs/VIEWER.md "Right-to-left books"):
// converted PDFs of 5 and 4 pages with reading_direction rtl, and the same 5 pages left to
// right.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// rtlWords are the words of the pages of rtlPDF, one a page, for the search and the text layer.
var rtlWords = []string{"alpaca", "bison", "caracal", "dugong", "eland"}

// rtlPDF has n pages (at most 5), each with its number and its own word.
func rtlPDF(t *testing.T, n int) []byte {
	f := newPDF()
	for i := 0; i < n; i++ {
		f.AddPage()
		f.SetXY(72, 72)
		f.Write(16, fmt.Sprintf("Page %d: the %s.", i+1, rtlWords[i]))
		f.SetFillColor(40+i*40, 90, 160)
		f.Rect(72, 140, 300, 200, "F")
	}
	return pdfBytes(t, f)
}

// rtlBook uploads an n-page PDF and publishes it with the reading direction dir ("" for none).
func rtlBook(t *testing.T, h *harness, key string, n int, dir string) string {
	batch, rid := h.uploadOK(t, key, fmt.Sprintf("book-%d-%s.pdf", n, dir), rtlPDF(t, n))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	body := map[string]any{"status": "publish"}
	if dir != "" {
		body["reading_direction"] = dir
	}
	r := h.do(t, "PUT", "/api/v1/books/"+rid, key, body)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return rid
}

// rtlBoxes are the boxes of the pages on show (page-flip's visible page elements), by page
// number, with the book's box and the two turning buttons.
type rtlBoxes struct {
	Pages      map[string]viewerRect
	Book       viewerRect
	Prev, Next viewerRect
	PrevName   string
	NextName   string
}

const rtlBoxesJS = `(() => {
	const r = e => { const b = e.getBoundingClientRect(); return {Top: b.top, Bottom: b.bottom, Left: b.left, Right: b.right}; };
	const pages = {};
	for (const e of document.querySelectorAll(".page.stf__item")) {
		if (getComputedStyle(e).display === "none" || !e.offsetWidth) continue;
		pages[e.dataset.n || "blank"] = r(e);
	}
	const prev = document.getElementById("prev"), next = document.getElementById("next");
	return {Pages: pages, Book: r(document.getElementById("book")), Prev: r(prev), Next: r(next),
		PrevName: prev.getAttribute("aria-label"), NextName: next.getAttribute("aria-label")};
})()`

func rtlBoxesOf(t *testing.T, ctx context.Context) rtlBoxes {
	t.Helper()
	var b rtlBoxes
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(rtlBoxesJS, &b)))
	return b
}

// requireShown checks the pages on show, each named page left of the next one named. page-flip
// draws a turn made without animation (a jump) at its next frame, after the counter changed.
func requireShown(t *testing.T, ctx context.Context, leftToRight ...string) rtlBoxes {
	t.Helper()
	var b rtlBoxes
	want := append([]string(nil), leftToRight...)
	sort.Strings(want)
	testutil.Eventually(t, 5*time.Second, 40*time.Millisecond, func() error {
		b = rtlBoxesOf(t, ctx)
		names := make([]string, 0, len(b.Pages))
		for n := range b.Pages {
			names = append(names, n)
		}
		sort.Strings(names)
		if !slices.Equal(want, names) {
			return fmt.Errorf("the pages on show are %v, want %v", names, want)
		}
		return nil
	})
	for i := 1; i < len(leftToRight); i++ {
		l, r := b.Pages[leftToRight[i-1]], b.Pages[leftToRight[i]]
		require.LessOrEqual(t, l.Right, r.Left+1, "page %s is left of page %s: %+v %+v", leftToRight[i-1], leftToRight[i], l, r)
		require.Greater(t, l.Right-l.Left, 100.0, "page %s has a size", leftToRight[i-1])
	}
	return b
}

// rtlAskedJS lists the pages whose image was asked for (the first ones asked for at the
// opening are those on show; their neighbours follow).
const rtlAskedJS = `[...document.querySelectorAll(".page[data-n] img")].filter(i => i.getAttribute("src")).map(i => i.closest(".page").dataset.n).sort((a, b) => a - b).join()`

// rtlWaitImages waits until the images of the named pages are loaded.
func rtlWaitImages(t *testing.T, ctx context.Context, pages ...string) {
	t.Helper()
	for _, n := range pages {
		textWaitJS(t, ctx, `(i => i && i.complete && i.naturalWidth > 0)(document.querySelector('.page[data-n="`+n+`"] img'))`,
			"the image of page "+n)
	}
}

// rtlClickNamed clicks the turning button whose name is name ("Next page", "Previous page").
func rtlClickNamed(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	require.NoError(t, chromedp.Run(ctx, chromedp.Click(`#prev[aria-label="`+name+`"], #next[aria-label="`+name+`"]`, chromedp.ByQuery)))
}

func TestViewerRTLInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	rtl5 := rtlBook(t, h, key, 5, "rtl")
	rtl4 := rtlBook(t, h, key, 4, "rtl")
	ltr5 := rtlBook(t, h, key, 5, "")
	browser := viewerBrowser(t, exe)

	t.Run("five pages, right to left", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		rtlFiveChecks(t, ctx, h.base+"/view/"+rtl5)
	})
	t.Run("four pages, right to left", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		viewerOpen(t, ctx, h.base+"/view/"+rtl4, "1 / 4")
		requireShown(t, ctx, "1")
		rtlClickNamed(t, ctx, "Next page")
		viewerWaitCounter(t, ctx, "2–3 / 4")
		requireShown(t, ctx, "3", "2")
		rtlClickNamed(t, ctx, "Next page")
		viewerWaitCounter(t, ctx, "4 / 4")
		b := requireShown(t, ctx, "4")
		mid := (b.Book.Left + b.Book.Right) / 2
		require.GreaterOrEqual(t, b.Pages["4"].Left, mid-2, "the back cover is on the right-hand side: %+v in %+v", b.Pages["4"], b.Book)
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Home)))
		viewerWaitCounter(t, ctx, "1 / 4")
	})
	t.Run("five pages, right to left, on a phone", func(t *testing.T) {
		ctx := viewerTab(t, browser, 390, 844, true)
		viewerOpen(t, ctx, h.base+"/view/"+rtl5+"#page=2", "2 / 5")
		requireShown(t, ctx, "2")
		rtlClickNamed(t, ctx, "Next page")
		viewerWaitCounter(t, ctx, "3 / 5")
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
		viewerWaitCounter(t, ctx, "2 / 5")
		requireShown(t, ctx, "2")
	})
	t.Run("five pages, left to right as before", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		viewerOpen(t, ctx, h.base+"/view/"+ltr5, "1 / 5")
		b := requireShown(t, ctx, "1")
		require.Equal(t, "Previous page", b.PrevName)
		require.Equal(t, "Next page", b.NextName)
		require.GreaterOrEqual(t, b.Pages["1"].Left, (b.Book.Left+b.Book.Right)/2-2, "the cover is on the right-hand side")
		require.Equal(t, "false", viewerEval(t, ctx, `String(flipbook.rtl)`))
		require.NoError(t, chromedp.Run(ctx, chromedp.Click("#next", chromedp.ByID)))
		viewerWaitCounter(t, ctx, "2–3 / 5")
		requireShown(t, ctx, "2", "3")
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
		viewerWaitCounter(t, ctx, "4–5 / 5")
		requireShown(t, ctx, "4", "5")
		viewerOpen(t, ctx, h.base+"/view/"+ltr5+"#page=3", "2–3 / 5")
		requireShown(t, ctx, "2", "3")
	})
}

// rtlFiveChecks: the cover alone, spreads with the lower page on the right, the turning
// buttons and keys, the fragment, thumbnails, search, the text layer and the reader events
// of a 5-page right-to-left book.
func rtlFiveChecks(t *testing.T, ctx context.Context, view string) {
	viewerOpen(t, ctx, view, "1 / 5")
	require.Contains(t, strings.Split(viewerEval(t, ctx, rtlAskedJS), ","), "1", "the page on show is asked for at once")
	require.Equal(t, "true", viewerEval(t, ctx, `String(flipbook.rtl)`))
	require.Equal(t, "ltr", viewerEval(t, ctx, `getComputedStyle(document.documentElement).direction`),
		"the document keeps its language's direction")
	// Count what the viewer sends to the collector from here on.
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.sentEvents = []; (() => { const f = window.fetch;
		window.fetch = (u, o) => { if (String(u).includes("/collect")) window.sentEvents.push(...JSON.parse(o.body).events); return f(u, o); }; })(), true`, nil)))
	b := requireShown(t, ctx, "1")
	// The cover stands alone at the spine, its binding edge on its right as in a bound
	// right-to-left book: it turns to the right, showing the book's first spread.
	require.LessOrEqual(t, b.Pages["1"].Right, (b.Book.Left+b.Book.Right)/2+2, "the cover is left of the spine: %+v in %+v", b.Pages["1"], b.Book)
	// The left button goes forward: the buttons' names changed places.
	require.Equal(t, "Next page", b.PrevName)
	require.Equal(t, "Previous page", b.NextName)
	require.Less(t, b.Prev.Left, b.Next.Left)
	rtlWaitImages(t, ctx, "1")
	viewerScreenshot(t, ctx, "viewer-rtl-cover.png", "")

	rtlClickNamed(t, ctx, "Next page")
	viewerWaitCounter(t, ctx, "2–3 / 5")
	requireShown(t, ctx, "3", "2")
	require.Equal(t, "#page=2", viewerEval(t, ctx, `location.hash`))
	rtlWaitImages(t, ctx, "2", "3")
	viewerScreenshot(t, ctx, "viewer-rtl-spread.png", "")
	// The text layer of each page is its own page's text.
	textWaitJS(t, ctx, `(document.querySelector('.page[data-n="3"] .tl') || {}).textContent?.includes("caracal")`, "page 3's text layer")
	require.NotContains(t, viewerEval(t, ctx, `document.querySelector('.page[data-n="2"] .tl').textContent`), "caracal")

	// ArrowLeft goes forward, ArrowRight back; PageDown forward.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowLeft)))
	viewerWaitCounter(t, ctx, "4–5 / 5")
	requireShown(t, ctx, "5", "4")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	viewerWaitCounter(t, ctx, "2–3 / 5")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.PageDown)))
	viewerWaitCounter(t, ctx, "4–5 / 5")
	rtlClickNamed(t, ctx, "Previous page")
	viewerWaitCounter(t, ctx, "2–3 / 5")
	rtlClickNamed(t, ctx, "Previous page")
	viewerWaitCounter(t, ctx, "1 / 5")

	// The reader's time went to the pages in reading order: the cover, 2–3, 4–5, 2–3, 4–5, 2–3.
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`flipbook.flush(false), true`, nil)))
	var sent []struct {
		Type string `json:"type"`
		Page int    `json:"page_number"`
	}
	require.NoError(t, json.Unmarshal([]byte(viewerEval(t, ctx, `JSON.stringify(window.sentEvents)`)), &sent))
	var seen []string
	for _, e := range sent {
		if e.Type == "page_segment_completed" {
			seen = append(seen, fmt.Sprint(e.Page))
		}
	}
	require.Equal(t, "1 2 3 4 5 2 3 4 5 2 3", strings.Join(seen, " "), "%+v", sent)

	// #page=4 opens on pages 4–5, 4 on the right.
	viewerOpen(t, ctx, view+"#page=4", "4–5 / 5")
	require.Contains(t, viewerEval(t, ctx, rtlAskedJS), "4,5", "the pages on show are asked for at once")
	requireShown(t, ctx, "5", "4")
	rtlWaitImages(t, ctx, "4", "5")
	require.Equal(t, "#page=4", viewerEval(t, ctx, `location.hash`))
	// The last spread turns to the blank back of the book, counted as the last page; End and
	// Home go to the ends.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowLeft)))
	viewerWaitCounter(t, ctx, "5 / 5")
	requireShown(t, ctx, "blank")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Home)))
	viewerWaitCounter(t, ctx, "1 / 5")
	requireShown(t, ctx, "1")

	// A thumbnail jump lands on its page.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#thumbs-open", chromedp.ByID),
		chromedp.Click(`#thumbs-list .thumb[aria-label="Page 3"]`, chromedp.ByQuery)))
	viewerWaitCounter(t, ctx, "2–3 / 5")
	requireShown(t, ctx, "3", "2")
	// A search hit too.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#search-open", chromedp.ByID),
		chromedp.SendKeys("#search-q", "dugong"+kb.Enter, chromedp.ByID)))
	textWaitJS(t, ctx, `document.querySelectorAll("#search-hits .hit").length === 1`, "the hit on page 4")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#search-hits .hit", chromedp.ByQuery)))
	viewerWaitCounter(t, ctx, "4–5 / 5")
	requireShown(t, ctx, "5", "4")
	// The hashchange of a fragment edited by the reader.
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`location.hash = "#page=1", true`, nil)))
	viewerWaitCounter(t, ctx, "1 / 5")
}
