package convert

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"flipbook/storage"
)

// Defaults of Options.
const (
	DefaultLongEdge = 1600
	DefaultChunk    = 250
)

// Options configure Convert.
type Options struct {
	LongEdge  int // page image size (longer side, pixels)
	MaxPages  int // most pages of a PDF or Office document (0: DefaultMaxPages)
	AutoLinks bool
	Slots     chan struct{} // renderer processes allowed at once (shared by all conversions)
	Chunk     int
	OnPages   func(n int)
	// Fetch fetches the product images of a catalog render (nil: none are fetched).
	Fetch Fetcher
	// Office is the LibreOffice command ("": soffice, looked up in PATH).
	Office string
	// OCRLanguages are the Tesseract languages pages without text are read in, joined by "+"
	// ("eng+deu"; "": DefaultOCRLanguages); each needs its traineddata installed
	// (tesseract-ocr-deu), or the pages say so in their Problem.
	OCRLanguages string
	// NoText skips the pages' text (no pdftotext, no OCR): Result.Text stays nil.
	NoText bool
}

// Page is a rendered page image file.
type Page struct {
	Path          string
	Width, Height int
	Links         []storage.Link
}

// Result is a converted document: its pages, a thumbnail (JPEG bytes) and, for PDF and
// Office sources, the PDF (for downloads).
type Result struct {
	Pages []Page
	Thumb []byte
	PDF   string
	// Text is each page's text, one per page in order: the document's own (PDF and Office
	// sources), or read from the page image by OCR (photos, catalog renders, and PDF pages
	// without text: scans). Reading it never fails a conversion: a page whose text could not be
	// read says why (PageText.Problem).
	Text []storage.PageText
	// Outline is a PDF's bookmarks (PDF and Office sources; nil for the others, and when they
	// cannot be read: an outline never fails a conversion).
	Outline []storage.OutlineItem
}

// Convert turns the file src of the given kind into page images under work (a scratch folder
// of this conversion). Errors are *Failure (a reason for the customer), ctx.Err() when
// cancelled, or internal errors.
func Convert(ctx context.Context, src, kind, work string, o Options) (*Result, error) {
	if o.LongEdge <= 0 {
		o.LongEdge = DefaultLongEdge
	}
	if o.Chunk <= 0 {
		o.Chunk = DefaultChunk
	}
	if err := os.MkdirAll(work, 0o750); err != nil {
		return nil, err
	}
	switch {
	case kind == KindJPG || kind == KindPNG:
		dst := filepath.Join(work, "page-1.jpg")
		w, h, img, err := Photo(ctx, src, o.LongEdge, dst)
		if err != nil {
			return nil, err
		}
		thumb, err := Thumbnail(img)
		if err != nil {
			return nil, err
		}
		if o.OnPages != nil {
			o.OnPages(1)
		}
		text := o.ocrPages(ctx, []string{dst})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &Result{Pages: []Page{{Path: dst, Width: w, Height: h}}, Thumb: thumb, Text: text}, nil
	case IsOffice(kind):
		pdf, err := OfficeToPDF(ctx, o.Office, src, kind, filepath.Join(work, "office"))
		if err != nil {
			return nil, err
		}
		return convertPDF(ctx, pdf, work, o)
	case kind == KindPDF:
		return convertPDF(ctx, src, work, o)
	case kind == KindCatalog:
		return renderCatalogFile(ctx, src, work, o)
	}
	return nil, fail("unsupported file type " + kind)
}

