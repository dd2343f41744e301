package actors

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

// Renditions are stored only for the pages whose image is still the one they were made from,
// and a deleted book stays deleted.
func TestSetRenditionsChecksThePages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.NoTextBackfill, o.NoRenditions = true, true })
	tn := storage.Tenant{Workspace: 1, Mode: storage.ModeLive}
	b := createBook(t, e, tn, storage.StatusDraft, "b") // pages a.png and b.png
	r := []storage.Rendition{{File: "r.webp", Width: 400, Height: 566}}
	_, err := askT[*storage.Book](e.sys, e.sys.workspace(tn), &SetRenditions{RandomID: b.RandomID, Pages: []PageRenditions{
		{Number: 1, File: "other.png", Renditions: r}, // page 1 is a.png now
		{Number: 2, File: "b.png", Renditions: r, Placeholder: []byte("ph")},
		{Number: 3, File: "c.png", Renditions: r}, // no page 3
	}})
	require.NoError(t, err)
	pages, err := e.st.Pages(tn, b.RandomID)
	require.NoError(t, err)
	require.Len(t, pages, 2)
	require.Empty(t, pages[0].Renditions)
	require.Equal(t, r, pages[1].Renditions)
	require.Equal(t, []byte("ph"), pages[1].Placeholder)

	_, err = e.sys.DeleteBook(tn, b.RandomID)
	require.NoError(t, err)
	_, err = askT[*storage.Book](e.sys, e.sys.workspace(tn), &SetRenditions{RandomID: b.RandomID, Pages: []PageRenditions{{Number: 1, File: "a.png", Renditions: r}}})
	require.Error(t, err)
	_, err = e.st.Pages(tn, b.RandomID)
	require.Error(t, err, "no page list comes back")
}
