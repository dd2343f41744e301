package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/api"
)

func logoPNG(t *testing.T, w int) []byte {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(pngBase64(w, 20))
	require.NoError(t, err)
	return data
}

// brandForm sends a brand write as multipart/form-data.
func (h *harness) brandForm(t *testing.T, method, key string, fields map[string]string, logo []byte) *resp {
	t.Helper()
	var files []filePart
	if logo != nil {
		files = []filePart{{"file", "logo.bin", logo}}
	}
	body, ctype := multipartBody(files, fields)
	return h.do(t, method, "/api/v1/brand", key, body, "Content-Type", ctype)
}

func (h *harness) viewerHTML(t *testing.T, rid string) string {
	t.Helper()
	res, err := http.Get(h.base + "/view/" + rid)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

func TestBrandLifecycleAndViewer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "pro", "live", "*")
	rid := h.konva(t, key, "Branded book", "publish")

	// No brand yet.
	r := h.do(t, "GET", "/api/v1/brand", key, nil)
	require.Equal(t, 200, r.Status)
	require.Nil(t, r.data()["brand"])
	require.Equal(t, true, r.JSON["meta"].(map[string]any)["take_over_branding_available"])
	require.Equal(t, 404, h.do(t, "POST", "/api/v1/toggle-take-over-branding", key, nil).Status, "no brand to toggle")

	logo := logoPNG(t, 30)
	r = h.brandForm(t, "POST", key, map[string]string{"company_name": "Acme Ltd", "primary_color": "#1a2b3c",
		"website_url": "https://acme.example", "twitter": "@acme", "about_brand": "We make things."}, logo)
	require.Equal(t, 201, r.Status, "%s", r.Body)
	b := r.data()["brand"].(map[string]any)
	require.Equal(t, "Acme Ltd", b["company_name"])
	require.Equal(t, float64(ws), b["workspace_id"])
	require.Equal(t, false, b["take_over_branding"])
	require.Equal(t, "#1a2b3c", b["brand_color"].(map[string]any)["primary_color"])
	require.Nil(t, b["brand_color"].(map[string]any)["secondary_color"])
	require.Equal(t, "@acme", b["brand_social_media"].(map[string]any)["twitter"])
	require.Equal(t, b["id"], b["brand_social_media"].(map[string]any)["brand_id"])
	require.Equal(t, float64(ws), b["workspace"].(map[string]any)["id"])
	id := int64(b["id"].(float64))
	logoURL := b["logo"].(string)
	res, err := http.Get(logoURL)
	require.NoError(t, err)
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "image/png", res.Header.Get("Content-Type"))
	require.True(t, bytes.Equal(logo, got), "the logo is served as uploaded")

	// One brand per workspace: a second create is refused.
	r = h.brandForm(t, "POST", key, map[string]string{"company_name": "Again"}, nil)
	require.Equal(t, 422, r.Status)
	require.Contains(t, r.JSON["error"].(map[string]any)["details"], "brand")

	// Without take-over the viewer shows the workspace's name and the service's badge setting.
	page := h.viewerHTML(t, rid)
	require.NotContains(t, page, "Acme Ltd")
	require.NotContains(t, page, logoURL)

	// Take-over on: the viewer shows the brand.
	r = h.do(t, "POST", "/api/v1/toggle-take-over-branding", key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, true, r.data()["brand"].(map[string]any)["take_over_branding"])
	page = h.viewerHTML(t, rid)
	require.Contains(t, page, "Acme Ltd")
	require.Contains(t, page, `src="`+logoURL+`"`)
	require.Contains(t, page, `href="https://acme.example"`)
	require.Contains(t, page, "background:#1a2b3c")

	// Update: wrong id → 404; fields sent are set, an empty one is cleared, others kept; a new
	// logo replaces the old file.
	require.Equal(t, 404, h.brandForm(t, "PUT", key, map[string]string{"id": itoa(id + 1000), "company_name": "X"}, nil).Status)
	r = h.brandForm(t, "PUT", key, map[string]string{"id": itoa(id), "about_brand": "", "secondary_color": "#fff"}, logoPNG(t, 50))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	b = r.data()["brand"].(map[string]any)
	require.Equal(t, "Acme Ltd", b["company_name"], "kept")
	require.Nil(t, b["about_brand"], "cleared")
	require.Equal(t, "#fff", b["brand_color"].(map[string]any)["secondary_color"])
	require.Equal(t, true, b["take_over_branding"], "an update keeps take-over")
	require.NotEqual(t, logoURL, b["logo"])
	res, err = http.Get(logoURL)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 404, res.StatusCode, "the replaced logo is gone")
	require.Contains(t, h.viewerHTML(t, rid), b["logo"].(string))

	// JSON bodies work too.
	r = h.do(t, "PUT", "/api/v1/brand", key, map[string]any{"id": id, "company_name": "Acme Group"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "Acme Group", r.data()["brand"].(map[string]any)["company_name"])

	// A downgrade to free hides the take-over on the viewer; the flag can still be turned off
	// but not on again.
	require.Equal(t, 200, h.adminDo(t, "PUT", "/workspaces/"+itoa(ws), map[string]any{"plan": "free"}).Status)
	require.NotContains(t, h.viewerHTML(t, rid), "Acme Group")
	require.Equal(t, 200, h.do(t, "POST", "/api/v1/toggle-take-over-branding", key, nil).Status)
	r = h.do(t, "POST", "/api/v1/toggle-take-over-branding", key, nil)
	require.Equal(t, 403, r.Status)
	require.Equal(t, api.TypePlanRequired, r.JSON["error"].(map[string]any)["type"])

	// Restart: the brand and its logo survive.
	h.restart(t)
	r = h.do(t, "GET", "/api/v1/brand", key, nil)
	require.Equal(t, "Acme Group", r.data()["brand"].(map[string]any)["company_name"])
	res, err = http.Get(r.data()["brand"].(map[string]any)["logo"].(string))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, "the logo folder is not swept as an orphan")
}

