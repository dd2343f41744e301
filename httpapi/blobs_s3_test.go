package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"flipbook/actors/convert"
	"flipbook/internal/testutil"
)

// With --blob-url the books' files live in an S3-compatible store (an in-process S3-protocol
// server here): an editor book's and a converted PDF's images are objects there, served by
// /files, and deleting a book deletes its objects; an S3 client of the operator's sees them.
func TestBlobsInObjectStore(t *testing.T) {
	h, s3c, objects := objectStoreHarness(t, nil)
	key := h.workspace(t, "company", "live")
	get := func(u string) (int, []byte) {
		res, err := http.Get(u)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}

	rid := h.konva(t, key, "in s3", "publish")
	b := h.bookData(t, key, rid)
	thumb := b["thumbnail_url"].(string)
	st, body := get(thumb)
	require.Equal(t, 200, st, "%s", body)
	name := thumb[strings.LastIndex(thumb, "/")+1:]
	require.Contains(t, objects(rid), "books/"+rid+"/"+name)
	o, err := s3c.GetObject(context.Background(), "flipbook", "books/"+rid+"/"+name, minio.GetObjectOptions{})
	require.NoError(t, err)
	stored, _ := io.ReadAll(o)
	require.Equal(t, stored, body, "served from the object store")
	st, _ = get(strings.TrimSuffix(thumb, name) + "0123456789abcdef0123456789abcdef.jpg")
	require.Equal(t, 404, st)

	// A PDF converted: its pages (moved from the renderer's files) are objects too.
	_, pdfRid := h.uploadOK(t, key, "doc.pdf", samplePDF(t), "status", "publish")
	batch := h.bookData(t, key, pdfRid)["batch_id"].(string)
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.GreaterOrEqual(t, len(objects(pdfRid)), 2, "a page and a thumbnail")
	st, _ = get(h.bookData(t, key, pdfRid)["thumbnail_url"].(string))
	require.Equal(t, 200, st)

	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil).Status)
	require.Eventually(t, func() bool { return len(objects(rid)) == 0 }, 10e9, 1e8, "the deleted book's objects are gone")
	require.NotEmpty(t, objects(pdfRid))
}

// With the blobs in an object store, a book deleted while its page renditions are being made
// keeps no files: the renditions backfill moves the WebP files into the book's blobs (which
// creates its folder again) before it learns that the book is gone, and then removes them, as
// a conversion does in the same case (found by a review: they stayed until the next start).
func TestRenditionsOfBookDeletedMeanwhileLeaveNoFiles(t *testing.T) {
	if !convert.RenditionsUsable() {
		t.Skip("vipsthumbnail is not installed")
	}
	h, _, objects := objectStoreHarness(t, func(c *Config) { c.PageLongEdge = 3000 })
	key := h.workspace(t, "company", "live")

	batch, rid := h.uploadOK(t, key, "many.pdf", manyPagesPDF(t, 24), "status", "publish")
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	// The renditions backfill copies the page images to its work folder, then runs vipsthumbnail:
	// delete the book meanwhile.
	work := h.dataPath("work", "renditions-"+rid, "b", "out")
	testutil.Eventually(t, 30*time.Second, time.Millisecond, func() error {
		if _, err := os.Stat(work); err != nil {
			return err
		}
		return nil
	})
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil).Status)
	testutil.Eventually(t, 60*time.Second, 10*time.Millisecond, func() error {
		if _, err := os.Stat(h.dataPath("work", "renditions-"+rid)); err == nil {
			return errors.New("the renditions are still being made")
		}
		return nil
	})
	require.Empty(t, objects(rid), "the deleted book's folder holds no files")
}

// objectStoreHarness is a service whose blobs are in an in-process S3-protocol server, with
// more configuration from cfg (if not nil), an S3 client of the operator's, and a lister of a
// book's objects through it.
func objectStoreHarness(t *testing.T, cfg func(*Config)) (*harness, *minio.Client, func(rid string) []string) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	h := newHarness(t, func(c *Config) {
		c.BlobURL = "s3://flipbook?endpoint=" + srv.URL + "&region=us-east-1"
		if cfg != nil {
			cfg(c)
		}
	})
	s3c, err := minio.New(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4("k", "s", ""), BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	return h, s3c, func(rid string) []string {
		var out []string
		for o := range s3c.ListObjects(context.Background(), "flipbook", minio.ListObjectsOptions{Prefix: "books/" + rid + "/", Recursive: true}) {
			require.NoError(t, o.Err)
			out = append(out, o.Key)
		}
		return out
	}
}

// With an object store, a customer's erasure reaches the exports stored there too: the rows of
// a stored leads export naming the customer go, the others stay.
func TestShopifyRedactStoredExportObject(t *testing.T) {
	h, _, _ := objectStoreHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	const ann = "ann.object@example.com"
	book := h.konva(t, key, "Open", "publish")
	for sid, email := range map[string]string{"s-ann": ann, "s-bob": "bob.object@example.com"} {
		b := collectBody(book, map[string]any{"type": "lead_form_submitted", "page_number": 1, "form": map[string]any{"email": email}})
		b["session_id"] = sid
		require.Equal(t, 202, h.do(t, "POST", "/collect", "", b).Status)
	}
	h.logged(t)
	r := h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exports_download_book_leads_csv",`+
		`"arguments":{"book_id":"`+book+`","output_object_key":"crm/leads.csv"}}}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	obj := itoa(ws) + "-live/crm/leads.csv"
	data, err := h.svc.Store.ExportObject(obj)
	require.NoError(t, err, "%s", r.Body)
	require.Contains(t, string(data), ann)

	red := h.shopifyCall(t, key, 202, shopifyBody("customers/redact", "acme.myshopify.com", map[string]any{"email": ann}, 0))
	require.Equal(t, 1, counts(red)["stored_export_rows"], "%s", red.Body)
	data, err = h.svc.Store.ExportObject(obj)
	require.NoError(t, err)
	require.NotContains(t, string(data), ann)
	require.Contains(t, string(data), "bob.object@example.com")
}

// With an object store, the export area's usage (the MCP export tools' quota) is read from the
// objects under it.
func TestExportUsageInObjectStore(t *testing.T) {
	h, _, _ := objectStoreHarness(t, nil)
	for _, k := range []string{"7-live/a.csv", "7-live/d/b.csv", "8-live/c.csv"} {
		f := filepath.Join(t.TempDir(), "x.csv")
		require.NoError(t, os.WriteFile(f, []byte("id\n1\n"), 0o600))
		require.NoError(t, h.svc.Store.PutExport(k, f))
	}
	files, bytes, exists, err := h.svc.Store.ExportUsage("7-live", "d/b.csv")
	require.NoError(t, err)
	require.Equal(t, 2, files)
	require.EqualValues(t, 10, bytes)
	require.True(t, exists)
	_, _, exists, err = h.svc.Store.ExportUsage("7-live", "new.csv")
	require.NoError(t, err)
	require.False(t, exists)
}
