package api

import (
	"encoding/json"

	"flipbook/storage"
)

// The answers of the catalog and template operations (spec §2.5, §4.8), as Go types: httpapi
// builds them, and their response schemas are derived from them (SchemaOf).

// ArrayOrNull is stored JSON that is an array or null (a catalog's metadata, an item's gallery):
// written as it is, null when empty. Its schema is "an array or null" (anyOf), items free-form.
type ArrayOrNull json.RawMessage

// MarshalJSON returns the JSON as it is (null when empty).
func (a ArrayOrNull) MarshalJSON() ([]byte, error) {
	if len(a) == 0 {
		return []byte("null"), nil
	}
	return a, nil
}

// BoolOrNull is a boolean that may be unknown (null); its schema is "a boolean or null" (anyOf).
type BoolOrNull *bool

// Catalog is spec §2.5's catalog ("the service" is metadata, DESIGN §11).
type Catalog struct {
	ID             int64       `json:"id"`
	WorkspaceID    int64       `json:"workspace_id"`
	Name           string      `json:"name"`
	Source         string      `json:"source" enum:"woocommerce|wordpress|shopify|ecwid|custom"` // CatalogSources
	ExternalID     *string     `json:"external_id"`
	SourceURL      *string     `json:"source_url"`
	Status         string      `json:"status" enum:"active|archived"`
	Metadata       ArrayOrNull `json:"metadata"`
	TemplateKey    *string     `json:"template_key"`
	ItemsCount     int64       `json:"items_count"`
	LastSyncedAt   *string     `json:"last_synced_at" format:"date-time"`
	LastSyncStatus *string     `json:"last_sync_status"`
	LastSyncError  *string     `json:"last_sync_error"`
	CreatedAt      *string     `json:"created_at" format:"date-time"`
	UpdatedAt      *string     `json:"updated_at" format:"date-time"`
}

// CatalogItem is spec §2.5's catalog item: storage.CatalogItem with its times rendered as every
// timestamp of the API is and absent JSON values as null. Its fields are in the order the
// answers have always had (the stored item's, then the JSON values and times).
type CatalogItem struct {
	ID                       int64       `json:"id"`
	CatalogID                int64       `json:"catalog_id"`
	Workspace                int64       `json:"workspace_id"`
	Source                   string      `json:"source"`
	ExternalItemKey          string      `json:"external_item_key"`
	ExternalProductID        string      `json:"external_product_id"`
	ExternalVariantID        *string     `json:"external_variant_id"`
	SKU                      *string     `json:"sku"`
	Title                    *string     `json:"title"`
	Status                   *string     `json:"status"`
	ProductType              *string     `json:"product_type"`
	Price                    *string     `json:"price"`
	RegularPrice             *string     `json:"regular_price"`
	SalePrice                *string     `json:"sale_price"`
	Currency                 *string     `json:"currency"`
	Image                    *string     `json:"image"`
	URL                      *string     `json:"url"`
	Description              *string     `json:"description"`
	ShortDescription         *string     `json:"short_description"`
	StockStatus              *string     `json:"stock_status"`
	StockQuantity            *int64      `json:"stock_quantity"`
	Available                BoolOrNull  `json:"available"`
	LastSyncStatus           *string     `json:"last_sync_status"`
	LastSyncError            *string     `json:"last_sync_error"`
	Gallery                  ArrayOrNull `json:"gallery"`
	Categories               ArrayOrNull `json:"categories"`
	Payload                  ArrayOrNull `json:"payload"`
	RawPayload               ArrayOrNull `json:"raw_payload"`
	Availability             ArrayOrNull `json:"availability"`
	LastSyncedAt             *string     `json:"last_synced_at" format:"date-time"`
	LastAvailabilitySyncedAt *string     `json:"last_availability_synced_at" format:"date-time"`
	CreatedAt                *string     `json:"created_at" format:"date-time"`
	UpdatedAt                *string     `json:"updated_at" format:"date-time"`
}

