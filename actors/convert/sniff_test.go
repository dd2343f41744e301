package convert

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sniffFile writes data to a temp file and sniffs it under the client's name.
func sniffFile(t *testing.T, data []byte, name string) (string, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "upload")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return Sniff(p, name)
}

// zipOf is a zip archive holding the named (empty-ish) entries in order.
func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := z.Create(n)
		require.NoError(t, err)
		_, err = w.Write([]byte("<x/>"))
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())
	return buf.Bytes()
}

// utf16le is s as UTF-16LE (ASCII only), as OLE2 directory entries store stream names.
func utf16le(s string) []byte {
	out := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, s[i], 0)
	}
	return out
}

// oleWith is an OLE2 compound file header followed by a directory entry naming stream.
func oleWith(stream string) []byte {
	b := append([]byte{}, oleMagic...)
	b = append(b, make([]byte, 512-len(oleMagic))...) // rest of the header sector
	b = append(b, utf16le("Root Entry")...)
	b = append(b, make([]byte, 64-len("Root Entry")*2)...)
	if stream != "" {
		b = append(b, utf16le(stream)...)
		b = append(b, 0, 0)
	}
	return append(b, make([]byte, 1024)...)
}

func TestSniffEveryKind(t *testing.T) {
	t.Parallel()
	jpegHead := []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0}
	pngHead := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	cases := []struct {
		name string
		data []byte
		file string
		want string
	}{
		{"pdf", []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\n%%EOF\n"), "a.pdf", KindPDF},
		{"pdf after leading bytes", append([]byte("\r\n\r\n   "), []byte("%PDF-1.4\n%%EOF")...), "a.pdf", KindPDF},
		{"pdf named png", []byte("%PDF-1.4\n%%EOF"), "photo.png", KindPDF},
		{"jpeg", jpegHead, "a.jpg", KindJPG},
		{"jpeg named pdf", jpegHead, "a.pdf", KindJPG},
		{"png", pngHead, "a.png", KindPNG},
		{"png without a name", pngHead, "", KindPNG},
		{"docx", zipOf(t, "[Content_Types].xml", "_rels/.rels", "word/document.xml"), "a.docx", KindDOCX},
		{"docx named xlsx", zipOf(t, "[Content_Types].xml", "word/document.xml"), "a.xlsx", KindDOCX},
		{"xlsx", zipOf(t, "[Content_Types].xml", "xl/workbook.xml"), "a.xlsx", KindXLSX},
		{"pptx", zipOf(t, "[Content_Types].xml", "ppt/presentation.xml"), "a.pptx", KindPPTX},
		{"pptx named zip", zipOf(t, "ppt/slides/slide1.xml"), "a.zip", KindPPTX},
		{"doc by stream name", oleWith("WordDocument"), "a.bin", KindDOC},
		{"xls by Workbook stream", oleWith("Workbook"), "a.bin", KindXLS},
		{"xls by Book stream (Excel 5)", oleWith("Book"), "a.bin", KindXLS},
		{"ppt by stream name", oleWith("PowerPoint Document"), "a.bin", KindPPT},
		{"doc stream beats ppt name", oleWith("WordDocument"), "a.ppt", KindDOC},
		{"ole2 with only a .doc hint", oleWith(""), "Report.DOC", KindDOC},
		{"ole2 with only a .xls hint", oleWith(""), "sheet.xls", KindXLS},
		{"ole2 with only a .ppt hint", oleWith(""), "deck.ppt", KindPPT},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			kind, err := sniffFile(t, c.data, c.file)
			require.NoError(t, err)
			require.Equal(t, c.want, kind)
		})
	}
}

func TestSniffUnsupported(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data []byte
		file string
	}{
		{"empty", nil, "a.pdf"},
		{"text named pdf", []byte("just some text, not a PDF at all\n"), "a.pdf"},
		{"gif", []byte("GIF89a\x01\x00\x01\x00"), "a.gif"},
		{"zip without office parts", zipOf(t, "readme.txt", "src/main.go"), "a.docx"},
		{"broken zip", []byte("PK\x03\x04 this is not really a zip"), "a.docx"},
		{"ole2 without streams or hint", oleWith(""), "a.bin"},
		{"ole2 msg", oleWith("__substg1.0_0037001F"), "mail.msg"},
		{"png magic cut short", []byte("\x89PNG\r\n"), "a.png"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := sniffFile(t, c.data, c.file)
			require.ErrorIs(t, err, ErrUnsupported)
		})
	}
	t.Run("missing file is not ErrUnsupported", func(t *testing.T) {
		t.Parallel()
		_, err := Sniff(filepath.Join(t.TempDir(), "nope"), "a.pdf")
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrUnsupported)
	})
}

func TestIsOffice(t *testing.T) {
	t.Parallel()
	for _, k := range []string{KindDOC, KindDOCX, KindXLS, KindXLSX, KindPPT, KindPPTX} {
		require.True(t, IsOffice(k), k)
	}
	for _, k := range []string{KindPDF, KindJPG, KindPNG, "", "txt"} {
		require.False(t, IsOffice(k), k)
	}
}

// A file that starts with another format's magic number is that format, even when the text
// "%PDF-" occurs in its first kilobyte (a JPEG comment, PNG text metadata, a stored zip entry).
func TestSniffMagicBeatsEmbeddedPDFMarker(t *testing.T) {
	t.Parallel()
	jpegWithComment := []byte{0xFF, 0xD8, 0xFF, 0xFE, 0, 26}
	jpegWithComment = append(jpegWithComment, "scan of a %PDF-1.4 file\x00"...)
	jpegWithComment = append(jpegWithComment, 0xFF, 0xD9)

	pngWithText := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde")
	pngWithText = append(pngWithText, "\x00\x00\x00\x14tEXtTitle\x00%PDF-1.7 spec\x00\x00\x00\x00"...)

	var zb bytes.Buffer
	z := zip.NewWriter(&zb)
	w, err := z.CreateHeader(&zip.FileHeader{Name: "word/document.xml", Method: zip.Store})
	require.NoError(t, err)
	_, err = w.Write([]byte("<w:t>see %PDF-1.7</w:t>"))
	require.NoError(t, err)
	require.NoError(t, z.Close())

	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"jpeg comment", jpegWithComment, KindJPG},
		{"png text chunk", pngWithText, KindPNG},
		{"docx stored entry", zb.Bytes(), KindDOCX},
	} {
		kind, err := sniffFile(t, c.data, "upload")
		assert.NoError(t, err, c.name)
		assert.Equal(t, c.want, kind, c.name)
	}
}
