package httpapi

// Document conversion over real HTTP: POST /books uploads, batches, the conversion of PDF,
// image and Office files into page images, cancels, restarts and concurrent uploads.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"io/fs"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/internal/testutil"
	"flipbook/storage"
)

// filePart is one file part of a multipart upload.
type filePart struct {
	field, filename string
	data            []byte
}

// multipartBody encodes file parts and form fields.
func multipartBody(files []filePart, fields map[string]string) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	for _, f := range files {
		fw, _ := w.CreateFormFile(f.field, f.filename)
		_, _ = fw.Write(f.data)
	}
	_ = w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

// uploadParts sends POST /books with the given parts and fields.
func (h *harness) uploadParts(tb testing.TB, key string, files []filePart, fields map[string]string) *resp {
	tb.Helper()
	body, ctype := multipartBody(files, fields)
	return h.do(tb, "POST", "/api/v1/books", key, body, "Content-Type", ctype)
}

// upload sends one file as files[] with optional fields (name, value pairs).
func (h *harness) upload(tb testing.TB, key, filename string, data []byte, fields ...string) *resp {
	tb.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		m[fields[i]] = fields[i+1]
	}
	return h.uploadParts(tb, key, []filePart{{"files[]", filename, data}}, m)
}

// uploadOK uploads one file and checks the 202; it returns the batch id and the book's id.
func (h *harness) uploadOK(tb testing.TB, key, filename string, data []byte, fields ...string) (batch, rid string) {
	tb.Helper()
	r := h.upload(tb, key, filename, data, fields...)
	require.Equal(tb, 202, r.Status, "%s", r.Body)
	d := r.data()
	require.Equal(tb, "queued", d["status"])
	batch, _ = d["batch_id"].(string)
	require.NotEmpty(tb, batch)
	ids, _ := d["book_ids"].([]any)
	require.Len(tb, ids, 1)
	rid, _ = ids[0].(string)
	require.NotEmpty(tb, rid)
	return batch, rid
}

// uploadRaw is a goroutine-safe upload (no test assertions): status and body.
func (h *harness) uploadRaw(key, filename string, data []byte) (int, []byte, error) {
	body, ctype := multipartBody([]filePart{{"files[]", filename, data}}, nil)
	req, err := http.NewRequest("POST", h.base+"/api/v1/books", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ctype)
	res, err := h.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, raw, err
}

func (h *harness) batchData(tb testing.TB, key, id string) map[string]any {
	tb.Helper()
	r := h.do(tb, "GET", "/api/v1/batches/"+id, key, nil)
	require.Equal(tb, 200, r.Status, "%s", r.Body)
	return r.data()
}

// batchOrder ranks batch statuses (a batch never goes back).
var batchOrder = map[string]int{"queued": 0, "processing": 1, "completed": 2, "failed": 2, "cancelled": 2}

// waitBatch polls GET /batches/{id} until the batch has finished and returns it; the statuses
// seen on the way must never go backwards.
func (h *harness) waitBatch(tb testing.TB, key, id string) map[string]any {
	tb.Helper()
	var last map[string]any
	prev := ""
	testutil.Eventually(tb, 90*time.Second, 10*time.Millisecond, func() error {
		last = h.batchData(tb, key, id)
		st, _ := last["status"].(string)
		_, known := batchOrder[st]
		require.True(tb, known, "unknown batch status %q", st)
		if prev != "" {
			require.GreaterOrEqual(tb, batchOrder[st], batchOrder[prev], "batch status went from %s to %s", prev, st)
		}
		prev = st
		if st == "queued" || st == "processing" {
			return fmt.Errorf("batch %s is still %s", id, st)
		}
		return nil
	})
	return last
}

// waitStatus polls the batch until it has status st.
func (h *harness) waitStatus(tb testing.TB, key, id, st string) map[string]any {
	tb.Helper()
	var last map[string]any
	testutil.Eventually(tb, 60*time.Second, 10*time.Millisecond, func() error {
		last = h.batchData(tb, key, id)
		if last["status"] != st {
			return fmt.Errorf("batch %s is %v, want %s", id, last["status"], st)
		}
		return nil
	})
	return last
}

func (h *harness) bookData(tb testing.TB, key, rid string) map[string]any {
	tb.Helper()
	r := h.do(tb, "GET", "/api/v1/books/"+rid, key, nil)
	require.Equal(tb, 200, r.Status, "%s", r.Body)
	return r.data()
}

func (h *harness) dataPath(parts ...string) string {
	return filepath.Join(append([]string{h.cfg.DataDir}, parts...)...)
}

func requireGone(tb testing.TB, path string) {
	tb.Helper()
	_, err := os.Stat(path)
	require.True(tb, os.IsNotExist(err), "%s should not exist (%v)", path, err)
}

func liveTenant(ws int64) storage.Tenant {
	return storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
}

// batchProgress returns a batch's progress as total, completed, pending, failed.
func batchProgress(b map[string]any) [4]int {
	p, _ := b["progress"].(map[string]any)
	n := func(k string) int { f, _ := p[k].(float64); return int(f) }
	return [4]int{n("total"), n("completed"), n("pending"), n("failed")}
}

func batchFile(b map[string]any) map[string]any {
	files, _ := b["files"].([]any)
	if len(files) != 1 {
		return nil
	}
	f, _ := files[0].(map[string]any)
	return f
}

// storedPages reads a book's pages from the store and decodes every page file from
// DATA/blobs/<rid>/: each is a JPEG of the recorded size whose longer side is longEdge.
func (h *harness) storedPages(tb testing.TB, ws int64, rid string, n, longEdge int) ([]storage.Page, []image.Image) {
	tb.Helper()
	pages, err := h.svc.Store.Pages(liveTenant(ws), rid)
	require.NoError(tb, err)
	require.Len(tb, pages, n)
	imgs := make([]image.Image, len(pages))
	for i, p := range pages {
		require.Equal(tb, i+1, p.Number)
		data, err := os.ReadFile(h.dataPath("blobs", rid, p.File))
		require.NoError(tb, err, "page %d file", i+1)
		img, err := jpeg.Decode(bytes.NewReader(data))
		require.NoError(tb, err, "page %d is a JPEG", i+1)
		s := img.Bounds().Size()
		require.Equal(tb, image.Pt(p.Width, p.Height), s, "page %d recorded size", i+1)
		if longEdge > 0 {
			require.Equal(tb, longEdge, max(s.X, s.Y), "page %d long edge (%v)", i+1, s)
		}
		imgs[i] = img
	}
	return pages, imgs
}

