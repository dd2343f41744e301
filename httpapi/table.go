package httpapi

import (
	"flipbook/actors"
)

// Scopes of spec §5.5.
var Scopes = []string{
	"analytics:read", "books:read", "books:write", "brand:read", "brand:write",
	"catalogs:read", "catalogs:write", "commerce:read", "commerce:write", "exports:read",
	"subscribers:read", "subscribers:write", "tracked-links:read", "tracked-links:write",
	"webhooks:read", "webhooks:write", "workspace:write",
}

// Shared enums.
var (
	animationTypes = []string{"flip", "scroll_view", "slide", "fade", "zoom", "flick-through", "cut"}
	imageDisplays  = []string{"repeat", "center/cover"}
	bookSorts      = []string{"name", "-name", "created_at", "-created_at", "updated_at", "-updated_at", "status", "-status"}
)

// operations is the operation table: every operation of the service, declared once. The router,
// validation, MCP tools and OpenAPI are derived from it.
func (s *Service) operations() []*Operation {
	ops := []*Operation{
		// Books (spec §4.1)
		{ID: "books.list", Method: "GET", Path: "/books", Tool: "books_list", Scope: "books:read", ReadOnly: true,
			Summary: "List flipbooks, newest first, with cursor pagination.",
			Params: []Param{
				pEnum("filter[status]", InQuery, "publish", "draft", "schedule"),
				pStr("filter[name]", InQuery, 255).desc("case-insensitive substring of the name"),
				pEnum("sort", InQuery, bookSorts...),
				pStr("cursor", InQuery, 1024),
				pInt("limit", InQuery, 1, 200),
			},
			Handler: s.listBooks},
		{ID: "books.upload", Method: "POST", Path: "/books", Scope: "books:write", Write: true, Multipart: true,
			Summary: "Upload one PDF, Word, Excel, PowerPoint, JPG or PNG file; it is converted in the background.",
			Params: []Param{
				{Name: "files", In: InBody, Kind: KFile, Required: true, Desc: "one file part (files or files[])"},
				pStr("original_filename", InBody, 255),
				pEnum("status", InBody, "draft", "publish"),
				pBool("auto_links_enabled", InBody),
			},
			MaxBody: s.cfg.MaxBodyBytes, Handler: s.uploadBook},
		{ID: "books.active_upload_status", Method: "GET", Path: "/books/uploads/status/active", Tool: "books_get_active_upload_status",
			Scope: "books:read", ReadOnly: true,
			Summary: "Upload batches still queued or converting (state idle when none).", Handler: s.activeUploads},
		{ID: "books.upload_status", Method: "GET", Path: "/books/uploads/{batchId}/status", Tool: "books_get_upload_status",
			Scope: "books:read", ReadOnly: true, Summary: "Conversion progress of one upload batch.",
			Params: []Param{pStr("batchId", InPath, 64).req()}, Handler: s.uploadStatus},
		{ID: "batches.get", Method: "GET", Path: "/batches/{batchId}", Tool: "books_get_batch", Scope: "books:read", ReadOnly: true,
			Summary: "An upload batch with its progress and the books it produced.",
			Params:  []Param{pStr("batchId", InPath, 64).req()}, Handler: s.getBatch},
		{ID: "batches.cancel", Method: "DELETE", Path: "/batches/{batchId}", Scope: "books:write", Write: true, Destructive: true,
			Summary: "Cancel a queued or converting batch; its partial output is removed.",
			Params:  []Param{pStr("batchId", InPath, 64).req()}, Handler: s.cancelBatch},
		{ID: "books.get", Method: "GET", Path: "/books/{book}", Tool: "books_get", Scope: "books:read", ReadOnly: true,
			Summary: "Get one flipbook.",
			Params:  []Param{pStr("book", InPath, 64).req()},
			Handler: s.getBook},
		{ID: "books.update", Method: "PUT", Path: "/books/{book}", Tool: "books_update_settings", Scope: "books:write", Write: true,
			Summary: "Update a flipbook's name, status, dates and settings.",
			Params:  append([]Param{pStr("book", InPath, 64).req()}, updateBookParams()...),
			Handler: s.updateBook},
		{ID: "books.delete", Method: "DELETE", Path: "/books/{book}", Scope: "books:write", Write: true, Destructive: true,
			Summary: "Delete a flipbook and its files.",
			Params:  []Param{pStr("book", InPath, 64).req()},
			Handler: s.deleteBook},
		{ID: "books.create_konva", Method: "POST", Path: "/books/konva", Tool: "books_create_konva", Scope: "books:write", Write: true,
			Summary: "Create a flipbook from editor canvas content with page images.",
			Params:  konvaParams(), MaxBody: s.cfg.MaxBodyBytes,
			Handler: s.createKonva},

		{ID: "books.create_from_template", Method: "POST", Path: "/books/create-from-template", Tool: "books_create_from_template",
			Scope: "books:write", Write: true,
			Summary: "Create a draft flipbook from blog posts, pages or shop products laid out with a template.",
			Params:  templateParams(), MaxBody: 32 << 20, // 50 items × 2 × 50,000 characters, escaped
			Handler: s.createFromTemplate},

		// Subscribers (spec §4.2)
		{ID: "subscribers.list", Method: "GET", Path: "/subscribers", Tool: "subscribers_list", Scope: "subscribers:read", ReadOnly: true,
			Summary: "List the workspace's access-list entries (page-based pagination).",
			Params: []Param{
				pInt("pagination[per_page]", InQuery, 1, 200), pInt("pagination[rowsPerPage]", InQuery, 1, 200),
				{Name: "pagination[page]", In: InQuery, Kind: KInt, Min: f64(1)},
				pStr("filter", InQuery, 255).desc("substring of the address, domain or book id"),
				pEnum("type", InQuery, "email", "domain"),
			},
			Handler: s.listSubscribers},
		{ID: "subscribers.create", Method: "POST", Path: "/subscribers", Tool: "subscribers_create", Scope: "subscribers:write", Write: true,
			Summary: "Grant an address or a domain access to a gated flipbook (the first entry turns the email gate on).",
			Params: []Param{
				pStr("book_id", InBody, 64).req(),
				pStr("email", InBody, 255).req().desc("an address, or a domain for type domain"),
				pEnum("type", InBody, "email", "domain"),
			},
			Handler: s.createSubscriber},
		{ID: "subscribers.delete", Method: "DELETE", Path: "/subscribers/{subscriber}", Scope: "subscribers:write", Write: true, Destructive: true,
			Summary: "Remove an access-list entry (removing the last turns the email gate off).",
			Params:  []Param{{Name: "subscriber", In: InPath, Kind: KInt, Required: true, Min: f64(1)}},
			Handler: s.deleteSubscriber},

		// Embed domains (spec §4.3)
		{ID: "embed_domains.list", Method: "GET", Path: "/books/{book}/embed-domains", Tool: "books_list_embed_domains", Scope: "books:read", ReadOnly: true,
			Summary: "Sites allowed to embed a flipbook.",
			Params:  []Param{pStr("book", InPath, 64).req()}, Handler: s.listEmbedDomains},
		{ID: "embed_domains.create", Method: "POST", Path: "/books/{book}/embed-domains", Tool: "books_create_embed_domain", Scope: "books:write", Write: true,
			Summary: "Allow a site (and its subdomains) to embed a flipbook; the first entry restricts embedding.",
			Params:  []Param{pStr("book", InPath, 64).req(), pStr("domain", InBody, 255).req()},
			Handler: s.createEmbedDomain},
		{ID: "embed_domains.delete", Method: "DELETE", Path: "/books/{book}/embed-domains/{embedDomain}", Scope: "books:write", Write: true, Destructive: true,
			Summary: "Remove an embed domain (removing the last lifts the restriction).",
			Params:  []Param{pStr("book", InPath, 64).req(), {Name: "embedDomain", In: InPath, Kind: KInt, Required: true, Min: f64(1)}},
			Handler: s.deleteEmbedDomain},

		// Brand (spec §4.6)
		{ID: "brand.get", Method: "GET", Path: "/brand", Tool: "brand_get", Scope: "brand:read", ReadOnly: true,
			Summary: "The workspace's brand (null when it has none).", Handler: s.getBrand},
		{ID: "brand.create", Method: "POST", Path: "/brand", Tool: "brand_create", Scope: "brand:write", Write: true,
			Multipart: true, MaxBody: MaxLogoBytes + 1<<20,
			Summary: "Create the workspace's brand: company name, contact, colours, social accounts and a logo (multipart file part `file`).",
			Params:  brandParams(false), Handler: s.createBrand},
		{ID: "brand.update", Method: "PUT", Path: "/brand", Tool: "brand_update", Scope: "brand:write", Write: true,
			Multipart: true, MaxBody: MaxLogoBytes + 1<<20,
			Summary: "Update the brand: fields sent are set (an empty value clears one), others are kept.",
			Params:  brandParams(true), Handler: s.updateBrand},
		{ID: "brand.toggle_take_over", Method: "POST", Path: "/toggle-take-over-branding", Tool: "brand_toggle_take_over_branding",
			Scope: "brand:write", Write: true,
			Summary: "Flip take-over branding: public flipbook pages show the brand instead of the service's.",
			Handler: s.toggleTakeOverBranding},

		// Tracked links (spec §4.9)
		{ID: "tracked_links.list", Method: "GET", Path: "/books/{book}/tracked-links", Tool: "books_list_tracked_links", Scope: "tracked-links:read", ReadOnly: true,
			Summary: "A flipbook's tracked links with their slugs and channels.",
			Params:  []Param{pStr("book", InPath, 64).req()}, Handler: s.listTrackedLinks},
		{ID: "tracked_links.create", Method: "POST", Path: "/books/{book}/tracked-links", Tool: "tracked_links_create", Scope: "tracked-links:write", Write: true,
			Summary: "Create a tracked link; readers who open it are attributed to it.",
			Params: []Param{
				pStr("book", InPath, 64).req(),
				pStr("name", InBody, 255).req(),
				pStr("slug", InBody, 255).desc("unique across the service; generated when absent"),
				pStr("channel", InBody, 64),
				pStr("kind", InBody, 64).desc("default manual"),
				{Name: "metadata", In: InBody, Kind: KObject, Nullable: true},
			},
			Handler: s.createTrackedLink},

		// General (spec §4.10)
		{ID: "health", Method: "GET", Path: "/health", Tool: "health_check", Auth: AuthNone, ReadOnly: true,
			Summary: "Service health.", Handler: s.health},
		{ID: "me", Method: "GET", Path: "/me", Tool: "identity_get", ReadOnly: true,
			Summary: "The authenticated workspace, its plan features and the key's scopes.", Handler: s.me},
	}
	ops = append(ops, s.analyticsOperations()...)
	ops = append(ops, s.exportOperations()...)
	for _, op := range ops {
		op.Base = APIBase
	}
	ops = append(ops, s.adminOperations()...)
	return append(ops, s.readerOperations()...)
}

