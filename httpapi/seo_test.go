package httpapi

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
	"flipbook/storage"
)

// seoPDF has four A4 pages of text: a heading and a paragraph on page 1 (accented), one line on
// each of the others.
func seoPDF(tb testing.TB) []byte {
	tb.Helper()
	f := newPDF()
	latin1 := f.UnicodeTranslatorFromDescriptor("")
	f.AddPage()
	f.SetFont("Helvetica", "B", 24)
	f.Text(72, 90, latin1("Les Éléphants d'Afrique"))
	f.SetFont("Helvetica", "", 14)
	f.Text(72, 200, "Elephants roam the savanna in large herds.")
	f.Text(72, 218, "They travel far for water.")
	for _, line := range []string{"Page two tells of the Okavango delta.", "Page three: crème brûlée for dessert.",
		"Page four is the last, with a zebra."} {
		f.AddPage()
		f.Text(72, 90, latin1(line))
	}
	return pdfBytes(tb, f)
}

var (
	ldRe        = regexp.MustCompile(`(?s)<script type="application/ld\+json">(.*?)</script>`)
	canonicalRe = regexp.MustCompile(`<link rel="canonical" href="([^"]+)">`)
	robotsMeta  = `<meta name="robots" content="noindex">`
)

// jsonLDOf parses the page's JSON-LD.
func jsonLDOf(tb testing.TB, page []byte) map[string]any {
	tb.Helper()
	m := ldRe.FindSubmatch(page)
	require.NotNil(tb, m, "no JSON-LD in %s", page)
	var ld map[string]any
	require.NoError(tb, json.Unmarshal(m[1], &ld), "%s", m[1])
	require.Equal(tb, "https://schema.org", ld["@context"])
	return ld
}

// requireIndexable checks an HTML answer says nothing against indexing; requireNoIndex that it
// says noindex both ways.
func requireIndexable(tb testing.TB, r *resp) {
	tb.Helper()
	require.Empty(tb, r.Header.Get("X-Robots-Tag"))
	require.NotContains(tb, string(r.Body), robotsMeta)
}

func requireNoIndex(tb testing.TB, r *resp, what string) {
	tb.Helper()
	require.Equal(tb, "noindex", r.Header.Get("X-Robots-Tag"), what)
	require.Contains(tb, string(r.Body), robotsMeta, what)
}

// sitemapLocs fetches a workspace's sitemap, checks it is a sitemaps.org 0.9 document and
// returns its addresses.
func (h *harness) sitemapLocs(tb testing.TB, ws int64) []string {
	tb.Helper()
	w, err := h.svc.Store.Workspace(ws)
	require.NoError(tb, err)
	r := h.getPage(tb, "/sitemaps/"+w.Slug+".xml")
	require.Equal(tb, 200, r.Status, "%s", r.Body)
	require.Equal(tb, "application/xml; charset=utf-8", r.Header.Get("Content-Type"))
	var set struct {
		XMLName xml.Name
		URLs    []struct {
			Loc     string `xml:"loc"`
			LastMod string `xml:"lastmod"`
		} `xml:"url"`
	}
	require.NoError(tb, xml.Unmarshal(r.Body, &set), "%s", r.Body)
	require.Equal(tb, xml.Name{Space: "http://www.sitemaps.org/schemas/sitemap/0.9", Local: "urlset"}, set.XMLName)
	locs := make([]string, len(set.URLs))
	for i, u := range set.URLs {
		_, err := time.Parse(time.RFC3339, u.LastMod)
		require.NoError(tb, err)
		locs[i] = u.Loc
	}
	return locs
}

// bookURLs are a book's viewer and its pages' own pages, as a sitemap lists them.
func (h *harness) bookURLs(rid string, pages int) []string {
	out := []string{h.base + "/view/" + rid}
	for n := 1; n <= pages; n++ {
		out = append(out, fmt.Sprintf("%s/view/%s/page/%d", h.base, rid, n))
	}
	return out
}

