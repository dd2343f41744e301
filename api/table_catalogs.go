package api

// Catalog limits (spec §4.8, §8; docs/CATALOGS.md).
const (
	DefaultCatalogLimit   = 25
	MaxCatalogLimit       = 200
	MaxUpsertItems        = 500
	MaxAvailabilityItems  = 1000
	MaxRenderItems        = 250
	MaxCatalogCreateItems = 500
	MaxCatalogMetadata    = 100 // entries of a catalog's metadata array
)

// CatalogSources are the sources of spec §4.8.
var CatalogSources = []string{"woocommerce", "wordpress", "shopify", "ecwid", "custom"}

// ForbiddenProductFields are template and styling fields: product data only (spec §4.8), so an
// entry carrying one of them is a 422 naming it.
var ForbiddenProductFields = []string{
	"template", "template_id", "template_key", "templates", "layout", "style", "styles", "styling",
	"css", "theme", "font", "fonts", "font_family", "color", "colors", "colour", "colours",
	"background", "background_color", "background_image", "html_template",
}

var (
	syncStatuses = []string{"queued", "running", "completed", "completed_with_errors", "failed", "cancelled"}

	// catalogSchema is spec §2.5's catalog ("the service" is metadata, DESIGN §11).
	catalogSchema = object(
		prop("id", integer), prop("workspace_id", integer), prop("name", str), prop("source", enumOf(CatalogSources...)),
		prop("external_id", strN), prop("source_url", strN), prop("status", enumOf("active", "archived")),
		prop("metadata", nullable(typ("array"))), prop("template_key", strN), prop("items_count", integer),
		prop("last_synced_at", dateTime), prop("last_sync_status", strN), prop("last_sync_error", strN),
		prop("created_at", dateTime), prop("updated_at", dateTime),
	)

	arrN = nullable(typ("array"))

	// catalogItemSchema is spec §2.5's catalog item.
	catalogItemSchema = object(
		prop("id", integer), prop("catalog_id", integer), prop("workspace_id", integer), prop("source", str),
		prop("external_item_key", str), prop("external_product_id", str), prop("external_variant_id", strN),
		prop("sku", strN), prop("title", strN), prop("status", strN), prop("product_type", strN),
		prop("price", strN), prop("regular_price", strN), prop("sale_price", strN), prop("currency", strN),
		prop("image", strN), prop("url", strN), prop("description", strN), prop("short_description", strN),
		prop("stock_status", strN), prop("gallery", arrN), prop("categories", arrN), prop("payload", arrN),
		prop("raw_payload", arrN), prop("availability", arrN), prop("stock_quantity", intN), prop("available", nullable(boolean)),
		prop("last_synced_at", dateTime), prop("last_availability_synced_at", dateTime),
		prop("last_sync_status", strN), prop("last_sync_error", strN), prop("created_at", dateTime), prop("updated_at", dateTime),
	)

	syncErrorSchema = object(prop("index", integer), prop("external_product_id", str), prop("external_variant_id", strN),
		prop("item_id", intN), prop("code", str), prop("message", str))

	// syncJobSchema is spec §2.5's sync job.
	syncJobSchema = object(
		prop("id", integer), prop("catalog_id", integer),
		prop("type", enumOf("create", "update", "bulk_upsert", "availability")), prop("status", enumOf(syncStatuses...)),
		prop("progress", object(prop("total", integer), prop("processed", integer), prop("accepted", integer), prop("failed", integer))),
		prop("errors", arrayOf(syncErrorSchema)),
		prop("reason", strN).describe("why the job ended as it did when that needs saying (a cancel: the catalog was deleted)"),
		prop("snapshot_at", dateTime).describe("availability jobs: when the availability was read (the request's snapshot_at)"),
		prop("started_at", dateTime), prop("finished_at", dateTime), prop("created_at", dateTime), prop("updated_at", dateTime),
	)

	// syncSummarySchema is spec §2.5's bulk upsert / availability summary (counts as strings,
	// as the spec types them).
	syncSummarySchema = object(prop("accepted_items", str), prop("failed_items", str), prop("total_items", str),
		prop("status", str), prop("errors", arrayOf(str)))

	templateSchema = object(prop("id", str), prop("key", str), prop("name", str), prop("type", enumOf("product", "post")),
		prop("is_default", boolean), prop("description", str), prop("items_per_page", integer),
		prop("thumbnails", object(prop("small", str), prop("large", str))))

	renderSchema = object(prop("book", bookSchema), prop("batch_id", str), prop("template_id", str))

	catalogIDMetaSchema    = object(prop("catalog_id", integer))
	catalogItemsMetaSchema = with(cursorMetaSchema, prop("catalog_id", integer))
)

