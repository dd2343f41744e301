package api

import "flipbook/storage"

// The resources answers carry (spec §2), as Go types: httpapi builds them, and their response
// schemas are derived from them (SchemaOf), so the two cannot drift apart.

// Book is spec §2.1's flipbook: exactly these fields, plus settings_revision.
type Book struct {
	ID                int64            `json:"id"`
	RandomID          string           `json:"random_id"`
	BatchID           *string          `json:"batch_id"`
	ExternalCatalogID *int64           `json:"external_catalog_id"`
	Name              string           `json:"name"`
	Description       *string          `json:"description"`
	Status            *string          `json:"status"`
	PageCount         int              `json:"page_count"`
	PageImagesStatus  string           `json:"page_images_status" enum:"ready|processing|failed"`
	PreviewURL        *string          `json:"preview_url"`
	ThumbnailURL      *string          `json:"thumbnail_url"`
	EmbedCode         *string          `json:"embed_code"`
	PublishedDate     *string          `json:"published_date"`
	ExpiresAt         *string          `json:"expires_at"`
	BillingExpiresAt  *string          `json:"billing_expires_at"`
	CreatedAt         *string          `json:"created_at" format:"date-time"`
	UpdatedAt         *string          `json:"updated_at" format:"date-time"`
	Settings          storage.Settings `json:"settings"`
	// SettingsRevision changes with every change of PUT /books/{book} or a bulk settings item
	// (spec §4.1: the revision bulk settings batches expect).
	SettingsRevision string `json:"settings_revision"`
}

// Subscriber is spec §2.2's access-list entry.
type Subscriber struct {
	ID        int64   `json:"id"`
	BookID    string  `json:"book_id"`
	Email     string  `json:"email"`
	Type      string  `json:"type" enum:"email|domain"`
	CreatedAt *string `json:"created_at" format:"date-time"`
}

// EmbedDomain is spec §2.3's embed domain.
type EmbedDomain struct {
	ID                 string  `json:"id"`
	Domain             string  `json:"domain"`
	IncludesSubdomains bool    `json:"includes_subdomains"`
	CreatedAt          *string `json:"created_at" format:"date-time"`
}

// TrackedLink is spec §2.7's tracked link; url is the service's redirect (/l/{slug}).
type TrackedLink struct {
	ID        int64          `json:"id"`
	BookID    string         `json:"book_id"`
	Name      string         `json:"name"`
	Slug      string         `json:"slug"`
	Channel   *string        `json:"channel"`
	Kind      string         `json:"kind"`
	Metadata  map[string]any `json:"metadata"`
	URL       string         `json:"url"`
	CreatedAt *string        `json:"created_at" format:"date-time"`
}
