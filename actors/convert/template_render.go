package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"math"
	"strings"
	"sync"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"

	"flipbook/storage"
)

// Page geometry of template books (pixels, portrait).
const (
	PageWidth  = 1131
	PageHeight = 1600
	PageMargin = 64 // white on every side; nothing is drawn in it
)

// Limits of the template renderer.
const (
	// TemplateImageMaxPixels bounds the decoded size of one fetched item image (tighter than
	// MaxPixels: several are decoded at once while a book renders).
	TemplateImageMaxPixels = 30_000_000
	// FetchConcurrency is how many item images one render fetches at once.
	FetchConcurrency = 4
	// pageConcurrency is how many pages one render draws at once (bounds the memory held by
	// fetched images and canvases).
	pageConcurrency = 3
	// maxUpscale bounds how much a small image is enlarged to fill its box.
	maxUpscale  = 4
	jpegQuality = 85
)

const (
	footerHeight = 30
	footerGap    = 18
	// contentBottom is the lowest row item content may use (the footer sits below it).
	contentBottom = PageHeight - PageMargin - footerHeight - footerGap
	contentLeft   = PageMargin
	contentRight  = PageWidth - PageMargin
	contentWidth  = contentRight - contentLeft
)

// Labels drawn in image placeholders.
const (
	LabelImageUnavailable = "Image unavailable"
	LabelNoImage          = "No image"
)

var (
	colText        = color.RGBA{0x1f, 0x23, 0x28, 0xff}
	colBody        = color.RGBA{0x33, 0x38, 0x3f, 0xff}
	colMuted       = color.RGBA{0x6b, 0x72, 0x80, 0xff}
	colRule        = color.RGBA{0xe5, 0xe7, 0xeb, 0xff}
	colPlaceholder = color.RGBA{0xd9, 0xdc, 0xe1, 0xff}
	colAccent      = color.RGBA{0x1e, 0x3a, 0x8a, 0xff}
	colPrice       = color.RGBA{0x0b, 0x6e, 0x4f, 0xff}
)

// Item is one content item (a post, a page or a product) as sent to create-from-template.
// Text fields may hold HTML; the renderer strips it. Image and Gallery are URLs.
type Item struct {
	ID               string
	Title            string
	Author           string
	Categories       []string
	Content          string
	Currency         string
	Date             string
	Description      string
	Excerpt          string
	Gallery          []string
	Image            string
	Price            string
	RegularPrice     string
	SalePrice        string
	ShortDescription string
	SKU              string
	StockStatus      string
	Type             string
	URL              string
}

// Metadata describes the site the items come from.
type Metadata struct {
	Currency       string
	CurrencySymbol string
	SiteName       string
	SiteURL        string
}

// Document is what RenderTemplate draws: a cover and the items laid out with Template.
type Document struct {
	Template Template
	// Title, when set, is the name in the footer of every page (else BookTitle's); Cover, when
	// set, is a catalog render's cover (title, description, website) instead of the site cover.
	Title      string
	Cover      *Cover
	Source     string // wordpress, woocommerce
	SourceType string // posts, pages, products
	Meta       Metadata
	Items      []Item
}

// Fetcher returns the bytes of the image at url. It owns every network rule (schemes, address
// checks, timeouts, size cap); ctx carries the render's overall deadline.
type Fetcher func(ctx context.Context, url string) ([]byte, error)

