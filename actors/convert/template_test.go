package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTemplateList(t *testing.T) {
	t.Parallel()
	list := Templates()
	require.GreaterOrEqual(t, len(list), 3)
	ids := map[int64]bool{}
	defaults := map[string]int{}
	for _, tp := range list {
		require.False(t, ids[tp.ID], "duplicate id %d", tp.ID)
		ids[tp.ID] = true
		require.Contains(t, []string{TemplateProduct, TemplatePost}, tp.Type)
		require.NotEmpty(t, tp.Name)
		require.Positive(t, tp.ItemsPerPage)
		if tp.IsDefault {
			defaults[tp.Type]++
		}
		got, ok := TemplateByID(tp.ID)
		require.True(t, ok)
		require.Equal(t, tp.Name, got.Name)
	}
	require.Equal(t, map[string]int{TemplateProduct: 1, TemplatePost: 1}, defaults)
	_, ok := TemplateByID(999)
	require.False(t, ok)

	d, ok := DefaultTemplate(TemplateProduct)
	require.True(t, ok)
	require.Equal(t, 1, d.ItemsPerPage)
	require.Equal(t, 4, d.PageCount(3))
	g, _ := TemplateByID(2)
	require.Equal(t, TemplateProduct, g.Type)
	require.Equal(t, 4, g.ItemsPerPage)
	require.Equal(t, 3, g.PageCount(5))
	require.Equal(t, 2, g.PageCount(4))

	require.Equal(t, TemplateProduct, TemplateTypeFor("products"))
	require.Equal(t, TemplatePost, TemplateTypeFor("posts"))
	require.Equal(t, TemplatePost, TemplateTypeFor("pages"))

	// Templates returns copies.
	list[0].Name = "changed"
	require.NotEqual(t, "changed", Templates()[0].Name)
}

func TestTemplatePlainText(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain  text\twith   spaces", "plain text with spaces"},
		{"<p>Hello <strong>big</strong> world</p><p>Second &amp; last</p>", "Hello big world\n\nSecond & last"},
		{"<!-- wp:paragraph --><p>Block</p><!-- /wp:paragraph -->", "Block"},
		{"a<br>b<br/>c", "a\nb\nc"},
		{"<ul><li>one</li><li>two</li></ul>after", "• one\n• two\n\nafter"},
		{"<script>alert('x<y>')</script>safe<style>p{color:red}</style>", "safe"},
		{"<SCRIPT type=x>bad</SCRIPT>ok", "ok"},
		{`<a href="x>y" title='a>b'>link</a>`, "link"},
		{"1 < 2 and 3 > 2", "1 < 2 and 3 > 2"},
		{"Caf&eacute; &#8211; &#x2014;&nbsp;done", "Café – — done"},
		{"<h2>Title</h2>\n\n\n\n<p>Body</p>", "Title\n\nBody"},
		{"unterminated <b", "unterminated"},
		{"<!DOCTYPE html><html><head><title>T</title></head><body>B</body></html>", "B"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, PlainText(c.in), "input %q", c.in)
	}
	require.Equal(t, "a b", oneLine("<p>a</p>\n<p>b</p>"))
}

func TestTemplateWrapText(t *testing.T) {
	t.Parallel()
	require.NoError(t, loadFonts())
	c := newCanvas()
	defer c.close()
	face := c.face(false, 24)

	lines := wrapText(face, "the quick brown fox jumps over the lazy dog", 120, 10)
	require.Greater(t, len(lines), 1)
	for _, l := range lines {
		require.LessOrEqual(t, measure(face, l), 120, "line %q", l)
	}
	require.Equal(t, "the quick brown fox jumps over the lazy dog", strings.Join(lines, " "))

	// Too long: cut at maxLines with an ellipsis that still fits.
	lines = wrapText(face, strings.Repeat("word ", 500), 200, 3)
	require.Len(t, lines, 3)
	require.True(t, strings.HasSuffix(lines[2], "…"))
	for _, l := range lines {
		require.LessOrEqual(t, measure(face, l), 200)
	}

	// A word longer than a line is broken.
	lines = wrapText(face, strings.Repeat("x", 300), 100, 100)
	require.Greater(t, len(lines), 3)
	for _, l := range lines {
		require.LessOrEqual(t, measure(face, l), 100)
	}
	require.Equal(t, strings.Repeat("x", 300), strings.Join(lines, ""))

	// Paragraphs are separated by one empty line; exact fit is no truncation.
	lines = wrapText(face, "a\n\n\nb", 100, 3)
	require.Equal(t, []string{"a", "", "b"}, lines)
	lines = wrapText(face, "a\n\nb", 100, 2)
	require.Equal(t, []string{"a…"}, lines)
}

