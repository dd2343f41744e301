package httpapi

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/actors/convert"
	"flipbook/storage"
)

const templatePath = "/api/v1/books/create-from-template"

// imageServer serves test images and failure modes for template fetches; it counts requests.
type imageServer struct {
	*httptest.Server
	hits    atomic.Int32
	release chan struct{}
}

var red = color.RGBA{220, 20, 20, 255}

func solidPNG(w, h int, c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// noisePNG is a PNG that does not compress well (about 3*w*h bytes).
func noisePNG(w, h int) []byte {
	rng := rand.New(rand.NewSource(1))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Intn(256))
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func newImageServer(t *testing.T) *imageServer {
	s := &imageServer{release: make(chan struct{})}
	redPNG := solidPNG(300, 200, red)
	big := noisePNG(200, 200)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		switch r.URL.Path {
		case "/red.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(redPNG)
		case "/big.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(big)
		case "/text":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>not an image</html>")
		case "/slow.png":
			select { // answer nothing until the client gives up (or the test ends)
			case <-r.Context().Done():
			case <-s.release:
			}
		case "/redirect":
			http.Redirect(w, r, "/red.png", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { close(s.release); s.Close() })
	return s
}

func allowPrivate(c *Config) { c.AllowPrivateTargets = true }

func product(i int, image string) map[string]any {
	p := map[string]any{
		"id": fmt.Sprint(i), "title": fmt.Sprintf("Product %d", i), "price": "19.99", "regular_price": "24.99",
		"sale_price": "19.99", "sku": fmt.Sprintf("SKU-%d", i), "stock_status": "instock",
		"short_description": "<p>A <strong>fine</strong> product.</p>", "categories": []any{"Shirts"},
	}
	if image != "" {
		p["image"] = image
	}
	return p
}

func productsBody(n int, image string) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = product(i, image)
	}
	return map[string]any{"source": "woocommerce", "source_type": "products", "content": items,
		"metadata": map[string]any{"site_name": "Acme", "currency": "USD", "currency_symbol": "&#36;"}}
}

func postsBody(n int, image string) map[string]any {
	items := make([]any, n)
	for i := range items {
		p := map[string]any{"id": fmt.Sprint(100 + i), "title": fmt.Sprintf("Post &amp; story %d", i), "author": "Jane",
			"date": "2024-05-01T10:00:00", "excerpt": "Short.", "content": "<p>Hello <em>world</em>.</p>"}
		if image != "" {
			p["image"] = image
		}
		items[i] = p
	}
	return map[string]any{"source": "wordpress", "source_type": "posts", "content": items,
		"metadata": map[string]any{"site_name": "Blog", "site_url": "https://blog.example"}}
}

// templatePages returns the decoded page images of a book.
func templatePages(t *testing.T, h *harness, ws int64, rid string) []image.Image {
	t.Helper()
	pages, err := h.svc.Store.Pages(storage.Tenant{Workspace: ws, Mode: storage.ModeLive}, rid)
	require.NoError(t, err)
	var out []image.Image
	for _, p := range pages {
		path, ok := h.svc.Store.Blobs.Path(rid, p.File) // a draft's pages are not served
		require.True(t, ok)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		img, err := jpeg.Decode(bytes.NewReader(data))
		require.NoError(t, err, "page %d is a JPEG", p.Number)
		require.Equal(t, image.Pt(convert.PageWidth, convert.PageHeight), img.Bounds().Size())
		require.Equal(t, convert.PageWidth, p.Width)
		require.Equal(t, convert.PageHeight, p.Height)
		out = append(out, img)
	}
	return out
}

// near reports whether c is within tol of want in every channel (JPEG is lossy).
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(a uint32, b uint8) bool { x := int(a>>8) - int(b); return x <= tol && x >= -tol }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

// showcaseCenter is a point in the product showcase's image box: inside a drawn image, and inside
// a placeholder above its label.
var showcaseCenter = image.Pt(convert.PageWidth/2, convert.PageMargin+60)

var placeholderGrey = color.RGBA{0xd9, 0xdc, 0xe1, 0xff}

func createTemplate(t *testing.T, h *harness, key string, body any) map[string]any {
	t.Helper()
	r := h.do(t, "POST", templatePath, key, body)
	require.Equal(t, 201, r.Status, "%s", r.Body)
	b, ok := r.data()["book"].(map[string]any)
	require.True(t, ok, "%s", r.Body)
	return b
}

