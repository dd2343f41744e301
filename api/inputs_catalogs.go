package api

import (
	"time"

	"flipbook/actors"
)

// The input structs of the catalog, template, bulk settings and Shopify operations (typed.go).
// What a tag cannot say is set where the table declares the operation (Adjust): enums whose
// values are a variable (CatalogSources, ShopifyTopics), the product entry of an items array
// (productParams, with the forbidden template and styling fields) and the bulk settings
// object (BulkSettingsParams). Those stay maps: their keys' presence and nulls are what the catalog sync and the bulk supervisor read.

// CatalogPath names one catalog by its path value (spec §4.8): the input of catalogs.get and
// catalogs.delete, embedded in the inputs of the operations under a catalog.
type CatalogPath struct {
	Catalog int64 `param:"catalog,path,required" min:"1"`
}

// CatalogPage is the page of a catalog list (spec §4.8): embedded in CatalogList and
// CatalogItemList.
type CatalogPage struct {
	Limit  *int64 `param:"limit,query" min:"1" max:"200" desc:"per page (default 25)"` // MaxCatalogLimit, DefaultCatalogLimit
	Cursor string `param:"cursor,query" max:"256" desc:"meta.next_cursor of the previous page"`
}

// CatalogList is the input of catalogs.list (spec §4.8).
type CatalogList struct {
	CatalogPage
}

// CatalogCreate is the input of catalogs.create (spec §4.8). Metadata, SourceURL and
// TemplateKey tell absent from null: an update changes only what the request gives.
type CatalogCreate struct {
	Name        string                       `param:"name,body,required" max:"255" minlen:"1"`
	ExternalID  *string                      `param:"external_id,body,nullable" max:"255" desc:"the catalog's id in the source; with source, names the catalog to update"`
	Source      string                       `param:"source,body" desc:"default custom"` // enum: CatalogSources
	SourceURL   actors.Opt[string]           `param:"source_url,body,nullable" max:"2048" format:"uri"`
	Metadata    actors.Opt[[]map[string]any] `param:"metadata,body,nullable" maxitems:"100" desc:"free-form catalog data (objects; product data only: template and styling fields are refused)"` // MaxCatalogMetadata; items refuse ForbiddenProductFields
	TemplateKey actors.Opt[string]           `param:"template_key,body,nullable" max:"64" desc:"the template renders use by default: a template key or id (GET /templates)"`
	Items       []map[string]any             `param:"items,body" maxitems:"500" desc:"initial products (as bulk upsert entries), imported by the catalog's first sync job"` // MaxCatalogCreateItems; items: productParams
}

// CatalogItemList is the input of catalogs.items (spec §4.8).
type CatalogItemList struct {
	CatalogPath
	CatalogPage
}

// CatalogAvailability is the input of catalogs.availability (spec §4.8).
type CatalogAvailability struct {
	CatalogPath
	Items      []map[string]any `param:"items,body,required" minitems:"1" maxitems:"1000"` // MaxAvailabilityItems; items: availabilityParams
	SnapshotAt *time.Time       `param:"snapshot_at,body" desc:"when the availability was read; an item with newer availability is not overwritten"`
}

// CatalogItemDelete is the input of catalogs.delete_item (spec §4.8).
type CatalogItemDelete struct {
	CatalogPath
	Item int64 `param:"item,path,required" min:"1"`
}

// CatalogBulkUpsert is the input of catalogs.bulk_upsert (spec §4.8).
type CatalogBulkUpsert struct {
	CatalogPath
	Items []map[string]any `param:"items,body,required" minitems:"1" maxitems:"500"` // MaxUpsertItems; items: productParams
}

// CatalogRender is the input of catalogs.render (spec §4.8).
type CatalogRender struct {
	CatalogPath
	Items      []string       `param:"items,body,required" minitems:"1" maxitems:"250" itemmax:"255" itemminlen:"1" desc:"the products, in page order: item ids, or external item keys (product id, or product id:variant id)"` // MaxRenderItems
	Cover      *RenderCover   `param:"cover,body,nullable"`
	Settings   *KonvaSettings `param:"settings,body,nullable"`
	Status     string         `param:"status,body" enum:"draft|publish" desc:"default draft"`
	TemplateID *int64         `param:"template_id,body" min:"1" desc:"a product template (GET /templates); default: the catalog's template_key, else the default product template"`
	Title      *string        `param:"title,body,nullable" max:"255" desc:"the book's name (default: the cover title, else the catalog's name)"`
}