// checkThumbnail fetches a book's thumbnail or page image: a cacheable JPEG.
func checkThumbnail(tb testing.TB, u string) {
	tb.Helper()
	res, err := http.Get(u)
	require.NoError(tb, err)
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(tb, 200, res.StatusCode, u)
	require.Equal(tb, "image/jpeg", res.Header.Get("Content-Type"))
	require.Equal(tb, "public, max-age=31536000, s-maxage=3600, immutable", res.Header.Get("Cache-Control"),
		"kept a year by browsers, an hour by shared caches (access can change)")
	etag := res.Header.Get("ETag")
	require.NotEmpty(tb, etag)
	_, err = jpeg.Decode(bytes.NewReader(data))
	require.NoError(tb, err, "the thumbnail is a JPEG")
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("If-None-Match", etag)
	res, err = http.DefaultClient.Do(req)
	require.NoError(tb, err)
	res.Body.Close()
	require.Equal(tb, 304, res.StatusCode)
}

func linksTo(l []storage.Link, url string) []storage.Link {
	var out []storage.Link
	for _, x := range l {
		if x.URL == url {
			out = append(out, x)
		}
	}
	return out
}

func requirePlausible(tb testing.TB, l storage.Link) {
	tb.Helper()
	require.True(tb, l.X >= 0 && l.Y >= 0 && l.W > 0 && l.H > 0 && l.X+l.W <= 1 && l.Y+l.H <= 1, "link area %+v", l)
}

func TestUploadPDFBecomesBook(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	pdf := samplePDF(t)

	batch, rid := h.uploadOK(t, key, "report.pdf", pdf, "original_filename", "Quarterly report.pdf",
		"status", "draft", "auto_links_enabled", "true")
	// The book exists at once, converting.
	b := h.bookData(t, key, rid)
	require.Equal(t, batch, b["batch_id"])
	require.Equal(t, "Quarterly report", b["name"])
	require.Equal(t, "draft", b["status"])
	if b["page_images_status"] != "ready" { // a fast machine may be done already
		require.Equal(t, "processing", b["page_images_status"])
		require.Nil(t, b["thumbnail_url"])
	}
	// The same file without links, sent as "files" and published.
	batchOff, ridOff := "", ""
	{
		r := h.uploadParts(t, key, []filePart{{"files", "plain.pdf", pdf}}, map[string]string{"auto_links_enabled": "false", "status": "publish"})
		require.Equal(t, 202, r.Status, "%s", r.Body)
		batchOff = r.data()["batch_id"].(string)
		ridOff = r.data()["book_ids"].([]any)[0].(string)
	}

	got := h.waitBatch(t, key, batch)
	require.Equal(t, "completed", got["status"], "%v", got)
	require.Equal(t, [4]int{1, 1, 0, 0}, batchProgress(got))
	require.Equal(t, batch, got["id"])
	require.NotNil(t, got["created_at"])
	require.NotNil(t, got["started_at"])
	require.NotNil(t, got["finished_at"])
	require.Nil(t, got["cancelled_at"])
	f := batchFile(got)
	require.Equal(t, "pdf", f["kind"])
	require.Equal(t, rid, f["book_id"])
	require.Equal(t, "completed", f["status"])
	require.EqualValues(t, 3, f["page_count"])
	require.EqualValues(t, len(pdf), f["size"])
	require.Nil(t, f["error"])
	books, _ := got["books"].([]any)
	require.Len(t, books, 1)
	require.Equal(t, rid, books[0].(map[string]any)["random_id"])
	require.Equal(t, "ready", books[0].(map[string]any)["page_images_status"])

	b = h.bookData(t, key, rid)
	require.Equal(t, "ready", b["page_images_status"])
	require.EqualValues(t, 3, b["page_count"])
	require.Equal(t, batch, b["batch_id"])
	checkThumbnail(t, b["thumbnail_url"].(string))

	pages, _ := h.storedPages(t, ws, rid, 3, 1600)
	// Page images are served like the thumbnail once the book is published.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish"}).Status)
	for _, p := range pages {
		checkThumbnail(t, h.base+"/files/"+rid+"/"+p.File)
	}
	require.Empty(t, pages[0].Links, "page 1 has no links")
	ann := linksTo(pages[1].Links, annotURL)
	require.Len(t, ann, 1, "page 2 links: %+v", pages[1].Links)
	requirePlausible(t, ann[0])
	// The annotation starts at x 72 pt, y 200 pt from the top of a 595×842 pt page.
	require.InDelta(t, 72/595.28, ann[0].X, 0.03, "%+v", ann[0])
	require.InDelta(t, 200/841.89, ann[0].Y, 0.03, "%+v", ann[0])
	require.Less(t, ann[0].H, 0.1)
	require.Empty(t, linksTo(pages[1].Links, plainURL))
	plain := linksTo(pages[2].Links, plainURL)
	require.Len(t, plain, 1, "page 3 links: %+v", pages[2].Links)
	requirePlausible(t, plain[0])
	require.InDelta(t, 80/841.89, plain[0].Y, 0.03, "%+v", plain[0])
	require.Greater(t, plain[0].X, 72/595.28, "the URL follows other words on its line")

	// Conversion leftovers are gone; the book's files are in its folder.
	requireGone(t, h.dataPath("uploads", batch))
	requireGone(t, h.dataPath("work", batch))
	require.Len(t, conversionBlobs(t, h.dataPath("blobs", rid)), 5, "3 pages, a thumbnail and the PDF")

	// The status operation shows the same batch without books.
	st := h.do(t, "GET", "/api/v1/books/uploads/"+batch+"/status", key, nil)
	require.Equal(t, 200, st.Status)
	require.Equal(t, "completed", st.data()["status"])
	require.Equal(t, [4]int{1, 1, 0, 0}, batchProgress(st.data()))

	// auto_links_enabled=false: no link areas at all.
	off := h.waitBatch(t, key, batchOff)
	require.Equal(t, "completed", off["status"])
	b = h.bookData(t, key, ridOff)
	require.Equal(t, "publish", b["status"])
	require.Equal(t, "plain", b["name"], "the name comes from the file name")
	pages, _ = h.storedPages(t, ws, ridOff, 3, 1600)
	for i, p := range pages {
		require.Empty(t, p.Links, "page %d", i+1)
	}
	require.Len(t, h.do(t, "GET", "/api/v1/books", key, nil).list(), 2)
}

