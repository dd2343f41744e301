package convert

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"unicode/utf8"

	"flipbook/storage"
)

// PDFTextMax is the most output of pdftotext PDFText reads: a PDF whose text is longer (a
// hostile one can draw millions of glyphs) fails rather than filling the memory.
const PDFTextMax = 64 << 20

// MaxPageWords is the most words kept of one page (PDF or OCR): a dense page has about a
// thousand, a hostile one can draw a million, which every reader of the page (the viewer's
// text layer, the page's own HTML, the index) would pay for. The rest of such a page is left
// out and its Problem says so.
const MaxPageWords = 20_000

// tooManyWords is the Problem of a page cut to MaxPageWords.
var tooManyWords = fmt.Sprintf("the page has more than %d words; only the first %d are kept", MaxPageWords, MaxPageWords)

// PDFText extracts the words of the pages of the PDF at path whose boxes are given (as
// PDFPagesMax returned them: pages 1..len(boxes)), one PageText per box, in order. A page
// without text has empty Text and no Words (an empty, not nil, slice). Word boxes are
// fractions of the page as displayed, like the page images and link areas: of the crop box,
// rotation applied. The boxes are needed for the rotation: pdftotext gives word boxes on the
// displayed page but the page size unrotated. Errors are *Failure (a reason for the customer),
// ctx.Err() when cancelled, or ErrNoPoppler.
func PDFText(ctx context.Context, path string, boxes []PageBox) ([]storage.PageText, error) {
	return pdfText(ctx, path, boxes, PDFTextMax)
}

// pdfText is PDFText reading at most limit bytes of pdftotext's output.
func pdfText(ctx context.Context, path string, boxes []PageBox, limit int64) ([]storage.PageText, error) {
	if len(boxes) == 0 {
		return []storage.PageText{}, nil // -l 0 would mean the last page
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		return nil, ErrNoPoppler
	}
	// -cropbox: the page is its crop box, as for pdftoppm; words outside it are left out. A -l
	// beyond the document's last page is taken as the last page.
	out, err := cappedCommand(ctx, limit, "pdftotext", "-bbox-layout", "-cropbox", "-f", "1", "-l", strconv.Itoa(len(boxes)),
		"-enc", "UTF-8", path, "-")
	if err != nil {
		var te *toolError
		switch {
		case errors.Is(err, errOutputTooLarge):
			return nil, fail(fmt.Sprintf("the PDF's text is longer than %d MiB and cannot be extracted", limit>>20))
		case errors.As(err, &te):
			return nil, fail("the PDF's text could not be read (" + firstLines(te.stderr, 1) + ")")
		}
		return nil, err
	}
	pages, err := parseBBoxFast(out, boxes)
	if errors.Is(err, errSlowPath) {
		pages, err = parseBBoxLayout(bytes.NewReader(xmlSafe(out)), boxes)
	}
	if err != nil {
		return nil, fail("the PDF's text could not be read (" + err.Error() + ")")
	}
	return pages, nil
}

// xmlSafe replaces what XML 1.0 does not allow and pdftotext may still print for a PDF with
// broken font encodings (control characters, invalid UTF-8, U+FFFE, U+FFFF), so one odd glyph
// does not lose the document's text: control characters become spaces, the rest U+FFFD.
func xmlSafe(b []byte) []byte {
	return bytes.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20:
			return ' '
		case r == 0xFFFE || r == 0xFFFF:
			return utf8.RuneError
		}
		return r
	}, b)
}

// textBuilder joins a page's words into its Text.
type textBuilder struct {
	b   strings.Builder
	sep string // separator before the next word: "" (same line: a space), "\n" or "\n\n"
}

func (t *textBuilder) br(sep string) {
	if len(sep) > len(t.sep) {
		t.sep = sep
	}
}

func (t *textBuilder) word(s string) {
	if t.b.Len() > 0 {
		if t.sep == "" {
			t.sep = " "
		}
		t.b.WriteString(t.sep)
	}
	t.b.WriteString(s)
	t.sep = ""
}

