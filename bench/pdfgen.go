package bench

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/go-pdf/fpdf"
)

// WritePDF writes an n-page A4 PDF to path: each page has a heading, a column of text, an
// embedded image and a link, like an ordinary brochure page.
func WritePDF(path string, n int) error {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetAutoPageBreak(false, 0)
	img := image.NewRGBA(image.Rect(0, 0, 300, 200))
	for y := 0; y < 200; y++ {
		for x := 0; x < 300; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 150, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	pdf.RegisterImageOptionsReader("pic", fpdf.ImageOptions{ImageType: "PNG"}, bytes.NewReader(buf.Bytes()))
	for i := 1; i <= n; i++ {
		pdf.AddPage()
		pdf.SetFont("Helvetica", "B", 24)
		pdf.Cell(0, 12, fmt.Sprintf("Page %d", i))
		pdf.Ln(14)
		pdf.SetFont("Helvetica", "", 11)
		for j := 0; j < 25; j++ {
			pdf.MultiCell(0, 5, "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.", "", "", false)
		}
		pdf.ImageOptions("pic", 20, 180, 120, 80, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
		url := "https://example.com/page/" + strconv.Itoa(i)
		pdf.SetTextColor(0, 0, 255)
		pdf.WriteLinkString(6, url, url)
		pdf.SetTextColor(0, 0, 0)
	}
	return pdf.OutputFileAndClose(path)
}

// WriteScannedPDF writes an n-page PDF of page images without text, as a scanner makes: the
// pages of WritePDF rendered at 150 dpi (in work) and placed as JPEGs.
func WriteScannedPDF(ctx context.Context, path string, n int, work string) error {
	src := filepath.Join(work, "source.pdf")
	if err := os.MkdirAll(work, 0o750); err != nil {
		return err
	}
	if err := WritePDF(src, n); err != nil {
		return err
	}
	if err := exec.CommandContext(ctx, "pdftoppm", "-r", "150", "-jpeg", src, filepath.Join(work, "p")).Run(); err != nil {
		return fmt.Errorf("render the scan: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(work, "p-*.jpg"))
	if err != nil || len(files) != n {
		return fmt.Errorf("render the scan: %d pages of %d (%v)", len(files), n, err)
	}
	sort.Strings(files)
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetAutoPageBreak(false, 0)
	for _, f := range files {
		pdf.AddPage()
		pdf.ImageOptions(f, 0, 0, 210, 297, false, fpdf.ImageOptions{ImageType: "JPG"}, 0, "")
	}
	return pdf.OutputFileAndClose(path)
}
