package analytics

import (
	"context"
	"fmt"
	"time"
)

// Synthetic describes generated events for one book, inserted straight into RecentTable (tests
// and benchmarks of the queries and exports: a million events in about a second, without going
// through the log).
//
// Event i (0-based) occurs at Start + i×Step. Every 8 events are one reading session:
// session_started, five page_segment_completed (page 1-5, active_ms 1,000-30,999), a
// link_clicked with a URL holding a comma and a quote, and session_ended. Every third session
// is identified (viewer_id 1-1000 and an address); ids are IDBase + i.
type Synthetic struct {
	Workspace int64
	Mode      string // "l" (default) or "t"
	BookID    string
	Events    int
	Start     time.Time
	Step      time.Duration // default 1 ms
	IDBase    int64         // default 1<<50, far above the consumer's ids
}

// InsertSynthetic inserts the events of s (no context: DuckDB is never handed one that could be
// cancelled).
func (d *DB) InsertSynthetic(s Synthetic) error {
	if s.Mode == "" {
		s.Mode = "l"
	}
	if s.Step <= 0 {
		s.Step = time.Millisecond
	}
	if s.IDBase == 0 {
		s.IDBase = 1 << 50
	}
	q := `INSERT INTO ` + RecentTable + ` (` + columnList + `)
SELECT ? + i, ?, ?, ?, 'syn-' || (i // 8),
	(['session_started', 'page_segment_completed', 'page_segment_completed', 'page_segment_completed',
	  'page_segment_completed', 'page_segment_completed', 'link_clicked', 'session_ended'])[1 + i % 8],
	CASE WHEN (i // 8) % 3 = 0 THEN 1 + (i // 8) % 1000 END,
	CASE WHEN (i // 8) % 3 = 0 THEN 'reader' || (1 + (i // 8) % 1000) || '@example.com' ELSE '' END,
	NULL, 'direct', NULL,
	CASE WHEN i % 8 = 0 THEN 1 WHEN i % 8 < 7 THEN least(i % 8, 5) END,
	CASE WHEN i % 8 BETWEEN 1 AND 5 THEN 1000 + i % 30000 END,
	CASE WHEN i % 8 = 6 THEN 'https://example.com/p?a=1,b="' || i || '"' ELSE '' END,
	CASE WHEN i % 8 = 7 THEN 'closed' ELSE '' END,
	'', NULL, NULL, NULL, NULL, NULL, NULL,
	CAST(? AS TIMESTAMP) + to_microseconds(i * ?),
	CAST(? AS TIMESTAMP) + to_microseconds(i * ?) + INTERVAL 20 MILLISECOND,
	5
FROM range(?) t(i)`
	start := s.Start.UTC()
	step := s.Step.Microseconds()
	ctx := context.Background()
	err := d.use(ctx, func() error {
		_, err := d.sql.ExecContext(ctx, q, s.IDBase, s.Workspace, s.Mode, s.BookID, start, step, start, step, s.Events)
		return err
	})
	if err != nil {
		return fmt.Errorf("analytics: synthetic events: %w", err)
	}
	return nil
}