func TestUploadPageLongEdgeAndSizes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 800 })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "mixed.pdf", mixedSizePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	pages, _ := h.storedPages(t, ws, rid, 3, 800)
	require.Less(t, pages[0].Width, pages[0].Height, "A4 portrait")
	require.InDelta(t, 595.28/841.89, float64(pages[0].Width)/float64(pages[0].Height), 0.01)
	require.InDelta(t, 612.0/792, float64(pages[1].Width)/float64(pages[1].Height), 0.01, "Letter")
	require.Greater(t, pages[2].Width, pages[2].Height, "A4 landscape")
	require.EqualValues(t, 3, h.bookData(t, key, rid)["page_count"])
}

func TestUploadValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxUploadBytes = 1 << 20; c.MaxBodyBytes = 4 << 20 })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	pdf := samplePDF(t)

	field := func(r *resp, name string) {
		t.Helper()
		require.Equal(t, 422, r.Status, "%s", r.Body)
		require.Contains(t, r.details(), name, "%s", r.Body)
	}
	field(h.upload(t, key, "x.pdf", []byte("plain text, not a PDF\n")), "files.0")
	field(h.upload(t, key, "x.pdf", nil), "files.0")
	big := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("0"), 1<<20)...)
	field(h.upload(t, key, "big.pdf", append(big, "\n%%EOF\n"...)), "files.0")
	field(h.uploadParts(t, key, []filePart{{"files[]", "a.pdf", pdf}, {"files[]", "b.pdf", pdf}}, nil), "files")
	field(h.uploadParts(t, key, []filePart{{"files", "a.pdf", pdf}, {"files[]", "b.pdf", pdf}}, nil), "files")
	field(h.uploadParts(t, key, nil, map[string]string{"files": "not a file"}), "files")
	field(h.uploadParts(t, key, []filePart{{"other", "a.pdf", pdf}}, nil), "files")
	field(h.upload(t, key, "a.pdf", pdf, "status", "schedule"), "status")
	field(h.upload(t, key, "a.pdf", pdf, "auto_links_enabled", "maybe"), "auto_links_enabled")
	field(h.upload(t, key, "a.pdf", pdf, "original_filename", strings.Repeat("n", 256)), "original_filename")
	field(h.do(t, "POST", "/api/v1/books", key, map[string]any{"title": "json"}), "files")

	// Authentication and scope.
	require.Equal(t, 401, h.upload(t, "", "a.pdf", pdf).Status)
	require.Equal(t, 401, h.upload(t, "wsk_live_nope", "a.pdf", pdf).Status)
	reader := h.key(t, ws, "live", "books:read")
	r := h.upload(t, reader, "a.pdf", pdf)
	require.Equal(t, 403, r.Status, "%s", r.Body)
	require.Equal(t, 403, h.do(t, "DELETE", "/api/v1/batches/whatever", reader, nil).Status)

	// Over the server's body limit: 413 from the headers alone.
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /api/v1/books HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: multipart/form-data; boundary=xyz\r\nContent-Length: %d\r\n\r\n", key, 5<<20)
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	require.Equal(t, 413, res.StatusCode)
	require.Contains(t, string(raw), api.TypePayloadTooLarge)

	// Nothing was created and no upload was left on disk by the refusals.
	require.Empty(t, h.do(t, "GET", "/api/v1/books", key, nil).list())
	if entries, err := os.ReadDir(h.dataPath("uploads")); err == nil {
		require.Empty(t, entries, "refused uploads leave no files")
	}

	// The type comes from the content: a PDF named .png is a PDF, a PNG named .pdf a PNG.
	b1, r1 := h.uploadOK(t, key, "x.png", pdf)
	b2, r2 := h.uploadOK(t, key, "photo.pdf", pngWithOrientation(t, markedImage(300, 200), 0))
	g1, g2 := h.waitBatch(t, key, b1), h.waitBatch(t, key, b2)
	require.Equal(t, "pdf", batchFile(g1)["kind"])
	require.Equal(t, "completed", g1["status"])
	require.EqualValues(t, 3, h.bookData(t, key, r1)["page_count"])
	require.Equal(t, "png", batchFile(g2)["kind"])
	require.Equal(t, "completed", g2["status"])
	require.EqualValues(t, 1, h.bookData(t, key, r2)["page_count"])
}

