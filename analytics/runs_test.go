package analytics

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/ingest"
)

// writeOldDatabase writes analytics.duckdb in dir as an older schema version did: as DuckDB's
// main database, with the statements stmts makes from the event columns' definitions (without
// the column named skip).
func writeOldDatabase(t *testing.T, dir, skip string, stmts func(defs string) []string) {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(dir, "analytics.duckdb"))
	require.NoError(t, err)
	defer db.Close()
	var defs []string
	for _, c := range eventColumns {
		if c.name != skip {
			defs = append(defs, c.name+" "+c.sqlType)
		}
	}
	for _, s := range stmts(strings.Join(defs, ", ")) {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
}

// TestSchemaVersion2Migrates: a database of schema version 2 (every run in one sorted table
// with a run column) opens with each run in a table of its own, in sort order, listed with its
// level and row count; no row is lost or doubled, and new rows are compacted and merged with
// the migrated level-0 run.
func TestSchemaVersion2Migrates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	row := func(id int64, book string, minute, run int) string {
		return `INSERT INTO ` + legacySortedTable + ` (` + columnList + `, run) VALUES (` + itoa(id) + `, 1, 'l', '` + book +
			`', 's', 'page_segment_completed', NULL, '', NULL, 'direct', NULL, 1, 1000, '', '', '', NULL, NULL, NULL, NULL, NULL, NULL,
			TIMESTAMP '2026-01-01 00:00:00' + INTERVAL ` + itoa(int64(minute)) + ` MINUTE, TIMESTAMP '2026-01-01 00:00:00', 10, ` + itoa(int64(run)) + `)`
	}
	writeOldDatabase(t, dir, "", func(defs string) []string {
		return []string{
			`CREATE TABLE schema_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)`,
			`INSERT INTO schema_meta VALUES ('version', '2')`,
			`CREATE TABLE ` + RecentTable + ` (` + defs + `)`,
			`CREATE TABLE ` + legacySortedTable + ` (` + defs + `, run BIGINT NOT NULL)`,
			`CREATE TABLE ` + RunsTable + ` (run BIGINT PRIMARY KEY, level INTEGER NOT NULL, rows BIGINT NOT NULL, created_at TIMESTAMP NOT NULL)`,
			`CREATE TABLE ` + OffsetsTable + ` ("partition" INTEGER PRIMARY KEY, next_offset UBIGINT NOT NULL)`,
			// Run 4 (level 1) first in the table, then run 7 (level 0); a run holds its rows in
			// sort order, as the version 2 compactor wrote them.
			row(101, "a", 1, 4), row(102, "a", 2, 4), row(103, "b", 1, 4),
			row(201, "a", 3, 7), row(202, "c", 1, 7),
			`INSERT INTO ` + RunsTable + ` VALUES (4, 1, 3, TIMESTAMP '2026-01-01 00:00:00'), (7, 0, 2, TIMESTAMP '2026-01-01 00:00:00')`,
		}
	})

	db := openTestDB(t, dir)
	defer db.Close()
	checkRuns(t, db)
	levels := map[int64]int{}
	rows, err := db.Handle().Query(`SELECT run, level FROM ` + RunsTable)
	require.NoError(t, err)
	for rows.Next() {
		var run int64
		var level int
		require.NoError(t, rows.Scan(&run, &level))
		levels[run] = level
	}
	rows.Close()
	require.Equal(t, map[int64]int{4: 1, 7: 0}, levels)
	require.Equal(t, []int64{101, 102, 103, 201, 202}, storedIDs(t, db))

	// New events: made into a level-0 run and merged with the migrated one.
	log := newMemLog(1)
	c := startConsumer(t, db, log, WithCompaction(1, 2), withCompactEvery(5*time.Millisecond))
	defer c.Close()
	now := time.Now().UTC()
	require.NoError(t, log.Append(context.Background(), []ingest.Event{{Workspace: 1, Mode: 'l', BookID: "new",
		SessionID: "s", Type: ingest.PageSegmentCompleted, PageNumber: 2, ActiveMs: 1000, SourceType: "direct",
		OccurredAt: now, ReceivedAt: now}}))
	require.NoError(t, c.WaitFor(waitCtx(t, 10*time.Second), log.ends()))
	waitCompacted(t, db, c, 1, 2)
	require.NoError(t, c.Close())
	require.EqualValues(t, 1, c.Stats().Merges, "%+v", c.Stats())
	checkRuns(t, db)
	require.Equal(t, []int64{0, 101, 102, 103, 201, 202}, storedIDs(t, db)) // the new event is offset 0
}

// TestMergesStayWithinBudget: runs that hold more than a merge's budget together are merged a
// few at a time, and a run of half the budget or more is appended to the archive at once, never
// rewritten by a merge.
func TestMergesStayWithinBudget(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(2)
	// compactRows 100, fanout 4: merge budget 800 rows of level-0 runs.
	c := startConsumer(t, db, log, WithCompaction(100, 4), withCompactEvery(time.Millisecond))
	defer c.Close()
	var budget int64 = 800
	require.Equal(t, budget, c.mergeBudget())
	ctx := waitCtx(t, 30*time.Second)
	// Each batch waits in events_recent until the compactor has made it a run: runs of 350
	// rows (four of them are more than the budget), then one of 500 (promoted).
	var want int64
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{350, 350, 350, 350, 350, 350, 500} {
		require.NoError(t, log.Append(ctx, genEvents(rng, n, 3, time.Now().UTC())))
		want += int64(n)
		c.Wake()
		require.NoError(t, c.WaitFor(ctx, log.ends()))
		require.Eventually(t, func() bool {
			var recent int64
			return db.Handle().QueryRow(`SELECT count(*) FROM `+RecentTable).Scan(&recent) == nil && recent == 0
		}, 20*time.Second, time.Millisecond)
	}
	waitCompacted(t, db, c, 100, 4)
	require.NoError(t, c.Close())
	checkRuns(t, db)
	st := c.Stats()
	require.EqualValues(t, 1, st.Promoted, "%+v", st)
	// Six level-0 runs of 350: a merge once four wait takes two (700 <= 800 < 1050).
	rows, err := db.Handle().Query(`SELECT level, rows FROM ` + RunsTable + ` ORDER BY run`)
	require.NoError(t, err)
	defer rows.Close()
	var total int64
	for rows.Next() {
		var level int
		var n int64
		require.NoError(t, rows.Scan(&level, &n))
		if level > 0 && n != 500 {
			require.LessOrEqual(t, n, budget, "a merged run")
		}
		total += n
	}
	require.Equal(t, want, total)
	require.NotZero(t, st.Merges)
	require.Len(t, storedIDs(t, db), int(want))
}
