package analytics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A click whose position is not a finite number (stored before the collector refused "NaN",
// or written by anything else) is left out of the page's heatmap, not an error for every later
// read of it; the clicks beside it are counted in their cells.
func TestPageHeatmapSkipsPositionsThatAreNotNumbers(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, db.InsertSynthetic(Synthetic{Workspace: 1, BookID: "bkA", Events: 8, Start: start, IDBase: 100}))
	for id, meta := range map[int64]string{
		100: `{"x":0.25,"y":0.5,"zoom":1}`, 101: `{"x":NaN,"y":0.5}`, 102: `{"x":"Infinity","y":0.1}`,
		103: `{"x":0.99,"y":1e400}`, 104: `{"x":"abc","y":0.2}`, 105: `{"x":1,"y":0}`, 106: `{"x":1e300,"y":-1e300}`,
	} {
		_, err := db.Handle().Exec(`UPDATE `+RecentTable+` SET event_type = 'page_clicked', page_number = 1, metadata = ? WHERE id = ?`, meta, id)
		require.NoError(t, err)
	}
	h, err := PageHeatmap(context.Background(), db.Handle(), Filter{Workspace: 1, Mode: "l", BookID: "bkA", PageNumber: 1})
	require.NoError(t, err)
	require.EqualValues(t, 3, h.Total)
	require.EqualValues(t, 1, h.Cells[10][5]) // x 0.25, y 0.5
	require.EqualValues(t, 2, h.Cells[0][19]) // x 1 (the last column), y 0; x and y far out, clamped
}
