package api

import (
	"flipbook/ingest"
)

// Base is the path prefix of the public REST API (spec §1, §9).
const Base = "/api/v1"

// Scopes of spec §5.5.
var Scopes = []string{
	"analytics:read", "books:read", "books:write", "brand:read", "brand:write",
	"catalogs:read", "catalogs:write", "commerce:read", "commerce:write", "exports:read",
	"subscribers:read", "subscribers:write", "tracked-links:read", "tracked-links:write",
	"webhooks:read", "webhooks:write", "workspace:write",
}

// Limits of the table's parameters (spec §8) that handlers also use.
const (
	MaxPageImageChars     = 22020096 // a base64 page image of the editor (spec §8)
	MaxTemplateItems      = 50       // content items of create-from-template
	MaxLogoBytes          = 2048 << 10
	DefaultAnalyticsLimit = 100
	DefaultBookLimit      = 25 // GET /books without limit
	MaxAnalyticsLimit     = 500
)

// ExportSources are the values of the analytics export's source parameter.
var ExportSources = []string{"view_events", "interaction_events"}

// AccessTypes are the access gate's event types (the access-audit export).
var AccessTypes = []string{ingest.AccessRequested, ingest.AccessGranted, ingest.AccessRejected}

// Shared enums.
var (
	animationTypes = []string{"flip", "scroll_view", "slide", "fade", "zoom", "flick-through", "cut"}
	imageDisplays  = []string{"repeat", "center/cover"}
	BookSorts      = []string{"name", "-name", "created_at", "-created_at", "updated_at", "-updated_at", "status", "-status"}
)

// Backends run the operations, one interface per domain (package httpapi implements them
// over the actors, Pebble and DuckDB, each with only what its domain uses). Each method is one
// operation's typed handler: func(*Request, *In) (*Result, error), or func(*Request) for an
// operation without parameters.
type Backends struct {
	Books     BookBackend
	Access    AccessBackend
	Brand     BrandBackend
	General   GeneralBackend
	Analytics AnalyticsBackend
	Webhooks  WebhookBackend      // table_webhooks.go
	Catalogs  CatalogBackend      // table_catalogs.go
	Bulk      BulkSettingsBackend // table_bulk.go
	Shopify   ShopifyBackend      // table_shopify.go
}

// BookBackend runs the book, upload and batch operations (spec §4.1).
type BookBackend interface {
	ListBooks(*Request, *BookList) (*Reply[[]Raw[Book], CursorMeta], error)
	UploadBook(*Request, *BookUpload) (*Data[UploadAccepted], error)
	ActiveUploads(*Request) (*Data[ActiveUploads], error)
	UploadStatus(*Request, *BatchPath) (*Data[Batch], error)
	GetBatch(*Request, *BatchPath) (*Data[Batch], error)
	CancelBatch(*Request, *BatchPath) (*Data[Batch], error)
	GetBook(*Request, *BookPath) (*Data[Raw[Book]], error)
	UpdateBook(*Request, *BookUpdate) (*Data[Raw[Book]], error)
	DeleteBook(*Request, *BookPath) (*Reply[BookDeleted, BookDeletedMeta], error)
	CreateKonva(*Request, *KonvaCreate) (*Data[Raw[Book]], error)
	CreateFromTemplate(*Request, *TemplateCreate) (*Data[BookCreated], error)
	ListPages(*Request, *BookPath) (*Data[[]PageInfo], error)
	GetPage(*Request, *BookPage) (*Data[PageTextInfo], error)
	SearchBook(*Request, *BookSearch) (*Data[[]BookSearchHit], error)
	GetOutline(*Request, *BookPath) (*Data[[]OutlineItem], error)
	Search(*Request, *Search) (*Reply[[]SearchHit, SearchMeta], error)
}

// AccessBackend runs the operations on who reads a book and from where: access lists, embed
// domains and tracked links (spec §4.2, §4.3, §4.9).
type AccessBackend interface {
	ListSubscribers(*Request, *SubscriberList) (*Reply[[]Subscriber, PageMeta], error)
	CreateSubscriber(*Request, *SubscriberCreate) (*Reply[Subscriber, CreatedMeta], error)
	DeleteSubscriber(*Request, *SubscriberDelete) (*Data[SubscriberDeleted], error)
	ListEmbedDomains(*Request, *BookPath) (*Reply[[]EmbedDomain, EmbedDomainsMeta], error)
	CreateEmbedDomain(*Request, *EmbedDomainCreate) (*Reply[EmbedDomain, CreatedMeta], error)
	DeleteEmbedDomain(*Request, *EmbedDomainDelete) (*Data[EmbedDomainDeleted], error)
	ListTrackedLinks(*Request, *BookPath) (*Reply[[]TrackedLink, TrackedLinksMeta], error)
	CreateTrackedLink(*Request, *TrackedLinkCreate) (*Data[TrackedLink], error)
}

