package httpapi

// The reader's tools in headless Chromium (issue 29, docs/VIEWER.md "Zoom, thumbnails, share,
// download and print"): zoom by button, key, Ctrl+wheel, double-click, pinch and double tap,
// panning, the text layer aligned while zoomed; the thumbnails; share; download; print.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// zoomState is the zoom of the viewer and where the pages on show are.
type zoomState struct {
	Zoom, Max             float64
	Transform             string
	Img, Img2             textRect // the first and the second page image on show
	NaturalH              float64  // the first page's image height (pixels; its largest, the srcset's last)
	Counter, FlipState    string
	InDisabled, OutHidden bool
}

const zoomStateJS = `(() => {
	const r = e => { if (!e) return {}; const b = e.getBoundingClientRect(); return {Left: b.left, Top: b.top, Width: b.width, Height: b.height}; };
	const shown = [...document.querySelectorAll(".stf__item")].filter(e => getComputedStyle(e).display !== "none")
		.sort((a, b) => a.dataset.n - b.dataset.n).map(e => e.querySelector("img"));
	return {Zoom: flipbook.tools.zoom(), Transform: document.getElementById("book").style.transform,
		Img: r(shown[0]), Img2: r(shown[1]), NaturalH: flipbook.pages[shown[0].closest(".page").dataset.n - 1].height,
		Counter: document.getElementById("pageinfo").textContent, FlipState: flipbook.pageFlip.getState(),
		InDisabled: document.getElementById("zoom-in").disabled, OutHidden: document.getElementById("zoom-out").hidden};
})()`

func zoomStateOf(t *testing.T, ctx context.Context) zoomState {
	t.Helper()
	var z zoomState
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(zoomStateJS, &z)))
	return z
}

// waitZoom waits until the zoom is want (to 0.01).
func waitZoom(t *testing.T, ctx context.Context, want float64, what string) zoomState {
	t.Helper()
	var z zoomState
	testutil.Eventually(t, 10*time.Second, 30*time.Millisecond, func() error {
		z = zoomStateOf(t, ctx)
		if math.Abs(z.Zoom-want) > 0.01 {
			return fmt.Errorf("%s: zoom %.3f, want %.3f", what, z.Zoom, want)
		}
		return nil
	})
	return z
}

// requireWordOnImage checks that a word's span of the text layer is inside its page image, at
// the fractions of the image it had unzoomed (fx, fy).
func requireWordOnImage(t *testing.T, w textWord, fx, fy float64, what string) {
	t.Helper()
	gx, gy := (w.Span.Left-w.Img.Left)/w.Img.Width, (w.Span.Top-w.Img.Top)/w.Img.Height
	require.InDelta(t, fx, gx, 0.002, "%s: left of the word in the page image", what)
	require.InDelta(t, fy, gy, 0.002, "%s: top of the word in the page image", what)
	require.True(t, w.Span.Left >= w.Img.Left && w.Span.Top >= w.Img.Top &&
		w.Span.Left+w.Span.Width <= w.Img.Left+w.Img.Width+0.5 && w.Span.Top+w.Span.Height <= w.Img.Top+w.Img.Height+0.5,
		"%s: the span %+v is inside the page image %+v", what, w.Span, w.Img)
}

// TestViewerReadingInBrowser converts seoPDF (four A4 pages with known text) at 1600 px and
// reads it in headless Chromium with the reader's tools.
func TestViewerReadingInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 1600 })
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "elephants.pdf", seoPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish",
		"share_social_media": false, "downloadable_pdf": false}).Status)
	browser := viewerBrowser(t, exe)
	view := h.base + "/view/" + rid

	t.Run("zoom by button, key, wheel and double-click; pan; text aligned", func(t *testing.T) {
		readingZoomChecks(t, viewerTab(t, browser, 1280, 900, false), view)
	})
	t.Run("pinch and double tap on a touch screen", func(t *testing.T) {
		readingTouchChecks(t, viewerTab(t, browser, 390, 844, true), view)
	})
	t.Run("thumbnails", func(t *testing.T) { readingThumbChecks(t, viewerTab(t, browser, 1280, 900, false), view) })
	t.Run("share", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		viewerOpen(t, ctx, view, "1 / 4")
		require.Equal(t, "true", viewerEval(t, ctx, `String(document.getElementById("share").hidden)`), "share_social_media off")
		require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "share_social_media": true}).Status)
		readingShareChecks(t, ctx, view)
	})
	t.Run("download", func(t *testing.T) {
		readingDownloadChecks(t, h, key, rid, viewerTab(t, browser, 1280, 900, false), view)
	})
	t.Run("print", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		readingPrintChecks(t, ctx, view)
		require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "copyright_enabled": true}).Status)
		viewerOpen(t, ctx, view, "1 / 4")
		require.Equal(t, "true", viewerEval(t, ctx, `String(document.getElementById("print").hidden)`), "no print of a copy-protected book")
	})
}