// page renders one page of items with tpl (no fetching unless fetch is given) and returns its
// canvas image.
func renderOne(t *testing.T, tpl Template, items []Item, fetch Fetcher) *image.RGBA {
	t.Helper()
	require.NoError(t, loadFonts())
	doc := &Document{Template: tpl, Source: "woocommerce", SourceType: "products",
		Meta: Metadata{SiteName: "Shop", CurrencySymbol: "&euro;"}, Items: items}
	p := &pageInfo{doc: doc, number: 2, total: 2}
	img, err := renderPage(context.Background(), p, items, tpl.layout, fetch, make(chan struct{}, 2), true)
	require.NoError(t, err)
	require.Equal(t, PageWidth, img.Width)
	require.Equal(t, PageHeight, img.Height)
	_, err = jpeg.Decode(bytes.NewReader(img.Data))
	require.NoError(t, err)
	return img.Img.(*image.RGBA)
}

// requireMarginsWhite checks that nothing was drawn in the page margins.
func requireMarginsWhite(t *testing.T, img *image.RGBA) {
	t.Helper()
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if x >= PageMargin && x < PageWidth-PageMargin && y >= PageMargin && y < PageHeight-PageMargin {
				continue
			}
			require.Equal(t, color.RGBA{255, 255, 255, 255}, img.RGBAAt(x, y), "pixel (%d,%d) in the margin", x, y)
		}
	}
}

func TestTemplateLongTextStaysOnPage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 90)[:5000]
	huge := strings.Repeat("<p>"+strings.Repeat("verylongwordwithoutanyspaces", 40)+"</p>", 40)
	product := Item{ID: "1", Title: strings.Repeat("Title ", 100), Description: long, ShortDescription: long,
		SKU: strings.Repeat("S", 255), StockStatus: "instock", Price: "12.50", RegularPrice: "19.99", SalePrice: "12.50",
		Categories: []string{strings.Repeat("c", 255), "two"}, Gallery: []string{"http://g/1", "http://g/2"}}
	post := Item{ID: "2", Title: strings.Repeat("Title ", 100), Content: huge, Author: strings.Repeat("A", 255),
		Date: "2024-05-01T10:00:00", Excerpt: long, Image: "http://i/1"}
	for _, tc := range []struct {
		id    int64
		items []Item
	}{
		{1, []Item{product}}, {2, []Item{product, product, product, product}},
		{3, []Item{post}}, {4, []Item{post, post, post}},
	} {
		tpl, _ := TemplateByID(tc.id)
		img := renderOne(t, tpl, tc.items, nil)
		requireMarginsWhite(t, img)
		// text was drawn right down to the content area's bottom
		inked := false
		for x := PageMargin; x < PageWidth-PageMargin && !inked; x++ {
			for y := contentBottom - 60; y < contentBottom; y++ {
				if img.RGBAAt(x, y) != (color.RGBA{255, 255, 255, 255}) {
					inked = true
					break
				}
			}
		}
		require.True(t, inked, "template %d: long text should fill the page", tc.id)
	}
}

