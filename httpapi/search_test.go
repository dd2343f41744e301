package httpapi

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// accentedPDF has one page of accented words (fpdf's core fonts are cp1252).
func accentedPDF(tb testing.TB) []byte {
	tb.Helper()
	f := newPDF()
	tr := f.UnicodeTranslatorFromDescriptor("")
	f.AddPage()
	f.SetXY(72, 72)
	f.Write(16, tr("Le Café Crème de l'Éléphant, straße 12."))
	return pdfBytes(tb, f)
}

// Searching a book lists its matching pages in order with snippets and boxes; searching the
// workspace finds pages across books, folded and by prefix, paged by cursor; other
// workspaces see nothing; a deleted book leaves the results.
func TestSearchPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	other, _ := h.workspaceKey(t, "company", "live", "*")
	batch, sample := h.uploadOK(t, key, "report.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	batch, cafe := h.uploadOK(t, key, "cafe.pdf", accentedPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	batch, theirs := h.uploadOK(t, other, "theirs.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, other, batch)["status"])

	get := func(key, path string, q url.Values) *resp {
		return h.do(t, "GET", "/api/v1"+path+"?"+q.Encode(), key, nil)
	}
	// One book: every page with "page", in page order.
	r := get(key, "/books/"+sample+"/search", url.Values{"q": {"PAGE"}})
	require.Equal(t, 200, r.Status, string(r.Body))
	hits := r.list()
	require.Len(t, hits, 3)
	for i, x := range hits {
		hit := x.(map[string]any)
		require.EqualValues(t, i+1, hit["page"])
		boxes := hit["boxes"].([]any)
		require.NotEmpty(t, boxes)
		for _, b := range boxes {
			box := b.(map[string]any)
			for _, k := range []string{"x", "y", "w", "h"} {
				v := box[k].(float64)
				require.True(t, v >= 0 && v <= 1, "%s=%v", k, v)
			}
		}
	}
	r = get(key, "/books/"+sample+"/search", url.Values{"q": {"annot link"}})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Len(t, r.list(), 1)
	hit := r.list()[0].(map[string]any)
	require.EqualValues(t, 2, hit["page"])
	require.Contains(t, hit["snippet"], "annotation")
	require.EqualValues(t, 4, hit["matches"]) // "annotation", "annotated", and "link" twice

	// The workspace: accents and case folded, prefixes matched.
	for _, q := range []string{"cafe creme", "ÉLÉPH", "strasse", "CAF"} {
		r = get(key, "/search", url.Values{"q": {q}})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Len(t, r.list(), 1, q)
		hit = r.list()[0].(map[string]any)
		require.Equal(t, cafe, hit["random_id"])
		require.EqualValues(t, 1, hit["page"])
		require.Equal(t, "cafe", hit["book_name"])
		require.NotZero(t, hit["book_id"])
		require.Contains(t, hit["snippet"], "Café")
	}
	// Paging: 3 pages of the sample match "page"; two per page.
	r = get(key, "/search", url.Values{"q": {"page"}, "limit": {"2"}})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Len(t, r.list(), 2)
	require.Equal(t, true, r.meta()["has_more"])
	require.EqualValues(t, 3, r.meta()["total"])
	next := r.meta()["next_cursor"].(string)
	r = get(key, "/search", url.Values{"q": {"page"}, "limit": {"2"}, "cursor": {next}})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Len(t, r.list(), 1)
	require.Equal(t, false, r.meta()["has_more"])
	require.Nil(t, r.meta()["next_cursor"])
	// A cursor belongs to its query.
	r = get(key, "/search", url.Values{"q": {"link"}, "cursor": {next}})
	require.Equal(t, 422, r.Status)
	// Bad queries.
	for _, q := range []url.Values{{}, {"q": {"  ,;  "}}, {"q": {"a b c d e f g h i"}}} {
		r = get(key, "/search", q)
		require.Equal(t, 422, r.Status, "%v: %s", q, r.Body)
		r = get(key, "/books/"+sample+"/search", q)
		require.Equal(t, 422, r.Status, "%v: %s", q, r.Body)
	}

	// Other workspaces: a 404 for the book, none of its pages in their search.
	require.Equal(t, 404, get(other, "/books/"+sample+"/search", url.Values{"q": {"page"}}).Status)
	r = get(other, "/search", url.Values{"q": {"page"}})
	require.Equal(t, 200, r.Status)
	require.Len(t, r.list(), 3)
	for _, x := range r.list() {
		require.Equal(t, theirs, x.(map[string]any)["random_id"])
	}
	require.Empty(t, get(other, "/search", url.Values{"q": {"cafe"}}).list())

	// Deleting a book takes its pages out of the results.
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/books/"+sample, key, nil).Status)
	require.Empty(t, get(key, "/search", url.Values{"q": {"page"}}).list())
	require.Len(t, get(key, "/search", url.Values{"q": {"cafe"}}).list(), 1)
}