// readingZoomChecks zooms the spread 2–3 of a 1280×900 window.
func readingZoomChecks(t *testing.T, ctx context.Context, view string) {
	viewerOpen(t, ctx, view+"#page=2", "2–3 / 4")
	w0 := textWordOf(t, ctx, 2, "Okavango")
	fx, fy := (w0.Span.Left-w0.Img.Left)/w0.Img.Width, (w0.Span.Top-w0.Img.Top)/w0.Img.Height
	z0 := zoomStateOf(t, ctx)
	require.Equal(t, 1.0, z0.Zoom)
	require.Equal(t, "", z0.Transform)
	require.False(t, z0.OutHidden, "the zoom buttons are shown")
	// The cap: a page image at 1.5 times its natural size, or 3 times the fitted size.
	require.EqualValues(t, 1600, z0.NaturalH, "A4 pages are 1600 px high")
	wantMax := math.Min(3, 1.5*z0.NaturalH/z0.Img.Height)
	t.Logf("fitted page %+v; cap %.3f", z0.Img, wantMax)

	// The button: 1.5 times, around the middle of the book's area; the words stay on the image.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#zoom-in", chromedp.ByID)))
	z := waitZoom(t, ctx, 1.5, "zoom-in button")
	require.InDelta(t, 1.5*z0.Img.Width, z.Img.Width, 1, "the page image is 1.5 times as wide")
	require.Contains(t, z.Transform, "scale(1.5)")
	requireWordOnImage(t, textWordOf(t, ctx, 2, "Okavango"), fx, fy, "zoomed 1.5")
	require.Equal(t, "Reset zoom, 150%", viewerEval(t, ctx, `document.getElementById("zoom-reset").getAttribute("aria-label")`))

	// A drag pans (the page does not turn or fold), by the distance dragged.
	x, y := z.Img.Left+z.Img.Width*0.5, z.Img.Top+z.Img.Height*0.5
	textDrag(t, ctx, x, y, x-100, y-80)
	p := zoomStateOf(t, ctx)
	require.InDelta(t, z.Img.Left-100, p.Img.Left, 1, "panned left")
	require.InDelta(t, z.Img.Top-80, p.Img.Top, 1, "panned up")
	require.Equal(t, "2–3 / 4", p.Counter)
	require.Equal(t, "read", p.FlipState, "page-flip saw nothing")
	requireWordOnImage(t, textWordOf(t, ctx, 2, "Okavango"), fx, fy, "zoomed and panned")
	// Arrow keys pan too, and turn no page.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	a := zoomStateOf(t, ctx)
	require.Less(t, a.Img.Left, p.Img.Left, "ArrowRight shows more of the right")
	time.Sleep(400 * time.Millisecond) // sleep: a turn would have started by now
	require.Equal(t, "2–3 / 4", zoomStateOf(t, ctx).Counter)

	// Reset restores the fitted pages.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#zoom-reset", chromedp.ByID)))
	r := waitZoom(t, ctx, 1, "reset")
	require.Equal(t, "", r.Transform)
	require.InDelta(t, z0.Img.Left, r.Img.Left, 0.5)
	require.InDelta(t, z0.Img.Width, r.Img.Width, 0.5)

	// Keys: + and = zoom in, - out, 0 and Escape reset.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("+")))
	waitZoom(t, ctx, 1.5, "+")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("=")))
	waitZoom(t, ctx, 2.25, "=")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("-")))
	waitZoom(t, ctx, 1.5, "-")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("0")))
	waitZoom(t, ctx, 1, "0")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("+"), chromedp.KeyEvent(kb.Escape)))
	waitZoom(t, ctx, 1, "Escape")
	// The cap.
	for i := 0; i < 5; i++ {
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("+")))
	}
	c := waitZoom(t, ctx, wantMax, "capped")
	require.True(t, c.InDisabled, "zoom-in is disabled at the cap")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("0")))
	waitZoom(t, ctx, 1, "0")

	readingZoomPointerChecks(t, ctx, fx, fy)
}