func TestBrandValidationScopesAndTenancy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	big := append(logoPNG(t, 10), make([]byte, api.MaxLogoBytes)...)
	for _, c := range []struct {
		name   string
		fields map[string]string
		logo   []byte
		field  string
	}{
		{"company required", map[string]string{"about_brand": "x"}, nil, "company_name"},
		{"company empty", map[string]string{"company_name": ""}, nil, "company_name"},
		{"bad colour", map[string]string{"company_name": "A", "primary_color": "red;x"}, nil, "primary_color"},
		{"bad url", map[string]string{"company_name": "A", "website_url": "not a url"}, nil, "website_url"},
		{"long name", map[string]string{"company_name": strings.Repeat("a", 256)}, nil, "company_name"},
		{"not an image", map[string]string{"company_name": "A"}, []byte("<svg onload=alert(1)></svg>"), "file"},
		{"too large", map[string]string{"company_name": "A"}, big, "file"},
		{"claims 100,000² pixels", map[string]string{"company_name": "A"}, pngClaiming(t, 100000, 100000), "file"},
		{"truncated", map[string]string{"company_name": "A"}, logoPNG(t, 40)[:60], "file"},
	} {
		r := h.brandForm(t, "POST", key, c.fields, c.logo)
		require.Equal(t, 422, r.Status, "%s: %s", c.name, r.Body)
		require.Contains(t, r.JSON["error"].(map[string]any)["details"], c.field, c.name)
	}
	require.Nil(t, h.do(t, "GET", "/api/v1/brand", key, nil).data()["brand"], "nothing stored by refused writes")
	require.Equal(t, 422, h.do(t, "PUT", "/api/v1/brand", key, map[string]any{"company_name": "A"}).Status, "id required")

	// Scopes.
	ro := h.key(t, ws, "live", "brand:read")
	require.Equal(t, 403, h.brandForm(t, "POST", ro, map[string]string{"company_name": "A"}, nil).Status)
	require.Equal(t, 403, h.do(t, "POST", "/api/v1/toggle-take-over-branding", ro, nil).Status)
	require.Equal(t, 403, h.do(t, "GET", "/api/v1/brand", h.key(t, ws, "live", "books:read"), nil).Status)

	// Tenancy: another workspace and the test sandbox have their own brand.
	require.Equal(t, 201, h.brandForm(t, "POST", key, map[string]string{"company_name": "Live brand"}, nil).Status)
	other := h.workspace(t, "company", "live")
	require.Nil(t, h.do(t, "GET", "/api/v1/brand", other, nil).data()["brand"])
	test := h.key(t, ws, "test", "*")
	require.Nil(t, h.do(t, "GET", "/api/v1/brand", test, nil).data()["brand"])
	require.Equal(t, 201, h.brandForm(t, "POST", test, map[string]string{"company_name": "Test brand"}, nil).Status)
	require.Equal(t, "Live brand", h.do(t, "GET", "/api/v1/brand", key, nil).data()["brand"].(map[string]any)["company_name"])
	brandID := h.do(t, "GET", "/api/v1/brand", key, nil).data()["brand"].(map[string]any)["id"]
	require.Equal(t, 404, h.do(t, "PUT", "/api/v1/brand", other, map[string]any{"id": brandID, "company_name": "Stolen"}).Status)
}

// pngClaiming is a PNG signature and header claiming w×h pixels, and nothing after it.
func pngClaiming(t *testing.T, w, h uint32) []byte {
	t.Helper()
	ihdr := []byte("IHDR")
	ihdr = binary.BigEndian.AppendUint32(ihdr, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	out := []byte("\x89PNG\r\n\x1a\n")
	out = binary.BigEndian.AppendUint32(out, 13)
	out = append(out, ihdr...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(ihdr))
}

// A refused brand write (a second POST, a PUT of another brand's id) leaves no logo file
// behind, and the brand's own logo, sent again with a refused write, stays (found by a review:
// each refused write kept up to 2 MB for good).
func TestRefusedBrandWriteLeavesNoLogo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "pro", "live", "*")
	r := h.brandForm(t, "POST", key, map[string]string{"company_name": "Acme"}, logoPNG(t, 30))
	require.Equal(t, 201, r.Status, "%s", r.Body)
	id := int64(r.data()["brand"].(map[string]any)["id"].(float64))
	folder := h.dataPath("blobs", fmt.Sprintf("brand-%d-live", ws))
	files := func() []string {
		entries, err := os.ReadDir(folder)
		require.NoError(t, err)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	require.Len(t, files(), 1, "the brand's logo")

	r = h.brandForm(t, "POST", key, map[string]string{"company_name": "Acme again"}, logoPNG(t, 31))
	require.Equal(t, 422, r.Status, "%s", r.Body)
	r = h.brandForm(t, "PUT", key, map[string]string{"id": itoa(id + 1000), "company_name": "Other"}, logoPNG(t, 32))
	require.Equal(t, 404, r.Status, "%s", r.Body)
	require.Len(t, files(), 1, "refused writes stored their logos anyway: %v", files())
	r = h.brandForm(t, "POST", key, map[string]string{"company_name": "Same logo"}, logoPNG(t, 30))
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Len(t, files(), 1, "the brand's own logo stays")
	r = h.do(t, "GET", "/api/v1/brand", key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
}
