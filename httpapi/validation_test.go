package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// vcase is one validation case: a request and the field that must be reported (or none).
type vcase struct {
	name   string
	method string
	path   string // may contain {book}
	body   any
	status int
	field  string // expected key in error.details ("" when the request is valid)
}

func runValidation(t *testing.T, h *harness, key, rid string, cases []vcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, c.method, strings.ReplaceAll(c.path, "{book}", rid), key, c.body)
			require.Equal(t, c.status, r.Status, "%s", r.Body)
			if c.field != "" {
				require.Equal(t, api.TypeValidation, r.errType(), "%s", r.Body)
				require.Contains(t, r.details(), c.field, "%s", r.Body)
				// Both documented layouts (spec §7.1).
				require.Contains(t, r.JSON["errors"], c.field)
				require.NotEmpty(t, r.JSON["message"])
			}
		})
	}
}

func long(n int) string { return strings.Repeat("x", n) }

func TestValidationListBooks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	q := func(s string) string { return "/api/v1/books?" + s }
	cases := []vcase{
		{"limit min", "GET", q("limit=0"), nil, 422, "limit"},
		{"limit max", "GET", q("limit=201"), nil, 422, "limit"},
		{"limit edge low", "GET", q("limit=1"), nil, 200, ""},
		{"limit edge high", "GET", q("limit=200"), nil, 200, ""},
		{"limit not int", "GET", q("limit=ten"), nil, 422, "limit"},
		{"limit fraction", "GET", q("limit=1.5"), nil, 422, "limit"},
		{"status enum", "GET", q("filter[status]=archived"), nil, 422, "filter[status]"},
		{"status ok", "GET", q("filter[status]=schedule"), nil, 200, ""},
		{"name max", "GET", q("filter[name]=" + long(256)), nil, 422, "filter[name]"},
		{"name edge", "GET", q("filter[name]=" + long(255)), nil, 200, ""},
		{"sort enum", "GET", q("sort=random"), nil, 422, "sort"},
		{"cursor forged", "GET", q("cursor=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), nil, 422, "cursor"},
		{"cursor garbage", "GET", q("cursor=%25%25%25"), nil, 422, "cursor"},
	}
	for _, s := range api.BookSorts {
		cases = append(cases, vcase{"sort " + s, "GET", q("sort=" + s), nil, 200, ""})
	}
	runValidation(t, h, key, "", cases)
}

func TestValidationUpdateBook(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "v", "draft")
	p := "/api/v1/books/{book}"
	with := func(k string, v any) map[string]any { return map[string]any{"status": "draft", k: v} }
	cases := []vcase{
		{"status required", "PUT", p, map[string]any{"title": "x"}, 422, "status"},
		{"status enum", "PUT", p, map[string]any{"status": "archived"}, 422, "status"},
		{"status not string", "PUT", p, map[string]any{"status": 3}, 422, "status"},
		{"title max", "PUT", p, with("title", long(256)), 422, "title"},
		{"title edge", "PUT", p, with("title", long(255)), 200, ""},
		{"title empty", "PUT", p, with("title", ""), 422, "title"},
		{"title null", "PUT", p, with("title", nil), 422, "title"},
		{"description max", "PUT", p, with("description", long(50001)), 422, "description"},
		{"description edge", "PUT", p, with("description", long(50000)), 200, ""},
		{"description null", "PUT", p, with("description", nil), 200, ""},
		{"slug max", "PUT", p, with("slug", long(256)), 422, "slug"},
		{"published_date format", "PUT", p, with("published_date", "tomorrow"), 422, "published_date"},
		{"published_date ok", "PUT", p, with("published_date", "2030-01-02T03:04:05Z"), 200, ""},
		{"expires_at format", "PUT", p, with("expires_at", "2030-13-01"), 422, "expires_at"},
		{"background max", "PUT", p, with("background", long(2049)), 422, "background"},
		{"background edge", "PUT", p, with("background", "https://img.example/"+long(2048-len("https://img.example/"))), 200, ""},
		{"watermark max", "PUT", p, with("watermark", long(2049)), 422, "watermark"},
		{"magic_link_message max", "PUT", p, with("magic_link_message", long(1001)), 422, "magic_link_message"},
		{"magic_link_error_message max", "PUT", p, with("magic_link_error_message", long(1001)), 422, "magic_link_error_message"},
		{"pdf_password max", "PUT", p, with("pdf_password", long(256)), 422, "pdf_password"},
		{"pdf_privacy_status max", "PUT", p, with("pdf_privacy_status", long(51)), 422, "pdf_privacy_status"},
		{"pdf_privacy_status edge", "PUT", p, with("pdf_privacy_status", long(50)), 200, ""},
		{"animation_type enum", "PUT", p, with("animation_type", "spin"), 422, "animation_type"},
		{"animation_type ok", "PUT", p, with("animation_type", "flick-through"), 200, ""},
		{"mobile_animation_type enum", "PUT", p, with("mobile_animation_type", "spin"), 422, "mobile_animation_type"},
		{"image_display enum", "PUT", p, with("image_display", "tile"), 422, "image_display"},
		{"image_display ok", "PUT", p, with("image_display", "center/cover"), 200, ""},
		{"domain_lists type", "PUT", p, with("domain_lists", "a.com"), 422, "domain_lists"},
		{"eod_lists type", "PUT", p, with("eod_lists", 5), 422, "eod_lists"},
		{"read-only ignored", "PUT", p, map[string]any{"status": "draft", "eod_enabled": "garbage", "domains_enabled": 7}, 200, ""},
		{"schedule needs date", "PUT", p, map[string]any{"status": "schedule", "published_date": nil}, 422, "published_date"},
		{"publish with past expiry", "PUT", p, map[string]any{"status": "publish", "expires_at": "2001-01-01T00:00:00Z"}, 422, "expires_at"},
	}
	for _, b := range []string{"accessibility_enabled", "allow_fullscreen", "auto_links_enabled", "copyright_enabled",
		"downloadable_pdf", "flip_sound", "made_with_badge_enabled", "open_fullscreen_by_default", "share_social_media"} {
		cases = append(cases, vcase{b + " type", "PUT", p, with(b, "yes"), 422, b}, vcase{b + " ok", "PUT", p, with(b, true), 200, ""})
	}
	runValidation(t, h, key, rid, cases)

	// Several failures are all reported at once.
	r := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"title": long(300), "background": long(3000), "flip_sound": 1})
	require.Equal(t, 422, r.Status)
	require.Len(t, r.details(), 4, "%s", r.Body) // status, title, background, flip_sound

	// Malformed JSON is a 400 in the error envelope; a non-object body too.
	r = h.do(t, "PUT", "/api/v1/books/"+rid, key, `{"status":`)
	require.Equal(t, 400, r.Status)
	require.Equal(t, api.TypeBadRequest, r.errType())
	r = h.do(t, "PUT", "/api/v1/books/"+rid, key, `["status"]`)
	require.Equal(t, 400, r.Status)
}

