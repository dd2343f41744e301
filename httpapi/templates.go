package httpapi

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"
	xdraw "golang.org/x/image/draw"

	"flipbook/actors/convert"
	"flipbook/api"
)

// GET /templates (spec §4.8) lists the built-in templates (actors/convert/templates.go). Each
// has thumbnails: its first item page drawn with sample content, served from
// /template-thumbnails/<id>-<size>.jpg (rendered once per process, kept in memory).

// Thumbnail widths.
var templateThumbSizes = map[string]int{"small": 240, "large": 600}

func (s *catalogService) ListTemplates(_ *api.Request, in *api.TemplateList) (*api.Reply[[]api.Template, api.TemplatesMeta], error) {
	typ := strings.TrimSpace(in.Type)
	switch typ {
	case "", convert.TemplateProduct, convert.TemplatePost:
	case "products":
		typ = convert.TemplateProduct
	case "posts", "pages":
		typ = convert.TemplatePost
	default:
		return nil, api.FieldError("type", "must be product or post")
	}
	data := []api.Template{}
	for _, t := range convert.Templates() {
		if typ != "" && t.Type != typ {
			continue
		}
		id := strconv.FormatInt(t.ID, 10)
		thumb := func(size string) string { return s.publicURL + "/template-thumbnails/" + id + "-" + size + ".jpg" }
		thumbs := api.TemplateThumbnails{Large: thumb("large"), Small: thumb("small")} // the sizes of templateThumbSizes
		data = append(data, api.Template{ID: id, Key: t.Key, Name: t.Name, Type: t.Type, IsDefault: t.IsDefault,
			Description: t.Description, ItemsPerPage: t.ItemsPerPage, Thumbnails: thumbs})
	}
	defType := typ
	if defType == "" {
		defType = convert.TemplateProduct // catalogs render products
	}
	def, _ := convert.DefaultTemplate(defType)
	return api.With(data, api.TemplatesMeta{DefaultTemplateID: strconv.FormatInt(def.ID, 10),
		DefaultTemplateSource: "service", Count: len(data), Type: typ}), nil
}

// thumbCache holds rendered template thumbnails by "<id>-<size>".
var thumbCache struct {
	sync.Mutex
	m map[string][]byte
}

// serveTemplateThumb serves /template-thumbnails/<id>-<size>.jpg.
func (s *Service) serveTemplateThumb(ctx *fasthttp.RequestCtx) {
	name, _ := ctx.UserValue("name").(string)
	base, ok := strings.CutSuffix(name, ".jpg")
	idStr, size, ok2 := strings.Cut(base, "-")
	id, err := strconv.ParseInt(idStr, 10, 64)
	width, ok3 := templateThumbSizes[size]
	tpl, found := convert.TemplateByID(id)
	// The id written one way only: the cache is keyed by the name, and "01", "001", "+1"…
	// each rendered and kept a thumbnail of template 1 (found by a review: memory without
	// bound, from an anonymous route). So the cache holds templates × sizes at most.
	if !ok || !ok2 || err != nil || !ok3 || !found || idStr != strconv.FormatInt(id, 10) {
		s.writeError(ctx, api.ErrNotFound("template thumbnail"))
		return
	}
	data, err := templateThumb(tpl, base, width)
	if err != nil {
		s.log.Error("template thumbnail", "template", id, "err", err)
		s.writeError(ctx, api.ErrInternal())
		return
	}
	ctx.Response.Header.Set("Cache-Control", "public, max-age=86400")
	ctx.SetContentType("image/jpeg")
	ctx.SetBody(data)
}

func templateThumb(tpl convert.Template, key string, width int) ([]byte, error) {
	thumbCache.Lock()
	defer thumbCache.Unlock()
	if data, ok := thumbCache.m[key]; ok {
		return data, nil
	}
	items := make([]convert.Item, tpl.ItemsPerPage)
	for i := range items {
		n := strconv.Itoa(i + 1)
		items[i] = convert.Item{ID: n, Title: "Sample product " + n, Price: "49.00", RegularPrice: "59.00", SalePrice: "49.00",
			Currency: "EUR", SKU: "SKU-" + n, StockStatus: "instock", Image: "sample:" + n,
			ShortDescription: "A short description of the product, as the shop writes it.",
			Author:           "Author", Date: "2026-01-01", Excerpt: "The opening lines of a post, as its excerpt gives them.",
			Content: "The text of a post or page. " + strings.Repeat("Its paragraphs follow. ", 20)}
		if tpl.Type == convert.TemplatePost {
			items[i].Title = "Sample post " + n
		}
	}
	doc := &convert.Document{Template: tpl, Source: "sample", SourceType: "products", Title: tpl.Name, Items: items}
	if tpl.Type == convert.TemplatePost {
		doc.SourceType = "posts"
	}
	pages, err := convert.RenderTemplate(context.Background(), doc, sampleImage)
	if err != nil {
		return nil, err
	}
	page := pages[min(1, len(pages)-1)]
	src, _, err := image.Decode(bytes.NewReader(page.Data))
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, width, b.Dy()*width/b.Dx()))
	xdraw.CatmullRom.Scale(dst, dst.Bounds(), src, b, xdraw.Src, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 85}); err != nil {
		return nil, err
	}
	if thumbCache.m == nil {
		thumbCache.m = map[string][]byte{}
	}
	thumbCache.m[key] = buf.Bytes()
	return buf.Bytes(), nil
}

// sampleImage is the "fetcher" of thumbnails: a soft gradient instead of a product photo.
func sampleImage(_ context.Context, u string) ([]byte, error) {
	n, _ := strconv.Atoi(strings.TrimPrefix(u, "sample:"))
	img := image.NewRGBA(image.Rect(0, 0, 400, 300))
	base := []color.RGBA{{0x93, 0xc5, 0xfd, 0xff}, {0xfc, 0xa5, 0xa5, 0xff}, {0x86, 0xef, 0xac, 0xff}, {0xfd, 0xe6, 0x8a, 0xff}}[n%4]
	for y := 0; y < 300; y++ {
		for x := 0; x < 400; x++ {
			f := float64(x+y) / 700
			img.Set(x, y, color.RGBA{uint8(float64(base.R) * (0.7 + 0.3*f)), uint8(float64(base.G) * (0.7 + 0.3*f)),
				uint8(float64(base.B) * (0.7 + 0.3*f)), 0xff})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