func TestUploadBadFilesFail(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	good := samplePDF(t)
	cases := []struct {
		name   string
		data   []byte
		reason []string // one of these words is in the error
	}{
		{"encrypted.pdf", encryptedPDF(t), []string{"password"}},
		{"truncated.pdf", good[:len(good)/2], []string{"truncated", "damaged"}},
		{"corrupt.pdf", corruptPDF(), []string{"damaged", "corrupt"}},
	}
	type up struct{ batch, rid string }
	ups := make([]up, len(cases))
	for i, c := range cases {
		ups[i].batch, ups[i].rid = h.uploadOK(t, key, c.name, c.data)
	}
	// A good file uploaded with the bad ones still completes.
	goodBatch, goodRid := h.uploadOK(t, key, "good.pdf", good)
	for i, c := range cases {
		b := h.waitBatch(t, key, ups[i].batch)
		require.Equal(t, "failed", b["status"], c.name)
		require.Equal(t, [4]int{1, 0, 0, 1}, batchProgress(b), c.name)
		f := batchFile(b)
		require.Equal(t, "failed", f["status"])
		msg, _ := f["error"].(string)
		found := false
		for _, w := range c.reason {
			found = found || strings.Contains(strings.ToLower(msg), w)
		}
		require.True(t, found, "%s: reason %q should mention one of %v", c.name, msg, c.reason)
		require.NotContains(t, msg, h.cfg.DataDir, "the reason does not leak server paths")
		require.NotNil(t, b["finished_at"])
		book := h.bookData(t, key, ups[i].rid)
		require.Equal(t, "failed", book["page_images_status"], c.name)
		require.EqualValues(t, 0, book["page_count"])
		requireGone(t, h.dataPath("blobs", ups[i].rid))
		requireGone(t, h.dataPath("uploads", ups[i].batch))
		requireGone(t, h.dataPath("work", ups[i].batch))
	}
	g := h.waitBatch(t, key, goodBatch)
	require.Equal(t, "completed", g["status"])
	h.storedPages(t, ws, goodRid, 3, 1600)
	require.Equal(t, "idle", h.do(t, "GET", "/api/v1/books/uploads/status/active", key, nil).data()["state"])
}

// cornerColors of an image: top-left, top-right, bottom-left, bottom-right, sampled inside the
// 40-px corner squares.
func cornerColors(img image.Image) [4]color.RGBA {
	b := img.Bounds()
	m := markSize / 2
	pts := []image.Point{{m, m}, {b.Dx() - 1 - m, m}, {m, b.Dy() - 1 - m}, {b.Dx() - 1 - m, b.Dy() - 1 - m}}
	var out [4]color.RGBA
	for i, p := range pts {
		r, g, bl, _ := img.At(b.Min.X+p.X, b.Min.Y+p.Y).RGBA()
		out[i] = color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}
	}
	return out
}

func colorClose(a, b color.RGBA) bool {
	d := func(x, y uint8) int {
		if x > y {
			return int(x - y)
		}
		return int(y - x)
	}
	return d(a.R, b.R) <= 40 && d(a.G, b.G) <= 40 && d(a.B, b.B) <= 40
}

func TestUploadImagesWithEXIFOrientation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	R, B, G := markRed, markBlue, markBase
	cases := []struct {
		orientation int
		size        image.Point
		corners     [4]color.RGBA // TL, TR, BL, BR of the stored page
	}{
		{0, image.Pt(300, 200), [4]color.RGBA{R, B, G, G}}, // no EXIF
		{1, image.Pt(300, 200), [4]color.RGBA{R, B, G, G}},
		{6, image.Pt(200, 300), [4]color.RGBA{G, R, G, B}}, // turned 90° clockwise
		{3, image.Pt(300, 200), [4]color.RGBA{G, G, B, R}}, // turned 180°
		{8, image.Pt(200, 300), [4]color.RGBA{B, G, R, G}}, // turned 90° counter-clockwise
	}
	type up struct {
		name       string
		batch, rid string
		want       int
	}
	var ups []up
	for i, c := range cases {
		for _, format := range []string{"jpg", "png"} {
			var data []byte
			if format == "jpg" {
				data = jpegWithOrientation(t, markedImage(300, 200), c.orientation)
			} else {
				data = pngWithOrientation(t, markedImage(300, 200), c.orientation)
			}
			name := fmt.Sprintf("o%d.%s", c.orientation, format)
			batch, rid := h.uploadOK(t, key, name, data)
			ups = append(ups, up{name, batch, rid, i})
		}
	}
	for _, u := range ups {
		c := cases[u.want]
		b := h.waitBatch(t, key, u.batch)
		require.Equal(t, "completed", b["status"], u.name)
		require.Equal(t, strings.TrimPrefix(filepath.Ext(u.name), "."), batchFile(b)["kind"])
		_, imgs := h.storedPages(t, ws, u.rid, 1, 0)
		require.Equal(t, c.size, imgs[0].Bounds().Size(), u.name)
		got := cornerColors(imgs[0])
		for k, name := range []string{"top-left", "top-right", "bottom-left", "bottom-right"} {
			require.True(t, colorClose(got[k], c.corners[k]), "%s: %s corner is %v, want %v", u.name, name, got[k], c.corners[k])
		}
		book := h.bookData(t, key, u.rid)
		require.EqualValues(t, 1, book["page_count"])
		checkThumbnail(t, book["thumbnail_url"].(string))
	}
}

// officeFiles makes a DOCX, XLSX, PPTX and a legacy DOC with LibreOffice, in parallel.
func officeFiles(t *testing.T) map[string][]byte {
	t.Helper()
	if _, err := exec.LookPath("soffice"); err != nil {
		t.Skip("LibreOffice (soffice) is not installed; the Office conversion tests need it (CI installs it)")
	}
	jobs := []struct{ name, content, format string }{
		{"letter.txt", "Hello from a Word document.\nSecond line.\n", "docx"},
		{"sheet.csv", "name,qty,price\napple,3,1.20\npear,5,0.80\n", "xlsx"},
		{"deck.fodp", flatODP, "pptx"},
		{"legacy.txt", "An old Word 97 document.\n", "doc"},
	}
	out := map[string][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, err := sofficeMake(t.TempDir(), j.name, j.content, j.format)
			errs[i] = err
			mu.Lock()
			out[j.format] = data
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return out
}

func TestUploadOfficeDocuments(t *testing.T) {
	t.Parallel()
	files := officeFiles(t)
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 800 })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	wantPages := map[string]int{"docx": 1, "xlsx": 1, "pptx": 2, "doc": 1}
	batches := map[string][2]string{}
	for kind, data := range files {
		// Names without the right extension: the kind comes from the content.
		b, rid := h.uploadOK(t, key, "document-"+kind+".bin", data)
		batches[kind] = [2]string{b, rid}
	}
	for kind, ids := range batches {
		b := h.waitBatch(t, key, ids[0])
		f := batchFile(b)
		require.Equal(t, "completed", b["status"], "%s: %v", kind, f["error"])
		require.Equal(t, kind, f["kind"])
		require.EqualValues(t, wantPages[kind], f["page_count"], kind)
		book := h.bookData(t, key, ids[1])
		require.Equal(t, "ready", book["page_images_status"])
		require.EqualValues(t, wantPages[kind], book["page_count"])
		h.storedPages(t, ws, ids[1], wantPages[kind], 800)
		requireGone(t, h.dataPath("work", ids[0]))
	}
}

