package analytics

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// BenchBook is a book the benchmark data is generated for.
type BenchBook struct {
	Workspace int64
	Mode      string // "l" or "t"
	BookID    string
	// Events is how many events the book gets (a multiple of 10 is exact: sessions of 10).
	Events int
}

// InsertBenchEvents fills the store as the compactor leaves it after a long ingest: all but
// the last 0.5% of the events in one sorted run of level 1, the rest in
// RecentTable. Per book: sessions of 10 events (session_started, seven page segments over
// pages 1-40 with 0-60 s active, a link click or a download, session_ended) ten minutes
// apart from base; a third of the sessions identified by one of 3,000 viewers of the
// workspace, a quarter through one of 7 tracked links. Ids start at idBase. No context is
// passed to DuckDB (none that could be cancelled: docs/DEPENDENCIES.md).
func (d *DB) InsertBenchEvents(books []BenchBook, base time.Time, idBase int64) error {
	ctx := context.Background()
	if err := d.gate.enter(ctx); err != nil {
		return err
	}
	defer d.gate.leave()
	c, err := d.sql.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	var vals []string
	var args []any
	start := 0
	for i, b := range books {
		vals = append(vals, "(?, ?, ?, ?, ?, ?)")
		args = append(args, i, b.Workspace, b.Mode, b.BookID, start, b.Events)
		start += b.Events
	}
	total := start
	steps := []string{
		`CREATE OR REPLACE TEMP TABLE bench_books (b INTEGER, workspace BIGINT, mode VARCHAR, book_id VARCHAR, first BIGINT, n BIGINT)`,
	}
	for _, s := range steps {
		if _, err := c.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("analytics: bench data: %w", err)
		}
	}
	for i := 0; i < len(vals); i += 500 { // insert the book list in chunks
		j := min(i+500, len(vals))
		if _, err := c.ExecContext(ctx, `INSERT INTO bench_books VALUES `+strings.Join(vals[i:j], ", "), args[i*6:j*6]...); err != nil {
			return fmt.Errorf("analytics: bench data: %w", err)
		}
	}
	recent := total / 200
	ts := base.UTC().Format("2006-01-02 15:04:05")
	gen := func(ex execQuerier, table string, from, to int, order string) error {
		q := fmt.Sprintf(`INSERT INTO %s (%s)
SELECT ? + i AS id, bb.workspace, bb.mode, bb.book_id AS book_id, 's' || bb.b || '-' || s,
	CASE WHEN k = 0 THEN 'session_started' WHEN k <= 7 THEN 'page_segment_completed'
		WHEN k = 8 AND s %% 2 = 0 THEN 'link_clicked' WHEN k = 8 THEN 'document_downloaded'
		ELSE 'session_ended' END,
	CASE WHEN s %% 3 = 0 THEN (hash(s, bb.b) %% 3000) + 1 END,
	CASE WHEN s %% 3 = 0 THEN 'r' || ((hash(s, bb.b) %% 3000) + 1) || '@example.com' ELSE '' END,
	CASE WHEN s %% 4 = 0 THEN bb.b %% 7 + 1 END, 'direct', NULL,
	CASE WHEN k BETWEEN 1 AND 7 THEN CAST(hash(i) %% 40 + 1 AS INTEGER) END,
	CASE WHEN k BETWEEN 1 AND 7 THEN CAST(hash(i + 1) %% 60000 AS BIGINT) END,
	CASE WHEN k = 8 AND s %% 2 = 0 THEN 'https://example.com/' || (hash(i) %% 5) ELSE '' END,
	CASE WHEN k = 9 THEN 'closed' ELSE '' END, '', NULL, NULL, NULL, NULL, NULL, NULL,
	TIMESTAMP '%s' + to_seconds((s * 600 + k * 10) %% (6 * 86400)) AS occurred_at,
	TIMESTAMP '%s' + to_seconds((s * 600 + k * 10) %% (6 * 86400) + 1), 40
FROM (SELECT i, (i - bb.first) // 10 AS s, (i - bb.first) %% 10 AS k, bb.*
	FROM range(?, ?) r(i) JOIN bench_books bb ON i >= bb.first AND i < bb.first + bb.n) bb
ORDER BY %s`, table, columnList, ts, ts, order)
		_, err := ex.ExecContext(ctx, q, idBase, from, to)
		return err
	}
	if err := d.addRunLocked(ctx, c, 1, func(tx *sql.Tx, table string) (int64, error) {
		return int64(total - recent), gen(tx, table, 0, total-recent, "book_id, occurred_at, id")
	}); err != nil {
		return fmt.Errorf("analytics: bench data: %w", err)
	}
	if err := gen(c, RecentTable, total-recent, total, "id"); err != nil {
		return fmt.Errorf("analytics: bench data: %w", err)
	}
	if _, err := c.ExecContext(ctx, `DROP TABLE bench_books`); err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, `CHECKPOINT`)
	return err
}