// The viewer page carries the first pages' text without JavaScript, each page has its own page
// with image, text, canonical link and JSON-LD, the sitemap lists them, and the viewer's text
// and search endpoints answer; once the book is gated, none of its text is in any page and the
// endpoints want a reader token.
func TestSEOPagesTextAndSearch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "elephants.pdf", seoPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "title": "Wild <Africa>"}).Status)

	v := h.getPage(t, "/view/"+rid)
	require.Equal(t, 200, v.Status)
	requireIndexable(t, v)
	body := string(v.Body)
	require.Equal(t, h.base+"/view/"+rid, canonicalRe.FindStringSubmatch(body)[1])
	require.Contains(t, body, `<article id="book-text" class="book-text"`)
	require.Contains(t, body, `<section aria-label="Page 1">`)
	require.Contains(t, body, `<h3>Les Éléphants d&#39;Afrique</h3>`, "a short line on its own is a heading")
	require.Contains(t, body, `<p>Elephants roam the savanna in large herds. They travel far for water.</p>`)
	require.Contains(t, body, "Okavango delta")
	require.Contains(t, body, "crème brûlée")
	require.NotContains(t, body, "zebra", "only the first three pages' text")
	require.Contains(t, body, `<meta name="description" content="Les Éléphants d&#39;Afrique`)
	for n := 1; n <= 4; n++ {
		require.Contains(t, body, fmt.Sprintf(`<a href="/view/%s/page/%d">Page %d</a>`, rid, n, n))
	}
	book := jsonLDOf(t, v.Body)
	require.Equal(t, "Book", book["@type"])
	require.Equal(t, "Wild <Africa>", book["name"])
	require.EqualValues(t, 4, book["numberOfPages"])

	// A page's own page: image (served), text, canonical, prev/next, back to the viewer.
	p := h.getPage(t, "/view/"+rid+"/page/2")
	require.Equal(t, 200, p.Status)
	requireIndexable(t, p)
	require.Equal(t, "public, max-age=300", p.Header.Get("Cache-Control"))
	pb := string(p.Body)
	require.Equal(t, h.base+"/view/"+rid+"/page/2", canonicalRe.FindStringSubmatch(pb)[1])
	require.Contains(t, pb, "<p>Page two tells of the Okavango delta.</p>")
	require.Regexp(t, `<img src="/files/`+rid+`/[^"]+" width="\d+" height="\d+" alt="Page 2: Page two tells of the Okavango delta.">`, pb)
	require.Contains(t, pb, `<a href="/view/`+rid+`/page/1" rel="prev">`)
	require.Contains(t, pb, `<a href="/view/`+rid+`/page/3" rel="next">`)
	require.Contains(t, pb, `<a href="/view/`+rid+`#page=2">`)
	ld := jsonLDOf(t, p.Body)
	require.Equal(t, "WebPage", ld["@type"])
	require.EqualValues(t, 2, ld["position"])
	require.Equal(t, "Book", ld["isPartOf"].(map[string]any)["@type"])
	require.Equal(t, h.base+"/view/"+rid, ld["isPartOf"].(map[string]any)["url"])
	img := ld["primaryImageOfPage"].(map[string]any)
	st, _, _ := h.fetchFile(t, strings.TrimPrefix(img["contentUrl"].(string), h.base), "")
	require.Equal(t, 200, st, "the JSON-LD's image is the page image")
	require.NotContains(t, string(h.getPage(t, "/view/"+rid+"/page/1").Body), `rel="prev"`)
	require.NotContains(t, string(h.getPage(t, "/view/"+rid+"/page/4").Body), `rel="next"`)
	for _, bad := range []string{"0", "5", "abc", "-1"} {
		nf := h.getPage(t, "/view/"+rid+"/page/"+bad)
		require.Equal(t, 404, nf.Status, bad)
		require.Contains(t, string(nf.Body), "This page is not in the flipbook")
		requireNoIndex(t, nf, "a page out of range")
	}

	h.checkViewerText(t, rid, "")
	h.checkViewerSearch(t, rid, "")
	require.Equal(t, h.bookURLs(rid, 4), h.sitemapLocs(t, ws))

	// Gated: no text anywhere without the gate's token, noindex, out of the sitemap.
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "ann@example.com"}).Status)
	for _, path := range []string{"/view/" + rid, "/view/" + rid + "/page/1", "/view/" + rid + "/page/3"} {
		g := h.getPage(t, path)
		require.Equal(t, 200, g.Status)
		requireNoIndex(t, g, "gated "+path)
		for _, word := range []string{"léphants", "lephants", "savanna", "Okavango", "brûlée", "zebra"} {
			require.NotContains(t, string(g.Body), word, "a gated book's text in %s", path)
		}
		require.NotContains(t, string(g.Body), "/files/"+rid+"/", "a gated book's page images in %s", path)
	}
	require.Contains(t, string(h.getPage(t, "/view/"+rid+"/page/1").Body), "shared with invited readers")
	require.Empty(t, h.sitemapLocs(t, ws))
	for _, path := range []string{"/view/" + rid + "/text?from=1", "/view/" + rid + "/search?q=elephant"} {
		r := h.do(t, "GET", path, "", nil)
		require.Equal(t, 403, r.Status, path)
		require.Equal(t, TypeAccessDenied, r.errType())
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		require.Equal(t, 403, h.do(t, "GET", path, "", nil, "X-Reader-Token", "forged.token").Status)
	}
	ann := h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": "ann@example.com"})
	require.Equal(t, 200, ann.Status, "%s", ann.Body)
	tok := ann.data()["reader_token"].(string)
	h.checkViewerText(t, rid, tok)
	h.checkViewerSearch(t, rid, tok)
	r := h.do(t, "GET", "/view/"+rid+"/search?q=okav&token="+url.QueryEscape(tok), "", nil)
	require.Equal(t, 200, r.Status, "the token as a query parameter, as for page images")
}

