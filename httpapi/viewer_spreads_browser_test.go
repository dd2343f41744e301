package httpapi

// The viewer in headless Chromium on a converted 56-page PDF: the page counter on spreads, a
// layout that never scrolls, the header and test-mode banner above a turning page, swipes on a
// touch screen, and the page in the URL fragment.

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
	xdraw "golang.org/x/image/draw"

	"flipbook/ingest"
	"flipbook/internal/testutil"
)

// viewerBrowser starts headless Chromium at 1280x900 (startBrowser).
func viewerBrowser(t *testing.T, exe string) context.Context {
	return startBrowser(t, exe, 1280, 900, 240*time.Second)
}

// viewerTab opens a new tab of the browser with a viewport of w×h CSS pixels (mobile: a phone
// with a touch screen).
func viewerTab(t *testing.T, browser context.Context, w, h int64, mobile bool) context.Context {
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel) // closes the tab
	require.NoError(t, chromedp.Run(ctx, viewerViewport(w, h, mobile)))
	return ctx
}

// viewerViewport sets the viewport (mobile: with touch, upright).
func viewerViewport(w, h int64, mobile bool) chromedp.EmulateAction {
	if mobile {
		return chromedp.EmulateViewport(w, h, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	return chromedp.EmulateViewport(w, h)
}

// viewerOpen loads url afresh (a change of fragment alone would not reload the page) and waits
// for the counter to show want.
func viewerOpen(t *testing.T, ctx context.Context, url, want string) {
	t.Helper()
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(url),
		chromedp.WaitVisible(".stf__parent", chromedp.ByQuery)))
	viewerWaitCounter(t, ctx, want)
}

// viewerWaitCounter waits until the page counter shows want and no page is turning.
func viewerWaitCounter(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	var got struct {
		Info  string `json:"info"`
		State string `json:"state"`
	}
	testutil.Eventually(t, 15*time.Second, 40*time.Millisecond, func() error {
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`({info: (document.getElementById("pageinfo") || {}).textContent || "",
			state: window.flipbook ? window.flipbook.pageFlip.getState() : ""})`, &got)))
		if got.Info != want || got.State != "read" {
			return fmt.Errorf("page counter %q (state %q), want %q", got.Info, got.State, want)
		}
		return nil
	})
}

// viewerEval evaluates js to a string.
func viewerEval(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	var s string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(js, &s)))
	return s
}

// viewerScreenshot saves the viewport to the artifacts directory; with FLIPBOOK_UPDATE_DOCS=1
// and a docs name, a half-size copy goes to docs/img too.
func viewerScreenshot(t *testing.T, ctx context.Context, name, docs string) {
	t.Helper()
	var shot []byte
	require.NoError(t, chromedp.Run(ctx, chromedp.CaptureScreenshot(&shot)))
	out := filepath.Join(artifactDir(t), name)
	require.NoError(t, os.WriteFile(out, shot, 0o644))
	t.Logf("screenshot: %s", out)
	if docs == "" || os.Getenv("FLIPBOOK_UPDATE_DOCS") == "" {
		return
	}
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	b := img.Bounds()
	small := image.NewRGBA(image.Rect(0, 0, b.Dx()/2, b.Dy()/2))
	xdraw.CatmullRom.Scale(small, small.Bounds(), img, b, xdraw.Src, nil)
	var buf bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, small))
	require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "img", docs), buf.Bytes(), 0o644))
	t.Logf("docs/img/%s (%d bytes)", docs, buf.Len())
}

type viewerRect struct{ Top, Bottom, Left, Right float64 }

// viewerLayout is the geometry of the viewer page.
type viewerLayout struct {
	ScrollHeight, ScrollWidth, InnerHeight, InnerWidth float64
	Header, Banner, Pages                              viewerRect
	Orientation                                        string
}