// readingZoomPointerChecks zooms the spread 2–3 with the wheel and double-clicks (fx, fy: where
// "Okavango" is on page 2's image).
func readingZoomPointerChecks(t *testing.T, ctx context.Context, fx, fy float64) {
	// Ctrl+wheel zooms at the pointer: the word under it stays there (vertically: the spread is
	// narrower than the window at 1.25, so it is centred across).
	w := textWordOf(t, ctx, 2, "Okavango")
	cx, cy := w.Span.Left+w.Span.Width/2, w.Span.Top+w.Span.Height/2
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseEvent(input.MouseWheel, cx, cy,
		func(p *input.DispatchMouseEventParams) *input.DispatchMouseEventParams {
			return p.WithDeltaX(0).WithDeltaY(-100).WithModifiers(input.ModifierCtrl)
		})))
	waitZoom(t, ctx, 1.25, "ctrl+wheel")
	w = textWordOf(t, ctx, 2, "Okavango")
	require.InDelta(t, cy, w.Span.Top+w.Span.Height/2, 1.5, "the word under the pointer stays under it")
	requireWordOnImage(t, w, fx, fy, "zoomed by the wheel")
	// The wheel alone pans while zoomed.
	before := zoomStateOf(t, ctx)
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseEvent(input.MouseWheel, cx, cy,
		func(p *input.DispatchMouseEventParams) *input.DispatchMouseEventParams {
			return p.WithDeltaX(0).WithDeltaY(60)
		})))
	testutil.Eventually(t, 5*time.Second, 30*time.Millisecond, func() error {
		if got := zoomStateOf(t, ctx).Img.Top; math.Abs(got-(before.Img.Top-60)) > 1 {
			return fmt.Errorf("wheel pan: top %.1f, want %.1f", got, before.Img.Top-60)
		}
		return nil
	})
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Escape)))
	waitZoom(t, ctx, 1, "Escape")

	// A double-click zooms at the point (2 times) and does not turn; another one resets.
	w = textWordOf(t, ctx, 2, "Okavango")
	cx, cy = w.Span.Left+w.Span.Width/2, w.Span.Top+w.Span.Height/2
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseClickXY(cx, cy), chromedp.MouseClickXY(cx, cy, chromedp.ClickCount(2))))
	waitZoom(t, ctx, 2, "double-click")
	time.Sleep(600 * time.Millisecond) // sleep: past the double-click wait, a held click would turn now
	d := zoomStateOf(t, ctx)
	require.Equal(t, "2–3 / 4", d.Counter)
	require.Equal(t, 2.0, d.Zoom)
	w = textWordOf(t, ctx, 2, "Okavango")
	require.InDelta(t, cy, w.Span.Top+w.Span.Height/2, 1.5, "zoomed at the point")
	viewerScreenshot(t, ctx, "viewer-zoom.png", "")
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseClickXY(cx, cy), chromedp.MouseClickXY(cx, cy, chromedp.ClickCount(2))))
	waitZoom(t, ctx, 1, "double-click again")
	time.Sleep(600 * time.Millisecond) // sleep: as above
	require.Equal(t, "2–3 / 4", zoomStateOf(t, ctx).Counter)

	// A single click still turns the page (once the double-click wait is over).
	z1 := zoomStateOf(t, ctx)
	require.NoError(t, chromedp.Run(ctx, chromedp.MouseClickXY(z1.Img2.Left+z1.Img2.Width*0.6, z1.Img2.Top+z1.Img2.Height*0.5)))
	viewerWaitCounter(t, ctx, "4 / 4")
	// And the page buttons turn from a zoomed page, back to the whole page.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("+"), chromedp.Click("#prev", chromedp.ByID)))
	viewerWaitCounter(t, ctx, "2–3 / 4")
	require.Equal(t, 1.0, zoomStateOf(t, ctx).Zoom)
}

