package analytics

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"flipbook/ingest"
	"flipbook/internal/testutil"
)

// checkRuns fails unless event_runs lists exactly the run tables there are (the runs below
// TopLevel), each with its table's row count, and the archive holds the rows of the runs it
// lists; each run is stored in sort order.
func checkRuns(t testing.TB, db *DB) {
	t.Helper()
	q := db.Handle()
	ctx := context.Background()
	runs, err := listRunTables(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := q.Query(`SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND starts_with(table_name, ?)
		ORDER BY table_name`, catalog, runTablePrefix)
	tables, err := collect(rows, err, func(rows *sql.Rows) (n string, err error) {
		err = rows.Scan(&n)
		return n, err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := tableNames(runs)
	slices.Sort(want)
	if !slices.Equal(tables, want) {
		t.Fatalf("run tables %v, event_runs lists %v", tables, want)
	}
	if ok, err := tableExists(ctx, q, legacySortedTable); err != nil || ok {
		t.Fatalf("%s still exists (%v)", legacySortedTable, err)
	}
	// descents counts the rows that sort before the row stored before them.
	descents := func(table string) (stored, back int64) {
		t.Helper()
		if err := q.QueryRow(`SELECT count(*), count(*) FILTER (WHERE back) FROM (
			SELECT (book_id, occurred_at, id) < lag((book_id, occurred_at, id)) OVER (ORDER BY rowid) AS back
			FROM `+table+`)`).Scan(&stored, &back); err != nil {
			t.Fatal(err)
		}
		return stored, back
	}
	for _, r := range runs {
		var listed int64
		if err := q.QueryRow(`SELECT rows FROM `+RunsTable+` WHERE run = ?`, r).Scan(&listed); err != nil {
			t.Fatal(err)
		}
		stored, back := descents(runTable(r))
		if listed != stored {
			t.Fatalf("run %d: event_runs lists %d rows, its table holds %d", r, listed, stored)
		}
		if back != 0 {
			t.Fatalf("run %d: %d rows stored out of order", r, back)
		}
	}
	// The archive: its runs one after another, each sorted, so the order steps back at most
	// between two of them.
	var archived, listed int64
	if err := q.QueryRow(`SELECT count(*), coalesce(sum(rows), 0) FROM `+RunsTable+` WHERE level >= ?`, TopLevel).Scan(&archived, &listed); err != nil {
		t.Fatal(err)
	}
	stored, back := descents(ArchiveTable)
	if stored != listed || back > max(archived-1, 0) {
		t.Fatalf("archive: %d rows for %d runs listing %d; %d steps back in order", stored, archived, listed, back)
	}
}

// waitCompacted waits until the compactor has nothing left to do (or the consumer stopped).
func waitCompacted(t testing.TB, db *DB, c *Consumer, rows int64, fanout int) {
	t.Helper()
	ctx := waitCtx(t, 20*time.Second)
	for !c.stopped() {
		var recent, level0 int64
		if err := db.Query().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM `+RecentTable+`),
			(SELECT count(*) FROM `+RunsTable+` WHERE level = 0)`).Scan(&recent, &level0); err != nil {
			t.Fatalf("compaction not done: %v; %+v", err, c.Stats())
		}
		if recent < rows && level0 < int64(fanout) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("compaction not done: %+v", c.Stats())
		case <-time.After(time.Millisecond):
		}
	}
}

func TestCompactionMovesRowsIntoSortedRuns(t *testing.T) {
	t.Parallel()
	// Whole moves in one sort, and moves sorted in ranges of books (a run of 1,000 rows and
	// merges of 2,000+ in chunks of 150, so most moves take several ranges).
	for _, chunk := range []int64{DefaultCompactChunk, 150} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			t.Parallel()
			testCompactionMovesRows(t, chunk)
		})
	}
}

func testCompactionMovesRows(t *testing.T, chunk int64) {
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(4)
	rng := rand.New(rand.NewPCG(11, 12))
	c := startConsumer(t, db, log, WithMaxBatch(400), WithCompaction(1000, 2), withCompactEvery(time.Millisecond),
		withCompactChunk(chunk))
	defer c.Close()
	ctx := waitCtx(t, 30*time.Second)
	// Appends keep coming while runs are made and merged; each waits until fewer rows wait
	// than would make a run big enough to skip the merges (2 × 1000: TestMergesStayWithinBudget
	// has those).
	deadline, _ := ctx.Deadline()
	for i := 0; i < 20; i++ {
		testutil.Eventually(t, time.Until(deadline), time.Millisecond, func() error {
			var recent int64
			if err := db.Query().QueryRowContext(ctx, `SELECT count(*) FROM `+RecentTable).Scan(&recent); err != nil {
				t.Fatal(err)
			}
			if recent >= 1500 {
				return fmt.Errorf("%d rows wait in %s, want fewer than 1500 before the next append", recent, RecentTable)
			}
			return nil
		})
		if err := log.Append(ctx, genEvents(rng, 450, 30, time.Now().UTC())); err != nil {
			t.Fatal(err)
		}
		c.Wake()
		if err := c.WaitFor(ctx, log.ends()); err != nil {
			t.Fatal(err)
		}
	}
	waitCompacted(t, db, c, 1000, 2)
	// Stop before looking, so no compaction runs between the checks.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, db, log.ids())
	checkRuns(t, db)
	var recent, levels int64
	db.Handle().QueryRow(`SELECT count(*) FROM ` + RecentTable).Scan(&recent)
	db.Handle().QueryRow(`SELECT max(level) FROM ` + RunsTable).Scan(&levels)
	if recent >= 1000 || levels != DefaultCompactMaxLevel || c.Stats().Merges == 0 || c.Stats().Promoted != 0 {
		t.Fatalf("%d rows left in %s, top level %d; stats %+v", recent, RecentTable, levels, c.Stats())
	}
	if c.Stats().MoveCommitMax <= 0 {
		t.Fatalf("compactions committed, but no time held is recorded; stats %+v", c.Stats())
	}
	if chunked := c.Stats().CompactChunks; (chunk < 1000) != (chunked > 0) {
		t.Fatalf("%d range sorts with chunks of %d rows; stats %+v", chunked, chunk, c.Stats())
	}
	t.Logf("stats %+v", c.Stats())
}

// TestCompactionUnderWholeRowGroupAppends: the consumer commits whole row groups (written
// straight to the file by DuckDB) while runs are made. Such a commit can show up in one
// statement of the compacting transaction and not in the next (compactRecent); picked by log
// offset, the moved rows are exactly the ones copied and deleted, and no compaction fails.
func TestCompactionUnderWholeRowGroupAppends(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := endsMemLog{newMemLog(4)}
	rng := rand.New(rand.NewPCG(13, 14))
	// Moves of 3+ row groups sorted in ranges of about one row group.
	c := startConsumer(t, db, log, WithCompaction(3*RowGroupSize, 4), withCompactEvery(5*time.Millisecond),
		withCompactChunk(RowGroupSize))
	defer c.Close()
	ctx := waitCtx(t, 60*time.Second)
	// At least 6 s of appends and two compactions among them (a loaded machine appends slowly).
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) || c.Stats().Compactions < 2 {
		if ctx.Err() != nil {
			t.Fatalf("no compactions under appends: stats %+v", c.Stats())
		}
		if err := log.Append(ctx, genEvents(rng, RowGroupSize, 30, time.Now().UTC())); err != nil {
			t.Fatal(err)
		}
		c.Wake()
		if err := c.WaitFor(ctx, log.ends()); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Errors != 0 || st.Compactions == 0 || st.CompactChunks == 0 {
		t.Fatalf("stats %+v", st)
	}
	checkExactlyOnce(t, db, log.ids())
	checkRuns(t, db)
	t.Logf("stats %+v", st)
}

// TestQueriesNeverMissMovingRows: a query through DB.Query that runs while a compaction moves
// its rows from RecentTable into a sorted run sees them (commitMove). Without it, about one
// read in fifty of a fresh session's view event, racing that session's first compaction,
// found no row at all under the race detector on two cores.
func TestQueriesNeverMissMovingRows(t *testing.T) {
	t.Parallel()
	for i := 0; i < 60; i++ {
		db := openTestDB(t, t.TempDir())
		log := newMemLog(2)
		c := startConsumer(t, db, log, WithCompaction(1, 8), withCompactEvery(time.Millisecond))
		at := time.Now().UTC()
		events := make([]ingest.Event, 3)
		for j := range events {
			events[j] = ingest.Event{Workspace: 1, Mode: 'l', BookID: "b", SessionID: "s", Type: ingest.PageSegmentCompleted,
				PageNumber: int32(j + 1), ActiveMs: 10, SourceType: "direct", OccurredAt: at, ReceivedAt: at}
		}
		if err := log.Append(context.Background(), events); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitFor(waitCtx(t, 10*time.Second), log.ends()); err != nil {
			t.Fatal(err)
		}
		var sessions, pages int
		err := db.Query().QueryRowContext(context.Background(),
			`SELECT count(*), coalesce(sum(pages_viewed), 0) FROM `+SessionView).Scan(&sessions, &pages)
		c.Close()
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if sessions != 1 || pages != 3 {
			t.Fatalf("round %d: %d sessions with %d pages, want 1 with 3", i, sessions, pages)
		}
	}
}
