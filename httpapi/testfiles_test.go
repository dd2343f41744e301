package httpapi

// Real files for the conversion tests, made by the tests themselves: PDFs (fpdf), JPEG and PNG
// files with an EXIF orientation, Office documents made by LibreOffice.

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/require"
)

// URLs written into the sample PDF.
const (
	annotURL = "https://annotated.example.com/target"
	plainURL = "https://plain.example.org/written"
)

func pdfBytes(tb testing.TB, f *fpdf.Fpdf) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, f.Output(&buf))
	return buf.Bytes()
}

func newPDF() *fpdf.Fpdf {
	f := fpdf.New("P", "pt", "A4", "")
	f.SetCompression(true)
	f.SetFont("Helvetica", "", 14)
	return f
}

// samplePDF has three A4 pages: text and an embedded image on page 1, a link annotation on
// page 2 (at x 72..~300 pt, y 200..220 pt from the top), a URL written as plain text on page 3.
func samplePDF(tb testing.TB) []byte {
	tb.Helper()
	f := newPDF()
	f.AddPage()
	f.SetXY(72, 72)
	f.Write(16, "Page one: a document with text and an image.")
	var img bytes.Buffer
	require.NoError(tb, png.Encode(&img, markedImage(120, 80)))
	f.RegisterImageOptionsReader("mark", fpdf.ImageOptions{ImageType: "PNG"}, &img)
	f.ImageOptions("mark", 72, 120, 240, 160, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")

	f.AddPage()
	f.SetXY(72, 72)
	f.Write(16, "Page two has a link annotation below.")
	f.SetXY(72, 200)
	f.WriteLinkString(20, "Click this annotated link", annotURL)

	f.AddPage()
	f.SetXY(72, 72)
	f.Write(16, "Page three: visit "+plainURL+" for more.")
	return pdfBytes(tb, f)
}

// manyPagesPDF has n pages with some text and a filled shape each.
func manyPagesPDF(tb testing.TB, n int) []byte {
	tb.Helper()
	f := newPDF()
	for i := 1; i <= n; i++ {
		f.AddPage()
		f.SetXY(72, 72)
		f.Write(16, fmt.Sprintf("Page %d of %d. The quick brown fox jumps over the lazy dog.", i, n))
		f.SetFillColor(30+(i*37)%200, 90, 160)
		f.Rect(72, 140, 300, 200, "F")
	}
	return pdfBytes(tb, f)
}

// encryptedPDF needs the user password "secret" to be opened.
func encryptedPDF(tb testing.TB) []byte {
	tb.Helper()
	f := newPDF()
	f.SetProtection(fpdf.CnProtectPrint, "secret", "owner")
	f.AddPage()
	f.SetXY(72, 72)
	f.Write(16, "Secret text.")
	return pdfBytes(tb, f)
}

// corruptPDF has a valid header and end-of-file marker around garbage.
func corruptPDF() []byte {
	body := bytes.Repeat([]byte("this is not a PDF object \x00\x01\x02 garbage\n"), 200)
	return append(append([]byte("%PDF-1.4\n"), body...), []byte("\n%%EOF\n")...)
}

// mixedSizePDF has an A4 portrait page, a Letter page and an A4 landscape page.
func mixedSizePDF(tb testing.TB) []byte {
	tb.Helper()
	f := newPDF()
	f.AddPage()
	f.Write(16, "A4 portrait")
	f.AddPageFormat("P", fpdf.SizeType{Wd: 612, Ht: 792})
	f.Write(16, "Letter")
	f.AddPageFormat("L", fpdf.SizeType{Wd: 595.28, Ht: 841.89})
	f.Write(16, "A4 landscape")
	return pdfBytes(tb, f)
}

// Colors of markedImage.
var (
	markRed  = color.RGBA{230, 20, 20, 255}
	markBlue = color.RGBA{20, 40, 230, 255}
	markBase = color.RGBA{235, 235, 235, 255}
)

// markSize is the side of the colored corner squares of markedImage.
const markSize = 40

// markedImage is a w×h light grey image with a red square in its top-left corner and a blue
// square in its top-right corner.
func markedImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := markBase
			switch {
			case y < markSize && x < markSize:
				c = markRed
			case y < markSize && x >= w-markSize:
				c = markBlue
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

// tiffOrientationIFD is a TIFF header (little-endian) with IFD0 holding only the orientation.
func tiffOrientationIFD(o int) []byte {
	var b bytes.Buffer
	b.WriteString("II*\x00")
	_ = binary.Write(&b, binary.LittleEndian, uint32(8))
	_ = binary.Write(&b, binary.LittleEndian, uint16(1)) // one entry
	_ = binary.Write(&b, binary.LittleEndian, uint16(0x0112))
	_ = binary.Write(&b, binary.LittleEndian, uint16(3)) // SHORT
	_ = binary.Write(&b, binary.LittleEndian, uint32(1))
	_ = binary.Write(&b, binary.LittleEndian, uint16(o))
	_ = binary.Write(&b, binary.LittleEndian, uint16(0))
	_ = binary.Write(&b, binary.LittleEndian, uint32(0)) // no next IFD
	return b.Bytes()
}

// jpegWithOrientation encodes img as JPEG; o > 0 adds an APP1 Exif segment with that
// orientation right after SOI.
func jpegWithOrientation(tb testing.TB, img image.Image, o int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}))
	data := buf.Bytes()
	if o == 0 {
		return data
	}
	payload := append([]byte("Exif\x00\x00"), tiffOrientationIFD(o)...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	seg = append(seg, payload...)
	out := append([]byte{}, data[:2]...)
	out = append(out, seg...)
	return append(out, data[2:]...)
}