// readingTouch dispatches touch events: each step is the fingers down at that moment.
func readingTouch(ctx context.Context, steps ...[][2]float64) error {
	return chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		typ := input.TouchStart
		for i, st := range steps {
			pts := make([]*input.TouchPoint, len(st))
			for k, p := range st {
				pts[k] = &input.TouchPoint{X: p[0], Y: p[1], ID: float64(k + 1)}
			}
			if i > 0 {
				typ = input.TouchMove
			}
			if err := input.DispatchTouchEvent(typ, pts).Do(ctx); err != nil {
				return err
			}
		}
		return input.DispatchTouchEvent(input.TouchEnd, []*input.TouchPoint{}).Do(ctx)
	}))
}

// readingTouchChecks pinches and double-taps on a phone.
func readingTouchChecks(t *testing.T, ctx context.Context, view string) {
	viewerOpen(t, ctx, view, "1 / 4")
	z0 := zoomStateOf(t, ctx)
	cx, cy := z0.Img.Left+z0.Img.Width/2, z0.Img.Top+z0.Img.Height/2
	// Two fingers 80 px apart move to 200 px apart: 2.5 times.
	var steps [][][2]float64
	for i := 0; i <= 10; i++ {
		d := 40 + 6*float64(i)
		steps = append(steps, [][2]float64{{cx - d, cy}, {cx + d, cy}})
	}
	require.NoError(t, readingTouch(ctx, steps...))
	z := waitZoom(t, ctx, 2.5, "pinch")
	require.InDelta(t, 2.5*z0.Img.Width, z.Img.Width, 2)
	require.InDelta(t, cx, z.Img.Left+z.Img.Width/2, 2, "zoomed around the fingers")
	time.Sleep(400 * time.Millisecond) // sleep: a turn or fold would have started
	z = zoomStateOf(t, ctx)
	require.Equal(t, "1 / 4", z.Counter)
	require.Equal(t, "read", z.FlipState)
	// One finger pans (and does not swipe the page over).
	require.NoError(t, readingTouch(ctx, [][2]float64{{cx, cy}}, [][2]float64{{cx - 40, cy}}, [][2]float64{{cx - 80, cy - 30}}))
	p := zoomStateOf(t, ctx)
	require.InDelta(t, z.Img.Left-80, p.Img.Left, 1)
	require.InDelta(t, z.Img.Top-30, p.Img.Top, 1)
	require.Equal(t, "1 / 4", p.Counter)
	viewerScreenshot(t, ctx, "viewer-zoom-390x844.png", "")
	// A double tap resets; another one zooms 2 times at the point.
	tap := func() { require.NoError(t, readingTouch(ctx, [][2]float64{{cx, cy}})) }
	tap()
	tap()
	waitZoom(t, ctx, 1, "double tap")
	tap()
	tap()
	waitZoom(t, ctx, 2, "double tap again")
	require.Equal(t, "1 / 4", zoomStateOf(t, ctx).Counter)
}

