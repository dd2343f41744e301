package api

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"

	"flipbook/actors"
	"flipbook/storage"
)

// allBackends is every domain's backend in one interface.
type allBackends interface {
	BookBackend
	AccessBackend
	BrandBackend
	GeneralBackend
	AnalyticsBackend
	WebhookBackend
	CatalogBackend
	BulkSettingsBackend
	ShopifyBackend
}

// inputsTestBackend is every backend for building the table: its methods are never called (a
// method value of the nil embedded interface is taken only through a domain's interface,
// which holds this non-nil struct).
type inputsTestBackend struct{ allBackends }

func (b inputsTestBackend) backends() Backends {
	return Backends{Books: b, Access: b, Brand: b, General: b, Analytics: b, Webhooks: b, Catalogs: b, Bulk: b, Shopify: b}
}

// withPathArgs is what Table does to a declaration: path values get their tool argument names.
func withPathArgs(ps []Param) []Param {
	for i := range ps {
		if ps[i].In == InPath && ps[i].Arg == "" {
			ps[i].Arg = pathArgs[ps[i].Name]
		}
	}
	return ps
}

// oldCatalogParams are the declarations of catalogOperations before its operations were typed.
func oldCatalogParams() map[string][]Param {
	products := &Param{Kind: KObject, Props: productParams(), Refuse: ForbiddenProductFields,
		RefuseMsg: "template and styling fields are not accepted: items carry product data only (the template is chosen when rendering)"}
	pCatalog := func() Param { return Param{Name: "catalog", In: InPath, Kind: KInt, Required: true, Min: F64(1)} }
	limitParam := func() Param {
		return Int("limit", InQuery, 1, MaxCatalogLimit).Describe("per page (default " + strconv.Itoa(DefaultCatalogLimit) + ")")
	}
	return map[string][]Param{
		"catalogs.list": {limitParam(), Str("cursor", InQuery, 256).Describe("meta.next_cursor of the previous page")},
		"catalogs.create": {
			Str("name", InBody, 255).Req().MinLength(1),
			Str("external_id", InBody, 255).Null().Describe("the catalog's id in the source; with source, names the catalog to update"),
			Enum("source", InBody, CatalogSources...).Describe("default custom"),
			Str("source_url", InBody, 2048).WithFormat("uri").Null(),
			{Name: "metadata", In: InBody, Kind: KArray, MaxItems: MaxCatalogMetadata, Nullable: true,
				Items: &Param{Kind: KObject, Refuse: ForbiddenProductFields,
					RefuseMsg: "template and styling fields are not accepted: metadata carries product data only"},
				Desc: "free-form catalog data (objects; product data only: template and styling fields are refused)"},
			Str("template_key", InBody, 64).Null().Describe("the template renders use by default: a template key or id (GET /templates)"),
			{Name: "items", In: InBody, Kind: KArray, MaxItems: MaxCatalogCreateItems, Items: products,
				Desc: "initial products (as bulk upsert entries), imported by the catalog's first sync job"},
		},
		"catalogs.get":    {pCatalog()},
		"catalogs.delete": {pCatalog()},
		"catalogs.items":  {pCatalog(), limitParam(), Str("cursor", InQuery, 256).Describe("meta.next_cursor of the previous page")},
		"catalogs.availability": {pCatalog(),
			{Name: "items", In: InBody, Kind: KArray, Required: true, MinItems: 1, MaxItems: MaxAvailabilityItems,
				Items: &Param{Kind: KObject, Props: availabilityParams()}},
			Time("snapshot_at", InBody).Describe("when the availability was read; an item with newer availability is not overwritten"),
		},
		"catalogs.delete_item": {pCatalog(), {Name: "item", In: InPath, Kind: KInt, Required: true, Min: F64(1)}},
		"catalogs.bulk_upsert": {pCatalog(),
			{Name: "items", In: InBody, Kind: KArray, Required: true, MinItems: 1, MaxItems: MaxUpsertItems, Items: products}},
		"catalogs.render": {pCatalog(),
			{Name: "items", In: InBody, Kind: KArray, Required: true, MinItems: 1, MaxItems: MaxRenderItems,
				Items: &Param{Kind: KString, MaxLen: 255, MinLen: 1},
				Desc:  "the products, in page order: item ids, or external item keys (product id, or product id:variant id)"},
			{Name: "cover", In: InBody, Kind: KObject, Nullable: true, Props: []Param{
				Str("title", InBody, 255).Null(), Str("description", InBody, 5000).Null().Lines(),
				Str("website", InBody, 2048).Null().WithFormat("uri")}},
			{Name: "settings", In: InBody, Kind: KObject, Nullable: true, Props: ParamsOf[KonvaSettings]()},
			Enum("status", InBody, "draft", "publish").Describe("default draft"),
			Int("template_id", InBody, 1, 0).Describe("a product template (GET /templates); default: the catalog's template_key, else the default product template"),
			Str("title", InBody, 255).Null().Describe("the book's name (default: the cover title, else the catalog's name)"),
		},
		"catalogs.sync_job": {pCatalog(), {Name: "syncJob", In: InPath, Kind: KInt, Required: true, Min: F64(1)}},
		"templates.list":    {Str("type", InQuery, 64).Describe("product or post")},
	}
}