// BrandBackend runs the brand operations (spec §4.6).
type BrandBackend interface {
	GetBrand(*Request) (*Reply[BrandOrNull, BrandMeta], error)
	CreateBrand(*Request, *BrandCreate) (*Data[BrandSaved], error)
	UpdateBrand(*Request, *BrandUpdate) (*Reply[BrandSaved, BrandMeta], error)
	ToggleTakeOverBranding(*Request) (*Data[BrandSaved], error)
}

// GeneralBackend runs health and identity (spec §4.10).
type GeneralBackend interface {
	Health(*Request) (*Data[Health], error)
	Me(*Request) (*Data[Me], error)
}

// TableOptions are the settings the table's limits depend on.
type TableOptions struct {
	MaxUploadBody int // the body cap of uploads and editor books (bytes)
}

// pathArgs are the tool argument names of path values (spec §4.11).
var pathArgs = map[string]string{
	"book": "book_id", "batchId": "batch_id", "batch": "batch_id", "catalog": "catalog_id",
	"subscription": "subscription_id", "syncJob": "sync_job_id",
	"subscriber": "subscriber_id", "embedDomain": "embed_domain_id",
}

// Table is the public operation table (spec §4): every operation under Base, declared once.
// The REST router, validation, the MCP tools and the OpenAPI document are built from it.
func Table(b Backends, o TableOptions) []*Operation {
	var ops []*Operation
	ops = append(ops, bookOperations(b.Books, o)...)
	ops = append(ops, accessOperations(b.Access)...)
	ops = append(ops, brandOperations(b.Brand)...)
	ops = append(ops, generalOperations(b.Access, b.General)...)
	ops = append(ops, analyticsOperations(b.Analytics)...)
	ops = append(ops, exportOperations(b.Analytics)...)
	ops = append(ops, webhookOperations(b.Webhooks)...)
	ops = append(ops, catalogOperations(b.Catalogs)...)
	ops = append(ops, bulkSettingsOperations(b.Bulk)...)
	ops = append(ops, shopifyOperations(b.Shopify)...)
	for _, op := range ops {
		op.Base = Base
		for i := range op.Params {
			if p := &op.Params[i]; p.In == InPath && p.Arg == "" {
				p.Arg = pathArgs[p.Name]
			}
		}
	}
	return ops
}

