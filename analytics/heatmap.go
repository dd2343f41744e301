package analytics

import (
	"context"
	"database/sql"
	"fmt"

	"flipbook/ingest"
)

// HeatmapGrid is the number of cells a heatmap has across and down a page (issue 29).
const HeatmapGrid = 20

// Heatmap counts a page's page_clicked events on a HeatmapGrid × HeatmapGrid grid: Cells[row]
// [column], row 0 at the top, column 0 at the left, a click at x (0..1) falling in column
// floor(x × HeatmapGrid) (x = 1 in the last). Total is every click counted.
type Heatmap struct {
	Cells [][]int64
	Total int64
}

// PageHeatmap is the heatmap of the clicks on page f.PageNumber of book f.BookID in f's range
// (and tracked link), read from the clicks' positions (the events' metadata, x and y).
func PageHeatmap(ctx context.Context, q Querier, f Filter) (Heatmap, error) {
	f.EventTypes = []string{ingest.PageClicked}
	where, args := f.Where("occurred_at")
	// A position that is not a finite number (stored before the collector refused "NaN", or
	// absent) is left out, rather than failing every later read of the page (CAST of NaN to
	// INTEGER is an error) or landing in a corner (greatest and least skip NULLs).
	cell := func(axis string) string {
		return fmt.Sprintf("CAST(least(%d, greatest(0, floor(%s * %d))) AS INTEGER)", HeatmapGrid-1, axis, HeatmapGrid)
	}
	query := `SELECT ` + cell("y") + ` AS r, ` + cell("x") + ` AS c, count(*)
FROM (SELECT TRY_CAST(json_extract_string(metadata, '$.x') AS DOUBLE) AS x,
	TRY_CAST(json_extract_string(metadata, '$.y') AS DOUBLE) AS y
	FROM ` + EventsView + ` WHERE ` + where + ` AND metadata <> '')
WHERE isfinite(x) AND isfinite(y) GROUP BY r, c`
	h := Heatmap{Cells: make([][]int64, HeatmapGrid)}
	for i := range h.Cells {
		h.Cells[i] = make([]int64, HeatmapGrid)
	}
	err := queryRows(ctx, q, "page heatmap", query, args, func(rows *sql.Rows) error {
		var r, c sql.NullInt64
		var n int64
		if err := rows.Scan(&r, &c, &n); err != nil {
			return fmt.Errorf("analytics page heatmap: %w", err)
		}
		if r.Valid && c.Valid {
			h.Cells[r.Int64][c.Int64] += n
			h.Total += n
		}
		return nil
	})
	return h, err
}

// HeatmapCell is a cell of a page heatmap with its clicks (a row of the CSV export).
type HeatmapCell struct {
	BookID     string `json:"book_id"`
	PageNumber int64  `json:"page_number"`
	Row        int    `json:"row" desc:"0 at the top of the page"`
	Column     int    `json:"column" desc:"0 at the left of the page"`
	Clicks     int64  `json:"clicks"`
}
