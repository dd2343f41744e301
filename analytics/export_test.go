package analytics

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"
)

// exportIDs reads an export to the end and returns the ids in order.
func exportIDs(t *testing.T, db *DB, q ExportQuery) []int64 {
	t.Helper()
	e, err := db.Export(context.Background(), q)
	require.NoError(t, err)
	defer e.Close()
	var ids []int64
	for e.Next() {
		rec := e.Record()
		col := rec.Column(idColumn(rec)).(*array.Int64)
		ids = append(ids, col.Int64Values()...)
	}
	require.NoError(t, e.Err())
	return ids
}

// queryIDs is the same rows read by one plain ordered query.
func queryIDs(t *testing.T, db *DB, q string, args ...any) []int64 {
	t.Helper()
	rows, err := db.Handle().Query(q, args...)
	require.NoError(t, err)
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

// TestExportWindows: an export read in time windows or keyset batches returns exactly the rows
// of one ordered query, in its order, with every filter, for every window size; equal
// timestamps are ordered by id across window edges.
func TestExportWindows(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, db.InsertSynthetic(Synthetic{Workspace: 1, BookID: "bkA", Events: 20000, Start: start, Step: time.Millisecond}))
	// Another book, interleaved in time, and a burst of events sharing one timestamp.
	require.NoError(t, db.InsertSynthetic(Synthetic{Workspace: 1, BookID: "bkB", Events: 5000, Start: start, Step: 3 * time.Millisecond, IDBase: 1 << 51}))
	require.NoError(t, db.InsertSynthetic(Synthetic{Workspace: 1, BookID: "bkA", Events: 3000, Start: start.Add(5 * time.Second), Step: time.Nanosecond, IDBase: 1 << 49}))

	f := Filter{Workspace: 1, Mode: "l", BookID: "bkA"}
	for _, c := range []struct {
		name   string
		f      Filter
		desc   bool
		window int
	}{
		{"desc", f, true, 1000},
		{"asc", f, false, 1000},
		{"one window", f, true, 0},
		{"odd window", f, false, 777},
		{"filtered", Filter{Workspace: 1, Mode: "l", BookID: "bkA", EventTypes: []string{"link_clicked"},
			From: start.Add(2 * time.Second), To: start.Add(12 * time.Second)}, true, 100},
		{"empty", Filter{Workspace: 2, Mode: "l", BookID: "bkA"}, true, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			where, args := c.f.Where("occurred_at")
			dir := "ASC"
			if c.desc {
				dir = "DESC"
			}
			want := queryIDs(t, db, "SELECT id FROM "+InteractionView+" WHERE "+where+" ORDER BY occurred_at "+dir+", id "+dir, args...)
			got := exportIDs(t, db, ExportQuery{From: InteractionView, Columns: "id, occurred_at, url", Filter: c.f,
				TimeCol: "occurred_at", Desc: c.desc, Window: c.window})
			require.Equal(t, want, got)
		})
	}
	t.Run("by id", func(t *testing.T) {
		where, args := f.Where("started_at")
		want := queryIDs(t, db, "SELECT id FROM "+SessionView+" WHERE "+where+" ORDER BY id DESC", args...)
		require.Greater(t, len(want), 2000)
		for _, w := range []int{100, len(want), 0} {
			got := exportIDs(t, db, ExportQuery{From: SessionView, Columns: "id, session_id", Filter: f,
				TimeCol: "started_at", Desc: true, ByID: true, Window: w})
			require.Equal(t, want, got, "window %d", w)
		}
	})
	require.Zero(t, db.ExportStats().Running)
}

// TestExportStopAndClose: an export that is closed early runs no further queries; Close of the
// database stops a running export at its next batch and waits for it; the file then reopens.
func TestExportStopAndClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openTestDB(t, dir)
	require.NoError(t, db.InsertSynthetic(Synthetic{Workspace: 1, BookID: "bkA", Events: 50000, Start: time.Now().Add(-time.Hour)}))
	q := ExportQuery{From: InteractionView, Columns: "id", Filter: Filter{Workspace: 1, Mode: "l", BookID: "bkA"},
		TimeCol: "occurred_at", Desc: true, Window: 20000}

	before := db.ExportStats()
	e, err := db.Export(context.Background(), q)
	require.NoError(t, err)
	require.True(t, e.Next())
	require.NoError(t, e.Close())
	after := db.ExportStats()
	require.Equal(t, int64(3), after.Queries-before.Queries, "count, cut points, the first window")
	require.LessOrEqual(t, after.Rows-before.Rows, int64((DefaultExportPrefetch+2)*2048), "read ahead at most the prefetch")
	require.Zero(t, after.Running)

	// The limit of running exports.
	var open []*ExportRows
	for i := 0; i < DefaultMaxExports; i++ {
		e, err := db.Export(context.Background(), q)
		require.NoError(t, err)
		open = append(open, e)
	}
	_, err = db.Export(context.Background(), q)
	require.ErrorIs(t, err, ErrExportsBusy)
	for _, e := range open[1:] {
		require.NoError(t, e.Close())
	}

	// Close while an export is open: the export's next batch fails, Close returns once it let go.
	e = open[0]
	require.True(t, e.Next())
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	require.Eventually(t, func() bool {
		db.exp.mu.Lock()
		defer db.exp.mu.Unlock()
		return db.exp.closed
	}, 5*time.Second, time.Millisecond)
	require.False(t, e.Next())
	require.ErrorIs(t, e.Err(), ErrClosed)
	require.NoError(t, e.Close())
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return after the export closed")
	}
	_, err = db.Export(context.Background(), q)
	require.ErrorIs(t, err, ErrClosed)
	db2 := openTestDB(t, dir) // panics after 20 s if the instance were still referenced
	require.NoError(t, db2.Close())
}
