package convert

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// pagesPDF writes a PDF of n small pages.
func pagesPDF(t *testing.T, n int) string {
	t.Helper()
	f := newTestPDF()
	for i := 1; i <= n; i++ {
		f.AddPage()
		f.Write(16, fmt.Sprint("page ", i))
	}
	return writePDF(t, f)
}

func TestPDFPagesMax(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	ctx := context.Background()
	path := pagesPDF(t, 30)

	// Over the limit: a failure for the customer with the count and the limit.
	_, err := PDFPagesMax(ctx, path, 25)
	require.Error(t, err)
	require.True(t, IsFailure(err), "%v", err)
	require.Equal(t, "the document has 30 pages; at most 25 can be converted (split it into smaller files)", err.Error())

	// At the limit, and with no limit given (the default): every page box.
	boxes, err := PDFPagesMax(ctx, path, 30)
	require.NoError(t, err)
	require.Len(t, boxes, 30)
	boxes, err = PDFPagesMax(ctx, path, 0)
	require.NoError(t, err)
	require.Len(t, boxes, 30)
	boxes, err = PDFPages(ctx, path)
	require.NoError(t, err)
	require.Len(t, boxes, 30)
	for i, b := range boxes {
		require.True(t, nearPt(b.Width(), 595.28) && nearPt(b.Height(), 841.89), "page %d: %+v", i+1, b)
	}

	// One page over.
	_, err = PDFPagesMax(ctx, path, 29)
	require.ErrorContains(t, err, "has 30 pages; at most 29")
}

// A document over Options.MaxPages fails before any renderer runs: no page folder, no progress.
func TestConvertRefusesTooManyPagesBeforeRendering(t *testing.T) {
	t.Parallel()
	needPoppler(t)
	path := pagesPDF(t, 12)
	work := t.TempDir()
	var rendered atomic.Int64
	res, err := Convert(context.Background(), path, KindPDF, work, Options{MaxPages: 10,
		OnPages: func(n int) { rendered.Add(int64(n)) }})
	require.Nil(t, res)
	require.True(t, IsFailure(err), "%v", err)
	require.ErrorContains(t, err, "has 12 pages; at most 10")
	require.Zero(t, rendered.Load())
	_, statErr := os.Stat(filepath.Join(work, "pages"))
	require.True(t, os.IsNotExist(statErr), "nothing was rendered: %v", statErr)

	// The same document within the limit converts.
	res, err = Convert(context.Background(), path, KindPDF, t.TempDir(), Options{MaxPages: 12, LongEdge: 200})
	require.NoError(t, err)
	require.Len(t, res.Pages, 12)
}
