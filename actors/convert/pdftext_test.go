package convert

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

// A4 in millimetres and points.
const a4W, a4H, a4HPt = 210.0, 297.0, 841.89

// textPDF is a 3-page A4 document (in mm): page 1 has "Hello World" with its baseline at
// x=20, y=30, "second line" at y=36 (the same block) and "another block" at y=100; page 2
// has "Page two ünïcødé & <tags>" (Latin-1 in a core font); page 3 is blank.
func textPDF(t *testing.T) string {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 14)
	latin1 := f.UnicodeTranslatorFromDescriptor("")
	f.AddPage()
	f.Text(20, 30, "Hello World")
	f.Text(20, 36, "second line")
	f.Text(20, 100, "another block")
	f.AddPage()
	f.Text(20, 30, latin1("Page two ünïcødé & <tags>"))
	f.AddPage()
	return writePDF(t, f)
}

func pageBoxes(t *testing.T, path string) []PageBox {
	t.Helper()
	boxes, err := PDFPages(context.Background(), path)
	require.NoError(t, err)
	return boxes
}

func wordTexts(ws []storage.Word) []string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.Text
	}
	return s
}

// inside reports whether the point (x, y) (fractions) lies in the word's box.
func inside(w storage.Word, x, y float64) bool {
	return x >= w.X && x <= w.X+w.W && y >= w.Y && y <= w.Y+w.H
}

func requireFractions(t *testing.T, pages []storage.PageText) {
	t.Helper()
	for _, p := range pages {
		for _, w := range p.Words {
			require.True(t, w.X >= 0 && w.Y >= 0 && w.W > 0 && w.H > 0 && w.X+w.W <= 1.00001 && w.Y+w.H <= 1.00001,
				"page %d: %+v", p.Page, w)
		}
	}
}

func TestPDFTextWordsAndLayout(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	src := textPDF(t)
	pages, err := PDFText(context.Background(), src, pageBoxes(t, src))
	require.NoError(t, err)
	require.Len(t, pages, 3)
	for i, p := range pages {
		require.Equal(t, i+1, p.Page)
	}
	requireFractions(t, pages)

	p1 := pages[0]
	require.Equal(t, []string{"Hello", "World", "second", "line", "another", "block"}, wordTexts(p1.Words))
	require.Equal(t, "Hello World\nsecond line\n\nanother block", p1.Text)
	hello, world, second := p1.Words[0], p1.Words[1], p1.Words[2]
	assert.InDelta(t, 20/a4W, hello.X, 0.002, "%+v", hello)
	assert.True(t, hello.Y < 30/a4H && 30/a4H < hello.Y+hello.H, "the baseline crosses the box: %+v", hello)
	assert.InDelta(t, 14/a4HPt, hello.H, 0.003, "a 14 pt font: %+v", hello)
	assert.Greater(t, world.X, hello.X+hello.W, "World is right of Hello")
	assert.Equal(t, hello.Y, world.Y, "one line")
	assert.InDelta(t, 20/a4W, second.X, 0.002)
	assert.True(t, second.Y < 36/a4H && 36/a4H < second.Y+second.H, "%+v", second)
	assert.True(t, p1.Words[4].Y < 100/a4H && 100/a4H < p1.Words[4].Y+p1.Words[4].H, "%+v", p1.Words[4])

	p2 := pages[1]
	require.Equal(t, []string{"Page", "two", "ünïcødé", "&", "<tags>"}, wordTexts(p2.Words))
	require.Equal(t, "Page two ünïcødé & <tags>", p2.Text)
	for i := 1; i < len(p2.Words); i++ {
		assert.Greater(t, p2.Words[i].X, p2.Words[i-1].X, "reading order")
	}

	p3 := pages[2]
	require.Empty(t, p3.Text)
	require.NotNil(t, p3.Words)
	require.Empty(t, p3.Words)
	js, err := json.Marshal(p3)
	require.NoError(t, err)
	require.JSONEq(t, `{"page":3,"source":"pdf","text":"","words":[]}`, string(js))
}