// viewerLayoutJS measures the page: the document's scroll size, the header and banner, and the
// pages on show (the union of page-flip's visible page elements).
const viewerLayoutJS = `(() => {
	const r = e => { const b = e.getBoundingClientRect(); return {Top: b.top, Bottom: b.bottom, Left: b.left, Right: b.right}; };
	const shown = [...document.querySelectorAll(".stf__item")].filter(e => getComputedStyle(e).display !== "none").map(r);
	const d = document.documentElement;
	return {
		ScrollHeight: d.scrollHeight, ScrollWidth: d.scrollWidth, InnerHeight: innerHeight, InnerWidth: innerWidth,
		Header: r(document.querySelector("header")), Banner: r(document.querySelector(".banner")),
		Pages: {Top: Math.min(...shown.map(b => b.Top)), Bottom: Math.max(...shown.map(b => b.Bottom)),
			Left: Math.min(...shown.map(b => b.Left)), Right: Math.max(...shown.map(b => b.Right))},
		Orientation: window.flipbook.pageFlip.getOrientation(),
	};
})()`

func viewerLayoutOf(t *testing.T, ctx context.Context) viewerLayout {
	t.Helper()
	var l viewerLayout
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(viewerLayoutJS, &l)))
	return l
}

// viewerCheckFits checks that the document does not scroll and that the pages are inside the
// viewport under the header, filling its width or its height.
func viewerCheckFits(t *testing.T, l viewerLayout) {
	t.Helper()
	require.LessOrEqual(t, l.ScrollHeight, l.InnerHeight, "no vertical scrollbar: %+v", l)
	require.LessOrEqual(t, l.ScrollWidth, l.InnerWidth, "no horizontal scrollbar: %+v", l)
	require.Less(t, l.Banner.Bottom, l.Header.Bottom, "the banner is above the header")
	require.GreaterOrEqual(t, l.Pages.Top, l.Header.Bottom, "pages under the header: %+v", l)
	require.LessOrEqual(t, l.Pages.Bottom, l.InnerHeight, "pages inside the viewport: %+v", l)
	require.GreaterOrEqual(t, l.Pages.Left, 0.0, "%+v", l)
	require.LessOrEqual(t, l.Pages.Right, l.InnerWidth, "%+v", l)
	availH, availW := l.InnerHeight-l.Header.Bottom, l.InnerWidth
	h, w := l.Pages.Bottom-l.Pages.Top, l.Pages.Right-l.Pages.Left
	require.True(t, h >= 0.9*availH || w >= 0.9*availW, "the pages fill the height (%.0f of %.0f) or the width (%.0f of %.0f)", h, availH, w, availW)
}

// viewerTurnJS samples, on every animation frame while a page turns, what is on top at points
// across the test-mode banner and the header, and how high the turning page's box reaches. start
// begins the turn (or is empty when a drag holds the page half turned).
const viewerTurnJS = `new Promise(resolve => {
	const pf = window.flipbook.pageFlip, bars = [document.querySelector(".banner"), document.querySelector("header")];
	const out = {Frames: 0, Turning: 0, Samples: 0, Misses: [], Reach: 1e9, HeaderBottom: bars[1].getBoundingClientRect().bottom};
	const t0 = performance.now();
	%s
	(function frame() {
		out.Frames++;
		if (pf.getState() !== "read") out.Turning++;
		for (const e of document.querySelectorAll(".stf__item")) {
			if (getComputedStyle(e).display !== "none") out.Reach = Math.min(out.Reach, e.getBoundingClientRect().top);
		}
		for (const bar of bars) {
			const b = bar.getBoundingClientRect();
			for (let x = b.left + 3; x < b.right; x += 16) {
				for (const y of [b.top + 1, (b.top + b.bottom) / 2, b.bottom - 1]) {
					out.Samples++;
					const hit = document.elementFromPoint(x, y);
					if (!hit || !bar.contains(hit)) out.Misses.push(Math.round(x) + "," + Math.round(y) + ": " + (hit ? hit.tagName + "." + hit.className : "none"));
				}
			}
		}
		if (performance.now() - t0 < %d) requestAnimationFrame(frame); else resolve(out);
	})();
})`

type viewerTurnCheck struct {
	Frames, Turning, Samples int
	Misses                   []string
	Reach, HeaderBottom      float64
}

func viewerCheckTurn(t *testing.T, ctx context.Context, start string, ms int) viewerTurnCheck {
	t.Helper()
	var c viewerTurnCheck
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(viewerTurnJS, start, ms), &c,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })))
	return c
}