func TestTemplateCreateProducts(t *testing.T) {
	t.Parallel()
	srv := newImageServer(t)
	h := newHarness(t, allowPrivate)
	key, ws := h.workspaceKey(t, "company", "live", "*")

	body := productsBody(3, srv.URL+"/red.png")
	body["content"].([]any)[1].(map[string]any)["gallery"] = []any{srv.URL + "/redirect", srv.URL + "/red.png"}
	b := createTemplate(t, h, key, body)
	require.Equal(t, "draft", b["status"])
	require.Equal(t, "Acme – Products", b["name"])
	require.EqualValues(t, 4, b["page_count"], "cover + one page per product")
	require.Equal(t, "ready", b["page_images_status"])
	require.NotEmpty(t, b["thumbnail_url"])
	rid := b["random_id"].(string)

	pages := templatePages(t, h, ws, rid)
	require.Len(t, pages, 4)
	for i, p := range pages[1:] {
		require.True(t, near(p.At(showcaseCenter.X, showcaseCenter.Y), red, 30), "page %d shows the fetched image", i+2)
	}
	res, err := h.http.Get(b["thumbnail_url"].(string))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)

	// The book is readable like any other.
	g := h.do(t, "GET", "/api/v1/books/"+rid, key, nil)
	require.Equal(t, 200, g.Status)
	require.Equal(t, "draft", g.data()["status"])

	// The grid template: 4 products per page.
	body = productsBody(5, srv.URL+"/red.png")
	body["template_id"] = 2
	b = createTemplate(t, h, key, body)
	require.EqualValues(t, 3, b["page_count"])
	require.Len(t, templatePages(t, h, ws, b["random_id"].(string)), 3)

	// template_id null is the default.
	body = productsBody(2, "")
	body["template_id"] = nil
	b = createTemplate(t, h, key, body)
	require.EqualValues(t, 3, b["page_count"])
}

func TestTemplateCreatePosts(t *testing.T) {
	t.Parallel()
	srv := newImageServer(t)
	h := newHarness(t, allowPrivate)
	key, ws := h.workspaceKey(t, "company", "live", "*")

	b := createTemplate(t, h, key, postsBody(2, srv.URL+"/red.png"))
	require.Equal(t, "draft", b["status"])
	require.Equal(t, "Blog – Posts", b["name"])
	require.EqualValues(t, 3, b["page_count"])
	require.NotEmpty(t, b["thumbnail_url"])
	require.Len(t, templatePages(t, h, ws, b["random_id"].(string)), 3)

	// Pages with the digest template (3 per page), no images, no metadata.
	body := postsBody(4, "")
	body["source_type"] = "pages"
	body["template_id"] = 4
	delete(body, "metadata")
	b = createTemplate(t, h, key, body)
	require.Equal(t, "WordPress pages", b["name"])
	require.EqualValues(t, 3, b["page_count"])
	require.Len(t, templatePages(t, h, ws, b["random_id"].(string)), 3)

	// Idempotent replay answers the same book.
	r1 := h.do(t, "POST", templatePath, key, postsBody(1, ""), "Idempotency-Key", "tpl-1")
	require.Equal(t, 201, r1.Status)
	r2 := h.do(t, "POST", templatePath, key, postsBody(1, ""), "Idempotency-Key", "tpl-1")
	require.Equal(t, 201, r2.Status)
	require.Equal(t, "true", r2.Header.Get("X-Idempotent-Replay"))
	require.Equal(t, r1.Body, r2.Body)
}

func TestTemplateRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	with := func(body map[string]any, k string, v any) map[string]any { body[k] = v; return body }
	cases := []vcase{
		{"wordpress products", "POST", templatePath, with(productsBody(1, ""), "source", "wordpress"), 422, "source_type"},
		{"woocommerce posts", "POST", templatePath, with(postsBody(1, ""), "source", "woocommerce"), 422, "source_type"},
		{"woocommerce pages", "POST", templatePath, with(with(postsBody(1, ""), "source", "woocommerce"), "source_type", "pages"), 422, "source_type"},
		{"unknown template", "POST", templatePath, with(productsBody(1, ""), "template_id", 999), 422, "template_id"},
		{"post template for products", "POST", templatePath, with(productsBody(1, ""), "template_id", 3), 422, "template_id"},
		{"product template for posts", "POST", templatePath, with(postsBody(1, ""), "template_id", 1), 422, "template_id"},
		{"product template for pages", "POST", templatePath, with(with(postsBody(1, ""), "source_type", "pages"), "template_id", 2), 422, "template_id"},
		{"every template of the right type", "POST", templatePath, with(postsBody(1, ""), "template_id", 4), 201, ""},
	}
	runValidation(t, h, key, "", cases)

	// Both rules are reported at once.
	r := h.do(t, "POST", templatePath, key, with(with(productsBody(1, ""), "source", "wordpress"), "template_id", 999))
	require.Equal(t, 422, r.Status)
	require.Contains(t, r.details(), "source_type")
	require.Contains(t, r.details(), "template_id")

	// books:write is needed.
	k, _ := h.workspaceKey(t, "company", "live", "books:read")
	r = h.do(t, "POST", templatePath, k, productsBody(1, ""))
	require.Equal(t, 403, r.Status)
}

func TestTemplateValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil) // private targets refused: image URLs below are never fetched
	key := h.workspace(t, "company", "live")
	p := templatePath
	body := func(mod func(b map[string]any)) map[string]any {
		b := productsBody(1, "")
		mod(b)
		return b
	}
	top := func(k string, v any) map[string]any { return body(func(b map[string]any) { b[k] = v }) }
	drop := func(k string) map[string]any { return body(func(b map[string]any) { delete(b, k) }) }
	item := func(k string, v any) map[string]any {
		return body(func(b map[string]any) { b["content"].([]any)[0].(map[string]any)[k] = v })
	}
	dropItem := func(k string) map[string]any {
		return body(func(b map[string]any) { delete(b["content"].([]any)[0].(map[string]any), k) })
	}
	meta := func(k string, v any) map[string]any {
		return body(func(b map[string]any) { b["metadata"].(map[string]any)[k] = v })
	}
	items := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"id": fmt.Sprint(i), "title": "t"}
		}
		return out
	}
	strs := func(n int, s string) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	blocked := "http://127.0.0.1:9/" // a URI the default config refuses to fetch (loopback)
	uri := func(n int) string { return blocked + long(n-len(blocked)) }
	cases := []vcase{
		{"valid", "POST", p, body(func(map[string]any) {}), 201, ""},
		{"source required", "POST", p, drop("source"), 422, "source"},
		{"source enum", "POST", p, top("source", "shopify"), 422, "source"},
		{"source_type required", "POST", p, drop("source_type"), 422, "source_type"},
		{"source_type enum", "POST", p, top("source_type", "orders"), 422, "source_type"},
		{"template_id min", "POST", p, top("template_id", 0), 422, "template_id"},
		{"template_id negative", "POST", p, top("template_id", -1), 422, "template_id"},
		{"template_id not int", "POST", p, top("template_id", 1.5), 422, "template_id"},
		{"template_id not number", "POST", p, top("template_id", true), 422, "template_id"},
		{"template_id ok", "POST", p, top("template_id", 1), 201, ""},
		{"template_id null", "POST", p, top("template_id", nil), 201, ""},
		{"content required", "POST", p, drop("content"), 422, "content"},
		{"content not array", "POST", p, top("content", "x"), 422, "content"},
		{"content 0 items", "POST", p, top("content", []any{}), 422, "content"},
		{"content 51 items", "POST", p, top("content", items(51)), 422, "content"},
		{"content 50 items", "POST", p, body(func(b map[string]any) { b["content"] = items(50); b["template_id"] = 2 }), 201, ""},
		{"content item not object", "POST", p, top("content", []any{"x"}), 422, "content.0"},
		{"id required", "POST", p, dropItem("id"), 422, "content.0.id"},
		{"id not string", "POST", p, item("id", 7), 422, "content.0.id"},
		{"id empty", "POST", p, item("id", ""), 422, "content.0.id"},
		{"title required", "POST", p, dropItem("title"), 422, "content.0.title"},
		{"title 501", "POST", p, item("title", long(501)), 422, "content.0.title"},
		{"author 256", "POST", p, item("author", long(256)), 422, "content.0.author"},
		{"categories 21 items", "POST", p, item("categories", strs(21, "c")), 422, "content.0.categories"},
		{"category 256", "POST", p, item("categories", []any{"a", long(256)}), 422, "content.0.categories.1"},
		{"category not string", "POST", p, item("categories", []any{3}), 422, "content.0.categories.0"},
		{"categories not array", "POST", p, item("categories", "a,b"), 422, "content.0.categories"},
		{"content 50001", "POST", p, item("content", long(50001)), 422, "content.0.content"},
		{"currency 11", "POST", p, item("currency", long(11)), 422, "content.0.currency"},
		{"date 101", "POST", p, item("date", long(101)), 422, "content.0.date"},
		{"description 50001", "POST", p, item("description", long(50001)), 422, "content.0.description"},
		{"excerpt 5001", "POST", p, item("excerpt", long(5001)), 422, "content.0.excerpt"},
		{"gallery 21 items", "POST", p, item("gallery", strs(21, blocked)), 422, "content.0.gallery"},
		{"gallery item not URI", "POST", p, item("gallery", []any{blocked, "not a url"}), 422, "content.0.gallery.1"},
		{"gallery item 2049", "POST", p, item("gallery", []any{uri(2049)}), 422, "content.0.gallery.0"},
		{"gallery item ftp", "POST", p, item("gallery", []any{"ftp://example.com/a.png"}), 422, "content.0.gallery.0"},
		{"image not URI", "POST", p, item("image", "not a url"), 422, "content.0.image"},
		{"image relative", "POST", p, item("image", "/img/a.png"), 422, "content.0.image"},
		{"image 2049", "POST", p, item("image", uri(2049)), 422, "content.0.image"},
		{"price not string", "POST", p, item("price", 19.99), 422, "content.0.price"},
		{"regular_price not string", "POST", p, item("regular_price", 20), 422, "content.0.regular_price"},
		{"sale_price not string", "POST", p, item("sale_price", 18), 422, "content.0.sale_price"},
		{"short_description 5001", "POST", p, item("short_description", long(5001)), 422, "content.0.short_description"},
		{"sku 256", "POST", p, item("sku", long(256)), 422, "content.0.sku"},
		{"stock_status 101", "POST", p, item("stock_status", long(101)), 422, "content.0.stock_status"},
		{"type 51", "POST", p, item("type", long(51)), 422, "content.0.type"},
		{"url not URI", "POST", p, item("url", "shop/p/1"), 422, "content.0.url"},
		{"url 2049", "POST", p, item("url", uri(2049)), 422, "content.0.url"},
		{"metadata not object", "POST", p, top("metadata", "x"), 422, "metadata"},
		{"metadata.currency 11", "POST", p, meta("currency", long(11)), 422, "metadata.currency"},
		{"metadata.currency_symbol 21", "POST", p, meta("currency_symbol", long(21)), 422, "metadata.currency_symbol"},
		{"metadata.site_name 256", "POST", p, meta("site_name", long(256)), 422, "metadata.site_name"},
		{"metadata.site_url not URI", "POST", p, meta("site_url", "acme"), 422, "metadata.site_url"},
		{"metadata.site_url 2049", "POST", p, meta("site_url", uri(2049)), 422, "metadata.site_url"},
		{"metadata null", "POST", p, top("metadata", nil), 201, ""},
		{"optional item fields null", "POST", p, body(func(b map[string]any) {
			it := b["content"].([]any)[0].(map[string]any)
			for _, k := range []string{"author", "categories", "content", "currency", "date", "description", "excerpt",
				"gallery", "image", "price", "regular_price", "sale_price", "short_description", "sku", "stock_status", "type", "url"} {
				it[k] = nil
			}
		}), 201, ""},
		{"every field at its limit", "POST", p, body(func(b map[string]any) {
			b["content"] = []any{map[string]any{
				"id": "1", "title": long(500), "author": long(255), "categories": strs(20, long(255)),
				"content": long(50000), "currency": long(10), "date": long(100), "description": long(50000),
				"excerpt": long(5000), "gallery": strs(20, uri(2048)), "image": uri(2048), "price": "1",
				"regular_price": "2", "sale_price": "1", "short_description": long(5000), "sku": long(255),
				"stock_status": long(100), "type": long(50), "url": uri(2048),
			}}
			b["metadata"] = map[string]any{"currency": long(10), "currency_symbol": long(20),
				"site_name": long(255), "site_url": uri(2048)}
		}), 201, ""},
		{"unknown fields ignored", "POST", p, top("color_scheme", "dark"), 201, ""},
	}
	runValidation(t, h, key, "", cases)

	// Several failures at once are all reported.
	r := h.do(t, "POST", p, key, map[string]any{"source": "x", "content": []any{map[string]any{"title": long(501)}}})
	require.Equal(t, 422, r.Status)
	require.Contains(t, r.details(), "source")
	require.Contains(t, r.details(), "source_type")
	require.Contains(t, r.details(), "content.0.id")
	require.Contains(t, r.details(), "content.0.title")
}