// readingThumbChecks opens the thumbnails, moves in them with the keyboard and jumps.
func readingThumbChecks(t *testing.T, ctx context.Context, view string) {
	viewerOpen(t, ctx, view, "1 / 4")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#thumbs-open", chromedp.ByID)))
	textWaitJS(t, ctx, `!document.getElementById("thumbs-panel").hidden`, "the thumbnails panel")
	var thumbs []struct {
		Name, Src, Loading, Current string
	}
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll("#thumbs-list .thumb")].map(b => ({
		Name: b.getAttribute("aria-label"), Src: b.querySelector("img").getAttribute("src"),
		Loading: b.querySelector("img").loading, Current: b.getAttribute("aria-current") || ""}))`, &thumbs)))
	require.Len(t, thumbs, 4, "a thumbnail per page")
	pages := viewerEval(t, ctx, `JSON.stringify(JSON.parse(document.getElementById("config").textContent).pages.map(p => p.url))`)
	for i, th := range thumbs {
		require.Equal(t, fmt.Sprintf("Page %d", i+1), th.Name)
		require.Equal(t, "lazy", th.Loading)
		require.Contains(t, pages, `"`+th.Src+`"`, "the page image")
	}
	require.Equal(t, "page", thumbs[0].Current, "the page on show is marked")
	require.Equal(t, "Page 1", viewerEval(t, ctx, `document.activeElement.getAttribute("aria-label")`), "the focus is on it")
	// The thumbnails are small.
	require.Equal(t, "true", viewerEval(t, ctx, `String([...document.querySelectorAll("#thumbs-list img")].every(i => i.getBoundingClientRect().width <= 120))`))
	viewerScreenshot(t, ctx, "viewer-thumbnails.png", "")
	// Escape closes, the focus goes back to the button.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Escape)))
	textWaitJS(t, ctx, `document.getElementById("thumbs-panel").hidden && document.activeElement.id === "thumbs-open"`, "closed by Escape")
	require.Equal(t, "false", viewerEval(t, ctx, `document.getElementById("thumbs-open").getAttribute("aria-expanded")`))
	// Keyboard: open, ArrowRight twice to page 3, Enter: the spread 2–3, the panel closed.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Enter)))
	textWaitJS(t, ctx, `!document.getElementById("thumbs-panel").hidden`, "opened by Enter")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight)))
	require.Equal(t, "Page 3", viewerEval(t, ctx, `document.activeElement.getAttribute("aria-label")`))
	require.Equal(t, "1 / 4", zoomStateOf(t, ctx).Counter, "arrows in the panel turn no page")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Enter)))
	viewerWaitCounter(t, ctx, "2–3 / 4")
	require.Equal(t, "true", viewerEval(t, ctx, `String(document.getElementById("thumbs-panel").hidden)`))
	// A click on a thumbnail jumps too.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#thumbs-open", chromedp.ByID),
		chromedp.Click(`#thumbs-list .thumb[aria-label="Page 4"]`, chromedp.ByQuery)))
	viewerWaitCounter(t, ctx, "4 / 4")
	require.Contains(t, viewerEval(t, ctx, `location.hash`), "#page=4")
}

// readingShareChecks: the Share button copies the page's link (no Web Share API in Chromium on
// Linux) and says so.
func readingShareChecks(t *testing.T, ctx context.Context, view string) {
	require.NoError(t, chromedp.Run(ctx, cdpbrowser.GrantPermissions([]cdpbrowser.PermissionType{
		cdpbrowser.PermissionTypeClipboardReadWrite, cdpbrowser.PermissionTypeClipboardSanitizedWrite}).WithOrigin(strings.SplitN(view, "/view/", 2)[0])))
	viewerOpen(t, ctx, view+"#page=3", "2–3 / 4")
	require.Equal(t, "false", viewerEval(t, ctx, `String(document.getElementById("share").hidden)`), "share_social_media on")
	require.Equal(t, "false", viewerEval(t, ctx, `String("share" in navigator)`), "Chromium on Linux has no Web Share API")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#share", chromedp.ByID)))
	textWaitJS(t, ctx, `document.getElementById("toast").textContent === "Link copied"`, "the message")
	var copied string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`navigator.clipboard.readText()`, &copied, readingAwait)))
	require.Equal(t, view+"#page=3", copied, "the page's link (the fragment as written: the first page named)")
	require.Equal(t, "true", viewerEval(t, ctx, `String(getComputedStyle(document.getElementById("toast")).position === "fixed" && document.getElementById("toast").getBoundingClientRect().height > 10)`), "visible")
}

