package httpapi

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/require"
)

// pdfPages is the page count pdfinfo reads from a PDF, and the text pdftotext finds in it.
func pdfPages(t *testing.T, pdf []byte) (int, string) {
	t.Helper()
	require.True(t, strings.HasPrefix(string(pdf), "%PDF"), "a PDF: %.200s", pdf)
	path := filepath.Join(t.TempDir(), "got.pdf")
	require.NoError(t, os.WriteFile(path, pdf, 0o644))
	info, err := exec.Command("pdfinfo", path).CombinedOutput()
	require.NoError(t, err, "%s", info)
	m := regexp.MustCompile(`(?m)^Pages:\s+(\d+)$`).FindSubmatch(info)
	require.NotNil(t, m, "%s", info)
	n, _ := strconv.Atoi(string(m[1]))
	text, err := exec.Command("pdftotext", path, "-").CombinedOutput()
	require.NoError(t, err, "%s", text)
	return n, string(text)
}

// setDownloadMode sets a book's downloadable_pdf (false, full, single, spread) with a bulk
// settings batch (PUT takes a boolean only) and waits for it.
func (h *harness) setDownloadMode(t *testing.T, key, rid, mode string) {
	t.Helper()
	rev := h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()["settings_revision"].(string)
	r := h.do(t, "POST", bulkPath, key, map[string]any{"books": bulkBooks([]string{rid}, rev),
		"settings": map[string]any{"downloadable_pdf": mode}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	require.Equal(t, "completed", h.waitBulk(t, key, r.data()["id"].(string))["status"])
}

// GET /view/{book}/download honours each downloadable_pdf value: full (the whole PDF, any range
// of pages), single (one page), spread (two facing pages at most), false (nothing); the pages
// are cut from the source PDF; a gated book needs the reader token.
func TestViewerDownload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 400 })
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "six.pdf", manyPagesPDF(t, 6))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish",
		"title": "Les Éléphants: d'Afrique / \"2026\"", "downloadable_pdf": false}).Status)
	dl := "/view/" + rid + "/download"
	b, err := h.svc.Store.GetBook(tenantOf(t, h, key), rid)
	require.NoError(t, err)
	doc := "/files/" + rid + "/" + b.Document

	get := func(path string, headers ...string) *resp {
		t.Helper()
		return h.do(t, "GET", path, "", nil, headers...)
	}
	refused := func(path string, status int, typ string) {
		t.Helper()
		r := get(path)
		require.Equal(t, status, r.Status, "%s: %s", path, r.Body)
		require.Equal(t, typ, r.errType(), "%s: %s", path, r.Body)
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	}
	pages := func(path string, want int, texts ...string) *resp {
		t.Helper()
		r := get(path)
		require.Equal(t, 200, r.Status, "%s: %s", path, r.Body)
		require.Equal(t, "application/pdf", r.Header.Get("Content-Type"))
		n, text := pdfPages(t, r.Body)
		require.Equal(t, want, n, "%s: pages", path)
		for _, s := range texts {
			require.Contains(t, text, s, path)
		}
		return r
	}

	// Downloads off: nothing, and the viewer offers nothing.
	refused(dl, 404, "NotFound")
	refused(dl+"?pages=1", 404, "NotFound")
	require.Nil(t, viewerConfigOf(t, h.getPage(t, "/view/"+rid).Body)["download_mode"])

	// full (PUT's boolean): the whole PDF, or any range of it.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "downloadable_pdf": true}).Status)
	require.Equal(t, "full", viewerConfigOf(t, h.getPage(t, "/view/"+rid).Body)["download_mode"])
	r := pages(dl, 6, "Page 1 of 6", "Page 6 of 6")
	require.Equal(t, `attachment; filename="Les _l_phants d'Afrique 2026.pdf"; filename*=UTF-8''Les%20%C3%89l%C3%A9phants%20d%27Afrique%202026.pdf`,
		r.Header.Get("Content-Disposition"))
	require.Equal(t, "public, no-cache", r.Header.Get("Cache-Control"))
	require.Equal(t, "noindex", r.Header.Get("X-Robots-Tag"))
	r = pages(dl+"?pages=2-4", 3, "Page 2 of 6", "Page 3 of 6", "Page 4 of 6")
	require.NotContains(t, mustText(t, r.Body), "Page 5 of 6")
	require.Contains(t, r.Header.Get("Content-Disposition"), `filename="Les _l_phants d'Afrique 2026 p2-4.pdf"`)
	etag := r.Header.Get("ETag")
	require.NotEmpty(t, etag)
	require.Equal(t, 304, get(dl+"?pages=2-4", "If-None-Match", etag).Status, "revalidated cheaply")
	st, _, _ := h.fetchFile(t, doc, "")
	require.Equal(t, 200, st, "the stored document too")

	// Pages that are not pages of the book.
	for _, bad := range []string{"0", "3-2", "abc", "7", "2-7", "-1", "1-"} {
		r := get(dl + "?pages=" + bad)
		require.Equal(t, 422, r.Status, "pages=%s: %s", bad, r.Body)
		require.Contains(t, r.details(), "pages", "pages=%s", bad)
	}

	// single: one page at a time; the whole file is not served, not even from /files.
	h.setDownloadMode(t, key, rid, "single")
	require.Equal(t, "single", viewerConfigOf(t, h.getPage(t, "/view/"+rid).Body)["download_mode"])
	require.Nil(t, viewerConfigOf(t, h.getPage(t, "/view/"+rid).Body)["document_url"])
	r = pages(dl+"?pages=3", 1, "Page 3 of 6")
	require.NotContains(t, mustText(t, r.Body), "Page 4 of 6")
	require.Contains(t, r.Header.Get("Content-Disposition"), ` p3.pdf"`)
	refused(dl+"?pages=3-4", 403, TypeAccessDenied)
	refused(dl, 403, TypeAccessDenied)
	st, _, _ = h.fetchFile(t, doc, "")
	require.Equal(t, 404, st, "the whole document is not served when only pages may be")

	// spread: the pages on show, one or two.
	h.setDownloadMode(t, key, rid, "spread")
	pages(dl+"?pages=2-3", 2, "Page 2 of 6", "Page 3 of 6")
	pages(dl+"?pages=1", 1, "Page 1 of 6")
	refused(dl+"?pages=2-4", 403, TypeAccessDenied)
	refused(dl, 403, TypeAccessDenied)

	// false again: nothing.
	h.setDownloadMode(t, key, rid, "false")
	refused(dl+"?pages=2", 404, "NotFound")

	downloadGatedChecks(t, h, key, rid, refused, pages)
}

