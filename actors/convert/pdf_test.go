package convert

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

func needPoppler(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"pdfinfo", "pdftoppm", "pdftotext"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("poppler-utils (%s) is not installed; CI installs it", tool)
		}
	}
}

// writePDF writes the document (an fpdf document can be written once) and returns its path.
func writePDF(t *testing.T, f *fpdf.Fpdf) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, f.Output(&buf))
	return writeTempPDF(t, buf.Bytes())
}

func writeTempPDF(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "doc.pdf")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}

func newTestPDF() *fpdf.Fpdf {
	f := fpdf.New("P", "pt", "A4", "")
	f.SetFont("Helvetica", "", 14)
	return f
}

// mixedPDF: A4 portrait, Letter portrait, A4 landscape.
func mixedPDF(t *testing.T) string {
	f := newTestPDF()
	f.AddPage()
	f.Write(16, "A4 portrait")
	f.AddPageFormat("P", fpdf.SizeType{Wd: 612, Ht: 792})
	f.Write(16, "Letter")
	f.AddPageFormat("L", fpdf.SizeType{Wd: 595.28, Ht: 841.89})
	f.Write(16, "A4 landscape")
	return writePDF(t, f)
}

// rotatePages turns the given pages of the PDF at path clockwise by deg (a /Rotate entry).
func rotatePages(t *testing.T, path string, deg int, pages ...string) string {
	t.Helper()
	in, err := os.Open(path)
	require.NoError(t, err)
	defer in.Close()
	var out bytes.Buffer
	require.NoError(t, api.Rotate(in, &out, deg, pages, nil))
	p := filepath.Join(t.TempDir(), "rotated.pdf")
	require.NoError(t, os.WriteFile(p, out.Bytes(), 0o600))
	return p
}

func nearPt(a, b float64) bool { return math.Abs(a-b) < 0.01 }

func TestPDFPagesSizes(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	ctx := context.Background()
	boxes, err := PDFPages(ctx, mixedPDF(t))
	require.NoError(t, err)
	require.Len(t, boxes, 3)
	want := [][2]float64{{595.28, 841.89}, {612, 792}, {841.89, 595.28}}
	for i, b := range boxes {
		require.Equal(t, 0, b.Rotate, "page %d", i+1)
		require.True(t, nearPt(b.Width(), want[i][0]) && nearPt(b.Height(), want[i][1]),
			"page %d is %.2fx%.2f, want %.2fx%.2f", i+1, b.Width(), b.Height(), want[i][0], want[i][1])
	}

	// A /Rotate entry swaps the displayed width and height.
	boxes, err = PDFPages(ctx, rotatePages(t, mixedPDF(t), 90, "2"))
	require.NoError(t, err)
	require.Len(t, boxes, 3)
	require.Equal(t, []int{0, 90, 0}, []int{boxes[0].Rotate, boxes[1].Rotate, boxes[2].Rotate})
	require.True(t, nearPt(boxes[1].Width(), 792) && nearPt(boxes[1].Height(), 612), "%+v", boxes[1])

	// Many pages are all counted.
	f := newTestPDF()
	for i := 0; i < 57; i++ {
		f.AddPage()
		f.Write(16, fmt.Sprint("page ", i+1))
	}
	boxes, err = PDFPages(ctx, writePDF(t, f))
	require.NoError(t, err)
	require.Len(t, boxes, 57)
}

func TestPDFPagesFailures(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}

	f := newTestPDF()
	f.SetProtection(fpdf.CnProtectPrint, "secret", "owner")
	f.AddPage()
	f.Write(16, "secret")
	_, err := PDFPages(ctx, writePDF(t, f))
	require.True(t, IsFailure(err), "%v", err)
	require.Contains(t, err.Error(), "password")

	good, err := os.ReadFile(mixedPDF(t))
	require.NoError(t, err)
	_, err = PDFPages(ctx, write("trunc.pdf", good[:len(good)/2]))
	require.True(t, IsFailure(err), "%v", err)
	require.Contains(t, err.Error(), "truncated")

	corrupt := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("garbage \x00\x01 not an object\n"), 100)...)
	_, err = PDFPages(ctx, write("corrupt.pdf", append(corrupt, "%%EOF\n"...)))
	require.True(t, IsFailure(err), "%v", err)
	require.Contains(t, err.Error(), "damaged")
}