func updateBookParams() []Param {
	return []Param{
		pEnum("status", InBody, "draft", "schedule", "publish").req(),
		pStr("title", InBody, 255).minLen(1),
		pStr("description", InBody, 50000).null(),
		pStr("slug", InBody, 255).null(),
		pTime("published_date", InBody).null(),
		pTime("expires_at", InBody).null(),
		pBool("accessibility_enabled", InBody),
		pBool("allow_fullscreen", InBody),
		pBool("auto_links_enabled", InBody),
		pBool("copyright_enabled", InBody),
		pBool("downloadable_pdf", InBody),
		pBool("flip_sound", InBody),
		pBool("made_with_badge_enabled", InBody),
		pBool("open_fullscreen_by_default", InBody),
		pBool("share_social_media", InBody),
		pEnum("animation_type", InBody, animationTypes...),
		pEnum("mobile_animation_type", InBody, animationTypes...).null(),
		pStr("background", InBody, 2048).null(),
		pEnum("image_display", InBody, imageDisplays...).null(),
		pStr("magic_link_error_message", InBody, 1000).null(),
		pStr("magic_link_message", InBody, 1000).null(),
		pStr("pdf_password", InBody, 255).null(),
		pStr("pdf_privacy_status", InBody, 50).null(),
		pStr("watermark", InBody, 2048).null(),
		{Name: "domain_lists", In: InBody, Kind: KArray, Nullable: true, Desc: "accepted and ignored: embed domains change through their own operations"},
		{Name: "eod_lists", In: InBody, Kind: KArray, Nullable: true, Desc: "accepted and ignored: access lists change through the subscribers operations"},
	}
}