// downloadGatedChecks: a gated book's pages need a reader token; unpublished, nothing.
func downloadGatedChecks(t *testing.T, h *harness, key, rid string, refused func(string, int, string),
	pages func(string, int, ...string) *resp) {
	dl := "/view/" + rid + "/download"
	get := func(path string, headers ...string) *resp { return h.do(t, "GET", path, "", nil, headers...) }
	// Gated: a reader token is needed, and the answer is kept privately.
	h.setDownloadMode(t, key, rid, "spread")
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "ann@example.com"}).Status)
	refused(dl+"?pages=2-3", 403, TypeAccessDenied)
	ann := h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": "ann@example.com"})
	require.Equal(t, 200, ann.Status, "%s", ann.Body)
	tok := ann.data()["reader_token"].(string)
	r := pages(dl+"?pages=4-5&token="+tok, 2, "Page 4 of 6", "Page 5 of 6")
	require.Equal(t, "private, no-cache", r.Header.Get("Cache-Control"))
	require.Equal(t, 200, get(dl+"?pages=4", "X-Reader-Token", tok).Status, "the token in the header")
	refused(dl+"?pages=4&token="+tok[:len(tok)-2]+"xx", 403, TypeAccessDenied)

	// Unpublished: gone.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "draft"}).Status)
	refused(dl+"?pages=4&token="+tok, 404, "NotFound")
	refused("/view/nosuchbook/download", 404, "NotFound")
}

// mustText is the text pdftotext finds in a PDF.
func mustText(t *testing.T, pdf []byte) string {
	t.Helper()
	_, text := pdfPages(t, pdf)
	return text
}

