package httpapi

import (
	"context"
	"fmt"
	"strings"

	"flipbook/actors/convert"
	"flipbook/api"
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

func (s *bookService) CreateFromTemplate(r *api.Request, in *api.TemplateCreate) (*api.Data[api.BookCreated], error) {
	source, sourceType := in.Source, in.SourceType
	v := api.Validation{}
	if !api.Contains(sourceTypes[source], sourceType) {
		v.Add("source_type", fmt.Sprintf("must be %s for source %s",
			strings.Join(sourceTypes[source], " or "), source))
	}
	want := convert.TemplateTypeFor(sourceType)
	tpl, found := convert.DefaultTemplate(want)
	if in.TemplateID != nil {
		switch tpl, found = convert.TemplateByID(*in.TemplateID); {
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
		Meta: convert.Metadata(in.Metadata), Items: make([]convert.Item, len(in.Content))}
	for i, it := range in.Content {
		doc.Items[i] = convert.Item(it)
	}
	f := newFetcher(s.allowPrivate)
	defer f.close()
	// The overall limit bounds the image fetches, not the drawing: a fetch past it fails and
	// its image is a placeholder, as DECISIONS "Placeholders" says. Bounding the render with
	// it made the request a 500 once the fetches ran out of time (found by a review).
	fctx, cancel := context.WithTimeout(context.Background(), f.limits.Overall)
	defer cancel()
	fetch := func(_ context.Context, u string) ([]byte, error) { return f.fetch(fctx, u) }
	pages, err := convert.RenderTemplate(context.Background(), doc, fetch)
	if err != nil {
		return nil, err
	}

	b := newBook(convert.BookTitle(source, sourceType, doc.Meta), "template:"+source, storage.StatusDraft)
	created, err := s.createBookFromImages(r.Auth.Tenant, b, pages, nil)
	if err != nil {
		return nil, err
	}
	return &api.Data[api.BookCreated]{Status: 201, Data: api.BookCreated{Book: api.Raw[api.Book](s.bookWire(created))}}, nil
}