// parseBBoxLayout reads the XHTML of pdftotext -bbox-layout: <page width height> holding
// <flow>, <block>, <line> and <word xMin yMin xMax yMax>text</word>, in points, origin top left
// of the displayed page. It returns one PageText per box; pages pdftotext did not print are
// empty. More pages than boxes, a word outside a page, a page without a size, a word without
// its box and malformed XML are errors (pdftotext never prints them). Nesting below <page> is
// not checked: a word directly in a page is a word of it.
func parseBBoxLayout(r io.Reader, boxes []PageBox) ([]storage.PageText, error) {
	p := &bboxParser{boxes: boxes, pages: make([]storage.PageText, len(boxes)), open: -1}
	for i := range p.pages {
		p.pages[i] = storage.PageText{Page: i + 1, Source: storage.TextFromPDF, Words: []storage.Word{}}
	}
	d := xml.NewDecoder(r)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			err = p.start(d, t)
		case xml.EndElement:
			if t.Name.Local == "page" && p.open >= 0 {
				p.pages[p.open].Text = p.text.b.String()
				p.open = -1
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if p.open >= 0 {
		return nil, errors.New("the output ends inside a page")
	}
	return p.pages, nil
}

// bboxParser is the state of parseBBoxLayout.
type bboxParser struct {
	boxes []PageBox
	pages []storage.PageText
	seen  int     // <page> elements read
	open  int     // index of the open page, -1 outside any
	w, h  float64 // its displayed size, points
	text  textBuilder
}

// start handles a start tag (reading the whole element for a word).
func (p *bboxParser) start(d *xml.Decoder, t xml.StartElement) error {
	switch t.Name.Local {
	case "page":
		if p.open >= 0 {
			return errors.New("a page inside a page")
		}
		if p.seen >= len(p.pages) {
			return fmt.Errorf("pdftotext printed more than the %d pages asked", len(p.pages))
		}
		w, h, err := pageSize(t, p.boxes[p.seen])
		if err != nil {
			return err
		}
		p.open, p.w, p.h, p.text = p.seen, w, h, textBuilder{}
		p.seen++
	case "flow", "block":
		p.text.br("\n\n")
	case "line":
		p.text.br("\n")
	case "word":
		if p.open < 0 {
			return errors.New("a word outside a page")
		}
		word, err := readWord(d, t, p.w, p.h)
		if err != nil {
			return err
		}
		p.addWord(word)
	}
	return nil
}

// pageSize is the displayed width and height of a <page>: pdftotext prints the crop box
// unrotated, while its word boxes are on the page as displayed.
func pageSize(t xml.StartElement, box PageBox) (w, h float64, err error) {
	w, err1 := floatAttr(t, "width")
	h, err2 := floatAttr(t, "height")
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	if w <= 0 || h <= 0 {
		return 0, 0, fmt.Errorf("a page of %gx%g", w, h)
	}
	if box.Rotate == 90 || box.Rotate == 270 {
		w, h = h, w
	}
	return w, h, nil
}

// readWord reads a <word> element (its start tag already read) on a page of w×h points.
func readWord(d *xml.Decoder, t xml.StartElement, w, h float64) (storage.Word, error) {
	var s string
	if err := d.DecodeElement(&s, &t); err != nil {
		return storage.Word{}, err
	}
	var c [4]float64
	for i, name := range []string{"xMin", "yMin", "xMax", "yMax"} {
		v, err := floatAttr(t, name)
		if err != nil {
			return storage.Word{}, err
		}
		c[i] = v
	}
	return wordAt(s, c, w, h), nil
}

// fraction is v/size clamped to [0,1] and rounded to 4 decimals.
func fraction(v, size float64) float64 {
	return round4(math.Min(1, math.Max(0, v/size)))
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// floatAttr is the attribute name of t as a finite number.
func floatAttr(t xml.StartElement, name string) (float64, error) {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			v, err := strconv.ParseFloat(strings.TrimSpace(a.Value), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("<%s %s=%q>: not a number", t.Name.Local, name, a.Value)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("<%s> without %s", t.Name.Local, name)
}