func TestCheckTrailer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	check := func(data []byte) error {
		p := filepath.Join(dir, "f.pdf")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return checkTrailer(p)
	}
	require.NoError(t, check([]byte("%PDF-1.4\n...\n%%EOF\n")))
	require.NoError(t, check([]byte("%PDF-1.4\n...\n%%EOF")), "no final newline")
	require.NoError(t, check([]byte("%PDF-1.4\n...\n%%EOF\r\n\x00\x00  \n")), "trailing whitespace and NULs")
	big := append(append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 100000)...), "\n%%EOF\n"...)
	require.NoError(t, check(big), "a large file with the marker at its end")
	// An incremental update: an earlier %%EOF and a later one.
	require.NoError(t, check([]byte("%PDF-1.4\n%%EOF\nmore objects\n%%EOF\n")))

	for name, data := range map[string][]byte{
		"no marker":              []byte("%PDF-1.4\n1 0 obj << >> endobj\n"),
		"empty":                  {},
		"marker cut in the half": []byte("%PDF-1.4\n...\n%%EO"),
	} {
		err := check(data)
		require.True(t, IsFailure(err), "%s: %v", name, err)
		require.Contains(t, err.Error(), "truncated", name)
	}
	require.Error(t, checkTrailer(filepath.Join(dir, "missing.pdf")))
}

func TestFromUserSpace(t *testing.T) {
	t.Parallel()
	// A 600×800 page; the rectangle spans x 60..180, y 700..760 in PDF user space (origin
	// bottom-left): unrotated fractions x 0.1..0.3, y (from the top) 0.05..0.125.
	box := PageBox{X0: 0, Y0: 0, X1: 600, Y1: 800}
	cases := []struct {
		rot  int
		want storage.Link
	}{
		{0, storage.Link{X: 0.1, Y: 0.05, W: 0.2, H: 0.075}},
		{90, storage.Link{X: 0.875, Y: 0.1, W: 0.075, H: 0.2}},  // top edge of the page turns to the right
		{180, storage.Link{X: 0.7, Y: 0.875, W: 0.2, H: 0.075}}, // upside down
		{270, storage.Link{X: 0.05, Y: 0.7, W: 0.075, H: 0.2}},  // top edge turns to the left
	}
	for _, c := range cases {
		b := box
		b.Rotate = c.rot
		for _, corners := range [][4]float64{{60, 700, 180, 760}, {180, 760, 60, 700}} { // any corner order
			l, ok := fromUserSpace(b, corners[0], corners[1], corners[2], corners[3], "https://x.test/")
			require.True(t, ok, "rotation %d", c.rot)
			require.Equal(t, "https://x.test/", l.URL)
			require.True(t, nearPt(l.X, c.want.X) && nearPt(l.Y, c.want.Y) && nearPt(l.W, c.want.W) && nearPt(l.H, c.want.H),
				"rotation %d: got %+v, want %+v", c.rot, l, c.want)
		}
	}

	// A crop box not at the origin: fractions are of the crop box.
	l, ok := fromUserSpace(PageBox{X0: 100, Y0: 50, X1: 300, Y1: 250}, 150, 200, 250, 250, "u")
	require.True(t, ok)
	require.True(t, nearPt(l.X, 0.25) && nearPt(l.Y, 0) && nearPt(l.W, 0.5) && nearPt(l.H, 0.25), "%+v", l)

	// Partly outside the page: clamped; wholly outside or degenerate: dropped.
	l, ok = fromUserSpace(box, -60, 700, 60, 900, "u")
	require.True(t, ok)
	require.True(t, nearPt(l.X, 0) && nearPt(l.Y, 0) && nearPt(l.W, 0.1) && nearPt(l.H, 0.125), "%+v", l)
	_, ok = fromUserSpace(box, 700, 100, 800, 200, "u")
	require.False(t, ok, "right of the page")
	_, ok = fromUserSpace(box, 100, 100, 100, 200, "u")
	require.False(t, ok, "zero width")
	_, ok = fromUserSpace(PageBox{}, 0, 0, 10, 10, "u")
	require.False(t, ok, "empty page box")
}

