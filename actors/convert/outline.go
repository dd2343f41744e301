package convert

import (
	"bytes"
	"context"
	"encoding/xml"
	"strings"
	"time"

	"flipbook/storage"
)

// Limits of a PDF's outline (issue 29): a hostile document can hold millions of bookmarks.
const (
	OutlineMax      = 5000    // items kept
	OutlineTitleMax = 300     // characters of a title kept
	outlineOutput   = 8 << 20 // pdftohtml output read
	outlineTimeout  = time.Minute
)

// PDFOutline reads the outline (bookmarks, the table of contents a PDF viewer shows) of the
// PDF at path with poppler's pdftohtml, which resolves each item's destination to a page
// number: items in document order with their depth (0 for the top level), those whose page
// is not one of the book's pages (1..pages) left out. A document without an outline has none
// (an empty slice); an unreadable one gives an error, which a conversion ignores.
func PDFOutline(ctx context.Context, path string, pages int) ([]storage.OutlineItem, error) {
	ctx, cancel := context.WithTimeout(ctx, outlineTimeout)
	defer cancel()
	// -f 1 -l 1: the text of page 1 only (the outline is printed whole); -i: no images.
	out, err := cappedCommand(ctx, outlineOutput, "pdftohtml", "-xml", "-stdout", "-i", "-q", "-nodrm", "-f", "1", "-l", "1", path)
	if err != nil {
		return nil, err
	}
	return parseOutline(xmlSafe(out), pages)
}

// outlineEntry is an element of pdftohtml's <outline>: an <item page="N">title</item>, or a
// nested <outline> of deeper items.
type outlineEntry struct {
	XMLName xml.Name
	Page    int            `xml:"page,attr"`
	Title   string         `xml:",chardata"`
	Nested  []outlineEntry `xml:",any"`
}

// parseOutline reads the <outline> of pdftohtml's XML.
func parseOutline(out []byte, pages int) ([]storage.OutlineItem, error) {
	i := bytes.Index(out, []byte("<outline>"))
	if i < 0 {
		return []storage.OutlineItem{}, nil
	}
	var root outlineEntry
	d := xml.NewDecoder(bytes.NewReader(out[i:]))
	d.Strict = false
	if err := d.Decode(&root); err != nil {
		return nil, err
	}
	items := []storage.OutlineItem{}
	var walk func(es []outlineEntry, level int)
	walk = func(es []outlineEntry, level int) {
		for _, e := range es {
			if len(items) >= OutlineMax {
				return
			}
			switch e.XMLName.Local {
			case "item":
				title := strings.Join(strings.Fields(e.Title), " ")
				if r := []rune(title); len(r) > OutlineTitleMax {
					title = string(r[:OutlineTitleMax])
				}
				if title != "" && e.Page >= 1 && e.Page <= pages {
					items = append(items, storage.OutlineItem{Title: title, Level: level, Page: e.Page})
				}
			case "outline":
				walk(e.Nested, level+1)
			}
		}
	}
	walk(root.Nested, 0)
	return items, nil
}