// checkViewerText checks GET /view/{book}/text (with a reader token when tok is set).
func (h *harness) checkViewerText(t *testing.T, rid, tok string) {
	t.Helper()
	hdr := []string{}
	cache := "public, max-age=300"
	if tok != "" {
		hdr, cache = []string{"X-Reader-Token", tok}, "private, no-cache"
	}
	r := h.do(t, "GET", "/view/"+rid+"/text?from=1&to=2", "", nil, hdr...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, cache, r.Header.Get("Cache-Control"))
	require.Equal(t, "noindex", r.Header.Get("X-Robots-Tag"))
	pages := r.list()
	require.Len(t, pages, 2)
	one := pages[0].(map[string]any)
	require.EqualValues(t, 1, one["page"])
	require.Contains(t, one["text"], "Les Éléphants d'Afrique")
	require.Equal(t, "pdf", one["source"])
	words := one["words"].([]any)
	require.Equal(t, "Les", words[0].(map[string]any)["text"])
	for _, w := range words {
		b := w.(map[string]any)
		for _, k := range []string{"x", "y", "w", "h"} {
			f := b[k].(float64)
			require.True(t, f >= 0 && f <= 1, "%s=%v", k, f)
		}
	}
	require.Contains(t, pages[1].(map[string]any)["text"], "Okavango")
	require.EqualValues(t, 4, r.meta()["page_count"])
	// Cheap to ask again: the ETag revalidates to a 304.
	again := h.do(t, "GET", "/view/"+rid+"/text?from=1&to=2", "", nil, append(hdr, "If-None-Match", r.Header.Get("ETag"))...)
	require.Equal(t, 304, again.Status)
	// A to past the end is the last page; bad spans are refused.
	r = h.do(t, "GET", "/view/"+rid+"/text?from=4&to=9", "", nil, hdr...)
	require.Equal(t, 200, r.Status)
	require.Len(t, r.list(), 1)
	require.Equal(t, 404, h.do(t, "GET", "/view/"+rid+"/text?from=5", "", nil, hdr...).Status)
	for _, q := range []string{"from=0", "from=x", "from=3&to=2", "from=1&to=21"} {
		bad := h.do(t, "GET", "/view/"+rid+"/text?"+q, "", nil, hdr...)
		require.Equal(t, 422, bad.Status, q)
		require.Equal(t, "ValidationException", bad.errType(), q)
	}
}

