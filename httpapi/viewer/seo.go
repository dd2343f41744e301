package viewer

import (
	_ "embed"
	"html/template"
)

// What the server sends for readers without JavaScript and for search engines (issue 28): the
// text of a book's first pages in the viewer page, and a page of its own for every page
// (docs/VIEWER.md "Text without JavaScript").

//go:embed textpage.html
var textPageHTML string

// TextPage is the template of a book page's own page (/view/{random_id}/page/{n}); its data is
// TextPageData.
var TextPage = template.Must(template.New("textpage").Parse(textPageHTML))

// Block is one block of a page's text: a heading (a short line on its own) or a paragraph.
type Block struct {
	Heading bool
	Text    string
}

// Section is one page's text in the viewer page: its number, the address of its own page and
// its blocks.
type Section struct {
	Number int
	URL    string
	Blocks []Block
}

// PageLink is a link to a page's own page.
type PageLink struct {
	Number int
	URL    string
}

// Indexing is what a page tells search engines and readers without JavaScript.
type Indexing struct {
	Description string // <meta name="description">, "" for none
	Canonical   string // absolute URL of <link rel="canonical">
	NoIndex     bool   // <meta name="robots" content="noindex">
	// JSONLD is the schema.org description of the page (JSON made by encoding/json, so "<"
	// is escaped and it cannot close its script element); "" for none.
	JSONLD template.JS
	// Sections are the text of the book's first pages (none for a gated book) and Pages links
	// to every page's own page.
	Sections []Section
	Pages    []PageLink
}

// TextPageData is what a book page's own page shows.
type TextPageData struct {
	Indexing
	BookTitle string
	Number    int
	Count     int
	TestMode  bool
	// Notice replaces the image and the text (a gated or expired book): a heading and a
	// sentence.
	Notice, NoticeText string
	Image, Alt         string
	Width, Height      int
	Blocks             []Block
	Prev, Next         string // addresses of the previous and next pages' own pages, "" at the ends
	ViewerURL          string // the viewer open at this page (#page=N)
	Background         string
}
