package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

// bookmarkedPDF has five pages and an outline of two levels.
func bookmarkedPDF(tb testing.TB) []byte {
	tb.Helper()
	f := newPDF()
	for i := 1; i <= 5; i++ {
		f.AddPage()
		switch i {
		case 1:
			f.Bookmark("Welcome", 0, 0)
		case 2:
			f.Bookmark("Menu", 0, 0)
			f.Bookmark("Starters", 1, 0)
		case 4:
			f.Bookmark("Desserts", 1, 0)
		}
		f.SetXY(72, 72)
		f.Write(16, "A page of the menu.")
	}
	return pdfBytes(tb, f)
}

// A converted PDF keeps its outline: GET /books/{book}/outline lists it in order; a book
// without one answers an empty list; another workspace's book is a 404.
func TestBookOutline(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	other, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "menu.pdf", bookmarkedPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	r := h.do(t, "GET", "/api/v1/books/"+rid+"/outline", key, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.JSONEq(t, `{"data":[{"title":"Welcome","level":0,"page":1},{"title":"Menu","level":0,"page":2},
		{"title":"Starters","level":1,"page":2},{"title":"Desserts","level":1,"page":4}]}`, string(r.Body))

	batch, plain := h.uploadOK(t, key, "plain.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	r = h.do(t, "GET", "/api/v1/books/"+plain+"/outline", key, nil)
	require.Equal(t, 200, r.Status)
	require.JSONEq(t, `{"data":[]}`, string(r.Body))

	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+rid+"/outline", other, nil).Status)
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil).Status)
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+rid+"/outline", key, nil).Status)
	items, err := h.svc.Store.Outline(storage.Tenant{Workspace: ws, Mode: storage.ModeLive}, rid)
	require.NoError(t, err)
	require.Empty(t, items, "the outline is deleted with its book")
}
