package httpapi

// Viewer behaviours a review found wrong in Chromium (2026-11-29), each fixed: the gate after a
// stale token, refused searches, a book unpublished while open, a right-to-left spread narrowed
// to one page, and the zoom button with nothing to zoom to.

// Review of the viewer as readers use it (headless Chromium against the test service): the
// email gate after a stale reader token, search queries the service refuses, a book unpublished
// while open, a right-to-left spread made single pages by a narrower window, and zoom on pages
// whose images are small.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// viewerKonva creates a published editor book whose pages are w+i × h images (distinct, so
// their content-hashed names differ).
func viewerKonva(t *testing.T, h *harness, key, title string, n, w, hh int) string {
	t.Helper()
	imgs := make([]any, n)
	for i := range imgs {
		imgs[i] = pngBase64(w+i, hh)
	}
	r := h.do(t, "POST", "/api/v1/books/konva", key, map[string]any{"title": title, "status": "publish",
		"canvas":      map[string]any{"width": 600, "height": 800, "orientation": "portrait", "objects": []any{map[string]any{"type": "image"}}},
		"page_images": imgs})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	return r.data()["random_id"].(string)
}

// viewerWaitTrue polls js (a boolean expression) for up to 10 s and says whether it became true.
func viewerWaitTrue(ctx context.Context, js string) bool {
	ok := false
	_ = testutil.Poll(10*time.Second, 50*time.Millisecond, func() error {
		if err := chromedp.Run(ctx, chromedp.Evaluate(js, &ok)); err != nil || !ok {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	return ok
}

// A reader whose stored token the service no longer accepts (30 days passed, or the access list
// changed and the address was added back) gets the gate again; typing the right address and
// pressing Open must open the book. viewer.js attaches the gate's submit handler only when
// there was no token at load (`if (cfg.gated && !token)`); openBook's failure path shows the
// gate without it, so the form submits natively: the page reloads to /view/{id}? with an empty
// field and the reader has to type the address a second time.
func TestViewerGateAfterStaleToken(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := viewerKonva(t, h, key, "Gated", 6, 300, 400)
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "reader@example.com"}).Status)
	ctx := viewerTab(t, viewerBrowser(t, exe), 1280, 900, false)
	view := h.base + "/view/" + rid
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(view), chromedp.WaitVisible("#gate", chromedp.ByID),
		chromedp.Evaluate(`localStorage.setItem("flipbook-token-`+rid+`", "expired-or-revoked")`, nil),
		chromedp.Navigate("about:blank"), chromedp.Navigate(view+"#page=4"),
		chromedp.WaitVisible("#gate", chromedp.ByID), // the stale token was refused: the gate again
		chromedp.SendKeys("#gate-email", "reader@example.com", chromedp.ByID),
		chromedp.Click("#gate button", chromedp.ByQuery)))
	opened := viewerWaitTrue(ctx, `!!document.querySelector(".stf__parent") && document.getElementById("gate").hidden`)
	var after struct{ URL, Email, Info string }
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`({URL: location.href, Email: document.getElementById("gate-email").value,
		Info: document.getElementById("pageinfo").textContent})`, &after)))
	require.True(t, opened, "the right address after a stale token must open the book; the page is now %s with the gate shown, "+
		"the field emptied (%q) and no book (counter %q)", after.URL, after.Email, after.Info)
}

// The search box accepts what the search route refuses (docs/VIEWER.md: q with no word, over
// 200 bytes or over 8 words is a 422): a reader who searches for a phrase of nine words, a
// punctuation mark, or 101 Cyrillic letters (the field's maxlength is 200 characters) is told
// "The service answered 422".
func TestViewerSearchRefusedQuery(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := viewerKonva(t, h, key, "Search", 4, 300, 400)
	ctx := viewerTab(t, viewerBrowser(t, exe), 1280, 900, false)
	viewerOpen(t, ctx, h.base+"/view/"+rid, "1 / 4")
	said := map[string]string{}
	for _, q := range []string{"the price of the spring collection is on page four", "?", strings.Repeat("ж", 101)} {
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`(() => { if (document.getElementById("search-panel").hidden) document.getElementById("search-open").click();
			const f = document.getElementById("search-q"); f.value = `+viewerJSString(q)+`; document.getElementById("search-form").requestSubmit(); })()`, nil)))
		viewerWaitTrue(ctx, `!/…|\.\.\./.test(document.getElementById("search-status").textContent) && document.getElementById("search-status").textContent !== ""`)
		said[string([]rune(q)[:min(len([]rune(q)), 12)])] = viewerEval(t, ctx, `document.getElementById("search-status").textContent`)
	}
	var refused []string
	for q, s := range said {
		if strings.Contains(s, "422") {
			refused = append(refused, fmt.Sprintf("%q: %q", q, s))
		}
	}
	sort.Strings(refused)
	require.Empty(t, refused, "searches answered with the service's status instead of words for the reader")
}

