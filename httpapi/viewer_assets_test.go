package httpapi

// The viewer served fast (issue 29, docs/VIEWER.md "Assets and caching"): its scripts and styles
// minified under content-hashed names kept a year, sent in brotli or gzip as the request allows,
// its HTML compressed, page images kept a year when the book is public, and nothing the page
// asks for failing in Chromium.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"flipbook/httpapi/viewer"
	"flipbook/internal/testutil"
)

// assetRefRe finds the viewer's assets a page refers to; hashedAssetRe splits a hashed name.
var (
	assetRefRe    = regexp.MustCompile(`(?:src|href)="(/viewer/assets/[^"]+)"`)
	hashedAssetRe = regexp.MustCompile(`^/viewer/assets/(.+)\.([0-9a-f]{8})(\.(?:js|css))$`)
)

// rawGet GETs path as sent, without Go's transparent decompression; ae is the Accept-Encoding
// ("" sends none), then header name/value pairs.
func (h *harness) rawGet(tb testing.TB, path, ae string, headers ...string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequest("GET", h.base+path, nil)
	require.NoError(tb, err)
	if ae != "" {
		req.Header.Set("Accept-Encoding", ae)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	res, err := c.Do(req)
	require.NoError(tb, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(tb, err)
	if res.StatusCode == 200 {
		require.Equal(tb, strconv.Itoa(len(body)), res.Header.Get("Content-Length"), "%s (%s): Content-Length is the body's", path, ae)
	}
	return res, body
}

// decodeBody undoes a response's Content-Encoding (br or gzip) with the reference readers.
func decodeBody(tb testing.TB, enc string, body []byte) []byte {
	tb.Helper()
	var r io.Reader
	switch enc {
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(tb, err)
		r = zr
	default:
		tb.Fatalf("unexpected encoding %q", enc)
	}
	out, err := io.ReadAll(r)
	require.NoError(tb, err)
	return out
}

// The page names its assets by hashed names, served minified, kept a year, and in brotli or
// gzip as asked (identity when nothing is accepted); the plain names still work with a short
// cache; the viewer's HTML is compressed too.
func TestViewerAssetsHashedAndCompressed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Assets", "publish")
	res, page := h.rawGet(t, "/view/"+rid, "")
	require.Equal(t, 200, res.StatusCode)
	require.Empty(t, res.Header.Get("Content-Encoding"), "identity without Accept-Encoding")

	seen := map[string]bool{}
	var before, after int // bytes of the scripts and styles: as written and sent, and minified in brotli
	for _, m := range assetRefRe.FindAllStringSubmatch(string(page), -1) {
		ref := m[1]
		hm := hashedAssetRe.FindStringSubmatch(ref)
		require.NotNil(t, hm, "the page refers to %s by a content-hashed name", ref)
		plain := hm[1] + hm[3]
		seen[plain] = true
		orig, err := fs.ReadFile(viewer.AssetFiles, "assets/"+plain)
		require.NoError(t, err)

		res, id := h.rawGet(t, ref, "")
		require.Equal(t, 200, res.StatusCode, ref)
		require.Equal(t, "public, max-age=31536000, immutable", res.Header.Get("Cache-Control"), ref)
		require.Empty(t, res.Header.Get("Content-Encoding"), ref)
		require.Equal(t, "Accept-Encoding", res.Header.Get("Vary"), ref)
		require.Less(t, len(id), len(orig), "%s is minified", ref)
		sum := sha256.Sum256(id)
		require.Equal(t, hex.EncodeToString(sum[:])[:8], hm[2], "the name's hash is the served content's")

		for _, c := range []struct{ ae, enc string }{
			{"gzip, deflate, br, zstd", "br"}, {"br", "br"}, {"gzip, deflate", "gzip"},
			{"br;q=0, gzip", "gzip"}, {"*", "br"}, {"identity", ""}, {"gzip;q=0, br;q=0", ""},
		} {
			res, body := h.rawGet(t, ref, c.ae)
			require.Equal(t, 200, res.StatusCode)
			require.Equal(t, c.enc, res.Header.Get("Content-Encoding"), "%s with Accept-Encoding %q", ref, c.ae)
			require.Equal(t, "Accept-Encoding", res.Header.Get("Vary"))
			if c.enc == "" {
				require.Equal(t, id, body)
				continue
			}
			require.Equal(t, id, decodeBody(t, c.enc, body), "%s in %s decodes to the minified file", ref, c.enc)
			require.Less(t, len(body), len(id), "%s in %s is smaller than the minified file", ref, c.enc)
			if c.ae == "br" {
				before, after = before+len(orig), after+len(body)
			}
		}
		// Revalidation, and the plain name (pages cached before the hashes) with a short cache.
		res, _ = h.rawGet(t, ref, "br", "If-None-Match", res.Header.Get("ETag"))
		require.Equal(t, 304, res.StatusCode, ref)
		res, body := h.rawGet(t, "/viewer/assets/"+plain, "br")
		require.Equal(t, 200, res.StatusCode)
		require.Equal(t, "public, max-age=300", res.Header.Get("Cache-Control"))
		require.Equal(t, id, decodeBody(t, "br", body), "the plain name serves the same file")
	}
	for _, n := range []string{"viewer.css", "page-flip.browser.js", "viewer-text.js", "viewer.js"} {
		require.True(t, seen[n], "the page refers to %s (by its hashed name): %v", n, seen)
	}

	// What minification removed, an older deployment's hash, names that are no asset.
	_, js := h.rawGet(t, "/viewer/assets/viewer.js", "")
	require.NotContains(t, string(js), "// The flipbook viewer", "comments are gone")
	require.NotContains(t, string(js), "\n  ", "indentation is gone")
	res, body := h.rawGet(t, "/viewer/assets/viewer.00000000.js", "")
	require.Equal(t, 200, res.StatusCode, "another deployment's hash gets today's file")
	require.Equal(t, "public, max-age=300", res.Header.Get("Cache-Control"), "not kept under a name that is not its own")
	require.Equal(t, js, body)
	for _, p := range []string{"/viewer/assets/nope.js", "/viewer/assets/viewer.0000000g.js", "/viewer/assets/nope.00000000.js"} {
		res, _ := h.rawGet(t, p, "")
		require.Equal(t, 404, res.StatusCode, p)
	}

	// The viewer page and a page's own page, compressed on the fly.
	for _, p := range []string{"/view/" + rid, "/view/" + rid + "/page/1"} {
		plain, _ := h.rawGet(t, p, "")
		require.Equal(t, 200, plain.StatusCode, p)
		require.Contains(t, plain.Header.Get("Vary"), "Accept-Encoding", p)
		for _, enc := range []string{"br", "gzip"} {
			res, body := h.rawGet(t, p, enc)
			require.Equal(t, 200, res.StatusCode)
			require.Equal(t, enc, res.Header.Get("Content-Encoding"), p)
			require.Contains(t, res.Header.Get("Vary"), "Accept-Encoding", p)
			html := decodeBody(t, enc, body)
			require.Contains(t, string(html), "</html>", p)
			require.Less(t, len(body), len(html), p)
			if enc == "br" && p == "/view/"+rid {
				t.Logf("viewer page, HTML+JS+CSS: %d bytes as before (identity, not minified), %d bytes now (br, minified); HTML %d → %d, JS+CSS %d → %d",
					len(page)+before, len(body)+after, len(page), len(body), before, after)
			}
		}
	}
	_, withText := h.rawGet(t, "/view/"+rid, "")
	require.Regexp(t, `<meta name="description" content="Assets, a flipbook by [^"]+">`, string(withText),
		"a book without text or description still has a meta description")
	require.Contains(t, string(withText), `<link rel="icon" href="data:image/svg+xml,`, "an icon in the page: no request for /favicon.ico")

	// Pages without an icon of their own get the service's.
	res, ico := h.rawGet(t, "/favicon.ico", "")
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "image/x-icon", res.Header.Get("Content-Type"))
	require.Equal(t, []byte{0, 0, 1, 0, 1, 0}, ico[:6], "an ICO file with one image")
	img, err := png.Decode(bytes.NewReader(ico[22:]))
	require.NoError(t, err, "its image is a PNG")
	require.Equal(t, 32, img.Bounds().Dx())
}

