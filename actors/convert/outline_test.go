package convert

import (
	"context"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

// bookmarkedPDF has six pages and an outline of two levels, with a title that needs escaping.
func bookmarkedPDF(t *testing.T) string {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 14)
	tr := f.UnicodeTranslatorFromDescriptor("")
	for i := 1; i <= 6; i++ {
		f.AddPage()
		switch i {
		case 1:
			f.Bookmark(tr("Introduction & <Café>"), 0, 0)
		case 2:
			f.Bookmark("Part One", 0, 0)
			f.Bookmark("Chapter 1.1", 1, 50)
		case 4:
			f.Bookmark("Chapter 1.2", 1, 0)
		case 5:
			f.Bookmark("Part Two", 0, 0)
		}
		f.Cell(40, 10, "page")
	}
	return writePDF(t, f)
}

// A PDF's bookmarks become the outline: titles, depths and pages, in order; a PDF without
// bookmarks has none; a conversion keeps it.
func TestPDFOutline(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	pdf := bookmarkedPDF(t)
	want := []storage.OutlineItem{
		{Title: "Introduction & <Café>", Level: 0, Page: 1}, {Title: "Part One", Level: 0, Page: 2},
		{Title: "Chapter 1.1", Level: 1, Page: 2}, {Title: "Chapter 1.2", Level: 1, Page: 4},
		{Title: "Part Two", Level: 0, Page: 5},
	}
	items, err := PDFOutline(context.Background(), pdf, 6)
	require.NoError(t, err)
	require.Equal(t, want, items)
	// Items past the book's pages are left out.
	items, err = PDFOutline(context.Background(), pdf, 4)
	require.NoError(t, err)
	require.Equal(t, want[:4], items)

	items, err = PDFOutline(context.Background(), textPDF(t), 3)
	require.NoError(t, err)
	require.Empty(t, items)

	res, err := Convert(context.Background(), pdf, KindPDF, t.TempDir(), Options{LongEdge: 300})
	require.NoError(t, err)
	require.Equal(t, want, res.Outline)
}

// The outline's XML is read leniently and bounded: deep nesting, empty titles, pages out of
// range, long titles and too many items.
func TestParseOutline(t *testing.T) {
	t.Parallel()
	items, err := parseOutline([]byte(`<pdf2xml><outline><item page="1">  A
		 b </item><item page="0">zero</item><item page="9">far</item><item page="2"></item>
		<outline><outline><item page="2">deep</item></outline></outline></outline></pdf2xml>`), 3)
	require.NoError(t, err)
	require.Equal(t, []storage.OutlineItem{{Title: "A b", Level: 0, Page: 1}, {Title: "deep", Level: 2, Page: 2}}, items)

	var b strings.Builder
	b.WriteString("<outline>")
	for range OutlineMax + 10 {
		b.WriteString(`<item page="1">` + strings.Repeat("é", OutlineTitleMax+5) + `</item>`)
	}
	b.WriteString("</outline>")
	items, err = parseOutline([]byte(b.String()), 1)
	require.NoError(t, err)
	require.Len(t, items, OutlineMax)
	require.Equal(t, OutlineTitleMax, len([]rune(items[0].Title)))

	items, err = parseOutline([]byte(`<pdf2xml><page number="1"></page></pdf2xml>`), 1)
	require.NoError(t, err)
	require.Empty(t, items)
	_, err = parseOutline([]byte(`<outline><item page="1">cut`), 1)
	require.Error(t, err)
}
