package api

import (
	"mime/multipart"
	"time"

	"flipbook/actors"
)

// BookList is the input of books.list (spec §4.1).
type BookList struct {
	Status string `param:"filter[status],query" enum:"publish|draft|schedule"`
	Name   string `param:"filter[name],query" max:"255" desc:"case-insensitive substring of the name"`
	Sort   string `param:"sort,query" enum:"name|-name|created_at|-created_at|updated_at|-updated_at|status|-status"`
	Cursor string `param:"cursor,query" max:"1024" desc:"meta.next_cursor of the previous page"`
	Limit  int64  `param:"limit,query" min:"1" max:"200" desc:"books per page (default 25)"`
}

// BookUpload is the input of books.upload (spec §4.1.1): one file part and its settings.
type BookUpload struct {
	Files            []*multipart.FileHeader `param:"files,body,required" desc:"one file part (files or files[])"`
	OriginalFilename string                  `param:"original_filename,body" max:"255"`
	Status           string                  `param:"status,body" enum:"draft|publish"`
	AutoLinks        bool                    `param:"auto_links_enabled,body"`
}

// BookUpdate is the input of books.update (spec §4.1.4). A setting absent from the body is
// kept; null clears the nullable ones.
type BookUpdate struct {
	Book                    string                `param:"book,path,required" max:"64"`
	Status                  string                `param:"status,body,required" enum:"draft|schedule|publish"`
	Title                   actors.Opt[string]    `param:"title,body" max:"255" minlen:"1"`
	Description             actors.Opt[string]    `param:"description,body,nullable,lines" max:"50000"`
	Slug                    actors.Opt[string]    `param:"slug,body,nullable" max:"255"`
	PublishedDate           actors.Opt[time.Time] `param:"published_date,body,nullable" desc:"a schedule book is published when it passes"`
	ExpiresAt               actors.Opt[time.Time] `param:"expires_at,body,nullable" desc:"the book is unpublished when it passes"`
	AccessibilityEnabled    actors.Opt[bool]      `param:"accessibility_enabled,body"`
	AllowFullscreen         actors.Opt[bool]      `param:"allow_fullscreen,body"`
	AutoLinksEnabled        actors.Opt[bool]      `param:"auto_links_enabled,body"`
	CopyrightEnabled        actors.Opt[bool]      `param:"copyright_enabled,body"`
	DownloadablePDF         actors.Opt[bool]      `param:"downloadable_pdf,body"`
	FlipSound               actors.Opt[bool]      `param:"flip_sound,body"`
	MadeWithBadgeEnabled    actors.Opt[bool]      `param:"made_with_badge_enabled,body"`
	OpenFullscreenByDefault actors.Opt[bool]      `param:"open_fullscreen_by_default,body"`
	ShareSocialMedia        actors.Opt[bool]      `param:"share_social_media,body"`
	AnimationType           actors.Opt[string]    `param:"animation_type,body" enum:"flip|scroll_view|slide|fade|zoom|flick-through|cut"`
	MobileAnimationType     actors.Opt[string]    `param:"mobile_animation_type,body,nullable" enum:"flip|scroll_view|slide|fade|zoom|flick-through|cut"`
	Background              actors.Opt[string]    `param:"background,body,nullable" max:"2048" format:"background"`
	ImageDisplay            actors.Opt[string]    `param:"image_display,body,nullable" enum:"repeat|center/cover"`
	MagicLinkErrorMessage   actors.Opt[string]    `param:"magic_link_error_message,body,nullable,lines" max:"1000"`
	MagicLinkMessage        actors.Opt[string]    `param:"magic_link_message,body,nullable,lines" max:"1000"`
	PDFPassword             actors.Opt[string]    `param:"pdf_password,body,nullable" max:"255"`
	PDFPrivacyStatus        actors.Opt[string]    `param:"pdf_privacy_status,body,nullable" max:"50"`
	Watermark               actors.Opt[string]    `param:"watermark,body,nullable" max:"2048"`
	DomainLists             []any                 `param:"domain_lists,body,nullable" desc:"accepted and ignored: embed domains change through their own operations"`
	EodLists                []any                 `param:"eod_lists,body,nullable" desc:"accepted and ignored: access lists change through the subscribers operations"`
	ReadingDirection        actors.Opt[string]    `param:"reading_direction,body,extension" enum:"ltr|rtl" desc:"an extension of this service (not in the public API specification): the order the viewer turns the pages in, ltr (the default) or rtl for right-to-left books"`
}