// Every asset minifies without error (else it would be served as written).
func TestViewerAssetsMinifyCleanly(t *testing.T) {
	t.Parallel()
	set := viewer.Assets()
	for _, n := range set.Names() {
		a, current := set.Lookup(n)
		require.NotNil(t, a)
		require.False(t, current, "a plain name is not the hashed one")
		require.NoError(t, a.MinifyErr)
		b, current := set.Lookup(a.Hashed)
		require.Same(t, a, b)
		require.True(t, current)
	}
}

// Page images and the thumbnail of a public book are kept a year (immutable); a gated book's
// page images only privately, an hour.
func TestPageImagesCachedImmutably(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	immutable := "public, max-age=31536000, s-maxage=3600, immutable"
	pub := h.konva(t, key, "Public", "publish")
	pages := viewerConfigOf(t, h.getPage(t, "/view/"+pub).Body)["pages"].([]any)
	require.Len(t, pages, 2)
	for _, p := range pages {
		st, hd, _ := h.fetchFile(t, p.(map[string]any)["url"].(string), "")
		require.Equal(t, 200, st)
		require.Equal(t, immutable, hd.Get("Cache-Control"))
		require.NotEmpty(t, hd.Get("ETag"))
	}
	b := h.do(t, "GET", "/api/v1/books/"+pub, key, nil)
	require.Equal(t, 200, b.Status)
	thumb := b.data()["thumbnail_url"].(string)
	res, err := http.Get(thumb)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, immutable, res.Header.Get("Cache-Control"), "the thumbnail")

	gated := h.konva(t, key, "Gated", "publish")
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": gated, "email": "ann@example.com"}).Status)
	acc := h.do(t, "POST", "/view/"+gated+"/access", "", map[string]any{"email": "ann@example.com", "session_id": "s-ann"})
	require.Equal(t, 200, acc.Status, "%s", acc.Body)
	tok := acc.data()["reader_token"].(string)
	pr := h.do(t, "GET", "/view/"+gated+"/pages", "", nil, "X-Reader-Token", tok)
	require.Equal(t, 200, pr.Status, "%s", pr.Body)
	for _, p := range pr.data()["pages"].([]any) {
		u := p.(map[string]any)["url"].(string)
		st, hd, _ := h.fetchFile(t, u, "")
		require.Equal(t, 200, st, "with the token in the URL")
		require.Equal(t, "private, max-age=3600", hd.Get("Cache-Control"), "a gated book's page stays private")
		st, hd, _ = h.fetchFile(t, strings.Split(u, "?")[0], "")
		require.Equal(t, 403, st, "without the token")
		require.Equal(t, "no-store", hd.Get("Cache-Control"))
	}
}

