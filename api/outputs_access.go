package api

// The answers of the access-list, embed-domain, tracked-link (spec §4.2, §4.3, §4.9) and brand
// (spec §4.6) operations, besides the resources of outputs.go.

// PageMeta is the meta of the page-paginated subscribers list (spec §4.2): from and to are the
// 1-based positions of the page's first and last entries, null on an empty page.
type PageMeta struct {
	Total       int  `json:"total"`
	PerPage     int  `json:"per_page"`
	CurrentPage int  `json:"current_page"`
	LastPage    int  `json:"last_page"`
	From        *int `json:"from"`
	To          *int `json:"to"`
}

// CreatedMeta is the meta of an add that may find the entry already there: created is false
// when it was.
type CreatedMeta struct {
	Created bool `json:"created"`
}

// SubscriberDeleted is the answer of subscribers.delete: the removed entry's id.
type SubscriberDeleted struct {
	Message string `json:"message"`
	ID      int64  `json:"id"`
}

// EmbedDomainsMeta is the meta of embed_domains.list: domains_enabled is true when the list
// restricts embedding (it has entries).
type EmbedDomainsMeta struct {
	Total          int  `json:"total"`
	DomainsEnabled bool `json:"domains_enabled"`
}

// EmbedDomainDeleted is the answer of embed_domains.delete: the removed domain's id.
type EmbedDomainDeleted struct {
	Message string `json:"message"`
	ID      string `json:"id"`
}

// TrackedLinksMeta is the meta of tracked_links.list.
type TrackedLinksMeta struct {
	Total int `json:"total"`
}

// BrandOrNull is the answer of brand.get: the workspace's brand, null when it has none.
type BrandOrNull struct {
	Brand *Brand `json:"brand"`
}

// BrandSaved is the answer of the brand's writes: the brand as saved.
type BrandSaved struct {
	Brand Brand `json:"brand"`
}

// BrandMeta is the meta of brand.get and brand.update: the workspace's plan and whether it
// offers take-over branding.
type BrandMeta struct {
	Plan                      string `json:"plan"`
	TakeOverBrandingAvailable bool   `json:"take_over_branding_available"`
}
