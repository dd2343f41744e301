package httpapi

// Page renditions (issue 29, docs/VIEWER.md "Page images"): once a book is ready, each page gets
// WebP renditions by width and its first pages a placeholder; the viewer offers them through
// srcset and sizes, so a phone loads one phone-sized page and a zoomed page a larger image.

import (
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"flipbook/actors/convert"
	"flipbook/internal/testutil"
)

// waitSrcSets polls the viewer page of a published book until every page has a srcset, and
// returns the pages of its configuration.
func waitSrcSets(t *testing.T, h *harness, rid string) []map[string]any {
	t.Helper()
	var pages []map[string]any
	testutil.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		code, _, page := h.fetchFile(t, "/view/"+rid, "")
		require.Equal(t, 200, code)
		pages = pages[:0]
		for _, p := range viewerConfigOf(t, page)["pages"].([]any) {
			pages = append(pages, p.(map[string]any))
		}
		for i, p := range pages {
			if s, _ := p["srcset"].(string); s == "" {
				return fmt.Errorf("page %d has no srcset yet", i+1)
			}
		}
		return nil
	})
	return pages
}

// TestPageRenditions: renditions are made after conversion, served as immutable WebP, offered
// by width with the page image last, and a placeholder for the first pages; a book converted
// with renditions off gets them from the walk at the next start with them on.
func TestPageRenditions(t *testing.T) {
	if !convert.RenditionsUsable() {
		t.Skip("vipsthumbnail not installed (Debian: libvips-tools; scripts/deps.sh installs it)")
	}
	h := newHarness(t, func(c *Config) { c.NoRenditions = true })
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "menu.pdf", bookmarkedPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)
	code, _, page := h.fetchFile(t, "/view/"+rid, "")
	require.Equal(t, 200, code)
	for _, p := range viewerConfigOf(t, page)["pages"].([]any) {
		require.NotContains(t, p, "srcset", "--no-renditions: none made, none offered")
	}
	for _, p := range h.do(t, "GET", "/api/v1/books/"+rid+"/pages", key, nil).list() {
		require.Empty(t, p.(map[string]any)["renditions"])
	}

	h.cfg.NoRenditions = false
	h.restart(t) // the walk finds the book without renditions
	pages := waitSrcSets(t, h, rid)
	require.Len(t, pages, 5)
	for i, p := range pages {
		url, w := p["url"].(string), int(p["width"].(float64))
		cands := strings.Split(p["srcset"].(string), ", ")
		require.Len(t, cands, 3, "400w and 800w renditions, then the page image (%d px wide)", w)
		require.Regexp(t, `^/files/`+rid+`/[0-9a-f]{32}\.webp 400w$`, cands[0])
		require.Regexp(t, `^/files/`+rid+`/[0-9a-f]{32}\.webp 800w$`, cands[1])
		require.Equal(t, fmt.Sprintf("%s %dw", url, w), cands[2])
		require.True(t, strings.HasPrefix(p["placeholder"].(string), "data:image/webp;base64,"), "page %d", i+1)

		code, hdr, body := h.fetchFile(t, strings.Fields(cands[1])[0], "")
		require.Equal(t, 200, code)
		require.Equal(t, "image/webp", hdr.Get("Content-Type"))
		require.Contains(t, hdr.Get("Cache-Control"), "immutable")
		require.Equal(t, "RIFF", string(body[:4]))
		_, _, jpeg := h.fetchFile(t, url, "")
		require.Less(t, len(body), len(jpeg), "the 800-px WebP is smaller than the page image")
	}
	// The pages API lists them too (an extension, docs/API.md).
	for i, p := range h.do(t, "GET", "/api/v1/books/"+rid+"/pages", key, nil).list() {
		rs := p.(map[string]any)["renditions"].([]any)
		require.Len(t, rs, 2, "page %d", i+1)
		for j, w := range []float64{400, 800} {
			r := rs[j].(map[string]any)
			require.Equal(t, w, r["width"])
			require.True(t, strings.HasSuffix(strings.Fields(strings.Split(pages[i]["srcset"].(string), ", ")[j])[0], "/"+path.Base(r["image_url"].(string))))
		}
	}
}

