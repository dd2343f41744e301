package httpapi

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
	xdraw "golang.org/x/image/draw"

	"flipbook/actors/convert"
	"flipbook/internal/testutil"
)

// catalogProduct is a product of the browser test: its image is a solid colour.
type catalogProduct struct {
	pid, title string
	col        color.RGBA
}

var catalogBrowserProducts = []catalogProduct{
	{"mug-red", "Red mug", color.RGBA{220, 30, 30, 255}},
	{"cap-green", "Green cap", color.RGBA{30, 170, 60, 255}},
	{"pen-blue", "Blue pen", color.RGBA{40, 90, 230, 255}},
	{"hat-yellow", "Yellow hat", color.RGBA{240, 200, 30, 255}},
}

func (p catalogProduct) url() string { return "https://shop.example/products/" + p.pid }

// countNear counts the pixels of img within tol of want.
func countNear(img image.Image, want color.RGBA, tol int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(img.At(x, y), want, tol) {
				n++
			}
		}
	}
	return n
}

// TestCatalogRenderInBrowser renders four products of a catalog with the grid template and a
// cover, publishes the book, opens it in headless Chromium, and checks the pages: images
// loaded, the products' colours on page 2 where their link areas are, and page 2's four links
// to the products' urls. The screenshot goes to the test's temp dir and docs/img.
func TestCatalogRenderInBrowser(t *testing.T) {
	exe := chromium(t)
	imgs := map[string][]byte{}
	for _, p := range catalogBrowserProducts {
		imgs["/"+p.pid+".png"] = solidPNG(300, 300, p.col)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := imgs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(data)
	}))
	t.Cleanup(srv.Close)

	h := newHarness(t, allowPrivate) // the images are on loopback
	key := h.workspace(t, "company", "live")
	items := make([]map[string]any, len(catalogBrowserProducts))
	refs := make([]any, len(catalogBrowserProducts))
	for i, p := range catalogBrowserProducts {
		items[i] = catProduct(p.pid, "", p.title, "image", srv.URL+"/"+p.pid+".png", "url", p.url(),
			"price", fmt.Sprintf("%d.90", 10+i), "short_description", "A fine "+strings.ToLower(p.title)+".")
		refs[i] = p.pid
	}
	f := newCatalog(t, h, key, "Colours", items...)

	r := h.do(t, "POST", "/api/v1/catalogs/"+itoa(f.id)+"/render", key, map[string]any{
		"items": refs, "template_id": 2, "status": "publish", // links are on by default
		"cover": map[string]any{"title": "Colour collection", "description": "Four products in four colours.",
			"website": "https://shop.example/"}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	require.Equal(t, "2", r.data()["template_id"])
	rid := r.data()["book"].(map[string]any)["random_id"].(string)
	var book map[string]any
	testutil.Eventually(t, 60*time.Second, 10*time.Millisecond, func() error {
		b := h.do(t, "GET", "/api/v1/books/"+rid, key, nil)
		require.Equal(t, 200, b.Status, "%s", b.Body)
		book = b.data()
		require.NotEqual(t, "failed", book["page_images_status"], "%s", b.Body)
		if st := book["page_images_status"]; st != "ready" {
			return fmt.Errorf("the render's page images are %v, want ready", st)
		}
		return nil
	})
	require.EqualValues(t, 2, book["page_count"], "cover + one grid page of four")
	require.Equal(t, "publish", book["status"])
	require.Equal(t, "Colour collection", book["name"])

	// The viewer's page list: page 2 links each product's area to its url, in order.
	pl := h.do(t, "GET", "/view/"+rid+"/pages", "", nil)
	require.Equal(t, 200, pl.Status, "%s", pl.Body)
	pages := pl.data()["pages"].([]any)
	require.Len(t, pages, 2)
	cover := pages[0].(map[string]any)
	coverLinks, _ := cover["links"].([]any)
	require.Len(t, coverLinks, 1, "the cover links its website")
	require.Equal(t, "https://shop.example/", coverLinks[0].(map[string]any)["url"])
	page2 := pages[1].(map[string]any)
	links := page2["links"].([]any)
	require.Len(t, links, 4)
	for i, x := range links {
		require.Equal(t, catalogBrowserProducts[i].url(), x.(map[string]any)["url"], "link %d", i)
	}

	// The page-2 image: each product's colour sits in the image area of its link.
	res, err := h.http.Get(h.base + page2["url"].(string))
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	pageImg, err := jpeg.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	w, hgt := float64(pageImg.Bounds().Dx()), float64(pageImg.Bounds().Dy())
	for i, x := range links {
		l := x.(map[string]any)
		// The grid draws a product's picture at the top of its cell: 16 px in, 320 px high.
		cx := (l["x"].(float64) + l["w"].(float64)/2) * w
		cy := (l["y"].(float64) + (16+160)/float64(convert.PageHeight)) * hgt
		patch := image.Rect(int(cx)-6, int(cy)-6, int(cx)+6, int(cy)+6)
		sub := pageImg.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(patch)
		want := catalogBrowserProducts[i].col
		require.Equal(t, patch.Dx()*patch.Dy(), countNear(sub, want, 24),
			"product %d (%s): the centre of its picture is %v", i, catalogBrowserProducts[i].pid, pageImg.At(int(cx), int(cy)))
	}
	for _, p := range catalogBrowserProducts {
		require.Greater(t, countNear(pageImg, p.col, 24), 200*200, "%s's colour fills its picture", p.pid)
	}

	// The browser.
	ctx := startBrowser(t, exe, 1200, 860, 90*time.Second)

	var info string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(h.base+"/view/"+rid),
		chromedp.WaitVisible(".stf__parent", chromedp.ByQuery), // page-flip has rendered the book
		chromedp.Text("#pageinfo", &info, chromedp.ByID),
	))
	require.Equal(t, "1 / 2", info)
	// Both page images load (the viewer loads the pages around the current one).
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		var loaded int
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(
			`Array.from(document.querySelectorAll('.page img')).filter(function (i) { return i.complete && i.naturalWidth > 0 }).length`,
			&loaded)))
		if loaded != 2 {
			return fmt.Errorf("the viewer loaded %d of both page images", loaded)
		}
		return nil
	})
	var hrefs []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(
		`Array.from(document.querySelectorAll('.page[data-n="2"] a.link')).map(function (a) { return a.href })`, &hrefs)))
	want := make([]string, len(catalogBrowserProducts))
	for i, p := range catalogBrowserProducts {
		want[i] = p.url()
	}
	require.Equal(t, want, hrefs, "the viewer's links on page 2")

	// Turn to page 2 and wait for the flip to land.
	require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		var state string
		require.NoError(t, chromedp.Run(ctx, chromedp.Text("#pageinfo", &info, chromedp.ByID),
			chromedp.Evaluate(`window.flipbook.pageFlip.getState()`, &state)))
		if info != "2 / 2" || state != "read" {
			return fmt.Errorf("the viewer has not turned to page 2: page info %q, flip state %q", info, state)
		}
		return nil
	})
	// The flip's last frame may still be painting: screenshots are taken until one shows every
	// product's colour.
	var shot []byte
	var shotImg image.Image
	missing := ""
	testutil.Eventually(t, 15*time.Second, 50*time.Millisecond, func() error {
		require.NoError(t, chromedp.Run(ctx, chromedp.FullScreenshot(&shot, 100))) // 100: PNG
		var err error
		shotImg, err = png.Decode(bytes.NewReader(shot))
		require.NoError(t, err)
		missing = ""
		for _, p := range catalogBrowserProducts {
			if countNear(shotImg, p.col, 30) <= 1000 {
				missing = p.pid
			}
		}
		if missing != "" {
			return fmt.Errorf("the screenshot does not show every product's colour: %s's is missing", missing)
		}
		return nil
	})

	out := filepath.Join(t.TempDir(), "catalog-render.png")
	require.NoError(t, os.WriteFile(out, shot, 0o644))
	// docs/img keeps a smaller copy (half size) for the documentation.
	b := shotImg.Bounds()
	small := image.NewRGBA(image.Rect(0, 0, b.Dx()/2, b.Dy()/2))
	xdraw.CatmullRom.Scale(small, small.Bounds(), shotImg, b, xdraw.Src, nil)
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	require.NoError(t, enc.Encode(&buf, small))
	if os.Getenv("FLIPBOOK_UPDATE_DOCS") == "" { // FLIPBOOK_UPDATE_DOCS=1 refreshes the picture in docs/
		return
	}
	docs := filepath.Join("..", "docs", "img")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "catalog-render.png"), buf.Bytes(), 0o644))
	t.Logf("screenshot: %s (%d bytes); docs/img/catalog-render.png (%d bytes)", out, len(shot), buf.Len())
}