// MaxPageImageChars is the longest base64 page image (spec §8: 22020096 characters).
const MaxPageImageChars = 22020096

func konvaParams() []Param {
	return []Param{
		pStr("title", InBody, 255).req(),
		{Name: "canvas", In: InBody, Kind: KObject, Required: true, Props: []Param{
			pInt("width", InBody, 1, 10000).req(),
			pInt("height", InBody, 1, 10000).req(),
			pEnum("orientation", InBody, "portrait", "landscape").req(),
			{Name: "objects", Kind: KArray, Required: true, MinItems: 1, MaxItems: 250},
		}},
		{Name: "page_images", In: InBody, Kind: KArray, Required: true, MinItems: 1, MaxItems: 250,
			Items: &Param{Kind: KString, MaxLen: MaxPageImageChars}, Desc: "base64 page images (PNG, JPEG, GIF or WebP), optionally as data URLs"},
		pStr("thumbnail", InBody, MaxPageImageChars).null(),
		pEnum("status", InBody, "draft", "publish"),
		{Name: "settings", In: InBody, Kind: KObject, Props: []Param{
			pBool("allow_fullscreen", InBody), pBool("auto_links_enabled", InBody),
			pBool("domains_enabled", InBody), pBool("eod_enabled", InBody), pBool("flip_sound", InBody),
			pBool("open_fullscreen_by_default", InBody), pBool("share_social_media", InBody),
			pStr("animation_type", InBody, 255), pStr("mobile_animation_type", InBody, 255).null(),
			pStr("image_display", InBody, 255).null(), pStr("background", InBody, 2048).null(),
			pStr("pdf_password", InBody, 255).null(), pStr("pdf_privacy_status", InBody, 50).null(),
		}},
	}
}

func planEnum() []string { return actors.PlanNames }

// readerOperations are the public routes of readers: the collector and the email gate.
func (s *Service) readerOperations() []*Operation {
	return []*Operation{
		{ID: "reader.collect", Method: "POST", Path: "/collect", Auth: AuthNone, Internal: true,
			Summary: "Reader events from a viewer (JSON or text/plain for sendBeacon); 202 once durable.",
			Params:  collectParams(), MaxBody: 1 << 20, FastBody: fastCollect, Handler: s.collect},
		{ID: "reader.access", Method: "POST", Path: "/view/{book}/access", Auth: AuthNone, Internal: true,
			Summary: "The email gate: an address on the book's access list gets a reader token.",
			Params: []Param{
				pStr("book", InPath, 64).req(),
				pStr("email", InBody, 255).req().format("email"),
				pStr("session_id", InBody, 255),
			},
			MaxBody: 16 << 10, Handler: s.viewerAccess},
	}
}
