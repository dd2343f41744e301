// Package viewer holds the public flipbook viewer's page template and assets, embedded in the
// binary. The page-flip library is vendored from npm (page-flip 2.0.7, MIT; see
// assets/page-flip.LICENSE and docs/VIEWER.md).
package viewer

import (
	"embed"
	"html/template"
)

// AssetFiles are the viewer's scripts and styles as written; they are served as Assets()
// prepares them (assets.go).
//
//go:embed assets
var AssetFiles embed.FS

//go:embed page.html
var pageHTML string

// Page is the viewer's HTML template; its data is PageData. Its function asset names an asset
// by its content-hashed address ({{asset "viewer.js"}}: /viewer/assets/viewer.3f2a9c1b.js).
var Page = template.Must(template.New("viewer").Funcs(template.FuncMap{"asset": assetURL}).Parse(pageHTML))

// PageData is what the viewer page shows.
type PageData struct {
	Title      string
	Background string
	ConfigJSON template.JS // the viewer's configuration (pages, settings, gate), as JSON
	TestMode   bool
	Expired    bool
	Processing bool
	Failed     bool
	// Tools shows the page tools (zoom, pages) in the HTML as sent, so the header does not
	// grow when the script starts (a layout shift): a ready book a reader can open at once
	// (not gated). Without JavaScript the stylesheet hides them.
	Tools bool
	// Shown are the header's other tools a ready, open book shows from its settings, in the
	// HTML as sent for the same reason (the script hides full screen where the browser has
	// none).
	Shown ToolsShown
	Brand string // the workspace's name, or the brand's company name under take-over branding
	// Take-over branding (docs/VIEWER.md): the brand's logo, website and primary colour.
	TakeOver   bool
	BrandLogo  string
	BrandURL   string
	BrandColor string
	MadeWith   bool // show the "made with" badge
	// GateMessage is the book's text on the email gate (magic_link_message), "" for the default.
	GateMessage string
	// SEO is the text of the first pages and what search engines are told (seo.go).
	SEO Indexing
	// L is the reader's language (i18n.go): the page's words and the scripts' (L.ScriptJSON).
	L Lang
}

// ToolsShown says which of the header's tools a book shows.
type ToolsShown struct {
	Fullscreen, Download, Share, Print, Search, Reading bool
}