// Without LibreOffice on the PATH an Office upload is refused at once with the reason (503,
// nothing stored); PDFs still convert.
func TestUploadOfficeWithoutLibreOffice(t *testing.T) {
	hideSoffice(t, "")
	_, err := exec.LookPath("soffice")
	require.Error(t, err, "soffice is hidden")

	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	docx := zipBytes(t, "[Content_Types].xml", "word/document.xml")
	r := h.upload(t, key, "letter.docx", docx)
	require.Equal(t, 503, r.Status, "%s", r.Body)
	require.Equal(t, api.TypeUnavailable, r.errType())
	require.Contains(t, r.JSON["error"].(map[string]any)["message"], "cannot convert Word, Excel and PowerPoint files: soffice is not installed")
	require.Contains(t, r.JSON["error"].(map[string]any)["message"], "libreoffice-writer-nogui")
	require.Empty(t, h.do(t, "GET", "/api/v1/books", key, nil).list(), "a refused upload stores no book")
	pdfBatch, _ := h.uploadOK(t, key, "fine.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, pdfBatch)["status"])
	health := h.do(t, "GET", "/api/v1/health", "", nil)
	require.Equal(t, "degraded", health.JSON["status"], "%s", health.Body)
}

// hideSoffice makes PATH hold only poppler's tools, and soffice when fake is not empty (a shell
// script body); it returns the directory.
func hideSoffice(t *testing.T, fake string) string {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"pdfinfo", "pdftoppm", "pdftotext"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("poppler-utils (%s) is not installed", tool)
		}
		require.NoError(t, os.Symlink(p, filepath.Join(bin, tool)))
	}
	if fake != "" {
		require.NoError(t, os.WriteFile(filepath.Join(bin, "soffice"), []byte("#!/bin/sh\n"+fake), 0o755))
	}
	t.Setenv("PATH", bin)
	return bin
}

// A LibreOffice that never finishes (it waits on something) holds its batch in "processing";
// cancelling the batch stops it and every process it started at once.
func TestCancelHungOfficeConversion(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	const marker = "3599.25" // a sleep no one else runs
	hideSoffice(t, sleep+" "+marker+" &\nwait\n")
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	batch, rid := h.uploadOK(t, key, "letter.docx", zipBytes(t, "[Content_Types].xml", "word/document.xml"))
	h.waitStatus(t, key, batch, "processing")
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, procRuns("sleep", marker, "the fake LibreOffice runs"))
	require.Equal(t, "processing", h.batchData(t, key, batch)["status"])
	start := time.Now()
	r := h.do(t, "DELETE", "/api/v1/batches/"+batch, key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "cancelled", r.data()["status"])
	require.Less(t, time.Since(start), 3*time.Second)
	require.Empty(t, procsWith("sleep", marker), "LibreOffice's own children are stopped too")
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+rid, key, nil).Status)
	requireGone(t, h.dataPath("work", batch))
}

// A cancelled Office conversion kills LibreOffice (SIGKILL to its process group), which then
// cannot remove its own scratch folder (lu<pid>….tmp): it is kept in the conversion's work
// folder, removed with it, not in the system's temp folder, where one was left for good per
// killed run (found by a review).
func TestCancelledOfficeConversionLeavesNoTempFiles(t *testing.T) {
	if _, err := exec.LookPath("soffice"); err != nil {
		t.Skip("LibreOffice (soffice) is not installed; the Office conversion tests need it (CI installs it)")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // what LibreOffice would inherit from the service
	h := newHarness(t, func(c *Config) { c.ConversionWorkers = 1 })
	key := h.workspace(t, "company", "live")
	batch, rid := h.uploadOK(t, key, "long.docx", bigDOCX(t, 60000))
	h.waitStatus(t, key, batch, "processing")
	scratch := func(root string) []string {
		var out []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), "lu") && strings.HasSuffix(d.Name(), ".tmp") {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	testutil.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		if len(scratch(h.dataPath("work", batch))) == 0 {
			return fmt.Errorf("LibreOffice has not made its scratch folder in the conversion's work folder yet")
		}
		return nil
	})
	r := h.do(t, "DELETE", "/api/v1/batches/"+batch, key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "cancelled", r.data()["status"])
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+rid, key, nil).Status)
	requireGone(t, h.dataPath("work", batch))
	require.Empty(t, scratch(tmp), "LibreOffice's scratch folder is not in the system's temp folder")
}

// bigDOCX is a real Word document of n paragraphs (LibreOffice takes seconds over it).
func bigDOCX(tb testing.TB, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	add := func(name, content string) {
		w, err := z.Create(name)
		require.NoError(tb, err)
		_, err = io.WriteString(w, content)
		require.NoError(tb, err)
	}
	add("[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`)
	add("_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`)
	var doc strings.Builder
	doc.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&doc, `<w:p><w:r><w:t>Paragraph %d: lorem ipsum dolor sit amet, consectetur adipiscing elit.</w:t></w:r></w:p>`, i)
	}
	doc.WriteString(`</w:body></w:document>`)
	add("word/document.xml", doc.String())
	require.NoError(tb, z.Close())
	return buf.Bytes()
}

