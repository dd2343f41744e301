package analytics

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestAggregatesLatency times every aggregate query on a large store: perfBooks books of
// perfPerBook events each (10 books per workspace, 1,000 sessions of 10 events per book, a
// third of them identified by viewers shared across the workspace's books), in one sorted run
// plus an unsorted recent table, as the compactor leaves them. It logs p50 and p99 per
// operation and fails when a per-book p99 exceeds 250 ms. Opt-in (it builds 10M rows):
//
//	FLIPBOOK_AGG_PERF=1 go test -tags pebblegozstd,duckdb_arrow -run TestAggregatesLatency -v ./analytics/
//
// FLIPBOOK_AGG_PERF_BOOKS changes the number of books (default 1000).
func TestAggregatesLatency(t *testing.T) {
	if os.Getenv("FLIPBOOK_AGG_PERF") == "" {
		t.Skip("set FLIPBOOK_AGG_PERF=1 to run")
	}
	books := 1000
	if n, err := strconv.Atoi(os.Getenv("FLIPBOOK_AGG_PERF_BOOKS")); err == nil && n > 0 {
		books = n
	}
	const perBook = 10_000
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	base := time.Now().UTC().Add(-7 * 24 * time.Hour).Truncate(time.Hour)
	// Book ids are random strings (as random_id is), so a workspace's books are spread over the
	// sorted table.
	if _, err := db.Handle().ExecContext(ctx, `CREATE OR REPLACE MACRO bookid(b) AS substr(md5(CAST(b AS VARCHAR)), 1, 12)`); err != nil {
		t.Fatal(err)
	}
	bookID := func(b int) string {
		var id string
		if err := db.Query().QueryRowContext(ctx, `SELECT bookid(?)`, b).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	gen := func(ex execQuerier, table string, from, n int, order string) {
		start := time.Now()
		q := fmt.Sprintf(`INSERT INTO %s (%s)
SELECT i + 1 AS id, b // 10 + 1 AS workspace, 'l' AS mode, bookid(b) AS book_id,
	'b' || b || '-s' || s AS session_id,
	CASE WHEN k = 0 THEN 'session_started' WHEN k <= 7 THEN 'page_segment_completed'
		WHEN k = 8 AND s %% 2 = 0 THEN 'link_clicked' WHEN k = 8 THEN 'document_downloaded'
		ELSE 'session_ended' END AS event_type,
	CASE WHEN s %% 3 = 0 THEN (hash(s, b) %% 3000) + 1 END AS viewer_id,
	CASE WHEN s %% 3 = 0 THEN 'r' || ((hash(s, b) %% 3000) + 1) || '@example.com' ELSE '' END AS viewer_email,
	CASE WHEN s %% 4 = 0 THEN b %% 7 + 1 END AS tracked_link_id, 'direct' AS source_type, NULL AS source_host,
	CASE WHEN k BETWEEN 1 AND 7 THEN CAST(hash(i) %% 40 + 1 AS INTEGER) END AS page_number,
	CASE WHEN k BETWEEN 1 AND 7 THEN CAST(hash(i + 1) %% 60000 AS BIGINT) END AS active_ms,
	CASE WHEN k = 8 THEN 'https://example.com/' || (hash(i) %% 5) ELSE '' END AS url,
	'' AS exit_reason, '' AS reason, NULL AS metadata, NULL AS country, NULL AS region, NULL AS city,
	NULL AS latitude, NULL AS longitude,
	TIMESTAMP '%s' + to_seconds(s * 600 + k * 10) AS occurred_at,
	TIMESTAMP '%s' + to_seconds(s * 600 + k * 10 + 1) AS created_at, 40 AS book_pages
FROM (SELECT i, i // %d AS b, (i %% %d) // 10 AS s, i %% 10 AS k FROM range(%d, %d) r(i))
ORDER BY %s`, table, columnList, base.Format("2006-01-02 15:04:05"), base.Format("2006-01-02 15:04:05"),
			perBook, perBook, from, from+n, order)
		if _, err := ex.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d rows in %v", table, n, time.Since(start))
	}
	total := books * perBook
	recent := total / 200
	conn, err := db.Handle().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := db.AddSortedRun(ctx, conn, 1, func(tx *sql.Tx, table string) (int64, error) {
		gen(tx, table, 0, total-recent, "book_id, occurred_at, id")
		return int64(total - recent), nil
	}); err != nil {
		t.Fatal(err)
	}
	gen(conn, RecentTable, total-recent, recent, "id")
	if _, err := db.Handle().ExecContext(ctx, `CHECKPOINT`); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	filterFor := func() (Filter, int) {
		b := rng.IntN(books)
		return Filter{Workspace: int64(b/10 + 1), Mode: "l", BookID: bookID(b)}, b
	}
	drain := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	ops := []struct {
		name    string
		perBook bool
		run     func()
	}{
		{"page-performance", true, func() {
			f, _ := filterFor()
			drain(PagePerformance(ctx, db.Query(), f, 40, func(PageSummary) error { return nil }))
		}},
		{"book-flow", true, func() {
			f, _ := filterFor()
			_, err := GetBookFlow(ctx, db.Query(), f, 40)
			drain(err)
		}},
		{"readers recent", true, func() {
			f, _ := filterFor()
			_, err := Readers(ctx, db.Query(), f, ReadersQuery{Sort: SortRecent, Limit: 101}, func(ReaderSummary) error { return nil })
			drain(err)
		}},
		{"readers engagement, anonymous, page 2", true, func() {
			f, _ := filterFor()
			snap, err := Readers(ctx, db.Query(), f, ReadersQuery{Sort: SortEngagement, IncludeAnonymous: true, Snapshot: 1 << 40,
				After: &ReaderPosition{Value: 5000, Key: "m"}, Limit: 101}, func(ReaderSummary) error { return nil })
			drain(err)
			_ = snap
		}},
		{"reader-pages", true, func() {
			f, _ := filterFor()
			drain(ReaderPages(ctx, db.Query(), f, false, func(ReaderPage) error { return nil }))
		}},
		{"reading-session-pages", true, func() {
			f, b := filterFor()
			s := rng.IntN(perBook / 10)
			v, err := GetViewEvent(ctx, db.Query(), f, int64(b*perBook+s*10+1))
			drain(err)
			drain(SessionPages(ctx, db.Query(), f, v, func(SessionPage) error { return nil }))
		}},
		{"reader-journey viewer", false, func() {
			f, _ := filterFor()
			f.BookID, f.ViewerID = "", int64(rng.IntN(3000)+1)
			_, err := ReaderJourney(ctx, db.Query(), f)
			drain(err)
		}},
		{"reader-journey session", false, func() {
			f, b := filterFor()
			f.BookID, f.SessionID = "", fmt.Sprintf("b%d-s%d", b, rng.IntN(perBook/10))
			_, err := ReaderJourney(ctx, db.Query(), f)
			drain(err)
		}},
	}
	for _, op := range ops {
		op.run() // warm
		var d []time.Duration
		for i := 0; i < 40; i++ {
			start := time.Now()
			op.run()
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		p99 := d[len(d)*99/100]
		t.Logf("%-40s p50 %6.1f ms  p99 %6.1f ms", op.name, float64(d[len(d)/2].Microseconds())/1000, float64(p99.Microseconds())/1000)
		if op.perBook && p99 > 250*time.Millisecond {
			t.Errorf("%s: p99 %v over 250 ms", op.name, p99)
		}
	}
}