// oldBulkParams are the declarations of bulkSettingsOperations before its operations were typed.
func oldBulkParams() map[string][]Param {
	batch := func() Param { return Str("batch", InPath, 64).Req() }
	return map[string][]Param{
		"bulk_settings.create": {
			{Name: "books", In: InBody, Kind: KArray, Required: true, MinItems: 1, MaxItems: MaxBulkBooks,
				Desc: "the books to change, each with the settings_revision it had when the client read it (GET /books, the summary)",
				Items: &Param{Kind: KObject, Props: []Param{
					Str("id", InBody, 64).Req().Describe("a book's random_id"),
					Str("settings_revision", InBody, MaxSettingsRevision).Req(),
				}}},
			{Name: "settings", In: InBody, Kind: KObject, Required: true, Props: BulkSettingsParams(),
				Desc: "the settings to apply (spec §4.1.1); at least one key"},
		},
		"bulk_settings.get":    {batch()},
		"bulk_settings.cancel": {batch()},
		"bulk_settings.retry":  {batch()},
		"bulk_settings.summary": {{Name: "book_ids", In: InBody, Kind: KArray, Required: true, MinItems: 1, MaxItems: MaxBulkBooks,
			Items: &Param{Kind: KString, MaxLen: 64}, Desc: "book random_ids"}},
	}
}

// oldShopifyParams are the declarations of shopifyOperations before its operations were typed.
func oldShopifyParams() map[string][]Param {
	id := func(name string) Param { return Param{Name: name, In: InBody, Kind: KInt} }
	return map[string][]Param{
		"integrations.shopify_webhooks": {
			Enum("topic", InBody, ShopifyTopics...).Req(),
			Str("shopDomain", InBody, 255).Req().Describe("the shop's myshopify.com domain; must equal payload.shop_domain"),
			{Name: "payload", In: InBody, Kind: KObject, Required: true,
				Desc: "the webhook's body as Shopify sent it (fields other than these are ignored)",
				Props: []Param{
					Str("shop_domain", InBody, 255).Req(),
					id("shop_id").Req(),
					{Name: "customer", In: InBody, Kind: KObject, Nullable: true,
						Desc: "required for the customers/* topics, with an email or an id",
						Props: []Param{
							id("id"),
							Str("email", InBody, 255).WithFormat("email"),
						}},
					{Name: "data_request", In: InBody, Kind: KObject, Nullable: true,
						Props: []Param{id("id")}},
				}},
		},
		"integrations.shopify_workspace_name": {
			Str("workspace_name", InBody, 255).Req().MinLength(1),
			Str("workspace_slug", InBody, 255).MinLength(1).
				Describe("lowercase letters, digits and hyphens, unique across all workspaces; derived from the name when absent"),
		},
	}
}

// The typed declarations of the catalog, bulk settings and Shopify operations are exactly the
// parameters they had before (validation, MCP input schemas and the OpenAPI document do not
// change), as the built table has them.
func TestCatalogBulkShopifyInputs(t *testing.T) {
	t.Parallel()
	ops := map[string]*Operation{}
	for _, op := range Table(inputsTestBackend{}.backends(), TableOptions{MaxUploadBody: 1 << 20}) {
		ops[op.ID] = op
	}
	for _, group := range []map[string][]Param{oldCatalogParams(), oldBulkParams(), oldShopifyParams()} {
		for id, want := range group {
			op := ops[id]
			require.NotNil(t, op, id)
			require.Equal(t, withPathArgs(want), op.Params, id)
		}
	}
	// Every operation of the three groups is compared.
	n := len(catalogOperations(inputsTestBackend{})) + len(bulkSettingsOperations(inputsTestBackend{})) +
		len(shopifyOperations(inputsTestBackend{}))
	require.Equal(t, n, len(oldCatalogParams())+len(oldBulkParams())+len(oldShopifyParams()))
}

