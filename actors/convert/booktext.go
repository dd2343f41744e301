package convert

import (
	"context"

	"flipbook/storage"
)

// BookText reads the text of a stored book's pages (the backfill of issue 28: books made
// before their text was kept, and editor and template books, which are made of images): from
// pdf, the book's document, when it has one and at least as many pages, and by OCR of the page
// images for the pages without text of their own. images[i] is page i+1's image file. Like a
// conversion's, it never fails: a page that could not be read has no words and says why.
func BookText(ctx context.Context, pdf string, images []string, o Options) []storage.PageText {
	res := &Result{Pages: make([]Page, len(images))}
	for i, p := range images {
		res.Pages[i] = Page{Path: p}
	}
	if pdf != "" {
		if boxes, err := PDFPages(ctx, pdf); err == nil && len(boxes) >= len(images) {
			res.Text = pageTexts(ctx, pdf, boxes[:len(images)])
		}
	}
	if res.Text == nil {
		res.Text = make([]storage.PageText, len(images))
		for i := range res.Text {
			res.Text[i] = storage.PageText{Page: i + 1, Words: []storage.Word{}}
		}
	}
	ocrBlankPages(ctx, res, o)
	return res.Text
}
