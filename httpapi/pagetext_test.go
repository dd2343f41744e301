package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/errs"
	"flipbook/storage"
)

// A converted PDF keeps each page's text with its words' boxes (issue 28), stored with the
// pages; deleting the book deletes them.
func TestUploadPDFKeepsPageText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "report.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])

	tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
	texts, err := h.svc.Store.PageTexts(tn, rid)
	require.NoError(t, err)
	require.Len(t, texts, 3)
	want := []string{"Page one: a document with text and an image.", "Page two has a link annotation below.",
		"Page three: visit " + plainURL + " for more."}
	for i, pt := range texts {
		require.Equal(t, i+1, pt.Page)
		require.Equal(t, storage.TextFromPDF, pt.Source)
		require.Empty(t, pt.Problem)
		require.Contains(t, pt.Text, want[i])
		require.NotEmpty(t, pt.Words)
		for _, w := range pt.Words {
			require.NotEmpty(t, w.Text)
			require.True(t, w.X >= 0 && w.Y >= 0 && w.W > 0 && w.H > 0 && w.X+w.W <= 1.0001 && w.Y+w.H <= 1.0001, "%+v", w)
		}
	}
	// The first word of page 1 is where samplePDF wrote it: 72 pt from the left of 595 pt,
	// near the top.
	first := texts[0].Words[0]
	require.Equal(t, "Page", first.Text)
	require.InDelta(t, 72.0/595.28, first.X, 0.01)
	require.Less(t, first.Y, 0.15)
	one, err := h.svc.Store.PageText(tn, rid, 2)
	require.NoError(t, err)
	require.Equal(t, texts[1].Text, one.Text)

	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil).Status)
	texts, err = h.svc.Store.PageTexts(tn, rid)
	require.NoError(t, err)
	require.Empty(t, texts, "the book's page texts are deleted with it")
	_, err = h.svc.Store.PageText(tn, rid, 1)
	require.ErrorIs(t, err, errs.ErrNotFound)
}