// viewerTouch dispatches a touch gesture: a touch at the first point, moves to the others, then
// the finger lifts; hold is the time before the first move.
func viewerTouch(ctx context.Context, hold time.Duration, pts ...[2]float64) error {
	return chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		at := func(p [2]float64) []*input.TouchPoint { return []*input.TouchPoint{{X: p[0], Y: p[1], ID: 1}} }
		if err := input.DispatchTouchEvent(input.TouchStart, at(pts[0])).Do(ctx); err != nil {
			return err
		}
		time.Sleep(hold) // sleep: the finger rests this long before it moves (the gesture under test)
		for _, p := range pts[1:] {
			if err := input.DispatchTouchEvent(input.TouchMove, at(p)).Do(ctx); err != nil {
				return err
			}
		}
		return input.DispatchTouchEvent(input.TouchEnd, []*input.TouchPoint{}).Do(ctx)
	}))
}

// TestViewerSpreadsInBrowser converts a 56-page PDF of a test-mode workspace and opens it in
// headless Chromium: the counter names both pages of a spread; at common sizes the document
// never scrolls and the pages fit under the header; a turning page stays under the header and
// the test-mode banner; swipes turn pages on a touch screen; the URL fragment holds the page
// (open, turn, reload, edit), and the reader events stay right.
func TestViewerSpreadsInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 400 })
	key := h.workspace(t, "company", "test") // test mode: the viewer shows the test-mode banner
	batch, rid := h.uploadOK(t, key, "fifty-six.pdf", manyPagesPDF(t, 56), "status", "publish")
	b := h.waitBatch(t, key, batch)
	require.Equal(t, "completed", b["status"], "%v", batchFile(b)["error"])
	require.EqualValues(t, 56, h.bookData(t, key, rid)["page_count"])
	browser := viewerBrowser(t, exe)
	view := h.base + "/view/" + rid

	t.Run("counter and layout", func(t *testing.T) {
		for _, sz := range []struct {
			w, h                int64
			mobile              bool
			orientation, second string
		}{
			{1280, 900, false, "landscape", "2–3 / 56"},
			{1920, 1080, false, "landscape", "2–3 / 56"},
			{1024, 768, false, "landscape", "2–3 / 56"},
			{768, 1024, true, "portrait", "2 / 56"},
			{390, 844, true, "portrait", "2 / 56"},
		} {
			ctx, cancel := chromedp.NewContext(browser)
			require.NoError(t, chromedp.Run(ctx, viewerViewport(sz.w, sz.h, sz.mobile)))
			viewerOpen(t, ctx, view, "1 / 56")
			viewerCheckFits(t, viewerLayoutOf(t, ctx))
			require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
			viewerWaitCounter(t, ctx, sz.second)
			l := viewerLayoutOf(t, ctx)
			require.Equal(t, sz.orientation, l.Orientation, "%dx%d", sz.w, sz.h)
			viewerCheckFits(t, l)
			docs := ""
			if sz.w == 1280 {
				docs = "viewer-spread.png"
			}
			viewerScreenshot(t, ctx, fmt.Sprintf("viewer-%dx%d.png", sz.w, sz.h), docs)
			if sz.w == 1280 {
				require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.End)))
				viewerWaitCounter(t, ctx, "56 / 56") // the back cover is on its own
				require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowLeft)))
				viewerWaitCounter(t, ctx, "54–55 / 56")
				// A narrower window turns the book to single pages; the counter follows.
				require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(390, 844)))
				viewerWaitCounter(t, ctx, "54 / 56")
				viewerCheckFits(t, viewerLayoutOf(t, ctx))
				require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)))
				viewerWaitCounter(t, ctx, "54–55 / 56")
			}
			cancel()
		}
	})

	t.Run("turning page under header and banner", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		viewerOpen(t, ctx, view+"#page=2", "2–3 / 56")
		l := viewerLayoutOf(t, ctx)
		// A turn by the page's top corner, slowed down to 1.2 s, sampled on every frame of its
		// animation.
		c := viewerCheckTurn(t, ctx, `const ft = pf.getSettings().flippingTime;
			pf.getSettings().flippingTime = 1200;
			pf.flipNext("top");
			pf.getSettings().flippingTime = ft;`, 1800)
		t.Logf("animated turn: %d frames, %d turning, %d samples, misses %v, reach %.0f",
			c.Frames, c.Turning, c.Samples, c.Misses, c.Reach)
		require.GreaterOrEqual(t, c.Turning, 3, "frames sampled while the page turned")
		require.Less(t, c.Reach, c.HeaderBottom, "the turning page's box reaches into the header")
		require.Empty(t, c.Misses, "header and banner on top in all %d samples", c.Samples)
		viewerWaitCounter(t, ctx, "4–5 / 56")

		// A page held half turned by a mouse drag from its top corner, past the spine, up into the
		// banner; let go, it turns.
		x, y := l.Pages.Right-4, l.Pages.Top+4
		toX, toY := (l.Pages.Left+l.Pages.Right)/2-100, l.Banner.Top+8
		require.NoError(t, chromedp.Run(ctx, chromedp.MouseEvent(input.MousePressed, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1))))
		for i := 1; i <= 10; i++ {
			f := float64(i) / 10
			require.NoError(t, chromedp.Run(ctx, chromedp.MouseEvent(input.MouseMoved, x+(toX-x)*f, y+(toY-y)*f, chromedp.ButtonLeft)))
		}
		c = viewerCheckTurn(t, ctx, "", 100)
		t.Logf("held turn: %d frames, %d turning, %d samples, misses %v, reach %.0f",
			c.Frames, c.Turning, c.Samples, c.Misses, c.Reach)
		require.Greater(t, c.Turning, 0, "the page is held half turned")
		require.Less(t, c.Reach, l.Banner.Bottom, "the held page's box reaches up into the banner")
		require.Empty(t, c.Misses, "header and banner on top in all %d samples", c.Samples)
		viewerScreenshot(t, ctx, "viewer-turning-1280x900.png", "viewer-turning.png")
		require.NoError(t, chromedp.Run(ctx, chromedp.MouseEvent(input.MouseReleased, toX, toY, chromedp.ButtonLeft, chromedp.ClickCount(1))))
		viewerWaitCounter(t, ctx, "6–7 / 56")
	})

	t.Run("swipe on a touch screen", func(t *testing.T) {
		ctx := viewerTab(t, browser, 390, 844, true)
		viewerOpen(t, ctx, view, "1 / 56")
		var touchScreen bool
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(
			`navigator.maxTouchPoints > 0 && matchMedia("(pointer: coarse)").matches`, &touchScreen)))
		require.True(t, touchScreen, "touch emulation")
		l := viewerLayoutOf(t, ctx)
		y := (l.Pages.Top + l.Pages.Bottom) / 2
		w := l.Pages.Right - l.Pages.Left
		left, right := l.Pages.Left+0.2*w, l.Pages.Left+0.8*w
		swipe := func(from, to float64) error { // quick: four touch events, well within 250 ms
			return viewerTouch(ctx, 0, [2]float64{from, y}, [2]float64{from + (to-from)/3, y},
				[2]float64{from + 2*(to-from)/3, y}, [2]float64{to, y})
		}
		require.NoError(t, swipe(right, left)) // right to left: next page
		viewerWaitCounter(t, ctx, "2 / 56")
		require.NoError(t, swipe(right, left))
		viewerWaitCounter(t, ctx, "3 / 56")
		require.NoError(t, swipe(left, right)) // left to right: previous page
		viewerWaitCounter(t, ctx, "2 / 56")
		// A slow drag (the finger rests first) folds the page along and turns it when let go.
		steps := [][2]float64{{l.Pages.Right - 5, y}}
		for i := 1; i <= 8; i++ {
			steps = append(steps, [2]float64{l.Pages.Right - 5 - float64(i)*w/8, y})
		}
		require.NoError(t, viewerTouch(ctx, 400*time.Millisecond, steps...))
		viewerWaitCounter(t, ctx, "3 / 56")
		// A vertical swipe does not turn the page.
		require.NoError(t, viewerTouch(ctx, 0, [2]float64{left, y - 100}, [2]float64{left, y}, [2]float64{left, y + 100}))
		time.Sleep(500 * time.Millisecond) // sleep: time for a turn that must not come (a negative check: the vertical swipe turns no page)
		viewerWaitCounter(t, ctx, "3 / 56")
		viewerCheckFits(t, viewerLayoutOf(t, ctx))
		viewerScreenshot(t, ctx, "viewer-touch-390x844.png", "")
	})

	t.Run("page in the fragment", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		viewerOpen(t, ctx, view+"#page=12", "12–13 / 56")
		require.Equal(t, "#page=12", viewerEval(t, ctx, `location.hash`))
		session := viewerEval(t, ctx, `window.flipbook.session`)
		var entries, after int
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`history.length`, &entries)))
		time.Sleep(100 * time.Millisecond) // sleep: some reading time on pages 12-13 (their page segment's active time)
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
		viewerWaitCounter(t, ctx, "14–15 / 56")
		require.Equal(t, "#page=14", viewerEval(t, ctx, `location.hash`))
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
		viewerWaitCounter(t, ctx, "16–17 / 56")
		require.Equal(t, "#page=16", viewerEval(t, ctx, `location.hash`))
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`history.length`, &after)))
		require.Equal(t, entries, after, "turning pages adds no history entries")
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.flipbook.flush(false)`, nil)))

		// Reload: the same pages.
		require.NoError(t, chromedp.Run(ctx, chromedp.Reload(), chromedp.WaitVisible(".stf__parent", chromedp.ByQuery)))
		viewerWaitCounter(t, ctx, "16–17 / 56")
		require.Equal(t, "#page=16", viewerEval(t, ctx, `location.hash`))

		// The reader edits the fragment.
		for _, c := range []struct{ hash, counter, after string }{
			{"#page=40", "40–41 / 56", "#page=40"},
			{"#page=41", "40–41 / 56", "#page=41"}, // on show already: kept
			{"#page=999", "56 / 56", "#page=56"},   // clamped
			{"#page=x", "56 / 56", "#page=x"},      // not a page: ignored
			{"#page=0", "1 / 56", "#page=1"},
			{"#page=3", "2–3 / 56", "#page=3"},
		} {
			// A listener added after the viewer's own sees the hashchange once the viewer handled it.
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.testHashChanged = false;
				addEventListener("hashchange", function () { window.testHashChanged = true }, {once: true});
				location.hash = `+viewerJSString(c.hash), nil)))
			testutil.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
				var handled bool
				require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.testHashChanged`, &handled)))
				if !handled {
					return fmt.Errorf("the viewer has not handled the fragment %s yet (no hashchange seen)", c.hash)
				}
				return nil
			})
			viewerWaitCounter(t, ctx, c.counter)
			require.Equal(t, c.after, viewerEval(t, ctx, `location.hash`), c.hash)
		}
		// Opened with a fragment that is not a page, or out of range.
		viewerOpen(t, ctx, view+"#page=abc", "1 / 56")
		require.Equal(t, "#page=abc", viewerEval(t, ctx, `location.hash`))
		viewerOpen(t, ctx, view+"#page=57", "56 / 56")
		require.Equal(t, "#page=56", viewerEval(t, ctx, `location.hash`))
		viewerOpen(t, ctx, view, "1 / 56")
		require.Equal(t, "", viewerEval(t, ctx, `location.hash`), "a book opened without a fragment keeps its URL")

		// The first session's events: it started on page 12, and pages 12-13 and 14-15 have a
		// segment each (nothing for page 1, nothing twice).
		testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
			n := 0
			for _, e := range h.logged(t) {
				if e.SessionID == session && e.Type == ingest.PageSegmentCompleted {
					n++
				}
			}
			if n < 4 {
				return fmt.Errorf("%d of the first session's 4 page segments are stored", n)
			}
			return nil
		})
		starts, segs := []int32{}, map[int32]int{}
		for _, e := range h.logged(t) {
			if e.SessionID != session {
				continue
			}
			switch e.Type {
			case ingest.SessionStarted:
				starts = append(starts, e.PageNumber)
			case ingest.PageSegmentCompleted:
				require.Greater(t, e.ActiveMs, int64(0), "page %d", e.PageNumber)
				segs[e.PageNumber]++
			}
		}
		require.Equal(t, []int32{12}, starts, "one session start, on the page of the fragment")
		// Pages 16-17 were on show at the reload: their segment is sent as the page goes
		// (sendBeacon), if the browser gets it out.
		require.LessOrEqual(t, segs[16], 1)
		require.LessOrEqual(t, segs[17], 1)
		delete(segs, 16)
		delete(segs, 17)
		require.Equal(t, map[int32]int{12: 1, 13: 1, 14: 1, 15: 1}, segs)
	})
}

// viewerJSString quotes s for JavaScript.
func viewerJSString(s string) string { return fmt.Sprintf("%q", s) }