func TestValidationKonva(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	p := "/api/v1/books/konva"
	base := func(mod func(m map[string]any)) map[string]any {
		b := konvaBody("k", "", 1)
		mod(b)
		return b
	}
	canvas := func(k string, v any) func(m map[string]any) {
		return func(m map[string]any) { m["canvas"].(map[string]any)[k] = v }
	}
	imgs := func(n int) []any {
		out := make([]any, n)
		img := pngBase64(2, 2)
		for i := range out {
			out[i] = img
		}
		return out
	}
	cases := []vcase{
		{"valid", "POST", p, base(func(m map[string]any) {}), 201, ""},
		{"title required", "POST", p, base(func(m map[string]any) { delete(m, "title") }), 422, "title"},
		{"title max", "POST", p, base(func(m map[string]any) { m["title"] = long(256) }), 422, "title"},
		{"canvas required", "POST", p, base(func(m map[string]any) { delete(m, "canvas") }), 422, "canvas"},
		{"canvas width min", "POST", p, base(canvas("width", 0)), 422, "canvas.width"},
		{"canvas width max", "POST", p, base(canvas("width", 10001)), 422, "canvas.width"},
		{"canvas width edge", "POST", p, base(canvas("width", 10000)), 201, ""},
		{"canvas height min", "POST", p, base(canvas("height", 0)), 422, "canvas.height"},
		{"canvas height max", "POST", p, base(canvas("height", 10001)), 422, "canvas.height"},
		{"canvas height float", "POST", p, base(canvas("height", 10.5)), 422, "canvas.height"},
		{"orientation enum", "POST", p, base(canvas("orientation", "square")), 422, "canvas.orientation"},
		{"objects min", "POST", p, base(canvas("objects", []any{})), 422, "canvas.objects"},
		{"objects max", "POST", p, base(canvas("objects", make([]any, 251))), 422, "canvas.objects"},
		{"page_images required", "POST", p, base(func(m map[string]any) { delete(m, "page_images") }), 422, "page_images"},
		{"page_images min", "POST", p, base(func(m map[string]any) { m["page_images"] = []any{} }), 422, "page_images"},
		{"page_images max", "POST", p, base(func(m map[string]any) { m["page_images"] = imgs(251) }), 422, "page_images"},
		{"page_images edge", "POST", p, base(func(m map[string]any) { m["page_images"] = imgs(250) }), 201, ""},
		{"page image too long", "POST", p, base(func(m map[string]any) { m["page_images"] = []any{long(api.MaxPageImageChars + 1)} }), 422, "page_images.0"},
		{"page image not string", "POST", p, base(func(m map[string]any) { m["page_images"] = []any{7} }), 422, "page_images.0"},
		{"page image not base64", "POST", p, base(func(m map[string]any) { m["page_images"] = []any{"%%%"} }), 422, "page_images.0"},
		{"page image not an image", "POST", p, base(func(m map[string]any) { m["page_images"] = []any{pngBase64(3, 3), "aGVsbG8gd29ybGQ="} }), 422, "page_images.1"},
		{"page image data URL", "POST", p, base(func(m map[string]any) { m["page_images"] = []any{"data:image/png;base64," + pngBase64(3, 3)} }), 201, ""},
		{"thumbnail too long", "POST", p, base(func(m map[string]any) { m["thumbnail"] = long(api.MaxPageImageChars + 1) }), 422, "thumbnail"},
		{"thumbnail not image", "POST", p, base(func(m map[string]any) { m["thumbnail"] = "aGVsbG8=" }), 422, "thumbnail"},
		{"thumbnail null", "POST", p, base(func(m map[string]any) { m["thumbnail"] = nil }), 201, ""},
		{"status enum", "POST", p, base(func(m map[string]any) { m["status"] = "schedule" }), 422, "status"},
		{"settings type", "POST", p, base(func(m map[string]any) { m["settings"] = "x" }), 422, "settings"},
		{"settings bool", "POST", p, base(func(m map[string]any) { m["settings"] = map[string]any{"flip_sound": "x"} }), 422, "settings.flip_sound"},
		{"settings background max", "POST", p, base(func(m map[string]any) { m["settings"] = map[string]any{"background": long(2049)} }), 422, "settings.background"},
		{"settings animation max", "POST", p, base(func(m map[string]any) { m["settings"] = map[string]any{"animation_type": long(256)} }), 422, "settings.animation_type"},
		{"settings image_display max", "POST", p, base(func(m map[string]any) { m["settings"] = map[string]any{"image_display": long(256)} }), 422, "settings.image_display"},
		{"settings pdf_password max", "POST", p, base(func(m map[string]any) { m["settings"] = map[string]any{"pdf_password": long(256)} }), 422, "settings.pdf_password"},
		{"settings privacy max", "POST", p, base(func(m map[string]any) { m["settings"] = map[string]any{"pdf_privacy_status": long(51)} }), 422, "settings.pdf_privacy_status"},
		{"removed fields ignored", "POST", p, base(func(m map[string]any) { m["copyright_enabled"] = true; m["downloadable_pdf"] = "full" }), 201, ""},
	}
	runValidation(t, h, key, "", cases)
}

