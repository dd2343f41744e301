package api

import "flipbook/storage"

// The answers of the page operations (extensions, issue 28), as Go types.

// PageInfo is one page of a book in GET /books/{book}/pages.
type PageInfo struct {
	Number   int    `json:"number"`
	Width    int    `json:"width" desc:"the page image's width in pixels"`
	Height   int    `json:"height" desc:"the page image's height in pixels"`
	ImageURL string `json:"image_url" format:"uri"`
	HasText  bool   `json:"has_text" desc:"whether the page has words (text or a text layer)"`
	// TextSource is where the page's text came from: "pdf" (the document's own text), "ocr"
	// (read from the page image), "render" (the text the service drew the page with), or null
	// when it has none.
	TextSource *string `json:"text_source" desc:"pdf (the document's own text), ocr (read from the page image), render (the text the service drew the page with: catalog renders, template books), or null"`
	// Renditions are the page's WebP copies by increasing width (issue 29), made in the
	// background once the book is ready: empty until then.
	Renditions []PageRendition `json:"renditions" desc:"WebP copies of the page image by increasing width (400, 800, 1200 px, those narrower than the page), made within seconds of the book being ready; empty until then"`
}

// PageRendition is a WebP copy of a page image at a smaller width.
type PageRendition struct {
	ImageURL string `json:"image_url" format:"uri"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

// PageTextInfo is GET /books/{book}/pages/{page}: the page's text and its words with their
// boxes in fractions of the page (0..1, origin top left).
type PageTextInfo struct {
	Number  int            `json:"number"`
	Source  *string        `json:"source" desc:"pdf (the document's own text), ocr (read from the page image), render (the text the service drew the page with: catalog renders, template books), or null"`
	Text    string         `json:"text"`
	Words   []storage.Word `json:"words"`
	Problem *string        `json:"problem" desc:"why the page has no text, when reading it failed"`
}

// Box is a word's box in fractions of the page (0..1, origin top left).
type Box struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// BookSearchHit is a page of GET /books/{book}/search: the words around its first match and
// the boxes of every matching word (for highlighting them on the page image).
type BookSearchHit struct {
	Page    int    `json:"page"`
	Snippet string `json:"snippet" desc:"the words around the page's first match, with … where words were left out"`
	Matches int    `json:"matches" desc:"how many words of the page match"`
	Boxes   []Box  `json:"boxes" desc:"the matching words' boxes (the first 100)"`
}

// SearchHit is a page of GET /search, best first.
type SearchHit struct {
	BookID   int64   `json:"book_id"`
	RandomID string  `json:"random_id"`
	BookName string  `json:"book_name"`
	Page     int     `json:"page"`
	Snippet  string  `json:"snippet" desc:"the words around the page's first match, with … where words were left out"`
	Score    float64 `json:"score" desc:"relevance (higher is better): how often the words are on the page, rarer words counting more"`
}

// SearchMeta is the meta of GET /search: the cursor page and how many pages match in all.
type SearchMeta struct {
	CursorMeta
	Total int `json:"total" desc:"how many pages match; only the best 1,000 can be paged through"`
}

// OutlineItem is an entry of GET /books/{book}/outline (an extension, issue 29).
type OutlineItem struct {
	Title string `json:"title"`
	Level int    `json:"level" desc:"depth in the outline: 0 for the top level"`
	Page  int    `json:"page" desc:"the page the entry opens, from 1"`
}

// PageHeatmap is GET /analytics/page-heatmap (an extension, issue 29).
type PageHeatmap struct {
	BookID     string    `json:"book_id"`
	PageNumber int       `json:"page_number"`
	Grid       int       `json:"grid" desc:"cells across and down the page"`
	Total      int64     `json:"total" desc:"clicks counted"`
	Cells      [][]int64 `json:"cells" desc:"clicks per cell: cells[row][column], row 0 at the top, column 0 at the left"`
}