// viewerNetLog records what a tab loads: every response's status, what failed, console errors,
// and the bytes of each response as transferred.
type viewerNetLog struct {
	mu       sync.Mutex
	urls     map[network.RequestID]string
	status   map[string]int64
	encoding map[string]string
	kind     map[string]network.ResourceType
	bytes    map[string]float64
	failed   []string
	errors   []string
}

func listenViewerNet(l *viewerNetLog) func(ev any) {
	return func(ev any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventResponseReceived:
			u := e.Response.URL
			l.urls[e.RequestID], l.status[u], l.kind[u] = u, e.Response.Status, e.Type
			if v, ok := e.Response.Headers["Content-Encoding"]; ok {
				l.encoding[u] = fmt.Sprint(v)
			} else if v, ok := e.Response.Headers["content-encoding"]; ok {
				l.encoding[u] = fmt.Sprint(v)
			}
		case *network.EventLoadingFinished:
			if u, ok := l.urls[e.RequestID]; ok {
				l.bytes[u] = e.EncodedDataLength
			}
		case *network.EventLoadingFailed:
			l.failed = append(l.failed, fmt.Sprintf("%s: %s", e.Type, e.ErrorText))
		case *runtime.EventExceptionThrown:
			l.errors = append(l.errors, e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError {
				l.errors = append(l.errors, "console.error")
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.LevelError {
				l.errors = append(l.errors, e.Entry.Text+" "+e.Entry.URL)
			}
		}
	}
}

// A published PDF book opened on a phone in Chromium, then one of its pages' own pages: nothing
// they ask for fails (no 404, no 500, no failed load, no console error), the assets come
// compressed, the viewer page has an icon (no /favicon.ico) and a meta description, and the
// page's own page gets /favicon.ico.
func TestViewerLoadsCleanlyInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	batch, rid := h.uploadOK(t, key, "brochure.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)

	ctx := viewerTab(t, viewerBrowser(t, exe), 390, 844, true)
	l := &viewerNetLog{urls: map[network.RequestID]string{}, status: map[string]int64{}, encoding: map[string]string{},
		kind: map[string]network.ResourceType{}, bytes: map[string]float64{}}
	chromedp.ListenTarget(ctx, listenViewerNet(l))
	viewerOpen(t, ctx, h.base+"/view/"+rid, "1 / 3")
	require.NoError(t, chromedp.Run(ctx, chromedp.Click("#next", chromedp.ByID)))
	viewerWaitCounter(t, ctx, "2 / 3")
	// The images of the pages on show and the next have loaded, and the events were accepted.
	testutil.Eventually(t, 15*time.Second, 40*time.Millisecond, func() error {
		var n int
		if err := chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll(".page img")).filter(function (i) {
			return i.complete && i.naturalWidth > 0; }).length`, &n)); err != nil {
			return err
		}
		if n < 3 {
			return fmt.Errorf("%d page images loaded, want 3", n)
		}
		return nil
	})
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.flipbook.flush(false)`, nil)))
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.status[h.base+"/collect"] == 0 {
			return fmt.Errorf("the events are not posted yet")
		}
		return nil
	})

	var desc string
	var icon bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`(document.querySelector('meta[name="description"]') || {}).content || ""`, &desc),
		chromedp.Evaluate(`!!document.querySelector('link[rel="icon"]')`, &icon)))
	require.True(t, strings.HasPrefix(desc, "Page one: a document with text"), "meta description: %q", desc)
	require.True(t, icon, "the page declares its icon: the browser asks for no /favicon.ico")

	l.mu.Lock()
	require.Zero(t, l.status[h.base+"/favicon.ico"], "the viewer page names its icon: no /favicon.ico")
	l.mu.Unlock()
	// A page's own page (no icon declared: the browser asks for /favicon.ico, served).
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(h.base+"/view/"+rid+"/page/2"),
		chromedp.WaitVisible("figure img", chromedp.ByQuery)))
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.status[h.base+"/favicon.ico"] == 0 {
			return fmt.Errorf("no /favicon.ico asked for yet")
		}
		return nil
	})

	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.failed, "failed loads")
	require.Empty(t, l.errors, "console errors")
	var assets, htmlJSCSS float64
	for u, st := range l.status {
		require.Less(t, st, int64(400), "%s answered %d", u, st)
		switch l.kind[u] {
		case network.ResourceTypeDocument, network.ResourceTypeScript, network.ResourceTypeStylesheet:
			if !strings.Contains(u, "/page/") {
				htmlJSCSS += l.bytes[u]
			}
		}
		if strings.Contains(u, "/viewer/assets/") {
			assets++
			require.Contains(t, []string{"br", "gzip"}, l.encoding[u], "%s comes compressed", u)
		}
	}
	require.GreaterOrEqual(t, assets, 4.0, "the viewer's style and scripts: %v", l.status)
	t.Logf("HTML+JS+CSS transferred to open the book on a phone: %.0f bytes (Chromium: %v)", htmlJSCSS, l.encoding)
}

