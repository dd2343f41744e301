package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// viewerConfigAt is the viewer configuration of a published book, as its viewer page embeds it.
func (h *harness) viewerConfigAt(t *testing.T, rid string) map[string]any {
	t.Helper()
	return viewerConfigOf(t, []byte(h.viewerHTML(t, rid)))
}

// reading_direction (issue 29) is an extension of the update body: set and kept like the other
// update fields outside the settings object (not in the Book object, which stays spec §2.1's),
// given to the viewer as rtl, refused with a 422 for any other value, and only for the book's
// own workspace.
func TestRTLReadingDirection(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Manga", "draft")
	path := "/api/v1/books/" + rid
	stored := func() string {
		b, err := h.svc.Store.GetBook(h.principal(t, key).Tenant, rid)
		require.NoError(t, err)
		return b.Extra.ReadingDirection
	}

	r := h.do(t, "PUT", path, key, map[string]any{"status": "publish", "reading_direction": "rtl"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, bookFields, keys(r.data()), "the Book object is the spec's: extension fields are not in it")
	require.Equal(t, "rtl", stored())
	require.Equal(t, true, h.viewerConfigAt(t, rid)["rtl"])

	// An update without the field keeps it.
	r = h.do(t, "PUT", path, key, map[string]any{"status": "publish", "title": "Manga 2"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "rtl", stored())
	require.Equal(t, true, h.viewerConfigAt(t, rid)["rtl"])

	// Any other value, null or another type is a 422 in the envelope, naming the field, and
	// changes nothing.
	for _, v := range []any{"sideways", "RTL", "", nil, true} {
		r = h.do(t, "PUT", path, key, map[string]any{"status": "publish", "reading_direction": v, "title": "not applied"})
		require.Equal(t, 422, r.Status, "%v: %s", v, r.Body)
		require.Equal(t, api.TypeValidation, r.errType())
		require.Contains(t, r.details(), "reading_direction", "%s", r.Body)
		require.Len(t, r.details(), 1, "%s", r.Body)
	}
	require.Equal(t, "rtl", stored())
	require.Equal(t, "Manga 2", h.do(t, "GET", path, key, nil).data()["name"])

	// Another workspace's key does not find the book, and cannot change it.
	other := h.workspace(t, "company", "live")
	r = h.do(t, "PUT", path, other, map[string]any{"status": "publish", "reading_direction": "ltr"})
	require.Equal(t, 404, r.Status, "%s", r.Body)
	require.Equal(t, api.TypeNotFound, r.errType())
	require.Equal(t, "rtl", stored())

	// ltr turns it back: the viewer's configuration leaves rtl out.
	r = h.do(t, "PUT", path, key, map[string]any{"status": "publish", "reading_direction": "ltr"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "", stored())
	require.NotContains(t, h.viewerConfigAt(t, rid), "rtl")
}

// The OpenAPI document marks reading_direction as an extension of the update body, with its
// two values, and the MCP tool that updates books takes it (its input schema is the
// operation's) and refuses other values as REST does.
func TestRTLOpenAPIAndMCP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Manga", "draft")

	res, err := http.Get(h.base + "/api/v1/openapi.json")
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]struct {
			XExtension  bool `json:"x-extension"`
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]map[string]any `json:"properties"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&doc))
	res.Body.Close()
	update := doc.Paths["/books/{book}"]["put"]
	require.False(t, update.XExtension, "the operation is the spec's")
	props := update.RequestBody.Content["application/json"].Schema.Properties
	require.Equal(t, true, props["reading_direction"]["x-extension"], "%v", props["reading_direction"])
	require.Equal(t, []any{"ltr", "rtl"}, props["reading_direction"]["enum"])
	require.NotContains(t, props["title"], "x-extension", "spec fields are not marked")

	cs := h.mcpSession(t, key, "2025-11-25")
	var tool *sdk.Tool
	for tl, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		if tl.Name == "books_update_settings" {
			tool = tl
		}
	}
	require.NotNil(t, tool)
	b, err := json.Marshal(tool.InputSchema)
	require.NoError(t, err)
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(b, &schema))
	require.Equal(t, []any{"ltr", "rtl"}, schema.Properties["reading_direction"]["enum"])

	out, body := callTool(t, cs, "books_update_settings", map[string]any{"book_id": rid, "status": "publish", "reading_direction": "rtl"})
	require.False(t, out.IsError, "%v", body)
	require.Equal(t, true, h.viewerConfigAt(t, rid)["rtl"])
	out, body = callTool(t, cs, "books_update_settings", map[string]any{"book_id": rid, "status": "publish", "reading_direction": "sideways"})
	require.True(t, out.IsError)
	require.Equal(t, api.TypeValidation, toolErrType(body))
	require.Contains(t, body["error"].(map[string]any)["details"], "reading_direction")
	require.Equal(t, true, h.viewerConfigAt(t, rid)["rtl"])
}