// decodeJPEGFile decodes a rendered page.
func decodeJPEGFile(t *testing.T, path string) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	img, err := jpeg.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	return img
}

func TestConvertPDFRendersEveryPage(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	src := rotatePages(t, mixedPDF(t), 90, "2")
	work := filepath.Join(t.TempDir(), "work")
	var done atomic.Int64
	res, err := Convert(context.Background(), src, KindPDF, work, Options{LongEdge: 300, Chunk: 1,
		Slots: make(chan struct{}, 2), OnPages: func(n int) { done.Add(int64(n)) }})
	require.NoError(t, err)
	require.Len(t, res.Pages, 3)
	require.EqualValues(t, 3, done.Load(), "progress counts every page")
	require.Equal(t, src, res.PDF)
	landscape := []bool{false, true, true}
	for i, p := range res.Pages {
		img := decodeJPEGFile(t, p.Path)
		s := img.Bounds().Size()
		require.Equal(t, image.Pt(p.Width, p.Height), s, "page %d size as recorded", i+1)
		require.Equal(t, 300, max(s.X, s.Y), "page %d long edge", i+1)
		require.Equal(t, landscape[i], s.X > s.Y, "page %d orientation %v", i+1, s)
	}
	thumb, err := jpeg.Decode(bytes.NewReader(res.Thumb))
	require.NoError(t, err)
	require.NotZero(t, thumb.Bounds().Dx())
}

func TestConvertStopsWhenCancelled(t *testing.T) {
	needPoppler(t)
	f := newTestPDF()
	for i := 0; i < 300; i++ {
		f.AddPage()
		f.Write(16, fmt.Sprint("page ", i+1))
		f.Rect(72, 140, 300, 300, "F")
	}
	src := writePDF(t, f)
	work := filepath.Join(t.TempDir(), "work")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once atomic.Bool
	var cancelledAt time.Time
	res, err := Convert(ctx, src, KindPDF, work, Options{LongEdge: 1600, Chunk: 5, Slots: make(chan struct{}, 1),
		OnPages: func(int) {
			if once.CompareAndSwap(false, true) {
				cancelledAt = time.Now()
				cancel()
			}
		}})
	require.Nil(t, res)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, IsFailure(err))
	require.Less(t, time.Since(cancelledAt), 3*time.Second, "the renderer stops promptly")
}

func TestOfficeNeedsLibreOffice(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "in")
	require.NoError(t, os.WriteFile(src, zipOf(t, "[Content_Types].xml", "word/document.xml"), 0o600))
	for _, kind := range []string{KindDOC, KindDOCX, KindXLS, KindXLSX, KindPPT, KindPPTX} {
		_, err := Convert(context.Background(), src, kind, filepath.Join(t.TempDir(), "work"), Options{Office: "flipbook-test-no-such-soffice"})
		require.True(t, IsFailure(err), "%s: %v", kind, err)
		require.Equal(t, "office conversion needs LibreOffice", err.Error(), kind)
	}
}