// bookOperations declares the books (spec §4.1).
func bookOperations(b BookBackend, o TableOptions) []*Operation {
	return []*Operation{
		Define(Operation{ID: "books.list", Method: "GET", Path: "/books", Tool: "books_list", Scope: "books:read", ReadOnly: true,
			Summary: "List flipbooks, newest first, with cursor pagination."}, b.ListBooks),
		Define(Operation{ID: "books.upload", Method: "POST", Path: "/books", Tool: "books_upload_pdfs", Scope: "books:write", Write: true, Multipart: true,
			Status:  202,
			Summary: "Upload one PDF, Word, Excel, PowerPoint, JPG or PNG file; it is converted in the background.",
			ToolParams: []Param{
				{Name: "files", In: InTool, Kind: KArray, MaxItems: 1, Items: &Param{Kind: KString},
					Desc: "the document as base64 (one file per call; a data: URL is accepted)"},
				{Name: "pdfs", In: InTool, Kind: KArray, MaxItems: 1, Items: &Param{Kind: KString},
					Desc: "alias of files"},
			},
			MaxBody: o.MaxUploadBody}, b.UploadBook),
		DefineNoParams(Operation{ID: "books.active_upload_status", Method: "GET", Path: "/books/uploads/status/active", Tool: "books_get_active_upload_status",
			Scope: "books:read", ReadOnly: true,
			Summary: "Upload batches still queued or converting (state idle when none)."}, b.ActiveUploads),
		Define(Operation{ID: "books.upload_status", Method: "GET", Path: "/books/uploads/{batchId}/status", Tool: "books_get_upload_status",
			Scope: "books:read", ReadOnly: true, Summary: "Conversion progress of one upload batch."}, b.UploadStatus),
		Define(Operation{ID: "batches.get", Method: "GET", Path: "/batches/{batchId}", Tool: "books_get_batch", Scope: "books:read", ReadOnly: true,
			Summary: "An upload batch with its progress and the books it produced."}, b.GetBatch),
		Define(Operation{ID: "batches.cancel", Method: "DELETE", Path: "/batches/{batchId}", Scope: "books:write", Write: true, Destructive: true,
			Summary: "Cancel a queued or converting batch; its partial output is removed."}, b.CancelBatch),
		Define(Operation{ID: "books.get", Method: "GET", Path: "/books/{book}", Tool: "books_get", Scope: "books:read", ReadOnly: true,
			Summary: "Get one flipbook."}, b.GetBook),
		Define(Operation{ID: "books.update", Method: "PUT", Path: "/books/{book}", Tool: "books_update_settings", Scope: "books:write", Write: true,
			Summary: "Update a flipbook's name, status, dates and settings."}, b.UpdateBook),
		Define(Operation{ID: "books.delete", Method: "DELETE", Path: "/books/{book}", Scope: "books:write", Write: true, Destructive: true,
			Summary: "Delete a flipbook and its files."}, b.DeleteBook),
		Define(Operation{ID: "books.create_konva", Method: "POST", Path: "/books/konva", Tool: "books_create_konva", Scope: "books:write", Write: true,
			Status:  201,
			Summary: "Create a flipbook from editor canvas content with page images.",
			MaxBody: o.MaxUploadBody}, b.CreateKonva),
		Define(Operation{ID: "books.create_from_template", Method: "POST", Path: "/books/create-from-template", Tool: "books_create_from_template",
			Scope: "books:write", Write: true, Status: 201, OpenWorld: true,
			Summary: "Create a draft flipbook from blog posts, pages or shop products laid out with a template.",
			MaxBody: 32 << 20, // 50 items × 2 × 50,000 characters, escaped
		}, b.CreateFromTemplate),
		// Extensions (issue 28): the pages and the text of each.
		Define(Operation{ID: "books.pages", Method: "GET", Path: "/books/{book}/pages", Scope: "books:read", ReadOnly: true,
			Extension: true, Summary: "The pages of a flipbook: size, image URL and whether each has text."}, b.ListPages),
		Define(Operation{ID: "books.page", Method: "GET", Path: "/books/{book}/pages/{page}", Scope: "books:read", ReadOnly: true,
			Extension: true, Summary: "One page's text and its words, with their boxes in fractions of the page."}, b.GetPage),
		Define(Operation{ID: "books.search", Method: "GET", Path: "/books/{book}/search", Scope: "books:read", ReadOnly: true,
			Extension: true, Summary: "Find words in a flipbook: its matching pages in page order, each with a snippet and the boxes of the matches."}, b.SearchBook),
		Define(Operation{ID: "search", Method: "GET", Path: "/search", Scope: "books:read", ReadOnly: true,
			Extension: true, Summary: "Find words in the workspace's flipbooks: matching pages, best first, cursor paginated."}, b.Search),
		// Extension (issue 29): the document's outline.
		Define(Operation{ID: "books.outline", Method: "GET", Path: "/books/{book}/outline", Scope: "books:read", ReadOnly: true,
			Extension: true, Summary: "The flipbook's outline (the PDF's bookmarks): titles, depths and pages, in order."}, b.GetOutline),
	}
}