// productParams are the fields of one product entry (bulk upsert, catalog create).
func productParams() []Param {
	uri := func(name string) Param { return Str(name, InBody, 2048).WithFormat("uri").Null() }
	s := func(name string, max int) Param { return Str(name, InBody, max).Null() }
	return []Param{
		Str("external_product_id", InBody, 255).Req().MinLength(1).Describe("the product's id in the source (matches existing items with external_variant_id)"),
		s("external_variant_id", 255).Describe("the variant's id; items are matched on product and variant id"),
		Str("title", InBody, 500).Req().MinLength(1),
		s("sku", 255), s("status", 50), s("product_type", 255),
		s("price", 64), s("regular_price", 64), s("sale_price", 64), s("currency", 10),
		uri("image"), uri("url").Describe("the product page: a rendered product links to it"),
		s("description", 50000).Lines(), s("short_description", 5000).Lines(), s("stock_status", 100),
		{Name: "gallery", In: InBody, Kind: KArray, MaxItems: 20, Nullable: true,
			Items: &Param{Kind: KString, MaxLen: 2048, Format: "uri"}},
		{Name: "categories", In: InBody, Kind: KArray, MaxItems: 50, Nullable: true, Items: &Param{Kind: KString, MaxLen: 255}},
		{Name: "payload", In: InBody, Kind: KArray, MaxItems: 100, Nullable: true, Desc: "free-form product data"},
		{Name: "raw_payload", In: InBody, Kind: KArray, MaxItems: 100, Nullable: true, Desc: "the source's record as received"},
		{Name: "availability", In: InBody, Kind: KArray, MaxItems: 100, Nullable: true, Desc: "per-location availability"},
		{Name: "stock_quantity", In: InBody, Kind: KInt, Nullable: true},
		Bool("available", InBody).Null(),
	}
}

func availabilityParams() []Param {
	return []Param{
		Str("external_product_id", InBody, 255).Req().MinLength(1),
		Str("external_variant_id", InBody, 255).Null(),
		Bool("available", InBody).Null(),
		Str("stock_status", InBody, 100).Null(),
		{Name: "stock_quantity", In: InBody, Kind: KInt, Nullable: true},
		{Name: "availability", In: InBody, Kind: KArray, MaxItems: 100, Nullable: true},
	}
}