func pngOf(w, h int, c color.RGBA) []byte {
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

func center(r image.Rectangle) image.Point { return image.Pt((r.Min.X+r.Max.X)/2, (r.Min.Y+r.Max.Y)/2) }

func TestTemplateImagesAndPlaceholders(t *testing.T) {
	t.Parallel()
	red := color.RGBA{220, 20, 20, 255}
	var calls atomic.Int32
	fetch := func(ctx context.Context, url string) ([]byte, error) {
		calls.Add(1)
		switch url {
		case "http://ok/red.png":
			return pngOf(300, 200, red), nil
		case "http://ok/text":
			return []byte("not an image"), nil
		}
		return nil, errors.New("404")
	}
	tpl, _ := TemplateByID(1)
	img := renderOne(t, tpl, []Item{{ID: "1", Title: "P", Image: "http://ok/red.png",
		Gallery: []string{"http://ok/red.png", "http://missing/1", "http://ok/text"}}}, fetch)
	require.Equal(t, red, img.RGBAAt(center(showcaseImage).X, center(showcaseImage).Y))
	// the gallery repeats the main image: skipped; the two others are placeholders
	require.EqualValues(t, 3, calls.Load())
	w := (showcaseGallery.Dx() - 16*3) / 4
	first := image.Rect(showcaseGallery.Min.X, showcaseGallery.Min.Y, showcaseGallery.Min.X+w, showcaseGallery.Max.Y)
	require.Equal(t, colPlaceholder, img.RGBAAt(first.Min.X+3, first.Min.Y+3))
	second := first.Add(image.Pt(w+16, 0))
	require.Equal(t, colPlaceholder, img.RGBAAt(second.Min.X+3, second.Min.Y+3))
	requireMarginsWhite(t, img)

	// No image at all: a "No image" placeholder for products, none for posts.
	img = renderOne(t, tpl, []Item{{ID: "1", Title: "P"}}, fetch)
	require.Equal(t, colPlaceholder, img.RGBAAt(showcaseImage.Min.X+3, showcaseImage.Min.Y+3))
	art, _ := TemplateByID(3)
	img = renderOne(t, art, []Item{{ID: "1", Title: "P"}}, fetch)
	require.Equal(t, color.RGBA{255, 255, 255, 255}, img.RGBAAt(articleImage.Min.X+3, articleImage.Min.Y+3))
}

func TestTemplateRenderDocument(t *testing.T) {
	t.Parallel()
	items := make([]Item, 7)
	for i := range items {
		items[i] = Item{ID: "x", Title: "Item", Price: "5", Image: "http://x/img"}
	}
	fetch := func(ctx context.Context, url string) ([]byte, error) {
		return pngOf(50, 50, color.RGBA{0, 0, 255, 255}), nil
	}
	for _, tp := range Templates() {
		doc := &Document{Template: tp, Source: "woocommerce", SourceType: "products", Items: items,
			Meta: Metadata{SiteName: "My <b>Shop</b>", SiteURL: "https://shop.example"}}
		pages, err := RenderTemplate(context.Background(), doc, fetch)
		require.NoError(t, err)
		require.Len(t, pages, tp.PageCount(len(items)), tp.Key)
		require.NotNil(t, pages[0].Img, "the cover keeps its image (thumbnail source)")
		for _, p := range pages {
			require.Equal(t, "jpg", p.Ext)
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(p.Data))
			require.NoError(t, err)
			require.Equal(t, PageWidth, cfg.Width)
			require.Equal(t, PageHeight, cfg.Height)
		}
	}
	require.Equal(t, "My Shop – Products", BookTitle("woocommerce", "products", Metadata{SiteName: "My <b>Shop</b>"}))
	require.Equal(t, "WordPress posts", BookTitle("wordpress", "posts", Metadata{}))
	require.Len(t, []rune(BookTitle("wordpress", "pages", Metadata{SiteName: strings.Repeat("é", 300)})), 255)
}

func TestTemplatePrices(t *testing.T) {
	t.Parallel()
	meta := &Metadata{Currency: "EUR", CurrencySymbol: "&euro;"}
	cur, was := itemPrices(&Item{Price: "10", RegularPrice: "12", SalePrice: "10"}, meta)
	require.Equal(t, "€10", cur)
	require.Equal(t, "€12", was)
	cur, was = itemPrices(&Item{Price: "10"}, &Metadata{Currency: "SEK"})
	require.Equal(t, "SEK 10", cur)
	require.Empty(t, was)
	cur, _ = itemPrices(&Item{Price: "$10", Currency: "USD"}, meta)
	require.Equal(t, "$10", cur)
	cur, _ = itemPrices(&Item{Price: "10", Currency: "GBP"}, meta)
	require.Equal(t, "£10", cur)
	cur, _ = itemPrices(&Item{}, meta)
	require.Empty(t, cur)
	require.Equal(t, "In stock", stockLabel("instock"))
	require.Equal(t, "May 1, 2024", displayDate("2024-05-01T10:00:00"))
	require.Equal(t, "yesterday", displayDate("yesterday"))
}

