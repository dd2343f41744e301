package storage

import (
	"errors"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/errs"
)

// Page texts are stored a page a record, read one or all in page order, replaced whole by the
// next write, kept apart per book and tenant, and deleted with their book.
func TestPageTexts(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn, other := Tenant{Workspace: 1, Mode: ModeLive}, Tenant{Workspace: 1, Mode: ModeTest}
	b := mkBook(tn, 1, "b", StatusDraft, t0, t0)
	putBooks(t, s, b)
	texts := make([]PageText, 300) // past 255: page numbers order as numbers, not as text
	for i := range texts {
		texts[i] = PageText{Page: i + 1, Source: TextFromPDF, Text: "p", Words: []Word{{Text: "p", X: 0.1, Y: 0.2, W: 0.3, H: 0.05}}}
	}
	bt := s.NewBatch()
	require.NoError(t, bt.PutPageTexts(tn, b.RandomID, texts))
	require.NoError(t, bt.PutPageTexts(other, b.RandomID, texts[:1]))
	require.NoError(t, bt.Commit())

	all, err := s.PageTexts(tn, b.RandomID)
	require.NoError(t, err)
	require.Len(t, all, 300)
	for i, pt := range all {
		require.Equal(t, i+1, pt.Page)
	}
	// EachPageText walks the same pages in the same order, and stops at fn's error.
	var walked []*PageText
	require.NoError(t, s.EachPageText(tn, b.RandomID, func(pt *PageText) error {
		walked = append(walked, pt)
		return nil
	}))
	require.Equal(t, all, walked)
	stop := errors.New("stop")
	n := 0
	err = s.EachPageText(tn, b.RandomID, func(pt *PageText) error {
		if n++; pt.Page == 7 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 7, n)
	n = 0
	require.NoError(t, s.EachPageText(other, b.RandomID, func(*PageText) error { n++; return nil }))
	require.Equal(t, 1, n)

	one, err := s.PageText(tn, b.RandomID, 256)
	require.NoError(t, err)
	require.Equal(t, texts[255], *one)
	_, err = s.PageText(tn, b.RandomID, 301)
	require.ErrorIs(t, err, errs.ErrNotFound)

	// A second conversion replaces every page's text.
	bt = s.NewBatch()
	require.NoError(t, bt.PutPageTexts(tn, b.RandomID, []PageText{{Page: 1, Problem: "unreadable", Words: []Word{}}}))
	require.NoError(t, bt.Commit())
	all, err = s.PageTexts(tn, b.RandomID)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, "unreadable", all[0].Problem)

	// Deleting the book deletes its texts, not another tenant's.
	bt = s.NewBatch()
	require.NoError(t, bt.DeleteBook(b))
	require.NoError(t, bt.Commit())
	all, err = s.PageTexts(tn, b.RandomID)
	require.NoError(t, err)
	require.Empty(t, all)
	kept, err := s.PageTexts(other, b.RandomID)
	require.NoError(t, err)
	require.Len(t, kept, 1)
}

// BooksAfter walks every book of every tenant once, in id order, a step at a time.
func TestBooksAfter(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	a, b := Tenant{Workspace: 1, Mode: ModeLive}, Tenant{Workspace: 2, Mode: ModeTest}
	books := []*Book{mkBook(a, 1, "x", StatusDraft, t0, t0), mkBook(b, 2, "x", StatusDraft, t0, t0),
		mkBook(a, 3, "x", StatusDraft, t0, t0), mkBook(b, 4, "x", StatusDraft, t0, t0), mkBook(a, 5, "x", StatusDraft, t0, t0)}
	putBooks(t, s, books...)
	var want []BookRef
	for _, bk := range books {
		want = append(want, BookRef{bk.Tenant(), bk.RandomID})
	}
	sort.Slice(want, func(i, j int) bool { return want[i].RandomID < want[j].RandomID })
	var got []BookRef
	after := ""
	for {
		step, err := s.BooksAfter(after, 2)
		require.NoError(t, err)
		got = append(got, step...)
		if len(step) < 2 {
			break
		}
		after = step[len(step)-1].RandomID
	}
	require.Equal(t, want, got)
}
