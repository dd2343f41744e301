package convert

import (
	"archive/zip"
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/require"
	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/math/f64"

	"flipbook/storage"
)

func needTesseract(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tesseract"); err != nil {
		t.Skip("tesseract is not installed; CI installs it (scripts/deps.sh)")
	}
}

// printedLines are the sentences of the printed page, each at its baseline (mm on A4): a title
// near the top, a paragraph in the upper half, and one line low on the right.
var printedLines = []struct {
	x, y float64
	size float64
	text string
}{
	{20, 35, 26, "Quarterly Harbour Report"},
	{20, 70, 16, "Seven wonderful penguins marched"},
	{20, 80, 16, "across the frozen harbour today,"},
	{20, 90, 16, "watched by curious fishermen."},
	{20, 130, 16, "The lighthouse keeper counted"},
	{20, 140, 16, "every boat before sunset."},
	{115, 265, 16, "Signed Margaret"},
}

// printedPDF is a one-page A4 PDF of printedLines in Helvetica.
func printedPDF(t *testing.T) string {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.AddPage()
	for _, l := range printedLines {
		f.SetFont("Helvetica", "", l.size)
		f.Text(l.x, l.y, l.text)
	}
	return writePDF(t, f)
}

// printedWords are the words of printedLines, punctuation left out, lower case.
func printedWords() []string {
	var out []string
	for _, l := range printedLines {
		for _, w := range strings.Fields(l.text) {
			out = append(out, strings.ToLower(strings.Trim(w, ".,")))
		}
	}
	return out
}

// photoOfPrintedPage renders the printed page at 2000 px and degrades it like a phone photo of
// paper: tinted paper, turned by 1.5°, softened (scaled down and up again), speckled with
// noise, saved as a JPEG of quality 60. It returns the JPEG's bytes.
func photoOfPrintedPage(t *testing.T) []byte {
	t.Helper()
	needPoppler(t)
	dir := t.TempDir()
	out, err := exec.Command("pdftoppm", "-png", "-scale-to", "2000", "-singlefile", printedPDF(t),
		filepath.Join(dir, "page")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(filepath.Join(dir, "page.png"))
	require.NoError(t, err)
	page, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	b := page.Bounds()
	turned := image.NewRGBA(b)
	draw.Draw(turned, b, image.NewUniform(color.RGBA{236, 230, 214, 255}), image.Point{}, draw.Src)
	a := 1.5 * math.Pi / 180
	cx, cy := float64(b.Dx())/2, float64(b.Dy())/2
	sin, cos := math.Sin(a), math.Cos(a)
	// rotation by a about the centre: p' = R(p - c) + c
	m := f64.Aff3{cos, -sin, cx - cos*cx + sin*cy, sin, cos, cy - sin*cx - cos*cy}
	xdraw.BiLinear.Transform(turned, m, tint(page), b, draw.Over, nil)
	small := image.NewRGBA(image.Rect(0, 0, b.Dx()*3/5, b.Dy()*3/5))
	xdraw.BiLinear.Scale(small, small.Bounds(), turned, b, draw.Src, nil)
	soft := image.NewRGBA(b)
	xdraw.BiLinear.Scale(soft, b, small, small.Bounds(), draw.Src, nil)
	rnd := rand.New(rand.NewPCG(28, 1))
	for i := 0; i+3 < len(soft.Pix); i += 4 {
		n := rnd.IntN(41) - 20
		for c := 0; c < 3; c++ {
			soft.Pix[i+c] = uint8(min(255, max(0, int(soft.Pix[i+c])+n)))
		}
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, soft, &jpeg.Options{Quality: 60}))
	return buf.Bytes()
}

// tint is img with white made transparent, so the paper colour shows through its background.
func tint(img image.Image) image.Image {
	b := img.Bounds()
	out := image.NewNRGBA(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			g := color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y
			out.SetNRGBA(x, y, color.NRGBA{20, 20, 28, 255 - g})
		}
	}
	return out
}

// foundWords is the share of printedWords among the words of pt (lower case, punctuation
// trimmed), and the first word of pt equal to each.
func foundWords(pt storage.PageText) (float64, map[string]storage.Word) {
	got := map[string]storage.Word{}
	for _, w := range pt.Words {
		k := strings.ToLower(strings.Trim(w.Text, ".,;:'\""))
		if _, ok := got[k]; !ok {
			got[k] = w
		}
	}
	want := printedWords()
	n := 0
	for _, w := range want {
		if _, ok := got[w]; ok {
			n++
		}
	}
	return float64(n) / float64(len(want)), got
}