// darkShare is the share of dark pixels of img inside the fraction rectangle l.
func darkShare(img image.Image, l storage.Link) float64 {
	b := img.Bounds()
	x0, y0 := int(l.X*float64(b.Dx())), int(l.Y*float64(b.Dy()))
	x1, y1 := int((l.X+l.W)*float64(b.Dx())), int((l.Y+l.H)*float64(b.Dy()))
	var dark, all int
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			all++
			if (r+g+bl)/3 < 0x6000 {
				dark++
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(dark) / float64(all)
}

// Link areas sit on the text they belong to in the rendered page, on upright and on rotated
// pages, for annotations and for URLs written as text; a URL that is both is one area.
func TestPDFLinksOnRenderedPages(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	const annotated, written, both = "https://annot.example.com/a", "https://text.example.com/b", "https://both.example.com/c"
	f := newTestPDF()
	for i := 0; i < 2; i++ {
		f.AddPage()
		f.SetXY(72, 100)
		f.WriteLinkString(16, "Click here please", annotated)
		f.SetXY(72, 300)
		f.Write(16, "See "+written+" today")
		f.SetXY(72, 500)
		f.WriteLinkString(16, both, both)
	}
	var doc bytes.Buffer
	require.NoError(t, f.Output(&doc))
	for _, rot := range []int{0, 90, 180, 270} {
		t.Run(fmt.Sprint("rotate ", rot), func(t *testing.T) {
			t.Parallel()
			src := writeTempPDF(t, doc.Bytes())
			if rot != 0 {
				src = rotatePages(t, src, rot, "2")
			}
			res, err := Convert(context.Background(), src, KindPDF, filepath.Join(t.TempDir(), "w"), Options{LongEdge: 800, AutoLinks: true})
			require.NoError(t, err)
			require.Len(t, res.Pages, 2)
			for i, p := range res.Pages {
				byURL := map[string][]storage.Link{}
				for _, l := range p.Links {
					require.True(t, l.X >= 0 && l.Y >= 0 && l.W > 0 && l.H > 0 && l.X+l.W <= 1 && l.Y+l.H <= 1, "%+v", l)
					byURL[l.URL] = append(byURL[l.URL], l)
				}
				img := decodeJPEGFile(t, p.Path)
				for _, u := range []string{annotated, written, both} {
					if !assert.Len(t, byURL[u], 1, "page %d: one area for %s; links %+v", i+1, u, p.Links) || len(byURL[u]) == 0 {
						continue
					}
					for _, l := range byURL[u] {
						share := darkShare(img, l)
						assert.Greater(t, share, 0.05, "page %d: the area of %s covers its text (%+v)", i+1, u, l)
					}
				}
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		res, err := Convert(context.Background(), writeTempPDF(t, doc.Bytes()), KindPDF, filepath.Join(t.TempDir(), "w"), Options{LongEdge: 400})
		require.NoError(t, err)
		for _, p := range res.Pages {
			require.Empty(t, p.Links)
		}
	})
}

// A page whose crop box is smaller than its media box (a print PDF with bleed and crop marks)
// is shown by PDF viewers as its crop box: the page image, its size and its link areas are of
// the crop box, like PDFPages' box.
func TestCropBoxIsThePage(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	const url = "https://crop.example.com/inside"
	f := newTestPDF()
	f.SetPageBox("crop", 100, 100, 300, 300) // user space: x 100..400, y 100..400
	f.AddPage()
	f.SetFillColor(0, 0, 0)
	f.Rect(0, 0, 595, 60, "F") // a crop mark band at the top of the media box, outside the crop box
	f.SetXY(150, 550)          // 292 pt above the bottom: inside the crop box
	f.WriteLinkString(16, url, url)
	var doc bytes.Buffer
	require.NoError(t, f.Output(&doc))
	src := writeTempPDF(t, doc.Bytes())

	boxes, err := PDFPages(context.Background(), src)
	require.NoError(t, err)
	require.True(t, nearPt(boxes[0].Width(), 300) && nearPt(boxes[0].Height(), 300), "%+v", boxes[0])

	res, err := Convert(context.Background(), src, KindPDF, filepath.Join(t.TempDir(), "w"), Options{LongEdge: 600, AutoLinks: true})
	require.NoError(t, err)
	p := res.Pages[0]
	assert.Equal(t, [2]int{600, 600}, [2]int{p.Width, p.Height}, "the page image is the 300×300 pt crop box")
	links := p.Links
	if assert.Len(t, links, 1, "one area for the annotated URL: %+v", links) {
		l := links[0]
		assert.InDelta(t, 50.0/300, l.X, 0.03, "%+v", l)
		assert.InDelta(t, (400-292-16)/300.0, l.Y, 0.06, "%+v", l)
		assert.Greater(t, darkShare(decodeJPEGFile(t, p.Path), l), 0.05, "the area covers the text in the page image")
	}
}