// On a rotated page the word boxes are fractions of the page as displayed: the point just
// inside the start of "Hello" is where the rotation takes it.
func TestPDFTextRotatedPages(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	x, y := 21/a4W, 29/a4H // 1 mm right of the start of Hello, 1 mm above its baseline
	displayed := map[int][2]float64{90: {1 - y, x}, 180: {1 - x, 1 - y}, 270: {y, 1 - x}}
	for rot, at := range displayed {
		t.Run(fmt.Sprint("rotate ", rot), func(t *testing.T) {
			t.Parallel()
			src := rotatePages(t, textPDF(t), rot, "1")
			boxes := pageBoxes(t, src)
			require.Equal(t, rot, boxes[0].Rotate)
			pages, err := PDFText(context.Background(), src, boxes)
			require.NoError(t, err)
			require.Len(t, pages, 3)
			requireFractions(t, pages)
			// pdftotext's reading order of the blocks depends on the rotation (at 270° it
			// reads "another block" first); the words of a line stay in order.
			require.ElementsMatch(t, []string{"Hello", "World", "second", "line", "another", "block"}, wordTexts(pages[0].Words))
			require.Contains(t, pages[0].Text, "Hello World\nsecond line")
			require.Contains(t, pages[0].Text, "another block")
			hello := pages[0].Words[slices.Index(wordTexts(pages[0].Words), "Hello")]
			assert.True(t, inside(hello, at[0], at[1]), "Hello %+v should hold (%.4f, %.4f)", hello, at[0], at[1])
			assert.Equal(t, "Page two ünïcødé & <tags>", pages[1].Text, "other pages unchanged")
			assert.True(t, inside(pages[1].Words[0], x, y), "%+v", pages[1].Words[0])
		})
	}
}

// Fractions are of the crop box (the page as shown), and words outside it are left out.
func TestPDFTextCropBox(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	f := newTestPDF()
	f.SetPageBox("crop", 100, 100, 300, 300) // user space: x 100..400, y 100..400
	f.AddPage()
	f.SetXY(150, 550) // 50 pt right of the crop box's left edge, inside it
	f.Write(16, "inside")
	f.SetXY(10, 10)
	f.Write(16, "outside")
	src := writePDF(t, f)
	pages, err := PDFText(context.Background(), src, pageBoxes(t, src))
	require.NoError(t, err)
	require.Len(t, pages, 1)
	require.Equal(t, "inside", pages[0].Text)
	assert.InDelta(t, 50.0/300, pages[0].Words[0].X, 0.02, "%+v", pages[0].Words[0])
}

// More boxes than the document has pages (pdftotext takes -l past the end as the last page):
// the extra pages are empty.
func TestPDFTextPagesBeyondTheDocument(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	src := textPDF(t)
	boxes := pageBoxes(t, src)
	pages, err := PDFText(context.Background(), src, append(boxes, boxes[0], boxes[0]))
	require.NoError(t, err)
	require.Len(t, pages, 5)
	require.Equal(t, "Hello World\nsecond line\n\nanother block", pages[0].Text)
	for _, p := range pages[2:] {
		require.Empty(t, p.Text, "page %d", p.Page)
		require.Empty(t, p.Words, "page %d", p.Page)
	}
	require.Equal(t, 5, pages[4].Page)

	// Fewer: only those pages are read.
	pages, err = PDFText(context.Background(), src, boxes[:1])
	require.NoError(t, err)
	require.Len(t, pages, 1)

	pages, err = PDFText(context.Background(), src, nil)
	require.NoError(t, err)
	require.Empty(t, pages)
}

func TestPDFTextFailures(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	src := textPDF(t)
	boxes := pageBoxes(t, src)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := PDFText(ctx, src, boxes)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, IsFailure(err))

	_, err = pdfText(context.Background(), src, boxes, 300)
	require.True(t, IsFailure(err), "%v", err)
	require.Contains(t, err.Error(), "longer than")

	corrupt := append([]byte("%PDF-1.4\n"), []byte(strings.Repeat("garbage \x00\x01 not an object\n", 100))...)
	_, err = PDFText(context.Background(), writeTempPDF(t, append(corrupt, "%%EOF\n"...)), boxes)
	require.True(t, IsFailure(err), "%v", err)
	require.Contains(t, err.Error(), "could not be read")
}

