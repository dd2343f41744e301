package httpapi

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// A document over Config.MaxPages (--max-pages) fails its book with the page count and the
// limit, before any page is rendered; one within the limit converts. Office documents are
// counted after LibreOffice, as the PDF it made.
func TestUploadTooManyPagesFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxPages = 3; c.PageLongEdge = 400 })
	key, ws := h.workspaceKey(t, "company", "live", "*")

	type doc struct {
		name string
		data []byte
		fail string // "" converts
	}
	docs := []doc{
		{"long.pdf", manyPagesPDF(t, 8), "the document has 8 pages; at most 3 can be converted (split it into smaller files)"},
		{"short.pdf", manyPagesPDF(t, 3), ""},
	}
	if _, err := exec.LookPath("soffice"); err == nil {
		// A 2-slide deck (flatODP) with a limit of 1: the limit applies to the PDF LibreOffice
		// made of it.
		deck, err := sofficeMake(t.TempDir(), "deck.fodp", flatODP, "pptx")
		require.NoError(t, err)
		h2 := newHarness(t, func(c *Config) { c.MaxPages = 1; c.PageLongEdge = 400 })
		k2 := h2.workspace(t, "company", "live")
		b, rid := h2.uploadOK(t, k2, "deck.pptx", deck)
		got := h2.waitBatch(t, k2, b)
		require.Equal(t, "failed", got["status"])
		require.Equal(t, "the document has 2 pages; at most 1 can be converted (split it into smaller files)", batchFile(got)["error"])
		requireGone(t, h2.dataPath("blobs", rid))
	} else {
		t.Log("LibreOffice (soffice) is not installed: the Office case is skipped")
	}

	batches := make([][2]string, len(docs))
	for i, d := range docs {
		batches[i][0], batches[i][1] = h.uploadOK(t, key, d.name, d.data)
	}
	for i, d := range docs {
		b := h.waitBatch(t, key, batches[i][0])
		f := batchFile(b)
		book := h.bookData(t, key, batches[i][1])
		if d.fail == "" {
			require.Equal(t, "completed", b["status"], "%s: %v", d.name, f["error"])
			require.Equal(t, "ready", book["page_images_status"])
			continue
		}
		require.Equal(t, "failed", b["status"], d.name)
		require.Equal(t, d.fail, f["error"], d.name)
		require.Equal(t, "failed", book["page_images_status"])
		require.EqualValues(t, 0, book["page_count"])
		requireGone(t, h.dataPath("blobs", batches[i][1]))
		requireGone(t, h.dataPath("work", batches[i][0]))
	}
	h.storedPages(t, ws, batches[1][1], 3, 400)
}