// readingDownloadChecks: the Download control for each downloadable_pdf value.
func readingDownloadChecks(t *testing.T, h *harness, key, rid string, ctx context.Context, view string) {
	dl := "/view/" + rid + "/download"
	href := func() string {
		return viewerEval(t, ctx, `document.getElementById("download").getAttribute("href") || ""`)
	}
	hidden := func() string { return viewerEval(t, ctx, `String(document.getElementById("download").hidden)`) }
	viewerOpen(t, ctx, view+"#page=2", "2–3 / 4")
	require.Equal(t, "true", hidden(), "downloads off")

	h.setDownloadMode(t, key, rid, "full")
	viewerOpen(t, ctx, view+"#page=2", "2–3 / 4")
	require.Equal(t, "false", hidden())
	require.Equal(t, dl, href(), "the whole PDF")
	var got struct {
		Type string
		Size int
		Head string
	}
	fetchJS := `fetch(document.getElementById("download").href).then(r => r.arrayBuffer().then(b => ({Type: r.headers.get("Content-Type"),
		Size: b.byteLength, Head: new TextDecoder().decode(b.slice(0, 5))})))`
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(fetchJS, &got, readingAwait)))
	require.Equal(t, "application/pdf", got.Type)
	require.Equal(t, "%PDF-", got.Head)

	h.setDownloadMode(t, key, rid, "spread")
	viewerOpen(t, ctx, view+"#page=2", "2–3 / 4")
	require.Equal(t, dl+"?pages=2-3", href(), "the pages on show")
	require.Equal(t, "Download pages 2–3 (PDF)", viewerEval(t, ctx, `document.getElementById("download").getAttribute("aria-label")`))
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	viewerWaitCounter(t, ctx, "4 / 4")
	require.Equal(t, dl+"?pages=4", href(), "the back cover alone")

	h.setDownloadMode(t, key, rid, "single")
	viewerOpen(t, ctx, view+"#page=2", "2–3 / 4")
	require.Equal(t, dl+"?pages=2", href())
	// Two pages on show: the link opens a menu of the two.
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#download", chromedp.ByID)))
	textWaitJS(t, ctx, `!document.getElementById("download-menu").hidden`, "the menu")
	require.Equal(t, "true", viewerEval(t, ctx, `document.getElementById("download").getAttribute("aria-expanded")`))
	var items []struct{ Text, Href, Label string }
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll("#download-menu a")].map(a => ({Text: a.textContent,
		Href: a.getAttribute("href"), Label: a.getAttribute("aria-label")}))`, &items)))
	require.Equal(t, []struct{ Text, Href, Label string }{
		{"Page 2", dl + "?pages=2", "Download page 2 (PDF)"}, {"Page 3", dl + "?pages=3", "Download page 3 (PDF)"}}, items)
	require.Equal(t, "Page 2", viewerEval(t, ctx, `document.activeElement.textContent`), "the focus in the menu")
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Escape)))
	textWaitJS(t, ctx, `document.getElementById("download-menu").hidden && document.activeElement.id === "download"`, "closed by Escape")
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`fetch(document.getElementById("download").href).then(r => r.arrayBuffer().then(b => ({Type: r.headers.get("Content-Type"),
		Size: b.byteLength, Head: new TextDecoder().decode(b.slice(0, 5))})))`, &got, readingAwait)))
	require.Equal(t, "application/pdf", got.Type)
	h.setDownloadMode(t, key, rid, "false")
}

// readingPrintChecks: Print prints the pages on show, and only them (print media).
func readingPrintChecks(t *testing.T, ctx context.Context, view string) {
	viewerOpen(t, ctx, view+"#page=2", "2–3 / 4")
	require.Equal(t, "false", viewerEval(t, ctx, `String(document.getElementById("print").hidden)`))
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.printed = []; window.print = () => window.printed.push(
		[...document.querySelectorAll("#print-area img")].map(i => i.getAttribute("src") + " " + (i.complete && i.naturalWidth > 0)))`, nil)))
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#print", chromedp.ByID)))
	textWaitJS(t, ctx, `window.printed.length === 1`, "window.print called")
	var printed [][]string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.printed`, &printed)))
	var want []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`[2, 3].map(n => flipbook.pages[n - 1].url + " true")`, &want)))
	require.Equal(t, [][]string{want}, printed, "the two pages on show, loaded")
	// In print media only those pages show.
	require.NoError(t, chromedp.Run(ctx, emulation.SetEmulatedMedia().WithMedia("print")))
	var vis struct{ Header, Book, Area string }
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`({Header: getComputedStyle(document.querySelector("header")).display,
		Book: getComputedStyle(document.querySelector("main")).display, Area: getComputedStyle(document.getElementById("print-area")).display})`, &vis)))
	require.Equal(t, struct{ Header, Book, Area string }{"none", "none", "block"}, vis)
	require.NoError(t, chromedp.Run(ctx, emulation.SetEmulatedMedia().WithMedia("")))
}

// readingAwait makes Evaluate wait for a promise's value.
func readingAwait(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