// RenderTemplate draws doc as JPEG pages of PageWidth×PageHeight: a cover, then the items laid
// out by the template. Item images are fetched with fetch (nil fetches nothing) at most
// FetchConcurrency at a time; an image that cannot be fetched or decoded is drawn as a grey
// placeholder box with a short label, never an error. Only the first page (the cover) keeps its
// decoded Img (the thumbnail source); the others carry just their JPEG bytes, to bound memory.
func RenderTemplate(ctx context.Context, doc *Document, fetch Fetcher) ([]*Image, error) {
	if err := loadFonts(); err != nil {
		return nil, err
	}
	lay := doc.Template.layout
	if lay == nil {
		return nil, errors.New("template has no layout")
	}
	per := doc.Template.ItemsPerPage
	var groups [][]Item
	for i := 0; i < len(doc.Items); i += per {
		groups = append(groups, doc.Items[i:min(i+per, len(doc.Items))])
	}
	total := 1 + len(groups)
	pages := make([]*Image, total)
	errs := make([]error, total)
	fetchSem := make(chan struct{}, FetchConcurrency)
	pageSem := make(chan struct{}, pageConcurrency)
	var wg sync.WaitGroup
	for i := 0; i < total; i++ {
		pageSem <- struct{}{}
		if ctx.Err() != nil { // cancelled (a cancelled batch, or the render's deadline)
			<-pageSem
			break
		}
		wg.Add(1)
		go func(i int) {
			defer func() {
				if v := recover(); v != nil { // a bug must fail this request, not the process
					errs[i] = fmt.Errorf("rendering page %d: panic: %v", i+1, v)
				}
				<-pageSem
				wg.Done()
			}()
			p := &pageInfo{doc: doc, number: i + 1, total: total}
			if i == 0 {
				pages[i], errs[i] = renderPage(ctx, p, nil, coverLayout, fetch, fetchSem, true)
			} else {
				pages[i], errs[i] = renderPage(ctx, p, groups[i-1], lay, fetch, fetchSem, false)
			}
		}(i)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return pages, nil
}

// BookTitle is the name of a book made from items of a site: "<site name> – Products", or
// "WooCommerce products" without a site name. At most 255 characters.
func BookTitle(source, sourceType string, meta Metadata) string {
	label := sourceLabel(sourceType)
	var t string
	if site := oneLine(meta.SiteName); site != "" {
		t = site + " – " + label
	} else {
		platform := map[string]string{"wordpress": "WordPress", "woocommerce": "WooCommerce"}[source]
		if platform == "" {
			t = label
		} else {
			t = platform + " " + strings.ToLower(label)
		}
	}
	if r := []rune(t); len(r) > 255 {
		t = strings.TrimSpace(string(r[:254])) + "…"
	}
	return t
}

func sourceLabel(sourceType string) string {
	switch sourceType {
	case "products":
		return "Products"
	case "pages":
		return "Pages"
	default:
		return "Posts"
	}
}

// pageInfo is the page being drawn.
type pageInfo struct {
	doc           *Document
	number, total int
}

// layout is how a template draws one page of items.
type layout struct {
	// slots lists the image boxes of a page (fixed positions, independent of text).
	slots func(items []Item) []slot
	// draw draws everything but the image boxes.
	draw func(c *canvas, p *pageInfo, items []Item)
	// areas are the boxes of the page's items (links to their url); nil: no links.
	areas func(items []Item) []image.Rectangle
}

// slot is an image box: the image at url drawn to fit r, or a placeholder.
type slot struct {
	url   string
	r     image.Rectangle
	label string // placeholder label when url is "" ("" = leave the box empty)
}

func renderPage(ctx context.Context, p *pageInfo, items []Item, lay *layout, fetch Fetcher, fetchSem chan struct{}, keepImg bool) (*Image, error) {
	var slots []slot
	if lay.slots != nil {
		slots = lay.slots(items)
	}
	imgs := make([]image.Image, len(slots))
	var wg sync.WaitGroup
	for i, s := range slots {
		if s.url == "" || fetch == nil {
			continue
		}
		wg.Add(1)
		go func(i int, s slot) {
			defer func() {
				_ = recover() // a decoder panic on a hostile image: drawn as a placeholder
				wg.Done()
			}()
			select {
			case fetchSem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			data, err := func() ([]byte, error) {
				defer func() { <-fetchSem }()
				return fetch(ctx, s.url)
			}()
			if err != nil {
				return
			}
			imgs[i], _ = fitFetched(ctx, data, s.r.Dx(), s.r.Dy())
		}(i, s)
	}
	wg.Wait()

	c := newCanvas()
	defer c.close()
	for i, s := range slots {
		switch {
		case imgs[i] != nil:
			c.picture(s.r, imgs[i])
		case s.url != "":
			c.placeholder(s.r, LabelImageUnavailable)
		case s.label != "":
			c.placeholder(s.r, s.label)
		}
	}
	lay.draw(c, p, items)
	if p.number > 1 {
		drawFooter(c, p)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, c.img, &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, err
	}
	out := &Image{Data: buf.Bytes(), Ext: "jpg", Width: PageWidth, Height: PageHeight}
	if lay.areas != nil {
		for i, r := range lay.areas(items) {
			// The URL as given: oneLine (PlainText) decodes entities, and "&section=2" in a
			// query became "§ion=2" (found by a review).
			if u := strings.TrimSpace(items[i].URL); isWebURL(u) {
				out.Links = append(out.Links, pageLink(r, u))
			}
		}
	}
	if p.number == 1 && p.doc.Cover != nil && isWebURL(p.doc.Cover.Website) {
		out.Links = append(out.Links, pageLink(coverWebsite, p.doc.Cover.Website))
	}
	out.Text = c.pageText(p.number)
	if keepImg {
		out.Img = c.img
	}
	return out, nil
}

// errImageTooLarge: a fetched image over TemplateImageMaxPixels.
var errImageTooLarge = fmt.Errorf("image is larger than %d megapixels", TemplateImageMaxPixels/1_000_000)

// fitFetched decodes a fetched image (PNG, JPEG, GIF, WebP; at most TemplateImageMaxPixels) and
// scales it to fit w×h, so only the box-sized copy is kept. It is decoded within the process-wide
// decode budget, as editor pages and photos are (CheckImage): its own semaphore of GOMAXPROCS
// decodes let the peak grow with the cores, beside the budget (found by a review).
func fitFetched(ctx context.Context, data []byte, w, h int) (image.Image, error) {
	head, err := ImageHeader(data)
	switch {
	case errors.Is(err, ErrTooLarge):
		return nil, errImageTooLarge
	case err != nil:
		return nil, err
	case head.Pixels() > TemplateImageMaxPixels:
		return nil, errImageTooLarge
	}
	var out image.Image
	err = CheckImage(ctx, data, head, func(img image.Image) error {
		out = fitImage(img, w, h)
		return nil
	})
	return out, err
}

// fitImage scales img to fit inside w×h keeping its aspect ratio (enlarging at most maxUpscale).
func fitImage(img image.Image, w, h int) *image.RGBA {
	b := img.Bounds()
	scale := math.Min(float64(w)/float64(b.Dx()), float64(h)/float64(b.Dy()))
	scale = math.Min(scale, maxUpscale)
	dw := max(1, min(w, int(math.Round(float64(b.Dx())*scale))))
	dh := max(1, min(h, int(math.Round(float64(b.Dy())*scale))))
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	xdraw.BiLinear.Scale(dst, dst.Bounds(), img, b, xdraw.Src, nil)
	return dst
}

// Fonts: the Go fonts, parsed once. A parsed font is safe for concurrent use; faces are not, so
// each canvas makes its own.
var fonts struct {
	once          sync.Once
	regular, bold *opentype.Font
	err           error
}

func loadFonts() error {
	fonts.once.Do(func() {
		if fonts.regular, fonts.err = opentype.Parse(goregular.TTF); fonts.err != nil {
			return
		}
		fonts.bold, fonts.err = opentype.Parse(gobold.TTF)
	})
	return fonts.err
}

// canvas is one page being drawn.
type canvas struct {
	img   *image.RGBA
	faces map[faceKey]*typeface
	sh    *shaper // made at the first face: the lines the Go fonts cannot draw alone
	// What was written: the words with their boxes, and the text blocks (one a text call,
	// as lines), the page's text (pageText).
	words  []storage.Word
	blocks [][]string
}

type faceKey struct {
	bold bool
	size float64
}

func newCanvas() *canvas {
	img := image.NewRGBA(image.Rect(0, 0, PageWidth, PageHeight))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	return &canvas{img: img, faces: map[faceKey]*typeface{}}
}

func (c *canvas) close() {
	for _, f := range c.faces {
		_ = f.Close()
	}
}

func (c *canvas) face(bold bool, size float64) *typeface {
	k := faceKey{bold, size}
	if f, ok := c.faces[k]; ok {
		return f
	}
	ft := fonts.regular
	if bold {
		ft = fonts.bold
	}
	f, err := opentype.NewFace(ft, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		panic(err) // only for invalid options, which are constants here
	}
	if c.sh == nil {
		c.sh = newShaper()
	}
	tf := &typeface{Face: f, bold: bold, size: size, sh: c.sh}
	c.faces[k] = tf
	return tf
}

type align int

const (
	alignLeft align = iota
	alignCenter
	alignRight
)

// textStyle is how a block of text is drawn.
type textStyle struct {
	size     float64
	bold     bool
	color    color.RGBA
	leading  float64 // line height as a multiple of size (default 1.3)
	maxLines int     // 0: as many as fit
	align    align
}

// text draws s word-wrapped inside r, clipped to r (nothing is ever drawn outside it), with an
// ellipsis when it does not fit. It returns the height used (0 when nothing was drawn).
func (c *canvas) text(r image.Rectangle, s string, st textStyle) int {
	r = r.Intersect(c.img.Bounds())
	if s == "" || r.Empty() {
		return 0
	}
	face := c.face(st.bold, st.size)
	m := face.Metrics()
	asc, desc := m.Ascent.Ceil(), m.Descent.Ceil()
	leading := st.leading
	if leading == 0 {
		leading = 1.3
	}
	lh := int(math.Ceil(st.size * leading))
	if r.Dy() < asc+desc {
		return 0
	}
	fit := (r.Dy()-asc-desc)/lh + 1
	if st.maxLines > 0 && st.maxLines < fit {
		fit = st.maxLines
	}
	lines := wrapText(face, s, r.Dx(), fit)
	if len(lines) == 0 {
		return 0
	}
	dst := c.img.SubImage(r).(*image.RGBA)
	for i, l := range lines {
		face.drawLine(dst, lineStart(face, r, l, st.align), r.Min.Y+asc+i*lh, l, st.color)
	}
	c.record(face, r, lines, asc, desc, lh, st.align)
	return (len(lines)-1)*lh + asc + desc
}

// fill paints r (clipped to the page) with col.
func (c *canvas) fill(r image.Rectangle, col color.RGBA) {
	draw.Draw(c.img, r.Intersect(c.img.Bounds()), image.NewUniform(col), image.Point{}, draw.Src)
}

// rule draws a horizontal line of thickness 2 at y across [x0, x1).
func (c *canvas) rule(x0, x1, y int) { c.fill(image.Rect(x0, y, x1, y+2), colRule) }

// border draws a 2-pixel frame just inside r.
func (c *canvas) border(r image.Rectangle, col color.RGBA) {
	c.fill(image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+2), col)
	c.fill(image.Rect(r.Min.X, r.Max.Y-2, r.Max.X, r.Max.Y), col)
	c.fill(image.Rect(r.Min.X, r.Min.Y, r.Min.X+2, r.Max.Y), col)
	c.fill(image.Rect(r.Max.X-2, r.Min.Y, r.Max.X, r.Max.Y), col)
}

// picture draws img (already fitted) centred in r, over white.
func (c *canvas) picture(r image.Rectangle, img image.Image) {
	b := img.Bounds()
	x := r.Min.X + (r.Dx()-b.Dx())/2
	y := r.Min.Y + (r.Dy()-b.Dy())/2
	dst := image.Rect(x, y, x+b.Dx(), y+b.Dy()).Intersect(r)
	draw.Draw(c.img, dst, img, b.Min, draw.Over)
}

// placeholder draws a grey box with a short centred label.
func (c *canvas) placeholder(r image.Rectangle, label string) {
	c.fill(r, colPlaceholder)
	size := math.Max(12, math.Min(28, float64(r.Dy()/6)))
	for size > 12 && measure(c.face(false, size), label) > r.Dx()-16 {
		size -= 2
	}
	face := c.face(false, size)
	m := face.Metrics()
	h := m.Ascent.Ceil() + m.Descent.Ceil()
	y := r.Min.Y + (r.Dy()-h)/2
	c.text(image.Rect(r.Min.X+8, y, r.Max.X-8, y+h), label, textStyle{size: size, color: colMuted, maxLines: 1, align: alignCenter})
}

// price draws a price line: the current price, and the regular price struck through when the
// item is on sale. It returns the height used.
func (c *canvas) price(r image.Rectangle, it *Item, meta *Metadata, size float64) int {
	current, was := itemPrices(it, meta)
	if current == "" {
		return 0
	}
	st := textStyle{size: size, bold: true, color: colPrice, maxLines: 1}
	h := c.text(r, current, st)
	if was == "" || h == 0 {
		return h
	}
	face := c.face(true, size)
	w := min(measure(face, current), r.Dx())
	small := math.Round(size * 0.7)
	if r.Min.X+w+int(size/2) >= r.Max.X {
		// No room beside the price: image.Rect would swap the edges and draw the regular
		// price into the margin (found by a review). The current price stands alone.
		return h
	}
	// The regular price follows the sale price: on its right, or on its left when the price reads
	// right to left (drawn at the right of the line: found by a review).
	sr, salign := image.Rect(r.Min.X+w+int(size/2), r.Min.Y, r.Max.X, r.Max.Y), alignLeft
	if rtl(current) {
		sr, salign = image.Rect(r.Min.X, r.Min.Y, r.Max.X-w-int(size/2), r.Max.Y), alignRight
	}
	sface := c.face(false, small)
	sm := sface.Metrics()
	// align the baselines
	off := face.Metrics().Ascent.Ceil() - sm.Ascent.Ceil()
	sr.Min.Y += off
	if sh := c.text(sr, was, textStyle{size: small, color: colMuted, maxLines: 1, align: salign}); sh > 0 {
		lines := wrapText(sface, was, sr.Dx(), 1)
		if len(lines) == 0 {
			return h
		}
		// struck through where the line was drawn
		sw := min(measure(sface, lines[0]), sr.Dx())
		x := max(sr.Min.X, lineStart(sface, sr, lines[0], salign))
		mid := sr.Min.Y + sm.Ascent.Ceil() - int(small*0.3)
		c.fill(image.Rect(x, mid, x+sw, mid+2), colMuted)
	}
	return h
}

// itemPrices is the price to show and, for an item on sale, the regular price it replaces.
func itemPrices(it *Item, meta *Metadata) (current, was string) {
	sale, regular, price := oneLine(it.SalePrice), oneLine(it.RegularPrice), oneLine(it.Price)
	if sale != "" && regular != "" && sale != regular {
		current, was = sale, regular
	} else if price != "" {
		current = price
	} else if sale != "" {
		current = sale
	} else {
		current = regular
	}
	sym := currencySymbol(it, meta)
	return withCurrency(current, sym), withCurrency(was, sym)
}

var knownSymbols = map[string]string{
	"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CNY": "¥", "AUD": "A$", "CAD": "CA$",
	"NZD": "NZ$", "HKD": "HK$", "SGD": "S$", "MXN": "MX$", "BRL": "R$", "KRW": "₩", "ILS": "₪",
	"RUB": "₽", "TRY": "₺", "UAH": "₴", "VND": "₫", "NGN": "₦", "PHP": "₱", "THB": "฿",
}

// currencySymbol: the item's own currency when it differs from the site's; else the site's symbol
// (WooCommerce sends it HTML-escaped, e.g. "&euro;"), else a symbol for the site's currency code.
func currencySymbol(it *Item, meta *Metadata) string {
	code := strings.ToUpper(oneLine(it.Currency))
	site := strings.ToUpper(oneLine(meta.Currency))
	if code == "" || code == site {
		if s := oneLine(meta.CurrencySymbol); s != "" {
			return s
		}
		code = site
	}
	if s, ok := knownSymbols[code]; ok {
		return s
	}
	return code
}

// withCurrency prefixes a bare amount with the symbol ("$12.00", "SEK 12.00"); a price that
// already carries the symbol or a currency sign is kept as sent.
func withCurrency(p, sym string) string {
	if p == "" || sym == "" || strings.Contains(p, sym) {
		return p
	}
	for _, r := range p {
		if r >= '0' && r <= '9' || r == '.' || r == ',' || r == ' ' || r == '-' || r == '\'' {
			continue
		}
		return p // not a bare amount
	}
	if isLetters(sym) {
		return sym + " " + p
	}
	return sym + p
}

func isLetters(s string) bool {
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
			return false
		}
	}
	return s != ""
}

