package storage

import (
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// Word is one word of a page with its box in fractions of the page (0..1, origin top left).
type Word struct {
	Text string  `json:"text"`
	X    float64 `json:"x"`
	Y    float64 `json:"y"`
	W    float64 `json:"w"`
	H    float64 `json:"h"`
}

// PageText is the text of one page (issue 28): its words in reading order, and Text, the words
// joined (a space between the words of a line, a newline between lines, a blank line between
// blocks). Source says where it came from ("pdf": the document's own text); Problem, when the
// page has no text because reading it failed, says why (a page of a PDF without text has
// neither).
type PageText struct {
	Page    int    `json:"page"` // 1-based
	Source  string `json:"source,omitempty"`
	Text    string `json:"text"`
	Words   []Word `json:"words"`
	Problem string `json:"problem,omitempty"`
}

// Text sources.
const (
	TextFromPDF = "pdf" // the document's own text (pdftotext)
	TextFromOCR = "ocr" // read from the page image (Tesseract)
	// TextFromRender is the text the service drew a page with (catalog renders): the words
	// exactly as written, in any script, with their boxes.
	TextFromRender = "render"
)

// pageTextPrefix is where a book's page texts are: one record a page, in page order.
func pageTextPrefix(t Tenant, rid string) []byte {
	k := append(t.prefix(), "text/"...)
	k = append(k, rid...)
	return append(k, '/')
}

func pageTextKey(t Tenant, rid string, page int) []byte {
	return binary.BigEndian.AppendUint32(pageTextPrefix(t, rid), uint32(page))
}

// PutPageTexts stages a book's page texts, replacing those it had, and their search index
// entries (searchindex.go).
func (bt *Batch) PutPageTexts(t Tenant, rid string, texts []PageText) error {
	p := pageTextPrefix(t, rid)
	_ = bt.b.DeleteRange(p, prefixEnd(p), nil)
	for i := range texts {
		if err := bt.setJSON(pageTextKey(t, rid, texts[i].Page), &texts[i]); err != nil {
			return err
		}
	}
	return bt.indexPageTexts(t, rid, texts)
}

// PageText reads the text of one page of a book (errs.ErrNotFound when it has none stored).
func (s *Store) PageText(t Tenant, rid string, page int) (*PageText, error) {
	var pt PageText
	if err := s.getJSON(pageTextKey(t, rid, page), &pt); err != nil {
		return nil, err
	}
	return &pt, nil
}

// PageTexts reads the texts of every page of a book, in page order. Readers that look at one
// page at a time (searches, the page list) use EachPageText, which holds one page's words in
// memory rather than the book's.
func (s *Store) PageTexts(t Tenant, rid string) ([]*PageText, error) {
	return listJSON[PageText](s, pageTextPrefix(t, rid), false)
}

// EachPageText calls fn with the text of each page of a book, in page order, one page decoded
// at a time: a search of a long, word-dense book (2,000 pages of up to 20,000 words) would
// otherwise hold all its words, gigabytes, for one anonymous viewer request. fn may keep the
// page; an error from fn stops the walk and is returned.
func (s *Store) EachPageText(t Tenant, rid string, fn func(*PageText) error) error {
	p := pageTextPrefix(t, rid)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var pt PageText
		if err := codec.Unmarshal(it.Value(), &pt); err != nil {
			return err
		}
		if err := fn(&pt); err != nil {
			return err
		}
	}
	return it.Error()
}

// HasPageText reports whether a book has its page texts stored (a record for its first page:
// a conversion or the backfill writes one for every page, with or without words).
func (s *Store) HasPageText(t Tenant, rid string) (bool, error) {
	return s.has(pageTextKey(t, rid, 1))
}

// BookRef names a book.
type BookRef struct {
	Tenant   Tenant
	RandomID string
}

// BooksAfter lists up to n books of every workspace whose ids follow after (from the global
// lookup, in id order; "" for the first): a walk over all books that holds no iterator between
// its steps.
func (s *Store) BooksAfter(after string, n int) ([]BookRef, error) {
	p := bookLookupKey("")
	lo := p
	if after != "" {
		lo = append(bookLookupKey(after), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []BookRef
	for ok := it.First(); ok && len(out) < n; ok = it.Next() {
		if t, ok := tenantFromBytes(it.Value()); ok {
			out = append(out, BookRef{Tenant: t, RandomID: string(it.Key()[len(p):])})
		}
	}
	return out, it.Error()
}

// OutlineItem is an entry of a book's outline (issue 29: the PDF's bookmarks): its title, its
// depth (0 for the top level) and the page it opens.
type OutlineItem struct {
	Title string `json:"title"`
	Level int    `json:"level"`
	Page  int    `json:"page"`
}

func outlineKey(t Tenant, rid string) []byte {
	return append(append(t.prefix(), "outline/"...), rid...)
}

// PutOutline stages a book's outline (none: removed).
func (bt *Batch) PutOutline(t Tenant, rid string, items []OutlineItem) error {
	if len(items) == 0 {
		bt.del(outlineKey(t, rid))
		return nil
	}
	return bt.setJSON(outlineKey(t, rid), items)
}

// Outline reads a book's outline (empty when it has none).
func (s *Store) Outline(t Tenant, rid string) ([]OutlineItem, error) {
	items := []OutlineItem{}
	err := s.getJSON(outlineKey(t, rid), &items)
	if errors.Is(err, errs.ErrNotFound) {
		return []OutlineItem{}, nil
	}
	return items, err
}