func TestValidationAdmin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cases := []vcase{
		{"name required", "POST", "/workspaces", map[string]any{"plan": "pro"}, 422, "name"},
		{"name max", "POST", "/workspaces", map[string]any{"name": long(256), "plan": "pro"}, 422, "name"},
		{"plan enum", "POST", "/workspaces", map[string]any{"name": "a", "plan": "gold"}, 422, "plan"},
		{"plan required", "PUT", "/workspaces/1", map[string]any{}, 422, "plan"},
		{"id int", "PUT", "/workspaces/abc", map[string]any{"plan": "pro"}, 404, ""},
		{"unknown workspace", "PUT", "/workspaces/999", map[string]any{"plan": "pro"}, 404, ""},
		{"scopes required", "POST", "/workspaces/1/keys", map[string]any{"name": "k"}, 422, "scopes"},
		{"scopes empty", "POST", "/workspaces/1/keys", map[string]any{"scopes": []any{}}, 422, "scopes"},
		{"scope unknown", "POST", "/workspaces/1/keys", map[string]any{"scopes": []any{"books:read", "books:delete"}}, 422, "scopes.1"},
		{"mode enum", "POST", "/workspaces/1/keys", map[string]any{"scopes": []any{"*"}, "mode": "prod"}, 422, "mode"},
		{"key for unknown workspace", "POST", "/workspaces/999/keys", map[string]any{"scopes": []any{"*"}}, 404, ""},
		{"rotate unknown", "POST", "/keys/999/rotate", nil, 404, ""},
		{"revoke unknown", "DELETE", "/keys/999", nil, 404, ""},
	}
	w := h.adminDo(t, "POST", "/workspaces", map[string]any{"name": "first", "plan": "free"})
	require.Equal(t, 201, w.Status)
	for i := range cases {
		cases[i].path = "/admin/v1" + cases[i].path
	}
	runValidation(t, h, h.admin, "", cases)
}