// stockLabel is WooCommerce's stock status in words.
func stockLabel(s string) string {
	switch v := oneLine(s); strings.ToLower(v) {
	case "instock":
		return "In stock"
	case "outofstock":
		return "Out of stock"
	case "onbackorder":
		return "On backorder"
	default:
		return v
	}
}

// joinNonEmpty joins the non-empty parts with " · ".
func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " · ")
}

func categories(it *Item) string {
	var out []string
	for _, c := range it.Categories {
		if c = oneLine(c); c != "" {
			out = append(out, c)
		}
	}
	return strings.Join(out, ", ")
}

// mainImage is the item's image, or the first gallery image when it has none.
func mainImage(it *Item) string {
	if it.Image != "" {
		return it.Image
	}
	for _, g := range it.Gallery {
		if g != "" {
			return g
		}
	}
	return ""
}

// galleryExtra is up to n gallery images other than the main image, without repeats.
func galleryExtra(it *Item, n int) []string {
	main := mainImage(it)
	seen := map[string]bool{main: true, "": true}
	var out []string
	for _, g := range it.Gallery {
		if len(out) == n {
			break
		}
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}

func productMeta(it *Item) string {
	sku := oneLine(it.SKU)
	if sku != "" {
		sku = "SKU: " + sku
	}
	return joinNonEmpty(sku, stockLabel(it.StockStatus))
}

func byline(it *Item) string {
	author := oneLine(it.Author)
	if author != "" {
		author = "By " + author
	}
	return joinNonEmpty(author, displayDate(it.Date))
}

func firstText(ss ...string) string {
	for _, s := range ss {
		if t := PlainText(s); t != "" {
			return t
		}
	}
	return ""
}

func drawFooter(c *canvas, p *pageInfo) {
	y := PageHeight - PageMargin - footerHeight
	c.rule(contentLeft, contentRight, y-footerGap/2)
	st := textStyle{size: 18, color: colMuted, maxLines: 1}
	num := fmt.Sprintf("%d / %d", p.number, p.total)
	w := measure(c.face(false, 18), num)
	r := image.Rect(contentLeft, y, contentRight, y+footerHeight)
	c.text(image.Rect(r.Max.X-w, r.Min.Y, r.Max.X, r.Max.Y), num, textStyle{size: 18, color: colMuted, maxLines: 1})
	title := p.doc.Title
	if title == "" {
		title = BookTitle(p.doc.Source, p.doc.SourceType, p.doc.Meta)
	}
	c.text(image.Rect(r.Min.X, r.Min.Y, r.Max.X-w-24, r.Max.Y), title, st)
}

// Layouts of the built-in templates.

var coverLayout = &layout{draw: func(c *canvas, p *pageInfo, _ []Item) {
	d := p.doc
	if d.Cover != nil {
		drawCatalogCover(c, d)
		return
	}
	c.fill(image.Rect(contentLeft, PageMargin, contentRight, PageMargin+12), colAccent)
	y := 500
	if site := oneLine(d.Meta.SiteName); site != "" {
		y += c.text(image.Rect(contentLeft, y, contentRight, y+300), site,
			textStyle{size: 68, bold: true, color: colText, maxLines: 3, align: alignCenter}) + 36
	}
	label := sourceLabel(d.SourceType)
	y += c.text(image.Rect(contentLeft, y, contentRight, y+80), label,
		textStyle{size: 48, color: colAccent, maxLines: 1, align: alignCenter}) + 28
	n := len(d.Items)
	noun := strings.ToLower(label)
	if n == 1 {
		noun = strings.TrimSuffix(noun, "s")
	}
	c.text(image.Rect(contentLeft, y, contentRight, y+50), fmt.Sprintf("%d %s", n, noun),
		textStyle{size: 28, color: colMuted, maxLines: 1, align: alignCenter})
	if u := oneLine(d.Meta.SiteURL); u != "" {
		b := PageHeight - PageMargin
		c.text(image.Rect(contentLeft, b-40, contentRight, b), u,
			textStyle{size: 24, color: colMuted, maxLines: 1, align: alignCenter})
	}
	c.fill(image.Rect(contentLeft, PageHeight-PageMargin-60, contentRight, PageHeight-PageMargin-56), colRule)
}}

// Product showcase: one product per page.
var (
	showcaseImage   = image.Rect(contentLeft, PageMargin, contentRight, PageMargin+640)
	showcaseGallery = image.Rect(contentLeft, showcaseImage.Max.Y+16, contentRight, showcaseImage.Max.Y+16+170)
)

const showcaseGalleryN = 4

var showcaseLayout = &layout{
	areas: func(items []Item) []image.Rectangle {
		return []image.Rectangle{image.Rect(contentLeft, PageMargin, contentRight, contentBottom)}
	},
	slots: func(items []Item) []slot {
		it := &items[0]
		out := []slot{{url: mainImage(it), r: showcaseImage, label: LabelNoImage}}
		extra := galleryExtra(it, showcaseGalleryN)
		gap := 16
		w := (showcaseGallery.Dx() - gap*(showcaseGalleryN-1)) / showcaseGalleryN
		for i, g := range extra {
			x := showcaseGallery.Min.X + i*(w+gap)
			out = append(out, slot{url: g, r: image.Rect(x, showcaseGallery.Min.Y, x+w, showcaseGallery.Max.Y)})
		}
		return out
	},
	draw: func(c *canvas, p *pageInfo, items []Item) {
		it := &items[0]
		y := showcaseImage.Max.Y + 28
		if len(galleryExtra(it, showcaseGalleryN)) > 0 {
			y = showcaseGallery.Max.Y + 28
		}
		box := func(h int) image.Rectangle { return image.Rect(contentLeft, y, contentRight, min(y+h, contentBottom)) }
		if h := c.text(box(200), oneLine(it.Title), textStyle{size: 44, bold: true, color: colText, maxLines: 3, leading: 1.2}); h > 0 {
			y += h + 18
		}
		if h := c.price(box(60), it, &p.doc.Meta, 38); h > 0 {
			y += h + 16
		}
		if h := c.text(box(40), productMeta(it), textStyle{size: 22, color: colMuted, maxLines: 1}); h > 0 {
			y += h + 8
		}
		if h := c.text(box(70), categories(it), textStyle{size: 22, color: colMuted, maxLines: 2}); h > 0 {
			y += h + 8
		}
		y += 12
		c.text(box(contentBottom), firstText(it.ShortDescription, it.Description),
			textStyle{size: 26, color: colBody, leading: 1.4})
	},
}

// Product grid: 2×2 products per page.
const gridGap = 32

func gridCell(i int) image.Rectangle {
	w := (contentWidth - gridGap) / 2
	h := (contentBottom - PageMargin - gridGap) / 2
	x := contentLeft + (i%2)*(w+gridGap)
	y := PageMargin + (i/2)*(h+gridGap)
	return image.Rect(x, y, x+w, y+h)
}

func gridImage(cell image.Rectangle) image.Rectangle {
	return image.Rect(cell.Min.X+16, cell.Min.Y+16, cell.Max.X-16, cell.Min.Y+16+320)
}

var gridLayout = &layout{
	areas: func(items []Item) []image.Rectangle {
		out := make([]image.Rectangle, len(items))
		for i := range items {
			out[i] = gridCell(i)
		}
		return out
	},
	slots: func(items []Item) []slot {
		out := make([]slot, len(items))
		for i := range items {
			out[i] = slot{url: mainImage(&items[i]), r: gridImage(gridCell(i)), label: LabelNoImage}
		}
		return out
	},
	draw: func(c *canvas, p *pageInfo, items []Item) {
		for i := range items {
			it := &items[i]
			cell := gridCell(i)
			c.border(cell, colRule)
			x0, x1, bottom := cell.Min.X+16, cell.Max.X-16, cell.Max.Y-16
			y := gridImage(cell).Max.Y + 20
			box := func(h int) image.Rectangle { return image.Rect(x0, y, x1, min(y+h, bottom)) }
			if h := c.text(box(80), oneLine(it.Title), textStyle{size: 28, bold: true, color: colText, maxLines: 2, leading: 1.2}); h > 0 {
				y += h + 12
			}
			if h := c.price(box(40), it, &p.doc.Meta, 28); h > 0 {
				y += h + 10
			}
			if h := c.text(box(30), productMeta(it), textStyle{size: 18, color: colMuted, maxLines: 1}); h > 0 {
				y += h + 10
			}
			c.text(box(bottom), firstText(it.ShortDescription, it.Description),
				textStyle{size: 20, color: colBody, leading: 1.35})
		}
	},
}

// Article: one post or page per page.
var articleImage = image.Rect(contentLeft, PageMargin, contentRight, PageMargin+560)

var articleLayout = &layout{
	slots: func(items []Item) []slot {
		if u := mainImage(&items[0]); u != "" {
			return []slot{{url: u, r: articleImage}}
		}
		return nil
	},
	draw: func(c *canvas, p *pageInfo, items []Item) {
		it := &items[0]
		y := PageMargin
		if mainImage(it) != "" {
			y = articleImage.Max.Y + 32
		}
		box := func(h int) image.Rectangle { return image.Rect(contentLeft, y, contentRight, min(y+h, contentBottom)) }
		if h := c.text(box(260), oneLine(it.Title), textStyle{size: 48, bold: true, color: colText, maxLines: 4, leading: 1.2}); h > 0 {
			y += h + 18
		}
		if h := c.text(box(40), byline(it), textStyle{size: 24, color: colMuted, maxLines: 1}); h > 0 {
			y += h + 8
		}
		if h := c.text(box(40), categories(it), textStyle{size: 20, color: colMuted, maxLines: 1}); h > 0 {
			y += h + 8
		}
		if y+20 < contentBottom {
			c.rule(contentLeft, contentRight, y+8)
		}
		y += 30
		c.text(box(contentBottom), firstText(it.Content, it.Excerpt, it.Description),
			textStyle{size: 27, color: colBody, leading: 1.45})
	},
}

// Post digest: three posts or pages per page.
const (
	digestGap   = 32
	digestThumb = 360
)

func digestRow(i int) image.Rectangle {
	h := (contentBottom - PageMargin - 2*digestGap) / 3
	y := PageMargin + i*(h+digestGap)
	return image.Rect(contentLeft, y, contentRight, y+h)
}

func digestImage(row image.Rectangle) image.Rectangle {
	return image.Rect(row.Min.X, row.Min.Y, row.Min.X+digestThumb, row.Min.Y+270)
}

var digestLayout = &layout{
	slots: func(items []Item) []slot {
		var out []slot
		for i := range items {
			if u := mainImage(&items[i]); u != "" {
				out = append(out, slot{url: u, r: digestImage(digestRow(i))})
			}
		}
		return out
	},
	draw: func(c *canvas, p *pageInfo, items []Item) {
		for i := range items {
			it := &items[i]
			row := digestRow(i)
			if i > 0 {
				c.rule(contentLeft, contentRight, row.Min.Y-digestGap/2-1)
			}
			x0 := row.Min.X
			if mainImage(it) != "" {
				x0 += digestThumb + 32
			}
			y := row.Min.Y
			box := func(h int) image.Rectangle { return image.Rect(x0, y, row.Max.X, min(y+h, row.Max.Y)) }
			if h := c.text(box(130), oneLine(it.Title), textStyle{size: 32, bold: true, color: colText, maxLines: 3, leading: 1.2}); h > 0 {
				y += h + 12
			}
			if h := c.text(box(30), byline(it), textStyle{size: 20, color: colMuted, maxLines: 1}); h > 0 {
				y += h + 14
			}
			c.text(box(row.Dy()), firstText(it.Excerpt, it.Content, it.Description),
				textStyle{size: 22, color: colBody, leading: 1.4})
		}
	},
}

// lineStart is where the line l starts in r, aligned by al; a line that reads right to left
// starts at the right when aligned to the start.
func lineStart(face *typeface, r image.Rectangle, l string, al align) int {
	switch {
	case al == alignCenter:
		return r.Min.X + (r.Dx()-measure(face, l))/2
	case al == alignRight, al == alignLeft && rtl(l):
		return r.Max.X - measure(face, l)
	}
	return r.Min.X
}

// record keeps the words of lines as text drew them in r: each word's box (clipped to r) and
// the block's lines of words.
func (c *canvas) record(face *typeface, r image.Rectangle, lines []string, asc, desc, lh int, al align) {
	var block []string
	for i, l := range lines {
		x, y := lineStart(face, r, l, al), r.Min.Y+asc+i*lh
		var kept []string
		for _, w := range face.wordBoxes(l) {
			b := image.Rect(x+w.x0, y-asc, x+w.x1, y+desc).Intersect(r)
			if b.Empty() {
				continue
			}
			c.words = append(c.words, storage.Word{Text: w.text,
				X: float64(b.Min.X) / PageWidth, Y: float64(b.Min.Y) / PageHeight,
				W: float64(b.Dx()) / PageWidth, H: float64(b.Dy()) / PageHeight})
			kept = append(kept, w.text)
		}
		if len(kept) > 0 {
			block = append(block, strings.Join(kept, " "))
		}
	}
	if len(block) > 0 {
		c.blocks = append(c.blocks, block)
	}
}

// pageText is the text written on the page, as page number n's text (source "render").
func (c *canvas) pageText(n int) *storage.PageText {
	blocks := make([]string, len(c.blocks))
	for i, b := range c.blocks {
		blocks[i] = strings.Join(b, "\n")
	}
	words := c.words
	if words == nil {
		words = []storage.Word{}
	}
	return &storage.PageText{Page: n, Source: storage.TextFromRender, Text: strings.Join(blocks, "\n\n"), Words: words}
}