// requirePrintedText checks the OCR text of the printed page: most words found, their boxes
// where they were printed, the lines in order.
func requirePrintedText(t *testing.T, pt storage.PageText) {
	t.Helper()
	require.Equal(t, storage.TextFromOCR, pt.Source)
	require.Empty(t, pt.Problem)
	requireFractions(t, []storage.PageText{pt})
	share, got := foundWords(pt)
	require.GreaterOrEqual(t, share, 0.85, "words found: %q", pt.Text)
	// A4: 210×297 mm; the boxes are fractions of the page (the photo turns it a little).
	title, ok := got["quarterly"]
	require.True(t, ok, "the title: %q", pt.Text)
	require.InDelta(t, 20.0/210, title.X, 0.04, "the title starts at the left margin: %+v", title)
	require.InDelta(t, 35.0/297, title.Y+title.H, 0.04, "the title's baseline: %+v", title)
	signed, ok := got["margaret"]
	require.True(t, ok, "the signature: %q", pt.Text)
	require.Greater(t, signed.X, 0.5, "the signature is on the right: %+v", signed)
	require.Greater(t, signed.Y, 0.8, "the signature is at the bottom: %+v", signed)
	require.Less(t, title.Y+title.H, signed.Y)
	penguins, frozen := got["penguins"], got["frozen"]
	require.Less(t, penguins.Y, frozen.Y, "line order")
	require.InDelta(t, 70.0/297, penguins.Y+penguins.H, 0.04, "%+v", penguins)
	require.Less(t, strings.Index(pt.Text, "Quarterly"), strings.Index(pt.Text, "penguins"))
	require.Less(t, strings.Index(pt.Text, "penguins"), strings.Index(pt.Text, "frozen"))
	require.Contains(t, pt.Text, "\n", "lines are separated")
}

func TestOCRPhotoOfPrintedPage(t *testing.T) {
	t.Parallel()
	needTesseract(t)
	photo := filepath.Join(t.TempDir(), "photo.jpg")
	require.NoError(t, os.WriteFile(photo, photoOfPrintedPage(t), 0o600))
	start := time.Now()
	pt, err := OCR(context.Background(), photo)
	require.NoError(t, err)
	t.Logf("OCR of a 2000 px photo: %s, %d words", time.Since(start).Round(time.Millisecond), len(pt.Words))
	require.Equal(t, 1, pt.Page)
	requirePrintedText(t, pt)
}

// A photo upload is one page with the text read from it.
func TestConvertPhotoHasText(t *testing.T) {
	t.Parallel()
	needTesseract(t)
	src := filepath.Join(t.TempDir(), "upload")
	require.NoError(t, os.WriteFile(src, photoOfPrintedPage(t), 0o600))
	start := time.Now()
	res, err := Convert(context.Background(), src, KindJPG, filepath.Join(t.TempDir(), "w"), Options{})
	require.NoError(t, err)
	t.Logf("photo conversion (1600 px page) with OCR: %s", time.Since(start).Round(time.Millisecond))
	require.Len(t, res.Pages, 1)
	require.Equal(t, DefaultLongEdge, max(res.Pages[0].Width, res.Pages[0].Height))
	require.Len(t, res.Text, 1)
	require.Equal(t, 1, res.Text[0].Page)
	requirePrintedText(t, res.Text[0])
}

// scannedPDF is a PDF of two A4 pages: page 1 only the photo of the printed page (a scan, no
// text of its own), page 2 real text.
func scannedPDF(t *testing.T, photo []byte) string {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.AddPage()
	opt := fpdf.ImageOptions{ImageType: "JPG"}
	f.RegisterImageOptionsReader("scan", opt, bytes.NewReader(photo))
	f.ImageOptions("scan", 0, 0, a4W, a4H, false, opt, 0, "")
	f.AddPage()
	f.SetFont("Helvetica", "", 14)
	f.Text(20, 30, "Typed text of page two")
	return writePDF(t, f)
}