// pngWithOrientation encodes img as PNG; o > 0 adds an eXIf chunk (before IDAT) with that
// orientation.
func pngWithOrientation(tb testing.TB, img image.Image, o int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, png.Encode(&buf, img))
	data := buf.Bytes()
	if o == 0 {
		return data
	}
	const ihdrEnd = 8 + 4 + 4 + 13 + 4
	require.Equal(tb, "IHDR", string(data[12:16]))
	exif := tiffOrientationIFD(o)
	chunk := make([]byte, 4, 12+len(exif))
	binary.BigEndian.PutUint32(chunk, uint32(len(exif)))
	chunk = append(chunk, "eXIf"...)
	chunk = append(chunk, exif...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := append([]byte{}, data[:ihdrEnd]...)
	out = append(out, chunk...)
	return append(out, data[ihdrEnd:]...)
}

// sofficeMake writes content to dir/name and converts it with LibreOffice (its own profile
// in dir) to format (docx, xlsx, pptx, doc, ...); it returns the converted file.
func sofficeMake(dir, name, content, format string) ([]byte, error) {
	src := filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "out")
	start := time.Now()
	cmd := exec.Command("soffice", "--headless", "--norestore", "--nolockcheck",
		"-env:UserInstallation=file://"+filepath.Join(dir, "profile"),
		"--convert-to", format, "--outdir", out, src)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("soffice %s -> %s: %v: %s", name, format, err, msg)
	}
	data, err := os.ReadFile(filepath.Join(out, strings.TrimSuffix(name, filepath.Ext(name))+"."+format))
	if err != nil {
		return nil, fmt.Errorf("soffice made no %s after %s: %v: %s", format, time.Since(start), err, msg)
	}
	return data, nil
}

// zipBytes is a zip archive with the named entries (an OOXML look-alike that is not a real
// document).
func zipBytes(tb testing.TB, names ...string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := z.Create(n)
		require.NoError(tb, err)
		_, err = w.Write([]byte("<x/>"))
		require.NoError(tb, err)
	}
	require.NoError(tb, z.Close())
	return buf.Bytes()
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// A small Impress presentation (flat ODF XML) with two slides.
const flatODP = `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"
 xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
 office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.presentation">
 <office:body><office:presentation>
  <draw:page draw:name="one"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm">
   <draw:text-box><text:p>First slide</text:p></draw:text-box></draw:frame></draw:page>
  <draw:page draw:name="two"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm">
   <draw:text-box><text:p>Second slide</text:p></draw:text-box></draw:frame></draw:page>
 </office:presentation></office:body></office:document>
`

// appendCRC appends the PNG CRC of a chunk's type and data (chunk starts with its length).
func appendCRC(chunk []byte) []byte {
	return binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
}