func convertPDF(ctx context.Context, pdf, work string, o Options) (*Result, error) {
	boxes, err := PDFPagesMax(ctx, pdf, o.MaxPages)
	if err != nil {
		return nil, err
	}
	// The text and the outline are read while the pages render (pdftotext and pdftohtml are
	// short processes beside the renderers), and awaited on every way out.
	text := later(func() []storage.PageText {
		if o.NoText {
			return nil
		}
		return pageTexts(ctx, pdf, boxes)
	})
	defer text()
	outline := later(func() []storage.OutlineItem {
		items, _ := PDFOutline(ctx, pdf, len(boxes)) // an outline never fails a conversion
		return items
	})
	defer outline()
	files, err := RenderPDF(ctx, pdf, len(boxes), RenderOptions{LongEdge: o.LongEdge, Slots: o.Slots,
		Chunk: o.Chunk, OnPages: o.OnPages}, filepath.Join(work, "pages"))
	if err != nil {
		return nil, err
	}
	// The thumbnail is made while the links and the text are read.
	type thumbResult struct {
		data []byte
		err  error
	}
	thumb := later(func() thumbResult {
		data, err := thumbnailOf(files[0])
		return thumbResult{data, err}
	})
	defer thumb()
	res := &Result{PDF: pdf, Pages: make([]Page, len(files))}
	for i, f := range files {
		w, h, err := jpegSize(f)
		if err != nil {
			return nil, err
		}
		res.Pages[i] = Page{Path: f, Width: w, Height: h}
	}
	if o.AutoLinks {
		for i, l := range PDFLinks(ctx, pdf, boxes) {
			res.Pages[i].Links = l
		}
	}
	if res.Text = text(); res.Text != nil {
		ocrBlankPages(ctx, res, o)
	}
	res.Outline = outline()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	t := thumb()
	if t.err != nil {
		return nil, t.err
	}
	res.Thumb = t.data
	return res, nil
}

// thumbnailOf is the thumbnail of the page image at path.
func thumbnailOf(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	im, err := DecodeImage(data)
	if err != nil {
		return nil, err
	}
	return Thumbnail(im.Img)
}

// later runs fn in a goroutine and returns a function that waits for its result (once; later
// calls return the same result).
func later[T any](fn func() T) func() T {
	done := make(chan T, 1)
	go func() { done <- fn() }()
	var got T
	waited := false
	return func() T {
		if !waited {
			got, waited = <-done, true
		}
		return got
	}
}

// pageTexts is PDFText, or, when the text cannot be read, every page saying why.
func pageTexts(ctx context.Context, pdf string, boxes []PageBox) []storage.PageText {
	texts, err := PDFText(ctx, pdf, boxes)
	if err == nil {
		return texts
	}
	problem := "the text could not be read"
	var f *Failure
	if errors.As(err, &f) {
		problem = f.Reason
	}
	texts = make([]storage.PageText, len(boxes))
	for i := range texts {
		texts[i] = storage.PageText{Page: i + 1, Words: []storage.Word{}, Problem: problem}
	}
	return texts
}

// ocrPages is OCRPages with o's slots and languages, or nil when o turns text off.
func (o Options) ocrPages(ctx context.Context, paths []string) []storage.PageText {
	if o.NoText {
		return nil
	}
	return OCRPages(ctx, paths, o.Slots, o.OCRLanguages)
}

// ocrBlankPages reads by OCR the pages of res whose document has no text for them and no
// problem reading it (scanned pages), from their rendered images. A page where OCR finds
// nothing keeps no words, with Source "ocr" (it was read).
func ocrBlankPages(ctx context.Context, res *Result, o Options) {
	var idx []int
	var paths []string
	for i, t := range res.Text {
		if len(t.Words) == 0 && t.Problem == "" && i < len(res.Pages) {
			idx = append(idx, i)
			paths = append(paths, res.Pages[i].Path)
		}
	}
	if len(paths) == 0 {
		return
	}
	for j, t := range OCRPages(ctx, paths, o.Slots, o.OCRLanguages) {
		t.Page = res.Text[idx[j]].Page
		res.Text[idx[j]] = t
	}
}

func jpegSize(path string) (int, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	cfg, err := decodeConfig(f)
	if err != nil {
		return 0, 0, fail("a rendered page is not a readable image")
	}
	return cfg.Width, cfg.Height, nil
}