// Patch is the update as the book actor takes it.
func (in *BookUpdate) Patch() *actors.BookPatch {
	return &actors.BookPatch{
		Status: in.Status, Title: in.Title, Description: in.Description, Slug: in.Slug,
		PublishedDate: in.PublishedDate, ExpiresAt: in.ExpiresAt,
		AccessibilityEnabled: in.AccessibilityEnabled, AllowFullscreen: in.AllowFullscreen,
		AutoLinksEnabled: in.AutoLinksEnabled, CopyrightEnabled: in.CopyrightEnabled,
		DownloadablePDF: in.DownloadablePDF, FlipSound: in.FlipSound,
		MadeWithBadgeEnabled: in.MadeWithBadgeEnabled, OpenFullscreenByDefault: in.OpenFullscreenByDefault,
		ShareSocialMedia: in.ShareSocialMedia, AnimationType: in.AnimationType,
		MobileAnimationType: in.MobileAnimationType, Background: in.Background, ImageDisplay: in.ImageDisplay,
		MagicLinkMessage: in.MagicLinkMessage, MagicLinkErrorMessage: in.MagicLinkErrorMessage,
		PDFPassword: in.PDFPassword, PDFPrivacyStatus: in.PDFPrivacyStatus, Watermark: in.Watermark,
		ReadingDirection: in.ReadingDirection,
	}
}

// BrandProfile is the brand's text fields and logo, as brand.create and brand.update take them
// (spec §4.6): each sent is set, an empty value clears it, an absent one is kept.
type BrandProfile struct {
	AboutBrand      actors.Opt[string]      `param:"about_brand,body,lines" max:"5000"`
	ContactNumber   actors.Opt[string]      `param:"contact_number,body" max:"64"`
	Facebook        actors.Opt[string]      `param:"facebook,body" max:"255"`
	GoogleAnalytics actors.Opt[string]      `param:"google_analytics,body" max:"64" desc:"Google Analytics measurement id, e.g. G-XXXXXXX"`
	Instagram       actors.Opt[string]      `param:"instagram,body" max:"255"`
	Linkedin        actors.Opt[string]      `param:"linkedin,body" max:"255"`
	Pinterest       actors.Opt[string]      `param:"pinterest,body" max:"255"`
	PrimaryColor    actors.Opt[string]      `param:"primary_color,body" max:"7" desc:"CSS hex colour, #rgb or #rrggbb"`
	SecondaryColor  actors.Opt[string]      `param:"secondary_color,body" max:"7" desc:"CSS hex colour, #rgb or #rrggbb"`
	TertiaryColor   actors.Opt[string]      `param:"tertiary_color,body" max:"7" desc:"CSS hex colour, #rgb or #rrggbb"`
	Twitter         actors.Opt[string]      `param:"twitter,body" max:"255"`
	Youtube         actors.Opt[string]      `param:"youtube,body" max:"255"`
	WebsiteURL      actors.Opt[string]      `param:"website_url,body" max:"2048" format:"uri"`
	File            []*multipart.FileHeader `param:"file,body" maxitems:"1" desc:"logo: PNG, JPEG, GIF or WebP, at most 2048 KB"`
}

// Fields are the profile's text fields by name.
func (p *BrandProfile) Fields() map[actors.BrandField]actors.Opt[string] {
	return map[actors.BrandField]actors.Opt[string]{
		actors.BrandAboutBrand: p.AboutBrand, actors.BrandContactNumber: p.ContactNumber,
		actors.BrandFacebook: p.Facebook, actors.BrandGoogleAnalytics: p.GoogleAnalytics,
		actors.BrandInstagram: p.Instagram, actors.BrandLinkedin: p.Linkedin, actors.BrandPinterest: p.Pinterest,
		actors.BrandPrimaryColor: p.PrimaryColor, actors.BrandSecondaryColor: p.SecondaryColor,
		actors.BrandTertiaryColor: p.TertiaryColor, actors.BrandTwitter: p.Twitter, actors.BrandYoutube: p.Youtube,
		actors.BrandWebsiteURL: p.WebsiteURL,
	}
}

// BrandCreate is the input of brand.create (spec §4.6).
type BrandCreate struct {
	CompanyName string `param:"company_name,body,required" max:"255" minlen:"1"`
	BrandProfile
}

// BrandUpdate is the input of brand.update (spec §4.6).
type BrandUpdate struct {
	ID          int64              `param:"id,body,required" min:"1"`
	CompanyName actors.Opt[string] `param:"company_name,body" max:"255" minlen:"1"`
	BrandProfile
}

// KonvaCreate is the input of books.create_konva (spec §4.1.3).
type KonvaCreate struct {
	Title      string         `param:"title,body,required" max:"255"`
	Canvas     KonvaCanvas    `param:"canvas,body,required"`
	PageImages []string       `param:"page_images,body,required" minitems:"1" maxitems:"250" itemmax:"22020096" desc:"base64 page images (PNG, JPEG, GIF or WebP), optionally as data URLs"`
	Thumbnail  *string        `param:"thumbnail,body,nullable" max:"22020096"`
	Status     string         `param:"status,body" enum:"draft|publish"`
	Settings   *KonvaSettings `param:"settings,body"`
}