// procRuns is a condition for testutil.Eventually: a process named name whose command line
// contains s runs.
func procRuns(name, s, what string) func() error {
	return func() error {
		if len(procsWith(name, s)) == 0 {
			return fmt.Errorf("%s: no %s process with %s in its command line", what, name, s)
		}
		return nil
	}
}

// procsWith lists the pids of processes named name whose command line contains s.
func procsWith(name, s string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		cmd, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || len(cmd) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if filepath.Base(args[0]) == name && strings.Contains(string(cmd), s) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

func TestCancelBatch(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ConversionWorkers = 1 })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	otherKey := h.workspace(t, "company", "live")
	testKey := h.key(t, ws, "test", "*")
	active := func(k string) map[string]any {
		r := h.do(t, "GET", "/api/v1/books/uploads/status/active", k, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.data()
	}
	idle := active(key)
	require.Equal(t, "idle", idle["state"])
	require.Empty(t, idle["batches"])

	big := manyPagesPDF(t, 400)
	bigBatch, bigRid := h.uploadOK(t, key, "big.pdf", big)
	smallBatch, smallRid := h.uploadOK(t, key, "small.pdf", samplePDF(t))
	h.waitStatus(t, key, bigBatch, "processing")
	require.Equal(t, "queued", h.batchData(t, key, smallBatch)["status"], "one worker: the second batch waits")

	// Active uploads list this workspace's batches only.
	a := active(key)
	require.Equal(t, "processing", a["state"])
	listed := map[string]string{}
	for _, x := range a["batches"].([]any) {
		m := x.(map[string]any)
		listed[m["id"].(string)] = m["status"].(string)
	}
	require.Equal(t, map[string]string{bigBatch: "processing", smallBatch: "queued"}, listed)
	require.Equal(t, "idle", active(otherKey)["state"])
	require.Equal(t, "idle", active(testKey)["state"], "the test-mode sandbox has no uploads")
	// Another workspace's upload waits for the worker too: its state is "queued", and each
	// workspace lists only its own batches.
	otherBatch, _ := h.uploadOK(t, otherKey, "other.pdf", samplePDF(t))
	oa := active(otherKey)
	require.Equal(t, "queued", oa["state"])
	require.Len(t, oa["batches"], 1)
	require.Equal(t, otherBatch, oa["batches"].([]any)[0].(map[string]any)["id"])
	require.Len(t, active(key)["batches"], 2)
	// Another workspace cannot see or cancel the batch.
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/batches/"+bigBatch, otherKey, nil).Status)
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/uploads/"+bigBatch+"/status", otherKey, nil).Status)
	require.Equal(t, 404, h.do(t, "DELETE", "/api/v1/batches/"+bigBatch, otherKey, nil).Status)
	require.Equal(t, 404, h.do(t, "DELETE", "/api/v1/batches/nosuchbatch", key, nil).Status)
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/batches/nosuchbatch", key, nil).Status)

	// Cancel the queued batch.
	r := h.do(t, "DELETE", "/api/v1/batches/"+smallBatch, key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "cancelled", r.data()["status"])
	require.NotNil(t, r.data()["cancelled_at"])
	require.Empty(t, r.data()["books"])
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+smallRid, key, nil).Status)
	requireGone(t, h.dataPath("blobs", smallRid))
	requireGone(t, h.dataPath("uploads", smallBatch))

	// Cancel the batch being converted, while its renderer runs.
	work := h.dataPath("work", bigBatch)
	testutil.Eventually(t, 30*time.Second, 10*time.Millisecond, procRuns("pdftoppm", work, "pdftoppm renders the big PDF"))
	require.Equal(t, "processing", h.batchData(t, key, bigBatch)["status"])
	start := time.Now()
	r = h.do(t, "DELETE", "/api/v1/batches/"+bigBatch, key, nil)
	took := time.Since(start)
	t.Logf("cancelling the converting batch took %s", took)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "cancelled", r.data()["status"])
	require.NotNil(t, r.data()["cancelled_at"])
	require.Less(t, took, 3*time.Second, "the cancel answers promptly")
	require.Empty(t, procsWith("pdftoppm", work), "no renderer of the cancelled batch is left")
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+bigRid, key, nil).Status)
	requireGone(t, h.dataPath("blobs", bigRid))
	requireGone(t, h.dataPath("uploads", bigBatch))
	requireGone(t, work)
	b := h.batchData(t, key, bigBatch)
	require.Equal(t, "cancelled", b["status"])
	require.Equal(t, "cancelled", batchFile(b)["status"])
	require.Equal(t, 409, h.do(t, "DELETE", "/api/v1/batches/"+bigBatch, key, nil).Status, "already cancelled")
	require.Equal(t, "idle", active(key)["state"])

	require.Equal(t, "completed", h.waitBatch(t, otherKey, otherBatch)["status"], "the other workspace's batch runs next")

	// The worker is free again; a finished batch cannot be cancelled.
	doneBatch, doneRid := h.uploadOK(t, key, "after.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, doneBatch)["status"])
	r = h.do(t, "DELETE", "/api/v1/batches/"+doneBatch, key, nil)
	require.Equal(t, 409, r.Status, "%s", r.Body)
	require.Equal(t, "ready", h.bookData(t, key, doneRid)["page_images_status"])
	list := h.do(t, "GET", "/api/v1/books", key, nil).list()
	require.Len(t, list, 1, "only the completed batch's book is left")
}

func TestTwentyUploadsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 800 })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	files := []struct {
		name string
		data []byte
	}{
		{"doc.pdf", samplePDF(t)},
		{"photo.jpg", jpegWithOrientation(t, markedImage(300, 200), 6)},
		{"pic.png", pngWithOrientation(t, markedImage(300, 200), 0)},
		{"five.pdf", manyPagesPDF(t, 5)},
	}
	pagesOf := []int{3, 1, 1, 5}
	const n = 20
	type result struct {
		status int
		body   []byte
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := files[i%len(files)]
			st, body, err := h.uploadRaw(key, fmt.Sprintf("%02d-%s", i, f.name), f.data)
			results[i] = result{st, body, err}
		}()
	}
	wg.Wait()
	batches := map[string]int{}
	rids := map[string]int{}
	for i, res := range results {
		require.NoError(t, res.err)
		require.Equal(t, 202, res.status, "%s", res.body)
		var r resp
		r.Status = res.status
		require.NoError(t, jsonUnmarshal(res.body, &r.JSON))
		batches[r.data()["batch_id"].(string)] = i
		rids[r.data()["book_ids"].([]any)[0].(string)] = i
	}
	require.Len(t, batches, n, "distinct batches")
	require.Len(t, rids, n, "distinct books")
	for id, i := range batches {
		b := h.waitBatch(t, key, id)
		require.Equal(t, "completed", b["status"], "upload %d: %v", i, batchFile(b)["error"])
		require.EqualValues(t, pagesOf[i%len(files)], batchFile(b)["page_count"])
	}
	list := h.do(t, "GET", "/api/v1/books?limit=100", key, nil).list()
	require.Len(t, list, n, "exactly one book per upload")
	for _, x := range list {
		b := x.(map[string]any)
		rid := b["random_id"].(string)
		i, ok := rids[rid]
		require.True(t, ok, "book %s belongs to an upload", rid)
		require.Equal(t, "ready", b["page_images_status"])
		require.EqualValues(t, pagesOf[i%len(files)], b["page_count"])
		h.storedPages(t, ws, rid, pagesOf[i%len(files)], 0)
	}
	require.Equal(t, "idle", h.do(t, "GET", "/api/v1/books/uploads/status/active", key, nil).data()["state"])
}

// A restart while one batch converts and another waits: both complete after it, with one book
// each, under the random ids the upload answered with.
func TestConversionResumesAfterRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.ConversionWorkers = 1; c.PageLongEdge = 800 })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	const bigPages = 200
	bigBatch, bigRid := h.uploadOK(t, key, "big.pdf", manyPagesPDF(t, bigPages))
	smallBatch, smallRid := h.uploadOK(t, key, "small.pdf", samplePDF(t))
	h.waitStatus(t, key, bigBatch, "processing")
	testutil.Eventually(t, 30*time.Second, 10*time.Millisecond, procRuns("pdftoppm", h.dataPath("work", bigBatch), "the renderer runs"))

	// Stop in the middle of the conversion; the stored batches show where it stopped.
	h.stop(t)
	st, err := storage.Open(h.cfg.DataDir, storage.Options{})
	require.NoError(t, err)
	ub, err := st.Upload(liveTenant(ws), bigBatch)
	require.NoError(t, err)
	us, err := st.Upload(liveTenant(ws), smallBatch)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.Equal(t, "processing", ub.Status, "stopped in the middle of the big batch")
	require.Equal(t, "queued", us.Status)
	h.start(t)

	b := h.waitBatch(t, key, bigBatch)
	require.Equal(t, "completed", b["status"], "%v", batchFile(b)["error"])
	require.Equal(t, bigRid, batchFile(b)["book_id"])
	s := h.waitBatch(t, key, smallBatch)
	require.Equal(t, "completed", s["status"], "%v", batchFile(s)["error"])
	require.Equal(t, smallRid, batchFile(s)["book_id"])

	list := h.do(t, "GET", "/api/v1/books?limit=100", key, nil).list()
	require.Len(t, list, 2, "one book per batch")
	got := map[string]float64{}
	for _, x := range list {
		m := x.(map[string]any)
		got[m["random_id"].(string)] = m["page_count"].(float64)
		require.Equal(t, "ready", m["page_images_status"])
	}
	require.Equal(t, map[string]float64{bigRid: bigPages, smallRid: 3}, got)
	h.storedPages(t, ws, bigRid, bigPages, 800)
	require.Len(t, conversionBlobs(t, h.dataPath("blobs", bigRid)), bigPages+2, "the pages, a thumbnail and the PDF; nothing left from the first attempt")
	requireGone(t, h.dataPath("work", bigBatch))
	requireGone(t, h.dataPath("uploads", bigBatch))
}

// A book deleted while its batch converts: the batch finishes, the book stays deleted and
// leaves no files.
func TestDeleteBookDuringConversion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.ConversionWorkers = 1; c.PageLongEdge = 800 })
	key := h.workspace(t, "company", "live")
	batch, rid := h.uploadOK(t, key, "big.pdf", manyPagesPDF(t, 150))
	h.waitStatus(t, key, batch, "processing")
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil).Status)
	b := h.waitBatch(t, key, batch)
	assert.NotEqual(t, "completed", batchFile(b)["status"], "the file of a deleted book is not reported as converted")
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+rid, key, nil).Status)
	require.Empty(t, h.do(t, "GET", "/api/v1/books", key, nil).list())
	requireGone(t, h.dataPath("blobs", rid))
	requireGone(t, h.dataPath("work", batch))
}

// Graceful restarts (deploys) in the middle of a conversion are not crashes: however many there
// are, the batch completes once the server runs long enough. MaxConversionAttempts is meant
// for files that crash the process.
func TestGracefulRestartsDoNotUseUpAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.ConversionWorkers = 1 })
	key := h.workspace(t, "company", "live")
	const pages = 300
	batch, rid := h.uploadOK(t, key, "big.pdf", manyPagesPDF(t, pages))
	work := h.dataPath("work", batch)
	for i := 0; i < 3; i++ {
		h.waitStatus(t, key, batch, "processing")
		testutil.Eventually(t, 30*time.Second, 10*time.Millisecond, procRuns("pdftoppm", work, "the renderer runs"))
		h.restart(t)
	}
	b := h.waitBatch(t, key, batch)
	require.Equal(t, "completed", b["status"], "after 3 graceful restarts: %v", batchFile(b)["error"])
	require.EqualValues(t, pages, h.bookData(t, key, rid)["page_count"])
}