func TestPDFTextCappedCommand(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("head"); err != nil {
		t.Skip("no head(1)")
	}
	out, err := cappedCommand(context.Background(), 1000, "head", "-c", "1000", "/dev/zero")
	require.NoError(t, err)
	require.Len(t, out, 1000, "exactly the limit is allowed")
	_, err = cappedCommand(context.Background(), 1000, "head", "-c", "100000000", "/dev/zero")
	require.ErrorIs(t, err, errOutputTooLarge)
	_, err = cappedCommand(context.Background(), 1000, "head", "-c", "1", "/no/such/file")
	var te *toolError
	require.ErrorAs(t, err, &te)
	require.Contains(t, te.Error(), "/no/such/file")
}

// xhtml is pdftotext -bbox-layout output around the given <doc> content.
func xhtml(doc string) string {
	return `<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">` +
		`<html xmlns="http://www.w3.org/1999/xhtml"><head><title></title></head><body><doc>` + doc + `</doc></body></html>`
}

func TestPDFTextParse(t *testing.T) {
	t.Parallel()
	parse := func(doc string, boxes ...PageBox) ([]storage.PageText, error) {
		return parseBBoxLayout(strings.NewReader(string(xmlSafe([]byte(xhtml(doc))))), boxes)
	}
	portrait := PageBox{X1: 200, Y1: 400}
	pages, err := parse(`<page width="200" height="400"><flow><block>
		<line><word xMin="20" yMin="40" xMax="60" yMax="60">a&amp;b</word><word xMin="70" yMin="40" xMax="80" yMax="60">&lt;c&gt;</word>
		<word xMin="1" yMin="1" xMax="2" yMax="2">  </word></line>
		<line><word xMin="-10" yMin="390" xMax="10" yMax="500">edge</word></line></block>
		<block><line><word xMin="60" yMin="100" xMax="20" yMax="80">swapped</word></line></block></flow>
		<flow><block><line><word xMin="0" yMin="0" xMax="1" yMax="1">bad`+"\x01char\x02\xff"+`</word></line></block></flow></page>`,
		portrait, portrait)
	require.NoError(t, err)
	require.Len(t, pages, 2, "a page pdftotext did not print is empty")
	p := pages[0]
	require.Equal(t, []string{"a&b", "<c>", "edge", "swapped", "bad char \uFFFD"}, wordTexts(p.Words), "blank words are skipped")
	require.Equal(t, "a&b <c>\nedge\n\nswapped\n\nbad char \uFFFD", p.Text)
	require.Equal(t, storage.Word{Text: "a&b", X: 0.1, Y: 0.1, W: 0.2, H: 0.05}, p.Words[0])
	require.Equal(t, storage.Word{Text: "edge", X: 0, Y: 0.975, W: 0.05, H: 0.025}, p.Words[2], "clamped to the page")
	require.Equal(t, storage.Word{Text: "swapped", X: 0.1, Y: 0.2, W: 0.2, H: 0.05}, p.Words[3], "corners in any order")
	require.Equal(t, storage.PageText{Page: 2, Source: storage.TextFromPDF, Words: []storage.Word{}}, pages[1])

	// A page turned a quarter: pdftotext prints the size unrotated, the words on the page as
	// displayed (400 wide, 200 high).
	pages, err = parse(`<page width="200" height="400"><word xMin="300" yMin="20" xMax="340" yMax="30">w</word></page>`,
		PageBox{X1: 200, Y1: 400, Rotate: 90})
	require.NoError(t, err)
	require.Equal(t, storage.Word{Text: "w", X: 0.75, Y: 0.1, W: 0.1, H: 0.05}, pages[0].Words[0])

	// Rounded to 4 decimals: the edges, so X+W is the rounded right edge (0.6667).
	pages, err = parse(`<page width="3" height="3"><word xMin="1" yMin="0" xMax="2" yMax="3">r</word></page>`, portrait)
	require.NoError(t, err)
	require.Equal(t, storage.Word{Text: "r", X: 0.3333, Y: 0, W: 0.3334, H: 1}, pages[0].Words[0])

	pages, err = parse(``, portrait)
	require.NoError(t, err)
	require.Equal(t, []storage.PageText{{Page: 1, Source: storage.TextFromPDF, Words: []storage.Word{}}}, pages, "no page printed")

	// Anything pdftotext would not print is an error, never a panic; a word outside any page
	// is one of them.
	const page = `<page width="200" height="400">`
	for name, doc := range map[string]string{
		"more pages than asked": page + `</page>` + page + `</page>`,
		"word outside a page":   `<word xMin="1" yMin="1" xMax="2" yMax="2">x</word>`,
		"page in a page":        page + page + `</page></page>`,
		"no width":              `<page height="400"></page>`,
		"zero height":           `<page width="200" height="0"></page>`,
		"width not a number":    `<page width="wide" height="400"></page>`,
		"infinite width":        `<page width="Inf" height="400"></page>`,
		"word without a corner": page + `<word xMin="1" yMin="1" xMax="2">x</word></page>`,
		"NaN corner":            page + `<word xMin="NaN" yMin="1" xMax="2" yMax="2">x</word></page>`,
		"unclosed page":         page + `<word xMin="1" yMin="1" xMax="2" yMax="2">x</word>`,
		"mismatched tags":       page + `<word xMin="1" yMin="1" xMax="2" yMax="2">x</page></word>`,
		"unknown entity":        page + `<word xMin="1" yMin="1" xMax="2" yMax="2">&bogus;</word></page>`,
		"control character ref": page + `<word xMin="1" yMin="1" xMax="2" yMax="2">&#x1;</word></page>`,
		"truncated tag":         `<page width="200" hei`,
	} {
		_, err := parse(doc, portrait)
		require.Error(t, err, name)
	}
	for name, raw := range map[string]string{
		"not XML": "%PDF-1.4 \x00\x01",
		"empty":   "",
		"cut":     xhtml(page)[:120],
	} {
		pages, err := parseBBoxLayout(strings.NewReader(string(xmlSafe([]byte(raw)))), []PageBox{portrait})
		if err == nil { // no page at all: one empty page
			require.Equal(t, []storage.PageText{{Page: 1, Source: storage.TextFromPDF, Words: []storage.Word{}}}, pages, name)
		}
	}
}

