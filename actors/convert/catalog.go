package convert

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"flipbook/storage"
)

// KindCatalog is the upload file kind of a catalog render (POST /catalogs/{catalog}/render):
// the file is a CatalogDoc in JSON, drawn with a product template by the conversion pipeline.
const KindCatalog = "catalog"

// CatalogRenderTimeout bounds one catalog render (its image fetches included).
const CatalogRenderTimeout = 3 * time.Minute

// Cover is the cover page of a catalog render.
type Cover struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Website     string `json:"website"`
}

// CatalogDoc is what a catalog render draws: the products chosen, in order, with a template.
type CatalogDoc struct {
	TemplateID int64  `json:"template_id"`
	Title      string `json:"title"` // the book's name (the footer of every page)
	Cover      Cover  `json:"cover"`
	Currency   string `json:"currency"`
	Items      []Item `json:"items"`
}

// renderCatalogFile draws the CatalogDoc at src into page files under work, with the text each
// page was drawn with (o.Fetch fetches the product images).
func renderCatalogFile(ctx context.Context, src, work string, o Options) (*Result, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	var cd CatalogDoc
	if err := json.Unmarshal(data, &cd); err != nil {
		return nil, fmt.Errorf("catalog render: %w", err)
	}
	tpl, ok := TemplateByID(cd.TemplateID)
	if !ok || tpl.Type != TemplateProduct {
		return nil, fail(fmt.Sprintf("template %d is not a product template", cd.TemplateID))
	}
	rctx, cancel := context.WithTimeout(ctx, CatalogRenderTimeout)
	defer cancel()
	cover := cd.Cover
	doc := &Document{Template: tpl, Source: "catalog", SourceType: "products", Title: cd.Title, Cover: &cover,
		Meta: Metadata{Currency: cd.Currency, SiteName: cd.Cover.Title, SiteURL: cd.Cover.Website}, Items: cd.Items}
	pages, err := RenderTemplate(rctx, doc, o.Fetch)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if rctx.Err() != nil {
			return nil, fail("rendering the catalog took longer than " + CatalogRenderTimeout.String())
		}
		return nil, err
	}
	res := &Result{Pages: make([]Page, len(pages))}
	for i, p := range pages {
		path := filepath.Join(work, "page-"+strconv.Itoa(i+1)+".jpg")
		if err := os.WriteFile(path, p.Data, 0o640); err != nil {
			return nil, err
		}
		res.Pages[i] = Page{Path: path, Width: p.Width, Height: p.Height, Links: p.Links}
	}
	if res.Thumb, err = Thumbnail(pages[0].Img); err != nil {
		return nil, err
	}
	// Each page's text is the words it was drawn with, and their boxes (source "render"):
	// exact in every script, where OCR read only what its languages knew, at a second a page.
	if !o.NoText {
		res.Text = make([]storage.PageText, len(pages))
		for i, p := range pages {
			res.Text[i] = *p.Text
		}
	}
	return res, nil
}

// pageLink is a link over r of a template page (fractions of the page).
func pageLink(r image.Rectangle, url string) storage.Link {
	return storage.Link{X: float64(r.Min.X) / PageWidth, Y: float64(r.Min.Y) / PageHeight,
		W: float64(r.Dx()) / PageWidth, H: float64(r.Dy()) / PageHeight, URL: url}
}

// coverWebsite is where a catalog cover shows its website (and the link to it).
var coverWebsite = image.Rect(contentLeft, PageHeight-PageMargin-110, contentRight, PageHeight-PageMargin-70)

// drawCatalogCover draws a catalog render's cover: title, description, product count, website.
func drawCatalogCover(c *canvas, d *Document) {
	c.fill(image.Rect(contentLeft, PageMargin, contentRight, PageMargin+12), colAccent)
	y := 380
	if t := oneLine(d.Cover.Title); t != "" {
		y += c.text(image.Rect(contentLeft, y, contentRight, y+300), t,
			textStyle{size: 68, bold: true, color: colText, maxLines: 3, align: alignCenter}) + 40
	}
	if desc := PlainText(d.Cover.Description); desc != "" {
		y += c.text(image.Rect(contentLeft+40, y, contentRight-40, min(y+520, coverWebsite.Min.Y-120)), desc,
			textStyle{size: 30, color: colBody, leading: 1.4, align: alignCenter}) + 36
	}
	n := len(d.Items)
	noun := "products"
	if n == 1 {
		noun = "product"
	}
	c.text(image.Rect(contentLeft, y, contentRight, y+50), fmt.Sprintf("%d %s", n, noun),
		textStyle{size: 28, color: colMuted, maxLines: 1, align: alignCenter})
	if u := oneLine(d.Cover.Website); u != "" {
		c.text(coverWebsite, u, textStyle{size: 26, color: colAccent, maxLines: 1, align: alignCenter})
	}
	c.fill(image.Rect(contentLeft, PageHeight-PageMargin-40, contentRight, PageHeight-PageMargin-36), colRule)
}

// isWebURL reports whether u is an absolute http(s) URL (the only links pages carry).
func isWebURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != ""
}