func TestUploadEdgeCases(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxUploadBytes = 1 << 20 })
	key, ws := h.workspaceKey(t, "company", "live", "*")

	// Exactly the upload limit is accepted; one byte more is not.
	exact := paddedPNG(t, 1<<20)
	require.Len(t, exact, 1<<20)
	batch, _ := h.uploadOK(t, key, "exact.png", exact)
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	r := h.upload(t, key, "over.png", paddedPNG(t, 1<<20+1))
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "files.0")

	// Publishing over the plan's limit is refused and leaves nothing behind.
	freeKey, freeWS := h.workspaceKey(t, "free", "live", "*")
	for i := 0; i < 3; i++ {
		h.konva(t, freeKey, fmt.Sprint("pub ", i), "publish")
	}
	png0 := pngWithOrientation(t, markedImage(30, 20), 0)
	r = h.upload(t, freeKey, "more.png", png0, "status", "publish")
	require.Equal(t, 403, r.Status, "%s", r.Body)
	require.Len(t, h.do(t, "GET", "/api/v1/books", freeKey, nil).list(), 3)
	if entries, err := os.ReadDir(h.dataPath("uploads")); err == nil {
		require.Empty(t, entries, "a refused upload leaves no file")
	}
	b, _ := h.uploadOK(t, freeKey, "draft.png", png0) // drafts are not limited
	require.Equal(t, "completed", h.waitBatch(t, freeKey, b)["status"])
	require.NotEqual(t, ws, freeWS)

	// The test-mode sandbox: its uploads are invisible to live keys and the other way round.
	testKey := h.key(t, ws, "test", "*")
	tb, trid := h.uploadOK(t, testKey, "sandbox.png", png0)
	require.Equal(t, "completed", h.waitBatch(t, testKey, tb)["status"])
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/batches/"+tb, key, nil).Status)
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+trid, key, nil).Status)
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/batches/"+batch, testKey, nil).Status)

	// An upload retried with the same Idempotency-Key is answered once: one batch, one book.
	body, ctype := multipartBody([]filePart{{"files[]", "idem.png", png0}}, map[string]string{"status": "draft"})
	first := h.do(t, "POST", "/api/v1/books", key, body, "Content-Type", ctype, "Idempotency-Key", "upload-1")
	require.Equal(t, 202, first.Status, "%s", first.Body)
	again := h.do(t, "POST", "/api/v1/books", key, body, "Content-Type", ctype, "Idempotency-Key", "upload-1")
	require.Equal(t, 202, again.Status, "%s", again.Body)
	require.Equal(t, "true", again.Header.Get("X-Idempotent-Replay"))
	require.Equal(t, first.data()["batch_id"], again.data()["batch_id"])
	h.waitBatch(t, key, first.data()["batch_id"].(string))
	require.Len(t, h.do(t, "GET", "/api/v1/books", key, nil).list(), 2, "exact.png and idem.png once")
}

// A client that retries an upload re-encodes the form (curl, browsers, requests: a new random
// multipart boundary each time). Same file, same fields, same Idempotency-Key: the same
// request, answered by a replay, not a 422.
func TestUploadIdempotentRetryWithNewBoundary(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	png0 := pngWithOrientation(t, markedImage(30, 20), 0)
	fields := map[string]string{"status": "draft", "auto_links_enabled": "false"}
	body, ctype := multipartBody([]filePart{{"files[]", "idem.png", png0}}, fields)
	first := h.do(t, "POST", "/api/v1/books", key, body, "Content-Type", ctype, "Idempotency-Key", "upload-2")
	require.Equal(t, 202, first.Status, "%s", first.Body)
	body2, ctype2 := multipartBody([]filePart{{"files[]", "idem.png", png0}}, fields)
	require.NotEqual(t, ctype, ctype2, "a new boundary")
	retry := h.do(t, "POST", "/api/v1/books", key, body2, "Content-Type", ctype2, "Idempotency-Key", "upload-2")
	require.Len(t, h.do(t, "GET", "/api/v1/books", key, nil).list(), 1, "no second book")
	require.Equal(t, 202, retry.Status, "%s", retry.Body)
	require.Equal(t, "true", retry.Header.Get("X-Idempotent-Replay"))
	require.Equal(t, first.data()["batch_id"], retry.data()["batch_id"])
}

// paddedPNG is a valid PNG of exactly size bytes (a private ancillary chunk pads it).
func paddedPNG(tb testing.TB, size int) []byte {
	tb.Helper()
	base := pngWithOrientation(tb, markedImage(30, 20), 0)
	pad := size - len(base) - 12
	require.GreaterOrEqual(tb, pad, 0)
	chunk := make([]byte, 4, 12+pad)
	chunk[0], chunk[1], chunk[2], chunk[3] = byte(pad>>24), byte(pad>>16), byte(pad>>8), byte(pad)
	chunk = append(chunk, "prVt"...)
	chunk = append(chunk, make([]byte, pad)...)
	chunk = appendCRC(chunk)
	at := 8 + 12 + 13 // after IHDR
	out := append([]byte{}, base[:at]...)
	out = append(out, chunk...)
	return append(out, base[at:]...)
}

// Editing a book while its pages render: the edit stays, the pages arrive.
func TestEditBookDuringConversion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.ConversionWorkers = 1; c.PageLongEdge = 800 })
	key := h.workspace(t, "company", "live")
	batch, rid := h.uploadOK(t, key, "big.pdf", manyPagesPDF(t, 150))
	h.waitStatus(t, key, batch, "processing")
	r := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "draft", "title": "Renamed", "description": "while converting"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	b := h.bookData(t, key, rid)
	require.Equal(t, "Renamed", b["name"])
	require.Equal(t, "while converting", b["description"])
	require.Equal(t, "ready", b["page_images_status"])
	require.EqualValues(t, 150, b["page_count"])
}

// conversionBlobs are the names of a book's files the conversion made: all but the pages' WebP
// renditions, which follow in the background (docs/VIEWER.md "Page images").
func conversionBlobs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".webp") {
			names = append(names, e.Name())
		}
	}
	return names
}
