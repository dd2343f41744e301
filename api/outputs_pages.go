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
	// TextSource is where the page's text came from: "pdf" (the document's own text), or null
	// when it has none.
	TextSource *string `json:"text_source" desc:"pdf (the document's own text), or null"`
}

// PageTextInfo is GET /books/{book}/pages/{page}: the page's text and its words with their
// boxes in fractions of the page (0..1, origin top left).
type PageTextInfo struct {
	Number  int            `json:"number"`
	Source  *string        `json:"source" desc:"pdf (the document's own text), or null"`
	Text    string         `json:"text"`
	Words   []storage.Word `json:"words"`
	Problem *string        `json:"problem" desc:"why the page has no text, when reading it failed"`
}