// A book unpublished while a reader has it open: the next page images are 404. The viewer
// shows white pages with a broken-image icon and the alt text ("Page 6"), says nothing, and
// keeps posting events to a collector that answers 404.
func TestViewerUnpublishedWhileOpen(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := viewerKonva(t, h, key, "Unpublished", 6, 300, 400)
	ctx := viewerTab(t, viewerBrowser(t, exe), 1280, 900, false)
	viewerOpen(t, ctx, h.base+"/view/"+rid, "1 / 6")
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "draft"}).Status)
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.End)))
	// The image of page 6 is refused: the viewer asks whether the book is still there and, as it
	// is not, loads the page again, which is the service's notice for a book not available.
	var page string
	err := testutil.Poll(15*time.Second, 100*time.Millisecond, func() error {
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := chromedp.Run(tctx, chromedp.Evaluate(`document.querySelector(".page") ? "viewer" : document.body.innerText`, &page)); err != nil {
			return err
		}
		if page == "viewer" {
			return fmt.Errorf("the viewer still shows the book's pages")
		}
		return nil
	})
	require.NoError(t, err, "a book unpublished while open: the reader is told, not shown broken pages (%q)", page)
	viewerScreenshot(t, ctx, "viewer-unpublished.png", "")
}

func TestViewerRTLNarrowKeepsFirstPage(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	ltr := viewerKonva(t, h, key, "LTR", 6, 300, 400)
	rtl := viewerKonva(t, h, key, "RTL", 5, 300, 400)
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rtl, key, map[string]any{"status": "publish", "reading_direction": "rtl"}).Status)
	ctx := viewerTab(t, viewerBrowser(t, exe), 1280, 900, false)

	viewerOpen(t, ctx, h.base+"/view/"+ltr+"#page=4", "4–5 / 6")
	require.NoError(t, chromedp.Run(ctx, viewerViewport(390, 900, false)))
	viewerWaitCounter(t, ctx, "4 / 6") // left to right: the first page of the spread

	require.NoError(t, chromedp.Run(ctx, viewerViewport(1280, 900, false)))
	viewerOpen(t, ctx, h.base+"/view/"+rtl+"#page=2", "2–3 / 5")
	require.NoError(t, chromedp.Run(ctx, viewerViewport(390, 900, false)))
	var got string
	_ = testutil.Poll(5*time.Second, 50*time.Millisecond, func() error {
		got = viewerEval(t, ctx, `document.getElementById("pageinfo").textContent + " " + location.hash`)
		if !strings.Contains(got, "/") || strings.Contains(got, "–") {
			return fmt.Errorf("still a spread")
		}
		return nil
	})
	require.Equal(t, "2 / 5 #page=2", got, "single pages from the spread 2–3 of a right-to-left book")
}

// Zoom on a book whose page images are small beside the window (an editor book with 300×400
// page images, shown about 830 px high): the cap (1.5 times the image's size) is below 1, so
// the + button stays enabled and does nothing, with no feedback.
func TestViewerZoomInWithNothingToZoom(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := viewerKonva(t, h, key, "Small", 4, 300, 400)
	ctx := viewerTab(t, viewerBrowser(t, exe), 1280, 900, false)
	viewerOpen(t, ctx, h.base+"/view/"+rid, "1 / 4")
	var st struct {
		Level    string
		Disabled bool
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#zoom-in", chromedp.ByID),
		chromedp.Evaluate(`({Level: document.getElementById("zoom-reset").textContent, Disabled: document.getElementById("zoom-in").disabled})`, &st)))
	require.True(t, st.Level != "100%" || st.Disabled, "zoom in was clicked: the level is %s and the + button is still enabled", st.Level)
}