// SyncJob is spec §2.5's sync job.
type SyncJob struct {
	ID         int64               `json:"id"`
	CatalogID  int64               `json:"catalog_id"`
	Type       string              `json:"type" enum:"create|update|bulk_upsert|availability"`
	Status     string              `json:"status" enum:"queued|running|completed|completed_with_errors|failed|cancelled"`
	Progress   SyncProgress        `json:"progress"`
	Errors     []storage.SyncError `json:"errors"`
	Reason     *string             `json:"reason" desc:"why the job ended as it did when that needs saying (a cancel: the catalog was deleted)"`
	SnapshotAt *string             `json:"snapshot_at" format:"date-time" desc:"availability jobs: when the availability was read (the request's snapshot_at)"`
	StartedAt  *string             `json:"started_at" format:"date-time"`
	FinishedAt *string             `json:"finished_at" format:"date-time"`
	CreatedAt  *string             `json:"created_at" format:"date-time"`
	UpdatedAt  *string             `json:"updated_at" format:"date-time"`
}

// SyncProgress counts a sync job's items.
type SyncProgress struct {
	Total     int `json:"total"`
	Processed int `json:"processed"`
	Accepted  int `json:"accepted"`
	Failed    int `json:"failed"`
}

// SyncSummary is spec §2.5's bulk upsert / availability summary (counts as strings, as the spec
// types them).
type SyncSummary struct {
	AcceptedItems string   `json:"accepted_items"`
	Errors        []string `json:"errors"`
	FailedItems   string   `json:"failed_items"`
	Status        string   `json:"status"`
	TotalItems    string   `json:"total_items"`
}

// CatalogOne is the data of catalogs.get and catalogs.delete.
type CatalogOne struct {
	Catalog Catalog `json:"catalog"`
}

// CatalogCreated is the data of catalogs.create: the catalog and the job importing its items.
type CatalogCreated struct {
	Catalog Catalog `json:"catalog"`
	SyncJob SyncJob `json:"sync_job"`
}

// CatalogCreatedMeta is the meta of catalogs.create.
type CatalogCreatedMeta struct {
	Updated bool `json:"updated" desc:"an existing catalog (same source and external_id) was updated"`
}

// CatalogItemsMeta is the meta of catalogs.items: the cursor meta and the catalog.
type CatalogItemsMeta struct {
	CatalogID  int64   `json:"catalog_id"`
	HasMore    bool    `json:"has_more"`
	Limit      int     `json:"limit"`
	NextCursor *string `json:"next_cursor"`
}

// SyncQueued is the data of catalogs.bulk_upsert and catalogs.availability: the summary at
// acceptance and the job.
type SyncQueued struct {
	Summary SyncSummary `json:"summary"`
	SyncJob SyncJob     `json:"sync_job"`
}

// CatalogIDMeta is the meta naming the catalog an answer is about.
type CatalogIDMeta struct {
	CatalogID int64 `json:"catalog_id"`
}

// CatalogItemDeleted is the data of catalogs.delete_item.
type CatalogItemDeleted struct {
	Message string `json:"message"`
}

// CatalogItemDeletedMeta is the meta of catalogs.delete_item: the catalog and the removed item.
type CatalogItemDeletedMeta struct {
	CatalogID int64 `json:"catalog_id"`
	ItemID    int64 `json:"item_id"`
}

// CatalogRendered is the data of catalogs.render: the new book, converting in batch_id, and the
// template it is drawn with.
type CatalogRendered struct {
	BatchID    string    `json:"batch_id"`
	Book       Raw[Book] `json:"book"`
	TemplateID string    `json:"template_id"`
}

// CatalogRenderedMeta is the meta of catalogs.render: the catalog and how many items it drew.
type CatalogRenderedMeta struct {
	CatalogID int64 `json:"catalog_id"`
	Items     int   `json:"items"`
}

// SyncJobOne is the data of catalogs.sync_job.
type SyncJobOne struct {
	SyncJob SyncJob `json:"sync_job"`
}

// Template is a built-in page template (GET /templates) with its thumbnails' URLs.
type Template struct {
	ID           string             `json:"id"`
	Key          string             `json:"key"`
	Name         string             `json:"name"`
	Type         string             `json:"type" enum:"product|post"`
	IsDefault    bool               `json:"is_default"`
	Description  string             `json:"description"`
	ItemsPerPage int                `json:"items_per_page"`
	Thumbnails   TemplateThumbnails `json:"thumbnails"`
}

// TemplateThumbnails are the URLs of a template's thumbnails by size.
type TemplateThumbnails struct {
	Large string `json:"large"`
	Small string `json:"small"`
}

// TemplatesMeta is the meta of templates.list.
type TemplatesMeta struct {
	Count                 int    `json:"count"`
	DefaultTemplateID     string `json:"default_template_id"`
	DefaultTemplateSource string `json:"default_template_source"`
	Type                  string `json:"type" desc:"the type asked for (empty: every type)"`
}