// Bind fills the inputs as the handlers read them: presence and null of catalog fields, nested
// objects, arrays of objects.
func TestCatalogInputsBind(t *testing.T) {
	t.Parallel()
	var create CatalogCreate
	bindInto(&create, map[string]any{"name": "N", "metadata": nil, "template_key": "grid",
		"items": []any{map[string]any{"external_product_id": "p", "title": "T", "price": nil}}})
	require.Equal(t, "N", create.Name)
	require.Nil(t, create.ExternalID)
	require.Equal(t, actors.Opt[[]map[string]any]{Set: true, Null: true}, create.Metadata)
	require.Equal(t, actors.Val("grid"), create.TemplateKey)
	require.False(t, create.SourceURL.Set)
	require.Equal(t, []map[string]any{{"external_product_id": "p", "title": "T", "price": nil}}, create.Items)

	create = CatalogCreate{}
	bindInto(&create, map[string]any{"metadata": []any{}, "source_url": nil})
	require.Equal(t, actors.Val([]map[string]any{}), create.Metadata)
	require.Equal(t, actors.Opt[string]{Set: true, Null: true}, create.SourceURL)

	var render CatalogRender
	bindInto(&render, map[string]any{"catalog": int64(4), "items": []any{"a", "b:c"}, "cover": map[string]any{"title": "C", "website": nil},
		"settings": map[string]any{"flip_sound": true}, "template_id": int64(2)})
	require.Equal(t, int64(4), render.Catalog)
	require.Equal(t, []string{"a", "b:c"}, render.Items)
	require.Equal(t, "C", *render.Cover.Title)
	require.Nil(t, render.Cover.Website)
	require.True(t, *render.Settings.FlipSound)
	require.Nil(t, render.Settings.AllowFullscreen)
	require.Equal(t, int64(2), *render.TemplateID)
	require.Nil(t, render.Title)

	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var avail CatalogAvailability
	bindInto(&avail, map[string]any{"catalog": int64(1), "items": []any{map[string]any{"external_product_id": "p"}}, "snapshot_at": at})
	require.Equal(t, at, *avail.SnapshotAt)
	require.Len(t, avail.Items, 1)

	var bulk BulkSettingsCreate
	bindInto(&bulk, map[string]any{"books": []any{map[string]any{"id": "b1", "settings_revision": "r"}}, "settings": map[string]any{"title": "x"}})
	require.Equal(t, []BulkBook{{ID: "b1", SettingsRevision: "r"}}, bulk.Books)
	require.Equal(t, map[string]any{"title": "x"}, bulk.Settings)

	var hook ShopifyWebhook
	bindInto(&hook, map[string]any{"topic": ShopifyCustomerRedact, "shopDomain": "s.myshopify.com",
		"payload": map[string]any{"shop_domain": "s.myshopify.com", "shop_id": int64(7), "customer": map[string]any{}}})
	require.Equal(t, int64(7), hook.Payload.ShopID)
	require.NotNil(t, hook.Payload.Customer)
	require.Nil(t, hook.Payload.Customer.ID)
	require.Nil(t, hook.Payload.DataRequest)

	var rename ShopifyWorkspaceName
	bindInto(&rename, map[string]any{"workspace_name": "W"})
	require.Nil(t, rename.WorkspaceSlug)
}

// The enum tags of the catalog and bulk settings outputs name the values the inputs accept and
// the service writes (a tag is a constant string: it cannot name the variable).
func TestCatalogOutputEnums(t *testing.T) {
	t.Parallel()
	enum := func(s *jsonschema.Schema) []string {
		out := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			out[i] = v.(string)
		}
		return out
	}
	require.Equal(t, CatalogSources, enum(SchemaOf[Catalog]().Properties["source"]))
	require.Equal(t, BulkStatuses, enum(SchemaOf[BulkBatch]().Properties["status"]))
	require.Equal(t, BulkItemStatuses, enum(SchemaOf[BulkItem]().Properties["status"]))
	require.Equal(t, DownloadablePDFModes, enum(SchemaOf[BulkBookSettings]().Properties["downloadable_pdf"]))
	jobTypes := []string{storage.SyncCreate, storage.SyncUpdate, storage.SyncBulkUpsert, storage.SyncAvailability}
	require.Equal(t, jobTypes, enum(SchemaOf[SyncJob]().Properties["type"]))
}
