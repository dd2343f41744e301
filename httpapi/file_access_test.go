package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/actors/convert"
	"flipbook/internal/testutil"
)

// fetchFile GETs a served file with an optional reader token header.
func (h *harness) fetchFile(tb testing.TB, path, token string) (int, http.Header, []byte) {
	tb.Helper()
	req, err := http.NewRequest("GET", h.base+path, nil)
	require.NoError(tb, err)
	if token != "" {
		req.Header.Set("X-Reader-Token", token)
	}
	res, err := h.http.Do(req)
	require.NoError(tb, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, body
}

// viewerConfigOf is the viewer configuration embedded in a viewer page.
func viewerConfigOf(tb testing.TB, page []byte) map[string]any {
	tb.Helper()
	m := regexp.MustCompile(`(?s)<script id="config" type="application/json">(.*?)</script>`).FindSubmatch(page)
	require.NotNil(tb, m, "the viewer page carries its configuration")
	var cfg map[string]any
	require.NoError(tb, json.Unmarshal(m[1], &cfg), "%s", m[1])
	return cfg
}

// Who may read a book's files: the source document only while downloads are on, a gated book's
// files only with a reader token the access list still covers, nothing but the thumbnail while
// the book is not published; and a removed subscriber's token stops working everywhere.
func TestBookFileAccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "brochure.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	b, err := h.svc.Store.GetBook(tenantOf(t, h, key), rid)
	require.NoError(t, err)
	require.NotEmpty(t, b.Document)
	doc := "/files/" + rid + "/" + b.Document
	thumb := "/files/" + rid + "/" + b.Thumbnail
	pages, _ := h.storedPages(t, ws, rid, 3, 1600)
	page1 := "/files/" + rid + "/" + pages[0].File

	// A draft: only the thumbnail (the API shows it to the owner).
	st, _, _ := h.fetchFile(t, page1, "")
	require.Equal(t, 404, st, "a draft's pages are not public")
	st, _, _ = h.fetchFile(t, doc, "")
	require.Equal(t, 404, st, "a draft's document is not public")
	st, _, _ = h.fetchFile(t, thumb, "")
	require.Equal(t, 200, st)

	// Published, downloads off: pages yes, document no.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "downloadable_pdf": false}).Status)
	st, hd, _ := h.fetchFile(t, page1, "")
	require.Equal(t, 200, st)
	require.Equal(t, "public, max-age=31536000, s-maxage=3600, immutable", hd.Get("Cache-Control")) // issue 29
	require.Equal(t, "nosniff", hd.Get("X-Content-Type-Options"))
	st, _, _ = h.fetchFile(t, doc, "")
	require.Equal(t, 404, st, "downloads are off")
	cfg := viewerConfigOf(t, h.getPage(t, "/view/"+rid).Body)
	require.Nil(t, cfg["document_url"])

	// Downloads on: the document is served, revalidated every time.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "downloadable_pdf": true}).Status)
	cfg = viewerConfigOf(t, h.getPage(t, "/view/"+rid).Body)
	require.Equal(t, doc, cfg["document_url"])
	st, hd, body := h.fetchFile(t, doc, "")
	require.Equal(t, 200, st)
	require.Equal(t, "public, no-cache", hd.Get("Cache-Control"))
	require.True(t, strings.HasPrefix(string(body), "%PDF"), "the source document")

	// Gated: nothing but the thumbnail without a token, and the page hides the document.
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "ann@example.com"}).Status)
	sub := h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "bob@example.com"})
	require.Equal(t, 201, sub.Status, "%s", sub.Body)
	cfg = viewerConfigOf(t, h.getPage(t, "/view/"+rid).Body)
	require.Equal(t, true, cfg["gated"])
	require.Nil(t, cfg["document_url"], "a gated book's page does not hand out its document")
	require.NotContains(t, string(h.getPage(t, "/view/"+rid).Body), b.Document)
	for _, p := range []string{doc, page1} {
		st, hd, _ = h.fetchFile(t, p, "")
		require.Equal(t, 403, st, "%s without a token", p)
		require.Equal(t, "no-store", hd.Get("Cache-Control"))
	}
	st, _, _ = h.fetchFile(t, thumb, "")
	require.Equal(t, 200, st, "the thumbnail stays public")

	bob := h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": "bob@example.com", "session_id": "s-bob"})
	require.Equal(t, 200, bob.Status, "%s", bob.Body)
	tok := bob.data()["reader_token"].(string)
	pr := h.do(t, "GET", "/view/"+rid+"/pages", "", nil, "X-Reader-Token", tok)
	require.Equal(t, 200, pr.Status, "%s", pr.Body)
	docURL, _ := pr.data()["document_url"].(string)
	require.True(t, strings.HasPrefix(docURL, doc+"?token="), "the document comes with the pages: %q", docURL)
	first := pr.data()["pages"].([]any)[0].(map[string]any)["url"].(string)
	require.True(t, strings.HasPrefix(first, page1+"?token="), "page URLs carry the token (images send no headers): %q", first)
	for _, p := range []string{docURL, first} {
		st, hd, _ = h.fetchFile(t, p, "")
		require.Equal(t, 200, st, "%s with the token in the query", p)
		require.True(t, strings.HasPrefix(hd.Get("Cache-Control"), "private"), "kept by the reader's cache only")
	}
	// The renditions (made in the background) are offered with the token too, under the same rules.
	if convert.RenditionsUsable() {
		var srcset string
		testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
			pr := h.do(t, "GET", "/view/"+rid+"/pages", "", nil, "X-Reader-Token", tok)
			if srcset, _ = pr.data()["pages"].([]any)[0].(map[string]any)["srcset"].(string); srcset == "" {
				return fmt.Errorf("page 1 has no srcset yet")
			}
			return nil
		})
		for _, c := range strings.Split(srcset, ", ") {
			u := strings.Fields(c)[0]
			require.Contains(t, u, "?token=", "srcset candidates carry the token: %q", srcset)
			st, hd, _ = h.fetchFile(t, u, "")
			require.Equal(t, 200, st, u)
			require.True(t, strings.HasPrefix(hd.Get("Cache-Control"), "private"), u)
			st, _, _ = h.fetchFile(t, u[:strings.Index(u, "?")], "")
			require.Equal(t, 403, st, "%s without the token", u)
		}
	}
	st, hd, _ = h.fetchFile(t, doc, tok)
	require.Equal(t, 200, st, "the token in the header")
	require.Equal(t, "private, no-cache", hd.Get("Cache-Control"))
	st, _, _ = h.fetchFile(t, doc+"?token="+tok[:len(tok)-2]+"xx", "")
	require.Equal(t, 403, st, "a forged token")

	// Bob is removed (Ann keeps the gate on): his token no longer opens anything.
	ev := collectBody(rid, map[string]any{"type": "session_started"})
	ev["reader_token"] = tok
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", ev).Status)
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/subscribers/"+itoa(int64(sub.data()["id"].(float64))), key, nil).Status)
	require.Equal(t, 403, h.do(t, "GET", "/view/"+rid+"/pages", "", nil, "X-Reader-Token", tok).Status, "pages")
	st, _, _ = h.fetchFile(t, first, "")
	require.Equal(t, 403, st, "page image")
	st, _, _ = h.fetchFile(t, doc, tok)
	require.Equal(t, 403, st, "document")
	require.Equal(t, 403, h.do(t, "POST", "/collect", "", ev).Status, "events")
	ann := h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": "ann@example.com"})
	require.Equal(t, 200, ann.Status)
	require.Equal(t, 200, h.do(t, "GET", "/view/"+rid+"/pages", "", nil, "X-Reader-Token", ann.data()["reader_token"].(string)).Status)

	// Unpublished again: the pages go; deleted: the thumbnail goes too.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "draft"}).Status)
	st, _, _ = h.fetchFile(t, page1+"?token="+ann.data()["reader_token"].(string), "")
	require.Equal(t, 404, st)
	st, _, _ = h.fetchFile(t, thumb, "")
	require.Equal(t, 200, st)
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil).Status)
	st, _, _ = h.fetchFile(t, thumb, "")
	require.Equal(t, 404, st)
}