// RenderCover is the cover page of a catalog render (CatalogRender).
type RenderCover struct {
	Title       *string `param:"title,body,nullable" max:"255"`
	Description *string `param:"description,body,nullable,lines" max:"5000"`
	Website     *string `param:"website,body,nullable" max:"2048" format:"uri"`
}

// SyncJobPath is the input of catalogs.sync_job (spec §4.8).
type SyncJobPath struct {
	CatalogPath
	SyncJob int64 `param:"syncJob,path,required" min:"1"`
}

// TemplateList is the input of templates.list (spec §4.8).
type TemplateList struct {
	Type string `param:"type,query" max:"64" desc:"product or post"`
}

// BulkBatchPath names one bulk settings batch by its path value: the input of
// bulk_settings.get, bulk_settings.cancel and bulk_settings.retry (spec §4.1).
type BulkBatchPath struct {
	Batch string `param:"batch,path,required" max:"64"`
}

// BulkSettingsCreate is the input of bulk_settings.create (spec §4.1).
type BulkSettingsCreate struct {
	Books    []BulkBook     `param:"books,body,required" minitems:"1" maxitems:"1000" desc:"the books to change, each with the settings_revision it had when the client read it (GET /books, the summary)"` // MaxBulkBooks
	Settings map[string]any `param:"settings,body,required" desc:"the settings to apply (spec §4.1.1); at least one key"`                                                                                   // props: BulkSettingsParams
}

// BulkBook is one book of a bulk settings batch (BulkSettingsCreate).
type BulkBook struct {
	ID               string `param:"id,body,required" max:"64" desc:"a book's random_id"`
	SettingsRevision string `param:"settings_revision,body,required" max:"64"` // MaxSettingsRevision
}

// BulkSettingsSummary is the input of bulk_settings.summary (spec §4.1).
type BulkSettingsSummary struct {
	BookIDs []string `param:"book_ids,body,required" minitems:"1" maxitems:"1000" itemmax:"64" desc:"book random_ids"` // MaxBulkBooks
}

// ShopifyWebhook is the input of integrations.shopify_webhooks (spec §4.10).
type ShopifyWebhook struct {
	Topic      string         `param:"topic,body,required"` // enum: ShopifyTopics
	ShopDomain string         `param:"shopDomain,body,required" max:"255" desc:"the shop's myshopify.com domain; must equal payload.shop_domain"`
	Payload    ShopifyPayload `param:"payload,body,required" desc:"the webhook's body as Shopify sent it (fields other than these are ignored)"`
}

// ShopifyPayload is a GDPR webhook's body (ShopifyWebhook): the fields the service reads.
type ShopifyPayload struct {
	ShopDomain  string                 `param:"shop_domain,body,required" max:"255"`
	ShopID      int64                  `param:"shop_id,body,required"`
	Customer    *ShopifyCustomer       `param:"customer,body,nullable" desc:"required for the customers/* topics, with an email or an id"`
	DataRequest *ShopifyDataRequestRef `param:"data_request,body,nullable"`
}

// ShopifyCustomer is the customer of a customers/* GDPR webhook (ShopifyPayload).
type ShopifyCustomer struct {
	ID    *int64 `param:"id,body"`
	Email string `param:"email,body" max:"255" format:"email"`
}

// ShopifyDataRequestRef is the data request of a customers/data_request GDPR webhook
// (ShopifyPayload).
type ShopifyDataRequestRef struct {
	ID *int64 `param:"id,body"`
}

// ShopifyWorkspaceName is the input of integrations.shopify_workspace_name (spec §4.10).
type ShopifyWorkspaceName struct {
	WorkspaceName string  `param:"workspace_name,body,required" max:"255" minlen:"1"`
	WorkspaceSlug *string `param:"workspace_slug,body" max:"255" minlen:"1" desc:"lowercase letters, digits and hyphens, unique across all workspaces; derived from the name when absent"`
}