// A scanned PDF page (an image, no text) gets its text by OCR; a page with text keeps its own.
func TestConvertScannedPDFReadsTheScan(t *testing.T) {
	t.Parallel()
	needTesseract(t)
	src := scannedPDF(t, photoOfPrintedPage(t))
	res, err := Convert(context.Background(), src, KindPDF, filepath.Join(t.TempDir(), "w"), Options{})
	require.NoError(t, err)
	require.Len(t, res.Text, 2)
	require.Equal(t, 1, res.Text[0].Page)
	requirePrintedText(t, res.Text[0])
	two := res.Text[1]
	require.Equal(t, 2, two.Page)
	require.Equal(t, storage.TextFromPDF, two.Source, "a page with text is not OCR'd")
	require.Equal(t, "Typed text of page two", two.Text)
}

// wordDOCX is a minimal Word document of the given paragraphs.
func wordDOCX(t *testing.T, paragraphs ...string) []byte {
	t.Helper()
	var body strings.Builder
	for _, p := range paragraphs {
		body.WriteString(`<w:p><w:r><w:rPr><w:sz w:val="32"/></w:rPr><w:t xml:space="preserve">` + p + `</w:t></w:r></w:p>`)
	}
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`},
	}
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, p := range parts {
		w, err := z.Create(p[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(p[1]))
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())
	return buf.Bytes()
}

// A DOCX keeps its own text, through its PDF, with the words' boxes.
func TestConvertDOCXHasItsText(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("soffice"); err != nil {
		t.Skip("soffice is not installed; CI installs it")
	}
	needPoppler(t)
	src := filepath.Join(t.TempDir(), "upload")
	require.NoError(t, os.WriteFile(src, wordDOCX(t, "Annual garden newsletter", "Tomatoes ripened early this summer."), 0o600))
	res, err := Convert(context.Background(), src, KindDOCX, filepath.Join(t.TempDir(), "w"), Options{LongEdge: 800})
	require.NoError(t, err)
	require.Len(t, res.Text, 1)
	pt := res.Text[0]
	require.Equal(t, storage.TextFromPDF, pt.Source)
	require.Empty(t, pt.Problem)
	require.Equal(t, "Annual garden newsletter\nTomatoes ripened early this summer.", pt.Text)
	require.Equal(t, []string{"Annual", "garden", "newsletter", "Tomatoes", "ripened", "early", "this", "summer."}, wordTexts(pt.Words))
	requireFractions(t, res.Text)
	first, second := pt.Words[0], pt.Words[3]
	require.Less(t, first.Y, 0.25, "the first paragraph is near the top: %+v", first)
	require.Less(t, first.Y, second.Y, "paragraphs in order")
	require.Less(t, first.X, 0.3, "left aligned: %+v", first)
}

// A page whose OCR fails has no words and says why; the others are read.
func TestOCRPagesNeverFail(t *testing.T) {
	t.Parallel()
	needTesseract(t)
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged.jpg")
	require.NoError(t, os.WriteFile(damaged, append([]byte{0xff, 0xd8, 0xff, 0xe0}, bytes.Repeat([]byte{0x17}, 200)...), 0o600))
	blank := filepath.Join(dir, "blank.png")
	require.NoError(t, os.WriteFile(blank, testPNG(t, 300, 200), 0o600))
	pages := OCRPages(context.Background(), []string{blank, damaged, filepath.Join(dir, "missing.jpg")}, nil, "")
	require.Len(t, pages, 3)
	for i, p := range pages {
		require.Equal(t, i+1, p.Page)
		require.NotNil(t, p.Words)
		require.Empty(t, p.Words)
	}
	require.Empty(t, pages[0].Problem, "a page without words is not a failure")
	require.Equal(t, storage.TextFromOCR, pages[0].Source)
	for _, p := range pages[1:] {
		require.True(t, strings.HasPrefix(p.Problem, "the page's text could not be read by OCR (Tesseract failed"), p.Problem)
		require.Empty(t, p.Source)
	}
	bad := OCRPages(context.Background(), []string{blank}, make(chan struct{}, 1), "eng;rm")
	require.Contains(t, bad[0].Problem, "is not a list of Tesseract languages")
	missing := OCRPages(context.Background(), []string{blank}, nil, "xx_no_such_language")
	require.Contains(t, missing[0].Problem, "Tesseract failed")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := OCRPages(ctx, []string{blank, blank}, make(chan struct{}, 1), "")
	for _, p := range stopped {
		require.NotEmpty(t, p.Problem)
		require.NotNil(t, p.Words)
	}
}

// Without Tesseract a photo still converts; its page says why it has no text. (Not parallel:
// it changes PATH.)
func TestConvertWithoutTesseract(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	src := filepath.Join(t.TempDir(), "upload")
	require.NoError(t, os.WriteFile(src, testJPEG(t, 64, 48), 0o600))
	res, err := Convert(context.Background(), src, KindJPG, filepath.Join(t.TempDir(), "w"), Options{})
	require.NoError(t, err)
	require.Len(t, res.Text, 1)
	require.Empty(t, res.Text[0].Words)
	require.NotNil(t, res.Text[0].Words)
	require.Equal(t, "the page's text could not be read by OCR ("+ErrNoTesseract.Error()+")", res.Text[0].Problem)
	_, err = OCR(context.Background(), src)
	require.ErrorIs(t, err, ErrNoTesseract)
}

// parseTSV keeps confident, non-empty words, in fractions of the image, and joins them with
// spaces, newlines between lines and blank lines between blocks and paragraphs.
func TestParseTSV(t *testing.T) {
	t.Parallel()
	tsv := "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" +
		"1\t1\t0\t0\t0\t0\t0\t0\t1000\t2000\t-1\t\n" +
		"2\t1\t1\t0\t0\t0\t100\t100\t800\t100\t-1\t\n" +
		"3\t1\t1\t1\t0\t0\t100\t100\t800\t100\t-1\t\n" +
		"4\t1\t1\t1\t1\t0\t100\t100\t800\t40\t-1\t\n" +
		"5\t1\t1\t1\t1\t1\t100\t100\t200\t40\t96.5\tHello\n" +
		"5\t1\t1\t1\t1\t2\t320\t100\t200\t40\t12.0\t~;\n" +
		"5\t1\t1\t1\t1\t3\t540\t100\t200\t40\t91\tWorld\n" +
		"4\t1\t1\t1\t2\t0\t100\t150\t800\t40\t-1\t\n" +
		"5\t1\t1\t1\t2\t1\t100\t150\t200\t40\t95\t \n" +
		"5\t1\t1\t1\t2\t2\t100\t150\t300\t40\t88\tsecond\n" +
		"3\t1\t1\t2\t0\t0\t100\t300\t800\t40\t-1\t\n" +
		"4\t1\t1\t2\t1\t0\t100\t300\t800\t40\t-1\t\n" +
		"5\t1\t1\t2\t1\t1\t100\t300\t500\t40\t90\tparagraph\n" +
		"2\t1\t2\t0\t0\t0\t100\t1900\t800\t100\t-1\t\n" +
		"3\t1\t2\t1\t0\t0\t100\t1900\t800\t100\t-1\t\n" +
		"4\t1\t2\t1\t1\t0\t100\t1900\t800\t100\t-1\t\n" +
		"5\t1\t2\t1\t1\t1\t900\t1900\t200\t200\t80\tedge\n"
	pt, err := parseTSV([]byte(tsv))
	require.NoError(t, err)
	require.Equal(t, storage.PageText{Page: 1, Source: storage.TextFromOCR, Text: "Hello World\nsecond\n\nparagraph\n\nedge",
		Words: []storage.Word{
			{Text: "Hello", X: 0.1, Y: 0.05, W: 0.2, H: 0.02},
			{Text: "World", X: 0.54, Y: 0.05, W: 0.2, H: 0.02},
			{Text: "second", X: 0.1, Y: 0.075, W: 0.3, H: 0.02},
			{Text: "paragraph", X: 0.1, Y: 0.15, W: 0.5, H: 0.02},
			{Text: "edge", X: 0.9, Y: 0.95, W: 0.1, H: 0.05}, // clamped to the image
		}}, pt)

	empty, err := parseTSV([]byte("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" +
		"1\t1\t0\t0\t0\t0\t0\t0\t200\t100\t-1\t\n"))
	require.NoError(t, err)
	require.Equal(t, storage.PageText{Page: 1, Source: storage.TextFromOCR, Words: []storage.Word{}}, empty)

	for _, bad := range []string{
		"h\n5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t90\tno page\n",
		"h\n1\t1\t0\t0\t0\t0\t0\t0\t0\t100\t-1\t\n",
		"h\n1\t1\t0\t0\t0\t0\t0\t0\tx\t100\t-1\t\n",
		"h\n1\t1\t0\n",
	} {
		_, err := parseTSV([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}