// checkViewerSearch checks GET /view/{book}/search: case, accents and word prefixes fold, every
// term must be on the page, hits come in page order with boxes.
func (h *harness) checkViewerSearch(t *testing.T, rid, tok string) {
	t.Helper()
	hdr := []string{}
	if tok != "" {
		hdr = []string{"X-Reader-Token", tok}
	}
	search := func(q string) []any {
		r := h.do(t, "GET", "/view/"+rid+"/search?q="+url.QueryEscape(q), "", nil, hdr...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		require.Equal(t, q, r.meta()["query"])
		return r.list()
	}
	hits := search("ELEPH")
	require.Len(t, hits, 1)
	hit := hits[0].(map[string]any)
	require.EqualValues(t, 1, hit["page"])
	require.Contains(t, hit["snippet"], "Éléphants")
	require.Len(t, hit["boxes"], 2, "Éléphants and Elephants")
	hits = search("crème bru")
	require.Len(t, hits, 1)
	require.EqualValues(t, 3, hits[0].(map[string]any)["page"])
	require.Len(t, search("creme BRÛLÉE"), 1)
	hits = search("page")
	require.Len(t, hits, 3)
	for i, want := range []float64{2, 3, 4} {
		require.EqualValues(t, want, hits[i].(map[string]any)["page"], "in page order")
	}
	require.Empty(t, search("okavango zebra"), "every term on the same page")
	require.Empty(t, search("giraffe"))
	for _, q := range []string{"", "  ", "!!", strings.Repeat("a", 201)} {
		r := h.do(t, "GET", "/view/"+rid+"/search?q="+url.QueryEscape(q), "", nil, hdr...)
		require.Equal(t, 422, r.Status, "%q", q)
	}
}

// Each kind of book that is not public says noindex in the header and the page, on the viewer
// and on a page's own page, and stays out of the sitemap; only the public book is listed.
func TestSEONoIndex(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	public := h.konva(t, key, "public", "publish")
	listed := h.konva(t, key, "listed", "publish")
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+listed, key, map[string]any{"status": "publish", "pdf_privacy_status": "public"}).Status)
	unlisted := h.konva(t, key, "unlisted", "publish")
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+unlisted, key, map[string]any{"status": "publish", "pdf_privacy_status": "unlisted"}).Status)
	embedded := h.konva(t, key, "embed only", "publish")
	require.Equal(t, 200, h.do(t, "POST", "/api/v1/books/"+embedded+"/embed-domains", key, map[string]any{"domain": "shop.example"}).Status)
	gated := h.konva(t, key, "gated", "publish")
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": gated, "email": "ann@example.com"}).Status)
	lapsed := h.konva(t, key, "billing lapsed", "publish")
	tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
	old, err := h.svc.Store.GetBook(tn, lapsed)
	require.NoError(t, err)
	nb := *old
	past := time.Now().Add(-BillingGrace - 24*time.Hour)
	nb.BillingExpiresAt, nb.Memo = &past, nil
	bt := h.svc.Store.NewBatch()
	require.NoError(t, bt.PutBook(old, &nb))
	require.NoError(t, bt.Commit())
	test := h.konva(t, h.key(t, ws, "test", "*"), "sandbox", "publish")
	draft := h.konva(t, key, "draft", "draft")

	for _, rid := range []string{public, listed} {
		for _, path := range []string{"/view/" + rid, "/view/" + rid + "/page/1"} {
			r := h.getPage(t, path)
			require.Equal(t, 200, r.Status, path)
			requireIndexable(t, r)
		}
	}
	for name, rid := range map[string]string{"unlisted": unlisted, "embed only": embedded, "gated": gated,
		"billing lapsed": lapsed, "test mode": test} {
		for _, path := range []string{"/view/" + rid, "/view/" + rid + "/page/1"} {
			r := h.getPage(t, path)
			require.Equal(t, 200, r.Status, "%s %s", name, path)
			requireNoIndex(t, r, name+" "+path)
		}
	}
	require.Contains(t, string(h.getPage(t, "/view/"+lapsed+"/page/1").Body), "This flipbook has expired")
	for _, path := range []string{"/view/" + draft, "/view/" + draft + "/page/1"} {
		r := h.getPage(t, path)
		require.Equal(t, 404, r.Status)
		requireNoIndex(t, r, "draft "+path)
	}
	for _, path := range []string{"/view/" + lapsed + "/text", "/view/" + draft + "/text", "/view/" + draft + "/search?q=a"} {
		require.Equal(t, 404, h.do(t, "GET", path, "", nil).Status, path)
	}

	// Past expires_at: the viewer and the pages are 404s that say noindex.
	exp := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	expiring := h.konva(t, key, "expiring", "publish")
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+expiring, key, map[string]any{"status": "publish", "expires_at": exp}).Status)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if st := h.getPage(t, "/view/"+expiring+"/page/1").Status; st != 404 {
			return fmt.Errorf("an expired book's page answers %d", st)
		}
		return nil
	})
	requireNoIndex(t, h.getPage(t, "/view/"+expiring+"/page/2"), "expired")

	// The sitemap: this workspace's public books only, newest first; another workspace's is its
	// own; an unknown slug is a 404.
	require.ElementsMatch(t, append(h.bookURLs(listed, 2), h.bookURLs(public, 2)...), h.sitemapLocs(t, ws))
	require.Equal(t, h.bookURLs(listed, 2)[0], h.sitemapLocs(t, ws)[0], "newest first")
	otherKey, other := h.workspaceKey(t, "company", "live", "*")
	theirs := h.konva(t, otherKey, "theirs", "publish")
	require.Equal(t, h.bookURLs(theirs, 2), h.sitemapLocs(t, other))
	require.NotContains(t, h.sitemapLocs(t, ws), h.base+"/view/"+theirs)
	res, err := http.Get(h.base + "/sitemaps/no-such-workspace.xml")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 404, res.StatusCode)
	require.Equal(t, 404, h.getPage(t, "/sitemaps/"+mustSlug(t, h, ws)).Status, "the .xml is part of the name")
}

