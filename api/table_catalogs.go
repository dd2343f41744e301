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
		Define(Operation{ID: "catalogs.list", Method: "GET", Path: "/catalogs", Tool: "catalogs_list", Scope: "catalogs:read", ReadOnly: true,
			Summary: "The workspace's product catalogs, newest first (deleted ones excluded)."}, b.ListCatalogs),
		Define(Operation{ID: "catalogs.create", Method: "POST", Path: "/catalogs", Tool: "catalogs_create", Scope: "catalogs:write", Write: true,
			Status:  202,
			Summary: "Create a product catalog (or update the one with the same source and external_id) and queue the import of its initial items.",
			Params: Adjust(Adjust(Adjust(ParamsOf[CatalogCreate](),
				"source", func(p *Param) { p.Enum = CatalogSources }),
				"metadata", func(p *Param) {
					p.Items = &Param{Kind: KObject, Refuse: ForbiddenProductFields,
						RefuseMsg: "template and styling fields are not accepted: metadata carries product data only"}
				}),
				"items", productItems),
			MaxBody: 8 << 20}, b.CreateCatalog),
		Define(Operation{ID: "catalogs.get", Method: "GET", Path: "/catalogs/{catalog}", Tool: "catalogs_get", Scope: "catalogs:read", ReadOnly: true,
			Summary: "One catalog with its last sync."}, b.GetCatalog),
		Define(Operation{ID: "catalogs.delete", Method: "DELETE", Path: "/catalogs/{catalog}", Scope: "catalogs:write", Write: true, Destructive: true,
			Summary: "Delete a catalog: it is archived at once (gone from the API), its items are removed in the background and its unfinished sync jobs are cancelled. Books rendered from it stay."},
			b.DeleteCatalog),
		Define(Operation{ID: "catalogs.items", Method: "GET", Path: "/catalogs/{catalog}/items", Tool: "catalogs_list_items", Scope: "catalogs:read", ReadOnly: true,
			Summary: "A catalog's items, newest first."}, b.ListCatalogItems),
		Define(Operation{ID: "catalogs.availability", Method: "PATCH", Path: "/catalogs/{catalog}/items/availability",
			Tool: "catalogs_update_item_availability", Scope: "catalogs:write", Write: true, Status: 202,
			Summary: "Update the availability of up to 1,000 items (matched on external_product_id and external_variant_id); items not in the catalog are reported as errors of the sync job.",
			Params: Adjust(ParamsOf[CatalogAvailability](), "items", func(p *Param) {
				p.Items = &Param{Kind: KObject, Props: availabilityParams()}
			}),
			MaxBody: 4 << 20}, b.UpdateItemAvailability),
		Define(Operation{ID: "catalogs.delete_item", Method: "DELETE", Path: "/catalogs/{catalog}/items/{item}", Scope: "catalogs:write", Write: true,
			Destructive: true, Summary: "Remove one item of a catalog."}, b.DeleteCatalogItem),
		Define(Operation{ID: "catalogs.bulk_upsert", Method: "POST", Path: "/catalogs/{catalog}/items:bulk-upsert", Tool: "catalogs_bulk_upsert_items",
			Scope: "catalogs:write", Write: true, Status: 202,
			Summary: "Create or update 1-500 items (matched on external_product_id and external_variant_id; product data only) with a sync job.",
			Params:  Adjust(ParamsOf[CatalogBulkUpsert](), "items", productItems),
			MaxBody: 8 << 20}, b.BulkUpsertItems),
		Define(Operation{ID: "catalogs.render", Method: "POST", Path: "/catalogs/{catalog}/render", Tool: "catalogs_render",
			Scope: "catalogs:read", AlsoScope: "books:write", Write: true, Status: 202, OpenWorld: true,
			Summary: "Render chosen products of a catalog into a flipbook with a product template (the book is converted in the background: poll the batch)."},
			b.RenderCatalog),
		Define(Operation{ID: "catalogs.sync_job", Method: "GET", Path: "/catalogs/{catalog}/sync-jobs/{syncJob}", Tool: "catalogs_get_sync_job",
			Scope: "catalogs:read", ReadOnly: true, Summary: "A sync job with its progress and per-item errors."}, b.GetSyncJob),
		Define(Operation{ID: "templates.list", Method: "GET", Path: "/templates", Tool: "catalogs_list_templates", Scope: "catalogs:read", ReadOnly: true,
			Summary: "The page templates books and catalog renders are drawn with."}, b.ListTemplates),
	}
}

// CatalogBackend runs the catalog and template operations (spec §2.5, §3.5, §4.8).
type CatalogBackend interface {
	ListCatalogs(*Request, *CatalogList) (*Reply[[]Catalog, CursorMeta], error)
	CreateCatalog(*Request, *CatalogCreate) (*Reply[CatalogCreated, CatalogCreatedMeta], error)
	GetCatalog(*Request, *CatalogPath) (*Data[CatalogOne], error)
	DeleteCatalog(*Request, *CatalogPath) (*Data[CatalogOne], error)
	ListCatalogItems(*Request, *CatalogItemList) (*Reply[[]CatalogItem, CatalogItemsMeta], error)
	UpdateItemAvailability(*Request, *CatalogAvailability) (*Reply[SyncQueued, CatalogIDMeta], error)
	DeleteCatalogItem(*Request, *CatalogItemDelete) (*Reply[CatalogItemDeleted, CatalogItemDeletedMeta], error)
	BulkUpsertItems(*Request, *CatalogBulkUpsert) (*Reply[SyncQueued, CatalogIDMeta], error)
	RenderCatalog(*Request, *CatalogRender) (*Reply[CatalogRendered, CatalogRenderedMeta], error)
	GetSyncJob(*Request, *SyncJobPath) (*Data[SyncJobOne], error)
	ListTemplates(*Request, *TemplateList) (*Reply[[]Template, TemplatesMeta], error)
}
