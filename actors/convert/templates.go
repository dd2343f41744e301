package convert

// Built-in page templates of "create from template" (spec §4.1.2). A template lays out content
// items (blog posts and pages, or shop products) on fixed-size page images; RenderTemplate draws
// them. GET /templates serves this list.

// Template types: which content a template lays out.
const (
	TemplateProduct = "product" // WooCommerce products
	TemplatePost    = "post"    // WordPress posts and pages
)

// Template is one built-in template.
type Template struct {
	ID           int64  `json:"id"`
	Key          string `json:"key"`
	Name         string `json:"name"`
	Type         string `json:"type"` // TemplateProduct or TemplatePost
	IsDefault    bool   `json:"is_default"`
	Description  string `json:"description"`
	ItemsPerPage int    `json:"items_per_page"`

	layout *layout
}

// PageCount is the number of pages a book made with t from n items has: a cover and the item pages.
func (t Template) PageCount(n int) int {
	if t.ItemsPerPage < 1 {
		return 1
	}
	return 1 + (n+t.ItemsPerPage-1)/t.ItemsPerPage
}

var templates = []*Template{
	{ID: 1, Key: "product-showcase", Name: "Product showcase", Type: TemplateProduct, IsDefault: true, ItemsPerPage: 1,
		Description: "One product per page: large image, gallery strip, title, price, SKU and stock, short description.",
		layout:      showcaseLayout},
	{ID: 2, Key: "product-grid", Name: "Product grid", Type: TemplateProduct, ItemsPerPage: 4,
		Description: "Four products per page in a 2x2 grid: image, title, price, SKU and stock, short description.",
		layout:      gridLayout},
	{ID: 3, Key: "article", Name: "Article", Type: TemplatePost, IsDefault: true, ItemsPerPage: 1,
		Description: "One post or page per page: featured image, title, author and date, text.",
		layout:      articleLayout},
	{ID: 4, Key: "post-digest", Name: "Post digest", Type: TemplatePost, ItemsPerPage: 3,
		Description: "Three posts or pages per page: thumbnail, title, author and date, excerpt.",
		layout:      digestLayout},
}

// Templates lists the built-in templates (copies; changing them changes nothing).
func Templates() []Template {
	out := make([]Template, len(templates))
	for i, t := range templates {
		out[i] = *t
	}
	return out
}

// TemplateByID returns the template with id.
func TemplateByID(id int64) (Template, bool) {
	for _, t := range templates {
		if t.ID == id {
			return *t, true
		}
	}
	return Template{}, false
}

// DefaultTemplate returns the default template of a type (TemplateProduct or TemplatePost).
func DefaultTemplate(typ string) (Template, bool) {
	for _, t := range templates {
		if t.Type == typ && t.IsDefault {
			return *t, true
		}
	}
	return Template{}, false
}

// TemplateTypeFor is the template type a source_type needs: products → product, posts and
// pages → post ("" for anything else).
func TemplateTypeFor(sourceType string) string {
	switch sourceType {
	case "products":
		return TemplateProduct
	case "posts", "pages":
		return TemplatePost
	}
	return ""
}