// TestViewerImagesInBrowser: a phone loads the page on show only, as a phone-sized WebP, over
// its placeholder, and the neighbours once the reader turns; a desktop spread takes the
// renditions that fit its pages; zooming loads the page image itself.
func TestViewerImagesInBrowser(t *testing.T) {
	if !convert.RenditionsUsable() {
		t.Skip("vipsthumbnail not installed (Debian: libvips-tools; scripts/deps.sh installs it)")
	}
	exe := chromium(t)
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "menu.pdf", manyPagesPDF(t, 6))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)
	waitSrcSets(t, h, rid)
	browser := viewerBrowser(t, exe)

	// The page images the tab asked for (resource timing), by page file name.
	fetched := `JSON.stringify(performance.getEntriesByType("resource").map(e => e.name).filter(u => u.includes("/files/")).map(u => u.split("/").pop()))`
	loaded := func(n int) string {
		// The file on show and its width in the srcset (naturalWidth is in CSS pixels).
		return fmt.Sprintf(`(() => { const i = document.querySelector('.page[data-n="%d"] img');
			if (!i || !i.complete || !i.naturalWidth) return "";
			const c = i.srcset.split(", ").find(c => i.currentSrc.endsWith(c.split(" ")[0]));
			return i.currentSrc.split("/").pop() + " " + (c ? parseInt(c.split(" ")[1]) : 0); })()`, n)
	}

	// A phone, 390 px wide at device scale 2: the cover fills about 366 px, so 800w.
	phone := viewerTab(t, browser, 390, 844, true)
	require.NoError(t, chromedp.Run(phone, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2),
		chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)))
	viewerOpen(t, phone, h.base+"/view/"+rid, "1 / 6")
	var cover string
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if cover = viewerEval(t, phone, loaded(1)); cover == "" {
			return fmt.Errorf("the cover is not loaded")
		}
		return nil
	})
	require.Regexp(t, `^[0-9a-f]{32}\.webp (400|800)$`, cover)
	require.Contains(t, viewerEval(t, phone, `document.querySelector('.page[data-n="1"] img').style.backgroundImage`), "data:image/webp")
	require.Equal(t, `["`+strings.Fields(cover)[0]+`"]`, viewerEval(t, phone, fetched), "one page image before the reader turns")
	require.NoError(t, chromedp.Run(phone, chromedp.Click("#next", chromedp.ByID)))
	viewerWaitCounter(t, phone, "2 / 6")
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := viewerEval(t, phone, fetched); strings.Count(got, ".webp") < 5 {
			return fmt.Errorf("fetched %s, want the neighbours too (%s)", got, viewerEval(t, phone, `JSON.stringify([...document.querySelectorAll(".page img")].map(i => [i.closest(".page").dataset.n, i.getAttribute("src"), i.sizes, i.complete]))`))
		}
		return nil
	})

	// A desktop spread, 1400 px wide: each page some 500-650 px at scale 1, so 800w; zoomed 2×,
	// the page image (.jpg) itself.
	desk := viewerTab(t, browser, 1400, 900, false)
	viewerOpen(t, desk, h.base+"/view/"+rid+"#page=2", "2–3 / 6")
	for _, n := range []int{2, 3} {
		testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
			if got := viewerEval(t, desk, loaded(n)); !strings.HasSuffix(got, ".webp 800") {
				return fmt.Errorf("page %d: %q, want the 800-px WebP", n, got)
			}
			return nil
		})
	}
	// A window made larger asks the loaded pages for wider images (sizes grows), never smaller.
	small := viewerTab(t, browser, 700, 500, false)
	viewerOpen(t, small, h.base+"/view/"+rid, "1 / 6")
	sizes := `document.querySelector('.page[data-n="1"] img').sizes`
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if viewerEval(t, small, sizes) == "" {
			return fmt.Errorf("the cover has no sizes yet")
		}
		return nil
	})
	before := viewerEval(t, small, sizes)
	require.NoError(t, chromedp.Run(small, chromedp.EmulateViewport(1400, 1000)))
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		var grew bool
		require.NoError(t, chromedp.Run(small, chromedp.Evaluate(fmt.Sprintf(`parseFloat(%s) > parseFloat(%q)`, sizes, before), &grew)))
		if !grew {
			return fmt.Errorf("sizes %s after the window grew, was %s", viewerEval(t, small, sizes), before)
		}
		return nil
	})

	require.NoError(t, chromedp.Run(desk, chromedp.Click("#zoom-in", chromedp.ByID), chromedp.Click("#zoom-in", chromedp.ByID)))
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := viewerEval(t, desk, loaded(2)); !strings.Contains(got, ".jpg ") {
			return fmt.Errorf("page 2 zoomed shows %q, want the page image", got)
		}
		return nil
	})
}