// TestPDFTextNoSuchFile: a missing file is a failure of pdftotext, not a panic.
func TestPDFTextNoSuchFile(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	missing := filepath.Join(t.TempDir(), "missing.pdf")
	_, err := PDFText(context.Background(), missing, []PageBox{{X1: 1, Y1: 1}})
	require.True(t, IsFailure(err), "%v", err)
}

// A document whose text cannot be read still converts: each page says why it has none.
func TestPageTextsProblem(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	bad := filepath.Join(t.TempDir(), "bad.pdf")
	require.NoError(t, os.WriteFile(bad, []byte("%PDF-1.4 not really"), 0o600))
	texts := pageTexts(context.Background(), bad, []PageBox{{}, {}})
	require.Len(t, texts, 2)
	for i, pt := range texts {
		require.Equal(t, i+1, pt.Page)
		require.NotEmpty(t, pt.Problem)
		require.Empty(t, pt.Text)
		require.NotNil(t, pt.Words)
	}
}

// A page of more than MaxPageWords words keeps the first MaxPageWords and says why; the next
// page is read whole.
func TestPDFTextWordCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`<page width="200" height="400"><flow><block><line>`)
	for range MaxPageWords + 5 {
		b.WriteString(`<word xMin="1" yMin="1" xMax="2" yMax="2">w</word>`)
	}
	b.WriteString(`</line></block></flow></page><page width="200" height="400"><word xMin="1" yMin="1" xMax="2" yMax="2">x</word></page>`)
	portrait := PageBox{X1: 200, Y1: 400}
	pages, err := parseBBoxLayout(strings.NewReader(xhtml(b.String())), []PageBox{portrait, portrait})
	require.NoError(t, err)
	require.Len(t, pages[0].Words, MaxPageWords)
	require.Equal(t, MaxPageWords*2-1, len(pages[0].Text))
	require.Contains(t, pages[0].Problem, "more than 20000 words")
	require.Len(t, pages[1].Words, 1)
	require.Empty(t, pages[1].Problem)
}