func mustSlug(t *testing.T, h *harness, ws int64) string {
	t.Helper()
	w, err := h.svc.Store.Workspace(ws)
	require.NoError(t, err)
	return w.Slug
}

// In Chromium: with JavaScript the viewer shows the book and the first pages' text is out of
// sight (kept for screen readers); without JavaScript the text is what the reader sees, and the
// empty book area is gone.
func TestSEOTextInBrowser(t *testing.T) {
	t.Parallel()
	exe := chromium(t)
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "elephants.pdf", seoPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)
	ctx := startBrowser(t, exe, 1280, 900, 60*time.Second)

	var text, wrap []*cdp.Node // present in the document
	var heading string
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(h.base+"/view/"+rid),
		chromedp.WaitVisible(".stf__parent", chromedp.ByQuery),
		chromedp.Nodes("#book-text", &text, chromedp.ByQuery),
		chromedp.Text("#book-text h3", &heading, chromedp.ByQuery)))
	require.Equal(t, "Les Éléphants d'Afrique", heading, "in the document for screen readers")
	var box *dom.BoxModel
	require.NoError(t, chromedp.Run(ctx, chromedp.Dimensions("#book-text", &box, chromedp.ByQuery)))
	require.LessOrEqual(t, box.Width, int64(1), "out of sight once the viewer runs")

	noJS, cancel := chromedp.NewContext(ctx)
	defer cancel()
	var styles []*css.ComputedStyleProperty
	require.NoError(t, chromedp.Run(noJS, emulation.SetScriptExecutionDisabled(true),
		chromedp.Navigate(h.base+"/view/"+rid),
		chromedp.WaitVisible("#book-text", chromedp.ByQuery),
		chromedp.Dimensions("#book-text", &box, chromedp.ByQuery),
		chromedp.Nodes("#book-wrap", &wrap, chromedp.ByQuery),
		chromedp.ComputedStyle("#book-wrap", &styles, chromedp.ByQuery)))
	require.Greater(t, box.Width, int64(400), "the text is the page without JavaScript")
	display := ""
	for _, p := range styles {
		if p.Name == "display" {
			display = p.Value
		}
	}
	require.Equal(t, "none", display, "no empty book area")
	var shot []byte
	require.NoError(t, chromedp.Run(noJS, chromedp.CaptureScreenshot(&shot)))
	require.NoError(t, os.WriteFile(filepath.Join(artifactDir(t), "viewer-no-javascript.png"), shot, 0o644))

	// A page's own page, also without JavaScript: the page image shows, with its text below.
	require.NoError(t, chromedp.Run(noJS, chromedp.Navigate(h.base+"/view/"+rid+"/page/1"),
		chromedp.WaitVisible("figure img", chromedp.ByQuery),
		chromedp.Dimensions("figure img", &box, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&shot)))
	require.Greater(t, box.Height, int64(300), "the page image is shown at its size")
	require.NoError(t, os.WriteFile(filepath.Join(artifactDir(t), "seo-page.png"), shot, 0o644))
}
