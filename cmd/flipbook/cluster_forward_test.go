package main

// Cluster mode's routing (httpapi/cluster.go, cluster/forward.go) with two `flipbook serve`
// nodes: a large PDF download through a node that does not own the book, and a request reaching
// a surviving node while the owner is dead. Both were found wrong by a review (2026-11-29): the
// download was held whole in the forwarding node's memory, and the request was a 503 after
// 250 ms instead of waiting for the new owner.

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// pdfWithAttachment is a one-page PDF carrying size bytes of an embedded file (incompressible):
// a large source document that converts in a moment.
func pdfWithAttachment(t *testing.T, size int) []byte {
	t.Helper()
	junk := make([]byte, size)
	_, _ = rand.Read(junk)
	f := fpdf.New("P", "pt", "A4", "")
	f.SetFont("Helvetica", "", 14)
	f.AddPage()
	f.SetXY(72, 72)
	f.Write(16, "A large source document.")
	f.SetAttachments([]fpdf.Attachment{{Content: junk, Filename: "data.bin", Description: "padding"}})
	var buf bytes.Buffer
	require.NoError(t, f.Output(&buf))
	return buf.Bytes()
}

// heapInUse is a node's Go heap in use (admin memory report), in bytes.
func heapInUse(t *testing.T, n *clusterNode) float64 {
	t.Helper()
	r := call(t, "GET", n.base+"/admin/v1/memory", clusterAdminToken, nil)
	require.Equal(t, 200, r.status, "%s", r.raw)
	return r.data()["go"].(map[string]any)["heap_in_use"].(float64)
}

// TestClusterForwardingDownloadAndDeadOwner: see the file's comment.
func TestClusterForwardingDownloadAndDeadOwner(t *testing.T) {
	const parts = 4
	tc := newTestCluster(t, parts)
	a := tc.start(t, "node-a")
	b := tc.start(t, "node-b")
	settled(t, parts, a, b)
	ws := newClusterWorkspace(t, a, "Review forwarding")
	owner, other := a, b
	if ownerOf(t, a, ws.id) == "node-b" {
		owner, other = b, a
	}

	// A 64 MB source PDF, uploaded to the owner, published with downloads on.
	const size = 64 << 20
	up := uploadPDF(t, owner.base, ws.key, "large.pdf", pdfWithAttachment(t, size))
	require.Equal(t, 202, up.status, "%s", up.raw)
	batch := up.data()["batch_id"].(string)
	book := up.data()["book_ids"].([]any)[0].(string)
	testutil.Eventually(t, 120*time.Second, 100*time.Millisecond, func() error {
		if st := call(t, "GET", owner.base+"/api/v1/batches/"+batch, ws.key, nil).data()["status"]; st != "completed" {
			return fmt.Errorf("the large PDF's batch is %v, want completed", st)
		}
		return nil
	})
	r := call(t, "PUT", owner.base+"/api/v1/books/"+book, ws.key, map[string]any{"status": "publish", "downloadable_pdf": true})
	require.Equal(t, 200, r.status, "%s", r.raw)

	t.Run("download streamed through the forwarding node", func(t *testing.T) {
		// The viewer's download (GET /view/{book}/download) through the node that does not own
		// the book: the answer is large, so it is to be streamed through (exchangeOf: "files
		// (page images, downloads: large)"), not read whole into the forwarding node's memory
		// before its first byte goes out.
		before := heapInUse(t, other)
		res, err := client.Get(other.base + "/view/" + book + "/download")
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
		require.Equal(t, "application/pdf", res.Header.Get("Content-Type"))
		// The client has the headers and has read nothing of the body yet.
		during := heapInUse(t, other)
		n, err := io.Copy(io.Discard, res.Body)
		require.NoError(t, err)
		require.Greater(t, n, int64(size))
		t.Logf("the forwarding node's Go heap: %.1f MiB before, %.1f MiB with the download's headers sent", before/(1<<20), during/(1<<20))
		require.Less(t, during-before, float64(size/2),
			"the forwarding node holds the %d MiB download in memory (forwarded as a Quick exchange)", size>>20)
	})

	t.Run("a request for a dead owner's workspace waits for the new owner", func(t *testing.T) {
		// docs/ARCHITECTURE.md "Serving": a forward that could not dial the owner (killed) is
		// tried again after the next ownership change, all within ClusterConfig.Wait (10 s
		// here), then 503. Two nodes: the survivor takes the dead node's partitions after the
		// session timeout (6 s).
		warm := call(t, "GET", other.base+"/api/v1/books/"+book, ws.key, nil)
		require.Equal(t, 200, warm.status, "%s", warm.raw)
		owner.child.kill(t)
		start := time.Now()
		req, err := http.NewRequest("GET", other.base+"/api/v1/books/"+book, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+ws.key)
		res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		took := time.Since(start)
		t.Logf("GET through the survivor right after the owner was killed: %d after %s: %s", res.StatusCode, took.Round(time.Millisecond), body)
		if res.StatusCode == 503 {
			for _, l := range strings.Split(other.child.stderr.String(), "\n") {
				if strings.Contains(l, "cluster: forward") {
					t.Logf("%s: %s", other.name, l)
				}
			}
			require.GreaterOrEqual(t, took, 9*time.Second,
				"a 503 before the wait (10 s) ran out: the request was not tried again once the partition moved: %s", body)
		} else {
			require.Equal(t, 200, res.StatusCode, "%s", body)
		}
	})
}