// A PDF's conversion keeps its pages' text (read while the pages render), and none with NoText.
func TestConvertPDFText(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	pdf := textPDF(t)
	res, err := Convert(context.Background(), pdf, KindPDF, t.TempDir(), Options{LongEdge: 400})
	require.NoError(t, err)
	require.Len(t, res.Text, len(res.Pages))
	require.Equal(t, storage.TextFromPDF, res.Text[0].Source)
	require.NotEmpty(t, res.Text[0].Words)
	res, err = Convert(context.Background(), pdf, KindPDF, t.TempDir(), Options{LongEdge: 400, NoText: true})
	require.NoError(t, err)
	require.Nil(t, res.Text)
	require.NotEmpty(t, res.Pages)
}

// The fast reader of pdftotext's output gives what the XML decoder gives, on real output and
// on hand-made documents, or hands the document to it (errSlowPath).
func TestPDFTextFastMatchesDecoder(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	pdf := textPDF(t)
	boxes := pageBoxes(t, pdf)
	out, err := exec.Command("pdftotext", "-bbox-layout", "-cropbox", "-enc", "UTF-8", pdf, "-").Output()
	require.NoError(t, err)
	portrait := PageBox{X1: 200, Y1: 400}
	docs := map[string]struct {
		out   []byte
		boxes []PageBox
	}{
		"real": {out, boxes},
		"entities and broken bytes": {[]byte(xhtml(`<page width="200" height="400"><flow><block><line>` +
			`<word xMin="20" yMin="40" xMax="60" yMax="60">a&amp;b&lt;c&gt;&quot;&apos;</word>` +
			`<word xMin="1" yMin="1" xMax="2" yMax="2">bad` + "\x01char\x02\xff" + `</word>` +
			`<word xMin="-10" yMin="390" xMax="10" yMax="500"> edge </word></line></block></flow></page>`)), []PageBox{portrait}},
		"rotated": {[]byte(xhtml(`<page width="200" height="400"><word xMin="10" yMin="20" xMax="30" yMax="40">r</word></page>`)),
			[]PageBox{{X1: 200, Y1: 400, Rotate: 90}}},
	}
	for name, d := range docs {
		slow, err := parseBBoxLayout(bytes.NewReader(xmlSafe(d.out)), d.boxes)
		require.NoError(t, err, name)
		fast, err := parseBBoxFast(d.out, d.boxes)
		require.NoError(t, err, name)
		require.Equal(t, slow, fast, name)
	}
	for name, doc := range map[string]string{
		"numeric entity":   `<page width="200" height="400"><word xMin="1" yMin="1" xMax="2" yMax="2">&#65;</word></page>`,
		"word without box": `<page width="200" height="400"><word xMin="1">w</word></page>`,
		"unclosed page":    `<page width="200" height="400"><word xMin="1" yMin="1" xMax="2" yMax="2">w</word>`,
		"page of no size":  `<page width="0" height="400"></page>`,
	} {
		_, err := parseBBoxFast([]byte(xhtml(doc)), []PageBox{portrait})
		require.ErrorIs(t, err, errSlowPath, name)
	}
}

// FuzzBBoxFast: whatever both readers accept, they read the same way, and what the fast one
// reads alone (malformed XML pdftotext never prints, read leniently) stays in bounds.
func FuzzBBoxFast(f *testing.F) {
	f.Add([]byte(xhtml(`<page width="200" height="400"><flow><block><line><word xMin="1" yMin="2" xMax="3" yMax="4">a&amp;b</word></line></block></flow></page>`)))
	f.Add([]byte(xhtml(`<page width="200" height="400"><word xMin="1" yMin="2" xMax="3" yMax="4">x</word></page><page width="10" height="10"></page>`)))
	f.Fuzz(func(t *testing.T, out []byte) {
		boxes := []PageBox{{X1: 200, Y1: 400}, {X1: 10, Y1: 10, Rotate: 90}}
		fast, err := parseBBoxFast(out, boxes)
		if err != nil {
			return
		}
		require.Len(t, fast, len(boxes))
		for _, p := range fast {
			require.LessOrEqual(t, len(p.Words), MaxPageWords)
			for _, w := range p.Words {
				require.True(t, w.X >= 0 && w.Y >= 0 && w.X+w.W <= 1.0001 && w.Y+w.H <= 1.0001, "%+v", w)
			}
		}
		slow, err := parseBBoxLayout(bytes.NewReader(xmlSafe(out)), boxes)
		if err == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %+v\nslow %+v\nfor %q", fast, slow, out)
		}
	})
}