// accessOperations declares access lists and embed domains (spec §4.2, §4.3).
func accessOperations(b AccessBackend) []*Operation {
	return []*Operation{
		Define(Operation{ID: "subscribers.list", Method: "GET", Path: "/subscribers", Tool: "subscribers_list", Scope: "subscribers:read", ReadOnly: true,
			Summary: "List the workspace's access-list entries (page-based pagination)."}, b.ListSubscribers),
		Define(Operation{ID: "subscribers.create", Method: "POST", Path: "/subscribers", Tool: "subscribers_create", Scope: "subscribers:write", Write: true,
			Status: 201, OtherStatus: 200,
			Summary: "Grant an address or a domain access to a gated flipbook (the first entry turns the email gate on)."}, b.CreateSubscriber),
		Define(Operation{ID: "subscribers.delete", Method: "DELETE", Path: "/subscribers/{subscriber}", Scope: "subscribers:write", Write: true, Destructive: true,
			Summary: "Remove an access-list entry (removing the last turns the email gate off)."}, b.DeleteSubscriber),

		Define(Operation{ID: "embed_domains.list", Method: "GET", Path: "/books/{book}/embed-domains", Tool: "books_list_embed_domains", Scope: "books:read", ReadOnly: true,
			Summary: "Sites allowed to embed a flipbook."}, b.ListEmbedDomains),
		Define(Operation{ID: "embed_domains.create", Method: "POST", Path: "/books/{book}/embed-domains", Tool: "books_create_embed_domain", Scope: "books:write", Write: true,
			Summary: "Allow a site (and its subdomains) to embed a flipbook; the first entry restricts embedding."}, b.CreateEmbedDomain),
		Define(Operation{ID: "embed_domains.delete", Method: "DELETE", Path: "/books/{book}/embed-domains/{embedDomain}", Scope: "books:write", Write: true, Destructive: true,
			Summary: "Remove an embed domain (removing the last lifts the restriction)."}, b.DeleteEmbedDomain),
	}
}

// brandOperations declares the brand (spec §4.6).
func brandOperations(b BrandBackend) []*Operation {
	return []*Operation{
		DefineNoParams(Operation{ID: "brand.get", Method: "GET", Path: "/brand", Tool: "brand_get", Scope: "brand:read", ReadOnly: true,
			Summary: "The workspace's brand (null when it has none)."}, b.GetBrand),
		Define(Operation{ID: "brand.create", Method: "POST", Path: "/brand", Tool: "brand_create", Scope: "brand:write", Write: true,
			Multipart: true, MaxBody: MaxLogoBytes + 1<<20, Status: 201,
			Summary: "Create the workspace's brand: company name, contact, colours, social accounts and a logo (multipart file part `file`).",
			ToolParams: []Param{{Name: "logo_base64", In: InTool, Kind: KString, MaxLen: MaxLogoBytes*4/3 + 64,
				Desc: "the logo (PNG, JPEG, GIF or WebP) as base64; the REST form sends it as the file part `file`"}}},
			b.CreateBrand),
		Define(Operation{ID: "brand.update", Method: "PUT", Path: "/brand", Tool: "brand_update", Scope: "brand:write", Write: true,
			Multipart: true, MaxBody: MaxLogoBytes + 1<<20,
			Summary: "Update the brand: fields sent are set (an empty value clears one), others are kept.",
			ToolParams: []Param{{Name: "logo_base64", In: InTool, Kind: KString, MaxLen: MaxLogoBytes*4/3 + 64,
				Desc: "a new logo as base64; the REST form sends it as the file part `file`"}}},
			b.UpdateBrand),
		DefineNoParams(Operation{ID: "brand.toggle_take_over", Method: "POST", Path: "/toggle-take-over-branding", Tool: "brand_toggle_take_over_branding",
			Scope: "brand:write", Write: true,
			Summary: "Flip take-over branding: public flipbook pages show the brand instead of the service's."},
			b.ToggleTakeOverBranding),
	}
}

// generalOperations declares tracked links (spec §4.9), health and identity (spec §4.10).
func generalOperations(a AccessBackend, b GeneralBackend) []*Operation {
	return []*Operation{
		Define(Operation{ID: "tracked_links.list", Method: "GET", Path: "/books/{book}/tracked-links", Tool: "books_list_tracked_links", Scope: "tracked-links:read", ReadOnly: true,
			Summary: "A flipbook's tracked links with their slugs and channels."}, a.ListTrackedLinks),
		Define(Operation{ID: "tracked_links.create", Method: "POST", Path: "/books/{book}/tracked-links", Tool: "tracked_links_create", Scope: "tracked-links:write", Write: true,
			Status:  201,
			Summary: "Create a tracked link; readers who open it are attributed to it."}, a.CreateTrackedLink),

		DefineNoParams(Operation{ID: "health", Method: "GET", Path: "/health", Tool: "health_check", Auth: AuthNone, ReadOnly: true, Bare: true,
			Summary: "Service health."}, b.Health),
		DefineNoParams(Operation{ID: "me", Method: "GET", Path: "/me", Tool: "identity_get", ReadOnly: true,
			Summary: "The authenticated workspace, its plan features and the key's scopes."}, b.Me),
	}
}