// TestTemplateFetchFailures: an item image that cannot be had leaves a placeholder; the request
// still succeeds.
func TestTemplateFetchFailures(t *testing.T) {
	srv := newImageServer(t)
	restore := SetFetchLimits(FetchLimits{Timeout: 300 * time.Millisecond, Overall: 10 * time.Second,
		MaxBytes: 64 << 10, MaxRedirects: 3})
	t.Cleanup(restore)
	require.Greater(t, len(noisePNG(200, 200)), 64<<10, "big.png must exceed the test cap")

	h := newHarness(t, allowPrivate)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	for _, c := range []struct{ name, path string }{
		{"404", "/missing.png"},
		{"not an image", "/text"},
		{"over the size cap", "/big.png"},
		{"slow server", "/slow.png"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			b := createTemplate(t, h, key, productsBody(1, srv.URL+c.path))
			require.Less(t, time.Since(start), 5*time.Second)
			require.EqualValues(t, 2, b["page_count"])
			pages := templatePages(t, h, ws, b["random_id"].(string))
			require.True(t, near(pages[1].At(showcaseCenter.X, showcaseCenter.Y), placeholderGrey, 12),
				"placeholder expected, got %v", pages[1].At(showcaseCenter.X, showcaseCenter.Y))
		})
	}

	// Mixed: the good image is drawn, the bad one is a placeholder.
	body := productsBody(2, "")
	body["content"].([]any)[0].(map[string]any)["image"] = srv.URL + "/red.png"
	body["content"].([]any)[1].(map[string]any)["image"] = srv.URL + "/missing.png"
	b := createTemplate(t, h, key, body)
	pages := templatePages(t, h, ws, b["random_id"].(string))
	require.True(t, near(pages[1].At(showcaseCenter.X, showcaseCenter.Y), red, 30))
	require.True(t, near(pages[2].At(showcaseCenter.X, showcaseCenter.Y), placeholderGrey, 12))
}

// TestTemplatePrivateTargetRefused: with AllowPrivateTargets off, a loopback image URL is never
// even connected to.
func TestTemplatePrivateTargetRefused(t *testing.T) {
	t.Parallel()
	srv := newImageServer(t)
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	localhost := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	body := productsBody(2, "")
	body["content"].([]any)[0].(map[string]any)["image"] = srv.URL + "/red.png"
	body["content"].([]any)[1].(map[string]any)["image"] = localhost + "/red.png" // through DNS
	b := createTemplate(t, h, key, body)
	require.EqualValues(t, 0, srv.hits.Load(), "the fetcher must not connect to a loopback address")
	pages := templatePages(t, h, ws, b["random_id"].(string))
	for _, p := range pages[1:] {
		require.True(t, near(p.At(showcaseCenter.X, showcaseCenter.Y), placeholderGrey, 12))
	}
}

// Create from template: the item images' fetches are bounded by FetchLimits.Overall, after
// which an image "cannot be had" and is a placeholder (DECISIONS "Placeholders": "Neither
// fails the request: a 201 always follows a valid body"). The bound covered the whole render,
// which returned the context's error once it passed: a 500 (found by a review).
func TestTemplateOverallFetchBound(t *testing.T) {
	srv := newImageServer(t)
	restore := SetFetchLimits(FetchLimits{Timeout: 400 * time.Millisecond, Overall: time.Second,
		MaxBytes: 15 << 20, MaxRedirects: 3})
	t.Cleanup(restore)
	h := newHarness(t, allowPrivate)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	// 16 products whose image host never answers: 4 fetches at a time of 400 ms each = 1.6 s,
	// past the 1 s bound of all the fetches.
	r := h.do(t, "POST", templatePath, key, productsBody(16, srv.URL+"/slow.png"))
	require.Equal(t, 201, r.Status, "slow images must become placeholders, not fail the request: %s", r.Body)
	b := r.data()["book"].(map[string]any)
	require.EqualValues(t, 17, b["page_count"])
}