// catalogOperations are the catalog and template operations of spec §4.8.
func catalogOperations(b CatalogBackend) []*Operation {
	products := &Param{Kind: KObject, Props: productParams(), Refuse: ForbiddenProductFields,
		RefuseMsg: "template and styling fields are not accepted: items carry product data only (the template is chosen when rendering)"}
	productItems := func(p *Param) { p.Items = products }
	return []*Operation{
		{ID: "catalogs.list", Method: "GET", Path: "/catalogs", Tool: "catalogs_list", Scope: "catalogs:read", ReadOnly: true,
			Summary:  "The workspace's product catalogs, newest first (deleted ones excluded).",
			Params:   ParamsOf[CatalogList](),
			Response: arrayOf(catalogSchema), ResponseMeta: cursorMetaSchema, Handler: Bind(b.ListCatalogs)},
		{ID: "catalogs.create", Method: "POST", Path: "/catalogs", Tool: "catalogs_create", Scope: "catalogs:write", Write: true,
			Status:  202,
			Summary: "Create a product catalog (or update the one with the same source and external_id) and queue the import of its initial items.",
			Params: Adjust(Adjust(Adjust(ParamsOf[CatalogCreate](),
				"source", func(p *Param) { p.Enum = CatalogSources }),
				"metadata", func(p *Param) {
					p.Items = &Param{Kind: KObject, Refuse: ForbiddenProductFields,
						RefuseMsg: "template and styling fields are not accepted: metadata carries product data only"}
				}),
				"items", productItems),
			MaxBody:      8 << 20,
			Response:     object(prop("catalog", catalogSchema), prop("sync_job", syncJobSchema)),
			ResponseMeta: object(prop("updated", boolean).describe("an existing catalog (same source and external_id) was updated")),
			Handler:      Bind(b.CreateCatalog)},
		{ID: "catalogs.get", Method: "GET", Path: "/catalogs/{catalog}", Tool: "catalogs_get", Scope: "catalogs:read", ReadOnly: true,
			Summary: "One catalog with its last sync.", Params: ParamsOf[CatalogPath](),
			Response: object(prop("catalog", catalogSchema)), Handler: Bind(b.GetCatalog)},
		{ID: "catalogs.delete", Method: "DELETE", Path: "/catalogs/{catalog}", Scope: "catalogs:write", Write: true, Destructive: true,
			Summary: "Delete a catalog: it is archived at once (gone from the API), its items are removed in the background and its unfinished sync jobs are cancelled. Books rendered from it stay.",
			Params:  ParamsOf[CatalogPath](), Response: object(prop("catalog", catalogSchema)), Handler: Bind(b.DeleteCatalog)},
		{ID: "catalogs.items", Method: "GET", Path: "/catalogs/{catalog}/items", Tool: "catalogs_list_items", Scope: "catalogs:read", ReadOnly: true,
			Summary:  "A catalog's items, newest first.",
			Params:   ParamsOf[CatalogItemList](),
			Response: arrayOf(catalogItemSchema), ResponseMeta: catalogItemsMetaSchema, Handler: Bind(b.ListCatalogItems)},
		{ID: "catalogs.availability", Method: "PATCH", Path: "/catalogs/{catalog}/items/availability",
			Tool: "catalogs_update_item_availability", Scope: "catalogs:write", Write: true, Status: 202,
			Summary: "Update the availability of up to 1,000 items (matched on external_product_id and external_variant_id); items not in the catalog are reported as errors of the sync job.",
			Params: Adjust(ParamsOf[CatalogAvailability](), "items", func(p *Param) {
				p.Items = &Param{Kind: KObject, Props: availabilityParams()}
			}),
			MaxBody:  4 << 20,
			Response: object(prop("summary", syncSummarySchema), prop("sync_job", syncJobSchema)), ResponseMeta: catalogIDMetaSchema,
			Handler: Bind(b.UpdateItemAvailability)},
		{ID: "catalogs.delete_item", Method: "DELETE", Path: "/catalogs/{catalog}/items/{item}", Scope: "catalogs:write", Write: true,
			Destructive: true, Summary: "Remove one item of a catalog.",
			Params:   ParamsOf[CatalogItemDelete](),
			Response: messageSchema, ResponseMeta: with(catalogIDMetaSchema, prop("item_id", integer)), Handler: Bind(b.DeleteCatalogItem)},
		{ID: "catalogs.bulk_upsert", Method: "POST", Path: "/catalogs/{catalog}/items:bulk-upsert", Tool: "catalogs_bulk_upsert_items",
			Scope: "catalogs:write", Write: true, Status: 202,
			Summary:  "Create or update 1-500 items (matched on external_product_id and external_variant_id; product data only) with a sync job.",
			Params:   Adjust(ParamsOf[CatalogBulkUpsert](), "items", productItems),
			MaxBody:  8 << 20,
			Response: object(prop("summary", syncSummarySchema), prop("sync_job", syncJobSchema)), ResponseMeta: catalogIDMetaSchema,
			Handler: Bind(b.BulkUpsertItems)},
		{ID: "catalogs.render", Method: "POST", Path: "/catalogs/{catalog}/render", Tool: "catalogs_render",
			Scope: "catalogs:read", AlsoScope: "books:write", Write: true, Status: 202, OpenWorld: true,
			Summary:  "Render chosen products of a catalog into a flipbook with a product template (the book is converted in the background: poll the batch).",
			Params:   ParamsOf[CatalogRender](),
			Response: renderSchema, ResponseMeta: with(catalogIDMetaSchema, prop("items", integer)), Handler: Bind(b.RenderCatalog)},
		{ID: "catalogs.sync_job", Method: "GET", Path: "/catalogs/{catalog}/sync-jobs/{syncJob}", Tool: "catalogs_get_sync_job",
			Scope: "catalogs:read", ReadOnly: true, Summary: "A sync job with its progress and per-item errors.",
			Params:   ParamsOf[SyncJobPath](),
			Response: object(prop("sync_job", syncJobSchema)), Handler: Bind(b.GetSyncJob)},
		{ID: "templates.list", Method: "GET", Path: "/templates", Tool: "catalogs_list_templates", Scope: "catalogs:read", ReadOnly: true,
			Summary:  "The page templates books and catalog renders are drawn with.",
			Params:   ParamsOf[TemplateList](),
			Response: arrayOf(templateSchema),
			ResponseMeta: object(prop("default_template_id", str), prop("default_template_source", str),
				prop("count", integer), prop("type", str).describe("the type asked for (empty: every type)")),
			Handler: Bind(b.ListTemplates)},
	}
}

// CatalogBackend runs the catalog and template operations (spec §2.5, §3.5, §4.8).
type CatalogBackend interface {
	ListCatalogs(*Request, *CatalogList) (*Result, error)
	CreateCatalog(*Request, *CatalogCreate) (*Result, error)
	GetCatalog(*Request, *CatalogPath) (*Result, error)
	DeleteCatalog(*Request, *CatalogPath) (*Result, error)
	ListCatalogItems(*Request, *CatalogItemList) (*Result, error)
	UpdateItemAvailability(*Request, *CatalogAvailability) (*Result, error)
	DeleteCatalogItem(*Request, *CatalogItemDelete) (*Result, error)
	BulkUpsertItems(*Request, *CatalogBulkUpsert) (*Result, error)
	RenderCatalog(*Request, *CatalogRender) (*Result, error)
	GetSyncJob(*Request, *SyncJobPath) (*Result, error)
	ListTemplates(*Request, *TemplateList) (*Result, error)
}
