package actors

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/require"

	"flipbook/actors/convert"
	"flipbook/internal/testutil"
	"flipbook/search"
	"flipbook/storage"
)

// printedPDF is a one-page PDF with large, plain words (easy for OCR at the page image's size).
func printedPDF(tb testing.TB, words string) string {
	tb.Helper()
	f := fpdf.New("P", "pt", "A4", "")
	f.SetFont("Helvetica", "B", 36)
	f.AddPage()
	f.SetXY(60, 100)
	f.MultiCell(470, 48, words, "", "L", false)
	var buf bytes.Buffer
	require.NoError(tb, f.Output(&buf))
	p := filepath.Join(tb.TempDir(), "printed.pdf")
	require.NoError(tb, os.WriteFile(p, buf.Bytes(), 0o600))
	return p
}

// storeRendered renders pdf and stores its page image (and, when withDocument, the PDF) as a
// new book's blobs, returning the record to create.
func storeRendered(tb testing.TB, e *env, pdf string, withDocument bool) *storage.Book {
	tb.Helper()
	res, err := convert.Convert(context.Background(), pdf, convert.KindPDF, tb.TempDir(), convert.Options{})
	require.NoError(tb, err)
	b := newBookRecord(storage.StatusDraft, "printed")
	b.Pages, b.PageCount = nil, len(res.Pages)
	for i, p := range res.Pages {
		name, err := e.st.Blobs.PutFile(b.RandomID, p.Path, "jpg")
		require.NoError(tb, err)
		b.Pages = append(b.Pages, storage.Page{Number: i + 1, File: name, Width: p.Width, Height: p.Height})
	}
	if withDocument {
		b.Document, err = e.st.Blobs.PutFile(b.RandomID, pdf, "pdf")
		require.NoError(tb, err)
	}
	return b
}

// textIs waits until the book's first page has a text of source that contains want.
func (e *env) textIs(tn storage.Tenant, rid, source, want string) func() error {
	return func() error {
		pt, err := e.st.PageText(tn, rid, 1)
		if err != nil {
			return err
		}
		if pt.Source != source || !strings.Contains(strings.ToLower(strings.Join(strings.Fields(pt.Text), " ")), want) {
			return fmt.Errorf("page 1: source %q, text %q", pt.Source, pt.Text)
		}
		return nil
	}
}

// A book made of images gets its text by OCR once created; a book with a document, from the
// document; a book without text at start (converted before text was kept) gets it then; each
// is found by search.
func TestTextBackfill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tn := storage.Tenant{Workspace: 1, Mode: storage.ModeLive}
	const words = "Harbour lighthouse keepers gather seaweed"

	img, err := e.sys.CreateBook(tn, storeRendered(t, e, printedPDF(t, words), false))
	require.NoError(t, err)
	doc, err := e.sys.CreateBook(tn, storeRendered(t, e, printedPDF(t, "Document words: orchard cider"), true))
	require.NoError(t, err)
	testutil.Eventually(t, 60*time.Second, 50*time.Millisecond, e.textIs(tn, img.RandomID, storage.TextFromOCR, "lighthouse"))
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, e.textIs(tn, doc.RandomID, storage.TextFromPDF, "orchard cider"))
	q, err := search.Parse("LIGHTHOUSE keep")
	require.NoError(t, err)
	hits, _, err := e.st.Search(tn, q, 0, 10)
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Equal(t, img.RandomID, hits[0].RandomID)

	// Texts lost (as a book converted before they were kept): the next start reads them again.
	e.stop()
	st, err := storage.Open(e.dir, storage.Options{CacheBytes: 8 << 20})
	require.NoError(t, err)
	bt := st.NewBatch()
	require.NoError(t, bt.PutPageTexts(tn, doc.RandomID, nil))
	require.NoError(t, bt.Commit())
	has, err := st.HasPageText(tn, doc.RandomID)
	require.NoError(t, err)
	require.False(t, has)
	require.NoError(t, st.Close())
	e.start()
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, e.textIs(tn, doc.RandomID, storage.TextFromPDF, "orchard cider"))
	q, err = search.Parse("cider")
	require.NoError(t, err)
	hits, _, err = e.st.Search(tn, q, 0, 10)
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Equal(t, doc.RandomID, hits[0].RandomID)
}

// The backfill leaves a book alone when its pages changed since they were read, and a deleted
// book stays deleted.
func TestSetTextsChecksThePages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.NoTextBackfill = true })
	tn := storage.Tenant{Workspace: 1, Mode: storage.ModeLive}
	b := createBook(t, e, tn, storage.StatusDraft, "b")
	texts := []storage.PageText{{Page: 1, Source: storage.TextFromOCR, Text: "x", Words: []storage.Word{{Text: "x"}}}}
	_, err := askT[*storage.Book](e.sys, e.sys.workspace(tn), &SetTexts{RandomID: b.RandomID, Files: []string{"other.png"}, Texts: texts})
	require.NoError(t, err)
	has, err := e.st.HasPageText(tn, b.RandomID)
	require.NoError(t, err)
	require.False(t, has, "texts of other pages were stored")
	_, err = askT[*storage.Book](e.sys, e.sys.workspace(tn), &SetTexts{RandomID: b.RandomID, Files: []string{"a.png", "b.png"}, Texts: texts})
	require.NoError(t, err)
	has, err = e.st.HasPageText(tn, b.RandomID)
	require.NoError(t, err)
	require.True(t, has)
	_, err = e.sys.DeleteBook(tn, b.RandomID)
	require.NoError(t, err)
	_, err = askT[*storage.Book](e.sys, e.sys.workspace(tn), &SetTexts{RandomID: b.RandomID, Files: []string{"a.png", "b.png"}, Texts: texts})
	require.Error(t, err)
	has, err = e.st.HasPageText(tn, b.RandomID)
	require.NoError(t, err)
	require.False(t, has)
}