// attachmentName keeps a book's name readable and safe in the header.
func TestAttachmentName(t *testing.T) {
	for name, want := range map[string]string{
		"Spring catalogue":       `attachment; filename="Spring catalogue p2-3.pdf"`,
		"  a/b\\c:d*e?f<g>h|i  ": `attachment; filename="a b c d e f g h i p2-3.pdf"`,
		"line\r\nbreak\x00":      `attachment; filename="line break p2-3.pdf"`,
		"...":                    `attachment; filename="flipbook p2-3.pdf"`,
		"日本":                     `attachment; filename="__ p2-3.pdf"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%20p2-3.pdf`,
	} {
		require.Equal(t, want, attachmentName(name, " p2-3"), fmt.Sprintf("%q", name))
	}
}

// sharedImagePDF has n pages that all draw the same image of w×w random pixels, stored once in
// the PDF (one image XObject every page refers to, as catalogues share their logos, fonts and
// backgrounds).
func sharedImagePDF(tb testing.TB, n, w int) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, w))
	rng := rand.New(rand.NewSource(1))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Intn(256))
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	var buf bytes.Buffer
	require.NoError(tb, png.Encode(&buf, img))
	f := newPDF()
	f.RegisterImageOptionsReader("noise", fpdf.ImageOptions{ImageType: "PNG"}, &buf)
	for i := 1; i <= n; i++ {
		f.AddPage()
		f.SetXY(72, 40)
		f.Write(16, fmt.Sprintf("Page %d of %d", i, n))
		f.ImageOptions("noise", 72, 72, 300, 300, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
	}
	return pdfBytes(tb, f)
}

// dirBytes is the size of the files under dir, and how many there are.
func dirBytes(dir string) (n int64, files int) {
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
			files++
		}
		return nil
	})
	return n, files
}

// TestDownloadCutIsNotAmplified: GET /view/{book}/download?pages=N-M cut with pdfseparate,
// which wrote every page as a PDF of its own carrying a copy of each resource the page uses, and
// pdfunite, which joined the copies: a 40-page PDF of ~0.5 MB whose pages share one image became
// ~39 MB of temporary files and a ~19 MB answer (found by a review). Cut by pdfcpu, the shared
// objects stay once: the cut's files and the answer stay within 4× the source.
func TestDownloadCutIsNotAmplified(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 400 })
	key, _ := h.workspaceKey(t, "company", "live", "*")
	const pages = 40
	pdf := sharedImagePDF(t, pages, 400)
	batch, rid := h.uploadOK(t, key, "shared.pdf", pdf)
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish",
		"downloadable_pdf": true}).Status)
	b, err := h.svc.Store.GetBook(tenantOf(t, h, key), rid)
	require.NoError(t, err)
	src := int64(len(pdf))

	// Anonymously, over HTTP: the answer.
	r := h.do(t, "GET", fmt.Sprintf("/view/%s/download?pages=1-%d", rid, pages), "", nil)
	require.Equal(t, 200, r.Status, "%.300s", r.Body)
	got, _ := pdfPages(t, r.Body)
	require.Equal(t, pages, got)

	// The same cut in process: its temporary directory while the answer is being sent.
	body, size, err := h.svc.downloadBody(b, 1, pages)
	require.NoError(t, err)
	tb, ok := body.(*tempBody)
	require.True(t, ok)
	tmp, files := dirBytes(tb.dir)
	require.NoError(t, body.Close())
	_, err = os.Stat(tb.dir)
	require.True(t, os.IsNotExist(err), "the cut's directory goes with the answer")

	t.Logf("source PDF %d bytes (%d pages); answer over HTTP %d bytes; cut in process %d bytes, temporary files %d bytes in %d files",
		src, pages, len(r.Body), size, tmp, files)
	require.LessOrEqual(t, tmp, 4*src, "temporary files of one cut: %d bytes for a %d-byte PDF (%.0f×)", tmp, src, float64(tmp)/float64(src))
	require.LessOrEqual(t, int64(len(r.Body)), 4*src, "answer of one cut: %d bytes for a %d-byte PDF (%.0f×)", len(r.Body), src, float64(len(r.Body))/float64(src))
}