// KonvaCanvas is the editor's canvas of books.create_konva.
type KonvaCanvas struct {
	Width       int64  `param:"width,body,required" min:"1" max:"10000"`
	Height      int64  `param:"height,body,required" min:"1" max:"10000"`
	Orientation string `param:"orientation,body,required" enum:"portrait|landscape"`
	Objects     []any  `param:"objects,body,required" minitems:"1" maxitems:"250"`
}

// KonvaSettings are the settings of editor books (spec §4.1.3), also taken by catalog renders:
// each given is set.
type KonvaSettings struct {
	AllowFullscreen         *bool   `param:"allow_fullscreen,body"`
	AutoLinksEnabled        *bool   `param:"auto_links_enabled,body"`
	DomainsEnabled          *bool   `param:"domains_enabled,body"`
	EodEnabled              *bool   `param:"eod_enabled,body"`
	FlipSound               *bool   `param:"flip_sound,body"`
	OpenFullscreenByDefault *bool   `param:"open_fullscreen_by_default,body"`
	ShareSocialMedia        *bool   `param:"share_social_media,body"`
	AnimationType           string  `param:"animation_type,body" max:"255"`
	MobileAnimationType     *string `param:"mobile_animation_type,body,nullable" max:"255"`
	ImageDisplay            *string `param:"image_display,body,nullable" max:"255"`
	Background              *string `param:"background,body,nullable" max:"2048" format:"background"`
	PDFPassword             *string `param:"pdf_password,body,nullable" max:"255"`
	PDFPrivacyStatus        *string `param:"pdf_privacy_status,body,nullable" max:"50"`
}

// TemplateCreate is the input of books.create_from_template (spec §4.1.2).
type TemplateCreate struct {
	Source     string           `param:"source,body,required" enum:"wordpress|woocommerce"`
	SourceType string           `param:"source_type,body,required" enum:"posts|pages|products" desc:"wordpress uses posts or pages; woocommerce uses products"`
	TemplateID *int64           `param:"template_id,body,nullable" min:"1" desc:"a template of GET /templates; null or absent: the default template for source_type"`
	Content    []TemplateItem   `param:"content,body,required" minitems:"1" maxitems:"50" desc:"the posts, pages or products, in page order"`
	Metadata   TemplateMetadata `param:"metadata,body,nullable" desc:"the site the content comes from"`
}

// TemplateItem is a post, page or product of create-from-template. Optional fields accept null
// as absent: WordPress and WooCommerce exports send null for missing authors, images and
// prices. Its fields are convert.Item's, in the same order (httpapi converts one to the other).
type TemplateItem struct {
	ID               string   `param:"id,body,required" desc:"the item's id on the source site"`
	Title            string   `param:"title,body,required" max:"500"`
	Author           string   `param:"author,body,nullable" max:"255"`
	Categories       []string `param:"categories,body,nullable" maxitems:"20" itemmax:"255"`
	Content          string   `param:"content,body,nullable,lines" max:"50000" desc:"HTML allowed; tags are stripped"`
	Currency         string   `param:"currency,body,nullable" max:"10"`
	Date             string   `param:"date,body,nullable" max:"100"`
	Description      string   `param:"description,body,nullable,lines" max:"50000" desc:"HTML allowed; tags are stripped"`
	Excerpt          string   `param:"excerpt,body,nullable,lines" max:"5000"`
	Gallery          []string `param:"gallery,body,nullable" maxitems:"20" itemmax:"2048" itemformat:"uri"`
	Image            string   `param:"image,body,nullable" max:"2048" format:"uri"`
	Price            string   `param:"price,body,nullable"`
	RegularPrice     string   `param:"regular_price,body,nullable"`
	SalePrice        string   `param:"sale_price,body,nullable"`
	ShortDescription string   `param:"short_description,body,nullable,lines" max:"5000"`
	SKU              string   `param:"sku,body,nullable" max:"255"`
	StockStatus      string   `param:"stock_status,body,nullable" max:"100"`
	Type             string   `param:"type,body,nullable" max:"50"`
	URL              string   `param:"url,body,nullable" max:"2048" format:"uri"`
}

// TemplateMetadata is the site create-from-template's content comes from.
type TemplateMetadata struct {
	Currency       string `param:"currency,body,nullable" max:"10"`
	CurrencySymbol string `param:"currency_symbol,body,nullable" max:"20"`
	SiteName       string `param:"site_name,body,nullable" max:"255"`
	SiteURL        string `param:"site_url,body,nullable" max:"2048" format:"uri"`
}