// hugePNG is a tiny PNG whose header claims w×h pixels.
func hugePNG(w, h uint32) []byte {
	data := pngOf(1, 1, color.RGBA{1, 2, 3, 255})
	binary.BigEndian.PutUint32(data[16:], w)
	binary.BigEndian.PutUint32(data[20:], h)
	binary.BigEndian.PutUint32(data[29:], crc32.ChecksumIEEE(data[12:29]))
	return data
}

func TestTemplateFitFetched(t *testing.T) {
	t.Parallel()
	img, err := fitFetched(context.Background(), pngOf(400, 100, color.RGBA{0, 255, 0, 255}), 200, 200)
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 200, 50), img.Bounds())
	img, err = fitFetched(context.Background(), pngOf(10, 10, color.RGBA{0, 255, 0, 255}), 500, 500)
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 40, 40), img.Bounds(), "enlarged at most 4x")
	_, err = fitFetched(context.Background(), []byte("<html>"), 10, 10)
	require.Error(t, err)
	_, err = fitFetched(context.Background(), hugePNG(8000, 8000), 10, 10)
	require.ErrorIs(t, err, errImageTooLarge)
}

// darkInRightMargin counts the pixels of a page's right margin (x ≥ PageWidth-PageMargin+8,
// past the 8×8 JPEG block of the content edge) that are clearly not white.
func darkInRightMargin(t *testing.T, data []byte) int {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	n := 0
	for y := 0; y < PageHeight; y++ {
		for x := PageWidth - PageMargin + 8; x < PageWidth; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if (r>>8)+(g>>8)+(b>>8) < 3*120 {
				n++
			}
		}
	}
	return n
}

// DECISIONS "Pages": "64-px margins nothing is drawn in … every text box is a clipped
// sub-image, so nothing can be drawn outside it". A sale price as wide as the showcase's line
// left the struck-through regular price a box starting past the line's right end; image.Rect
// swapped the reversed corners, so the regular price and its strike were drawn inside the right
// margin (found by a review). The current price now stands alone.
func TestLongPriceStaysOutOfMargin(t *testing.T) {
	tpl, ok := TemplateByID(1)
	require.True(t, ok)
	render := func(sale string) []byte {
		doc := &Document{Template: tpl, Source: "catalog", SourceType: "products", Title: "Shop",
			Cover: &Cover{Title: "Shop"}, Items: []Item{{ID: "1", Title: "Mug", SalePrice: sale, RegularPrice: "10"}}}
		pages, err := RenderTemplate(context.Background(), doc, nil)
		require.NoError(t, err)
		return pages[1].Data
	}
	require.Zero(t, darkInRightMargin(t, render("9")), "control: a short price leaves the margin white")
	require.Zero(t, darkInRightMargin(t, render(strings.Repeat("9", 64))),
		"a 64-character sale price (the field's maximum) draws into the right margin")
}

// CONVERSION.md "Limits" / DECISIONS "Editor books": "Across the process at most 60 megapixels
// (convert.DecodeBudgetPixels) are decoded at once … so concurrent requests cannot multiply
// the peak". The item images of template and catalog renders were decoded outside that budget
// (their own semaphore of max(2, GOMAXPROCS) decodes of up to 30 megapixels each: found by a
// review); a render now waits while the budget is wholly taken.
func TestFetchedImagesShareTheDecodeBudget(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 1000, 1000))
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	require.NoError(t, decodeBudget.acquire(context.Background(), DecodeBudgetPixels))
	released := false
	release := func() {
		if !released {
			released = true
			decodeBudget.release(DecodeBudgetPixels)
		}
	}
	defer release()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = fitFetched(context.Background(), buf.Bytes(), 100, 100)
	}()
	select {
	case <-done:
		t.Fatal("a fetched item image was decoded while the process-wide decode budget was all in use")
	case <-time.After(time.Second):
	}
	release()
	<-done
}