// The viewer's text and search JSON are compressed like its pages, with a weak ETag that still
// answers 304.
func TestViewerTextCompressed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "many.pdf", manyPagesPDF(t, 6))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)
	// (A search answer under 1 KiB, like this book's, is sent as it is.)
	for _, path := range []string{"/view/" + rid + "/text?from=1&to=6"} {
		plain, body := h.rawGet(t, path, "")
		require.Equal(t, 200, plain.StatusCode, path)
		require.Empty(t, plain.Header.Get("Content-Encoding"))
		for _, enc := range []string{"br", "gzip"} {
			res, z := h.rawGet(t, path, enc)
			require.Equal(t, 200, res.StatusCode, path)
			require.Equal(t, enc, res.Header.Get("Content-Encoding"), path)
			require.Contains(t, res.Header.Get("Vary"), "Accept-Encoding")
			require.Equal(t, body, decodeBody(t, enc, z), "%s: %s decodes to the plain answer", path, enc)
			require.Less(t, len(z), len(body))
			etag := res.Header.Get("ETag")
			require.True(t, strings.HasPrefix(etag, `W/"`), "%s: a weak ETag for the compressed bytes: %q", path, etag)
			again, _ := h.rawGet(t, path, enc, "If-None-Match", etag)
			require.Equal(t, 304, again.StatusCode, path)
		}
	}
}
