package httpapi

import (
	"context"
	"flipbook/api"
	"fmt"
	"strings"

	"flipbook/actors/convert"
	"flipbook/storage"
)

// Create from template (spec §4.1.2): content items of a WordPress site (posts, pages) or a
// WooCommerce shop (products) are drawn onto page images with a built-in template
// (actors/convert/templates.go) and become a draft book. Item images are fetched under the
// rules of fetch.go; one that cannot be had is a placeholder box, never a failed request.

// sourceTypes are the source_type values each source allows.
var sourceTypes = map[string][]string{
	"wordpress":   {"posts", "pages"},
	"woocommerce": {"products"},
}

func (s *Service) CreateFromTemplate(r *api.Request) (*api.Result, error) {
	source, sourceType := r.Str("source"), r.Str("source_type")
	v := api.Validation{}
	if !api.Contains(sourceTypes[source], sourceType) {
		v.Add("source_type", fmt.Sprintf("must be %s for source %s",
			strings.Join(sourceTypes[source], " or "), source))
	}
	want := convert.TemplateTypeFor(sourceType)
	tpl, found := convert.DefaultTemplate(want)
	if id, ok := r.Int("template_id"); ok {
		switch tpl, found = convert.TemplateByID(id); {
		case !found:
			v.Add("template_id", "does not name a template")
		case tpl.Type != want:
			v.Add("template_id", fmt.Sprintf("names a %s template; source_type %s needs a %s template",
				tpl.Type, sourceType, want))
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, api.ErrInternal() // every type has a default template
	}

	doc := &convert.Document{Template: tpl, Source: source, SourceType: sourceType,
		Meta: templateMeta(r.Params["metadata"]), Items: templateItems(r.Params["content"])}
	f := newFetcher(s.cfg.AllowPrivateTargets)
	defer f.close()
	ctx, cancel := context.WithTimeout(context.Background(), f.limits.Overall)
	defer cancel()
	pages, err := convert.RenderTemplate(ctx, doc, f.fetch)
	if err != nil {
		return nil, err
	}

	b := newBook(convert.BookTitle(source, sourceType, doc.Meta), "template:"+source, storage.StatusDraft)
	created, err := s.createBookFromImages(r.Auth.Tenant, b, pages, nil)
	if err != nil {
		return nil, err
	}
	return &api.Result{Status: 201, Data: map[string]any{"book": s.bookWire(created)}}, nil
}

func templateMeta(raw any) convert.Metadata {
	m, _ := raw.(map[string]any)
	str := func(k string) string { v, _ := m[k].(string); return v }
	return convert.Metadata{Currency: str("currency"), CurrencySymbol: str("currency_symbol"),
		SiteName: str("site_name"), SiteURL: str("site_url")}
}

func templateItems(raw any) []convert.Item {
	list, _ := raw.([]any)
	out := make([]convert.Item, 0, len(list))
	for _, x := range list {
		m, _ := x.(map[string]any)
		str := func(k string) string { v, _ := m[k].(string); return v }
		strs := func(k string) []string {
			a, _ := m[k].([]any)
			var out []string
			for _, v := range a {
				if s, ok := v.(string); ok {
					out = append(out, s)
				}
			}
			return out
		}
		out = append(out, convert.Item{
			ID: str("id"), Title: str("title"), Author: str("author"), Categories: strs("categories"),
			Content: str("content"), Currency: str("currency"), Date: str("date"),
			Description: str("description"), Excerpt: str("excerpt"), Gallery: strs("gallery"),
			Image: str("image"), Price: str("price"), RegularPrice: str("regular_price"),
			SalePrice: str("sale_price"), ShortDescription: str("short_description"), SKU: str("sku"),
			StockStatus: str("stock_status"), Type: str("type"), URL: str("url"),
		})
	}
	return out
}
