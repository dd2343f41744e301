package httpapi

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A template book keeps the text its pages were drawn with (source "render"), in any script,
// as soon as it is created: before, its pages waited for the OCR backfill, which read only
// English.
func TestTemplateBookKeepsItsDrawnText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	body := postsBody(1, "")
	post := body["content"].([]any)[0].(map[string]any)
	post["title"] = "ブログの記事 — מאמר חדש"
	post["content"] = "<p>مرحبا بكم في المدونة</p>"
	b := createTemplate(t, h, key, body)
	rid := b["random_id"].(string)

	r := h.do(t, "GET", "/api/v1/books/"+rid+"/pages", key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Len(t, r.list(), 2)
	for _, p := range r.list() {
		page := p.(map[string]any)
		require.Equal(t, "render", page["text_source"], "%v", page)
		require.Equal(t, true, page["has_text"])
	}
	r = h.do(t, "GET", "/api/v1/books/"+rid+"/pages/2", key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	page := r.data()
	require.Equal(t, "render", page["source"])
	text := page["text"].(string)
	require.Contains(t, text, "ブログの記事 — מאמר חדש")
	require.Contains(t, text, "مرحبا بكم في المدونة")
	require.True(t, strings.HasSuffix(text, "Blog – Posts"), "the footer last: %q", text)
	words := page["words"].([]any)
	require.NotEmpty(t, words)

	// The book's search finds a word of it.
	r = h.do(t, "GET", "/api/v1/books/"+rid+"/search?q="+url.QueryEscape("المدونة"), key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Len(t, r.list(), 1, "%s", r.Body)
	require.EqualValues(t, 2, r.list()[0].(map[string]any)["page"])
}
