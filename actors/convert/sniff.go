package convert

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Kinds of source files, recognised from their content.
const (
	KindPDF  = "pdf"
	KindDOC  = "doc"
	KindDOCX = "docx"
	KindXLS  = "xls"
	KindXLSX = "xlsx"
	KindPPT  = "ppt"
	KindPPTX = "pptx"
	KindJPG  = "jpg"
	KindPNG  = "png"
)

// ErrUnsupported is a file that is none of the accepted types.
var ErrUnsupported = errors.New("is not a PDF, Word, Excel, PowerPoint, JPG or PNG file")

// IsOffice reports whether a kind goes through LibreOffice.
func IsOffice(kind string) bool {
	switch kind {
	case KindDOC, KindDOCX, KindXLS, KindXLSX, KindPPT, KindPPTX:
		return true
	}
	return false
}

var oleMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// Sniff recognises a file's type from its content; name (the client's file name) only breaks
// ties the content leaves open (an OLE2 file whose stream names are not found).
func Sniff(path, name string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	// Magic numbers at the start come first: a JPEG comment or a zip entry may well contain
	// "%PDF-". PDF readers accept a header anywhere in the first 1 KB, so that check is last.
	switch {
	case n == 0:
		return "", ErrUnsupported
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return KindJPG, nil
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return KindPNG, nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return sniffOOXML(path)
	case bytes.HasPrefix(head, oleMagic):
		return sniffOLE(f, name)
	case bytes.Contains(head, []byte("%PDF-")):
		return KindPDF, nil
	}
	return "", ErrUnsupported
}

// sniffOOXML tells DOCX, XLSX and PPTX apart by their main parts.
func sniffOOXML(path string) (string, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return "", ErrUnsupported
	}
	defer z.Close()
	for _, f := range z.File {
		switch {
		case strings.HasPrefix(f.Name, "word/"):
			return KindDOCX, nil
		case strings.HasPrefix(f.Name, "xl/"):
			return KindXLSX, nil
		case strings.HasPrefix(f.Name, "ppt/"):
			return KindPPTX, nil
		}
	}
	return "", ErrUnsupported
}

// sniffOLE tells the legacy Office formats apart by the stream names in the compound file's
// directory (UTF-16LE), falling back to the file name's extension.
func sniffOLE(f *os.File, name string) (string, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	buf, _ := io.ReadAll(io.LimitReader(f, 8<<20))
	utf16 := func(s string) []byte {
		out := make([]byte, 0, 2*len(s))
		for i := 0; i < len(s); i++ {
			out = append(out, s[i], 0)
		}
		return out
	}
	switch {
	case bytes.Contains(buf, utf16("WordDocument")):
		return KindDOC, nil
	case bytes.Contains(buf, utf16("Workbook")), bytes.Contains(buf, utf16("Book\x00")):
		return KindXLS, nil
	case bytes.Contains(buf, utf16("PowerPoint Document")):
		return KindPPT, nil
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".doc":
		return KindDOC, nil
	case ".xls":
		return KindXLS, nil
	case ".ppt":
		return KindPPT, nil
	}
	return "", ErrUnsupported
}
