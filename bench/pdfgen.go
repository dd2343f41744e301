package bench

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
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
