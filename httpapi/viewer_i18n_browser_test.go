package httpapi

// The viewer's words in the reader's language in headless Chromium (issue 29, docs/VIEWER.md
// "Languages (issue 29)"): ?lang=de gives German buttons, announcements, search messages and
// zoom labels; Accept-Language fr-CA gives French; no language asked for gives English.

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

func TestViewerLanguagesInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "elephants.pdf", seoPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish",
		"share_social_media": true}).Status)
	h.setDownloadMode(t, key, rid, "spread")
	browser := viewerBrowser(t, exe)
	view := h.base + "/view/" + rid

	t.Run("?lang=de", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		viewerOpen(t, ctx, view+"?lang=de", "1 / 4")
		require.Equal(t, "de", viewerEval(t, ctx, `document.documentElement.lang`))
		require.Equal(t, "Suchen", viewerEval(t, ctx, `document.getElementById("search-open").textContent`))
		require.Equal(t, "Nächste Seite", viewerEval(t, ctx, `document.getElementById("next").getAttribute("aria-label")`))
		require.Equal(t, "Seite 1 von 4", viewerEval(t, ctx, `document.getElementById("announce").textContent`))
		require.Equal(t, "Seite 1", viewerEval(t, ctx, `document.querySelector('.page[data-n="1"]').getAttribute("aria-label")`))
		// A turn is announced in German.
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
		viewerWaitCounter(t, ctx, "2–3 / 4")
		textWaitJS(t, ctx, `document.getElementById("announce").textContent === "Seiten 2 und 3 von 4"`, "the German announcement")
		require.Equal(t, "Seiten 2–3 herunterladen (PDF)", viewerEval(t, ctx, `document.getElementById("download").getAttribute("aria-label")`))
		// Zoom labels.
		require.NoError(t, chromedp.Run(ctx, chromedp.Click("#zoom-in", chromedp.ByID)))
		textWaitJS(t, ctx, `document.getElementById("zoom-reset").getAttribute("aria-label") === "Zoom zurücksetzen, 150%"`, "zoom label")
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent("0")))
		// Search messages and hits.
		require.NoError(t, chromedp.Run(ctx, chromedp.Click("#search-open", chromedp.ByID),
			chromedp.SendKeys("#search-q", "okavango", chromedp.ByID),
			chromedp.Click(`#search-form button[type="submit"]`, chromedp.ByQuery)))
		textWaitJS(t, ctx, `document.getElementById("search-status").textContent === "1 Seite mit „okavango“"`, "the German search message")
		require.Equal(t, "Seite 2", viewerEval(t, ctx, `document.querySelector("#search-hits .hit-page").textContent`))
		require.Equal(t, "Wörter suchen", viewerEval(t, ctx, `document.getElementById("search-q").placeholder`))
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.Escape)))
		// Thumbnails.
		require.NoError(t, chromedp.Run(ctx, chromedp.Click("#thumbs-open", chromedp.ByID), chromedp.WaitVisible("#thumbs-panel", chromedp.ByID)))
		require.Equal(t, "Seiten", viewerEval(t, ctx, `document.getElementById("thumbs-title").textContent`))
		require.Equal(t, "Seite 4", viewerEval(t, ctx, `document.querySelectorAll("#thumbs-list .thumb")[3].getAttribute("aria-label")`))
		viewerScreenshot(t, ctx, "viewer-lang-de.png", "")
	})

	t.Run("Accept-Language fr-CA", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		require.NoError(t, chromedp.Run(ctx, network.Enable(),
			network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": "fr-CA,fr;q=0.9"})))
		viewerOpen(t, ctx, view, "1 / 4")
		require.Equal(t, "fr", viewerEval(t, ctx, `document.documentElement.lang`))
		require.Equal(t, "Page précédente", viewerEval(t, ctx, `document.getElementById("prev").getAttribute("aria-label")`))
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
		viewerWaitCounter(t, ctx, "2–3 / 4")
		textWaitJS(t, ctx, `document.getElementById("announce").textContent === "Pages 2 et 3 sur 4"`, "the French announcement")
		require.Equal(t, "Partager", viewerEval(t, ctx, `document.getElementById("share").textContent`))
	})

	t.Run("unsupported language: English", func(t *testing.T) {
		ctx := viewerTab(t, browser, 1280, 900, false)
		require.NoError(t, chromedp.Run(ctx, network.Enable(),
			network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": "sv-SE,sv;q=0.9"})))
		viewerOpen(t, ctx, view+"?lang=xx", "1 / 4")
		englishTurn(t, ctx)
	})
}

// englishTurn checks the English words of the viewer and a turn's announcement.
func englishTurn(t *testing.T, ctx context.Context) {
	t.Helper()
	require.Equal(t, "en", viewerEval(t, ctx, `document.documentElement.lang`))
	require.Equal(t, "Search", viewerEval(t, ctx, `document.getElementById("search-open").textContent`))
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	viewerWaitCounter(t, ctx, "2–3 / 4")
	textWaitJS(t, ctx, `document.getElementById("announce").textContent === "Pages 2 and 3 of 4"`, "the English announcement")
}
