package analytics

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"flipbook/ingest"
)

// Compaction keeps a book's rows findable by range (DESIGN §8). The consumer appends in
// arrival order, where every row group holds every book; the compactor moves RecentTable's
// rows into a new run (a table of its own, runs.go) sorted by sortKey, and merges runs of one
// level into one run of the next (size-tiered, like an LSM tree); runs of the top level are
// appended to ArchiveTable. A query for one book then reads, per run, the one or two row
// groups whose min/max book_id bracket it, plus RecentTable (at most about CompactRows rows). Each move is one transaction on the compacting connection:
// the rows leave one place and arrive in the other together, and EventsView changes with them,
// so a row is never in both and never in neither. Appends to RecentTable go on meanwhile
// (DuckDB appends do not conflict with deletes of other rows).
//
// Every transaction's work is bounded, whatever the backlog: a merge takes at most
// mergeBudget rows (the oldest runs of the level that fit), and a run made of at least half
// that many rows (RecentTable after a long wait) goes straight to the top level without
// being rewritten again. Before the bound, runs of 7M rows made while compaction lagged were
// merged into runs of 50M rows: minutes of CPU and a transaction whose memory grew with them.

// Defaults of compaction.
const (
	// DefaultCompactRows is how many rows RecentTable gathers before they become a run.
	DefaultCompactRows = 1 << 20
	// DefaultCompactFanout runs of one level are merged into one run of the next (fewer when
	// they hold more than the merge budget, 2 × DefaultCompactRows × DefaultCompactFanout rows).
	DefaultCompactFanout = 8
	// DefaultCompactMaxLevel: runs of this level are not merged further. With the defaults a
	// row is rewritten at most twice (into a run of ~1M rows, then into one of 8-16M), and a
	// query for one book reads one or two row groups of each such run.
	DefaultCompactMaxLevel = 1
	// DefaultCompactEvery is how often the compactor looks at the tables.
	DefaultCompactEvery = time.Second
	// DefaultCompactChunk bounds the rows one sort of the compactor takes: a move of more rows
	// is sorted in ranges of books of about this many rows, one after another (see moveSorted).
	DefaultCompactChunk = 1 << 20
)

// partitionBits is how far a row id shifts its partition out (ingest.Record.ID).
const partitionBits = 10

// Both fail to compile unless 1<<partitionBits == ingest.MaxPartitions.
const (
	_ = uint(ingest.MaxPartitions - 1<<partitionBits)
	_ = uint(1<<partitionBits - ingest.MaxPartitions)
)

// recentColumns is columnList qualified by the alias r (RecentTable in the compaction join).
var recentColumns = "r." + strings.ReplaceAll(columnList, ", ", ", r.")

// mergeBudget is the most rows one merge rewrites: twice what fanout runs of the usual size
// (compactRows) hold.
func (c *Consumer) mergeBudget() int64 { return 2 * c.compactRows * int64(c.compactFanout) }

// sortKey orders a run. Book ids (random_id) are unique across workspaces and modes, so the
// book alone makes the range; time within a book serves date filters and newest-first pages.
const sortKey = "book_id, occurred_at, id"

// WithCompaction sets when RecentTable becomes a run (rows; 0 turns compaction off) and how
// many runs of a level are merged into one of the next (fanout, at least 2).
func WithCompaction(rows int64, fanout int) ConsumerOption {
	return func(c *Consumer) {
		c.compactRows = max(rows, 0)
		if fanout >= 2 {
			c.compactFanout = fanout
		}
	}
}

// withCompactEvery sets how often the compactor looks (tests look often).
func withCompactEvery(d time.Duration) ConsumerOption {
	return func(c *Consumer) { c.compactEvery = d }
}

// withCompactChunk sets the rows of one sort (tests sort in small chunks).
func withCompactChunk(rows int64) ConsumerOption {
	return func(c *Consumer) { c.compactChunk = max(rows, 1) }
}

// WithReattachRows sets how many rows written into runs make the compactor reattach the
// analytics file (reattach.go; 0: never).
func WithReattachRows(rows int64) ConsumerOption {
	return func(c *Consumer) { c.reattachRows = max(rows, 0) }
}

// Steps of the compactor reported to the test hook (before its commit).
const (
	stepCompacted = "compacted" // RecentTable rows copied into a run and deleted, not committed
	stepMerged    = "merged"    // runs merged into one, not committed
)

func (c *Consumer) compactLoop(ctx context.Context) error {
	t := time.NewTicker(c.compactEvery)
	defer t.Stop()
	errWait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case job := <-c.redactq:
			counts, err := c.redact(ctx, job.m)
			job.done <- redactResult{counts, err}
			continue
		case <-t.C:
		}
		if c.compactRows == 0 {
			continue
		}
		err := c.compactOnce(ctx)
		if err == nil && c.reattachRows > 0 && c.written >= c.reattachRows {
			err = c.reattach(ctx)
		}
		if err == nil {
			errWait = 0
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if isHookStop(err) {
			return err
		}
		c.mu.Lock()
		c.stats.Errors++
		c.stats.LastError = err.Error()
		c.mu.Unlock()
		c.logger.Error("analytics compactor", "err", err)
		errWait = min(max(2*errWait, time.Second), time.Minute)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(errWait):
		}
	}
}

// reattach reattaches the analytics file on the compacting connection (reattach.go) and gives
// the memory it freed back to the system. Running statements that do not end in time put it
// off to the next look.
func (c *Consumer) reattach(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	start := time.Now()
	done, err := c.db.reattach(context.WithoutCancel(ctx), c.compactConn)
	if err != nil || !done {
		return err
	}
	TrimMalloc()
	c.written = 0
	c.mu.Lock()
	c.stats.Reattaches++
	c.mu.Unlock()
	c.logger.Debug("analytics: file reattached", "took", time.Since(start))
	return nil
}

// compactOnce makes a run of RecentTable if it is big enough, then merges every level that
// has gathered enough runs.
func (c *Consumer) compactOnce(ctx context.Context) error {
	if err := c.compactRecent(ctx); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	for level := 0; level < TopLevel; level++ {
		if err := c.mergeLevel(ctx, level); err != nil {
			return fmt.Errorf("merge level %d: %w", level, err)
		}
	}
	return nil
}

func nextRun(ctx context.Context, tx *sql.Tx) (int64, error) {
	var run int64
	err := tx.QueryRowContext(ctx, `SELECT coalesce(max(run), 0) + 1 FROM `+RunsTable).Scan(&run)
	return run, err
}

// execN runs a statement that must change exactly want rows.
func execN(ctx context.Context, tx *sql.Tx, want int64, q string) error {
	res, err := tx.ExecContext(ctx, q)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("%d rows changed, expected %d: %s", n, want, q)
	}
	return nil
}

// DuckDB calls get a context that Close does not cancel: with duckdb-go v2.10505.0 a query
// interrupted through its context can leave the database instance referenced, and reopening
// the file in the same process then spins forever (DuckDB's instance cache waits for it). A
// compaction stopping at Close ends between two statements instead (and rolls back).

func (c *Consumer) compactRecent(stop context.Context) error {
	ctx := context.WithoutCancel(stop)
	if err := stop.Err(); err != nil {
		return err
	}
	if err := c.db.gate.enter(stop); err != nil {
		return err
	}
	defer c.db.gate.leave()
	tx, err := c.compactConn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+RecentTable).Scan(&n); err != nil {
		return err
	}
	if n == 0 || n < c.compactRows || stop.Err() != nil {
		return stop.Err()
	}
	run, err := nextRun(ctx, tx)
	if err != nil {
		return err
	}
	start := time.Now()
	// What moves is what the consumer had committed when this transaction began, picked by
	// log offset: a row's id is its record's offset<<10 | partition (ingest.Record.ID), and
	// consumer_offsets, read in the same transaction, holds each partition's next offset as of
	// its snapshot. Every statement of a transaction should see that one snapshot, but with
	// duckdb-go v2.10505.0 a row group that another transaction wrote straight to the file (a
	// whole row group, as the consumer's transactions are under load) and committed while a
	// statement ran can show up in that statement and not in the next (in a stress test, about
	// one compaction in twenty under concurrent appends, always one whole row group; no row
	// was ever lost). Picked by offset, such rows stay out of both the copy and the delete,
	// and the two counts must match.
	movable := fmt.Sprintf(`%s r JOIN %s o ON o."partition" = (r.id & %d) WHERE (r.id >> %d) < o.next_offset`,
		RecentTable, OffsetsTable, ingest.MaxPartitions-1, partitionBits)
	// A run of at least half a merge's budget would be most of a merge by itself: it goes
	// straight to the top level (appended to the archive), counted by the rows waiting.
	level := 0
	if n >= c.mergeBudget()/2 {
		level = TopLevel
	}
	home := runHome(run, level)
	if _, err := tx.ExecContext(ctx, eventTableDDL(home)); err != nil {
		return err
	}
	if n, err = c.moveSorted(ctx, tx, home, recentColumns, "r.book_id", movable, n); err != nil {
		return err
	}
	if err := stop.Err(); err != nil {
		return err
	}
	if err := execN(ctx, tx, n, fmt.Sprintf(`DELETE FROM %s r USING %s o WHERE o."partition" = (r.id & %d) AND (r.id >> %d) < o.next_offset`,
		RecentTable, OffsetsTable, ingest.MaxPartitions-1, partitionBits)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+RunsTable+` VALUES (?, ?, ?, ?)`, run, level, n, time.Now().UTC()); err != nil {
		return err
	}
	if err := replaceEventsView(ctx, tx); err != nil {
		return err
	}
	if err := c.step(stepCompacted); err != nil {
		return err
	}
	if err := stop.Err(); err != nil {
		return err
	}
	held, err := c.db.commitMove(tx)
	if err != nil {
		return err
	}
	c.written += n
	c.mu.Lock()
	c.stats.MoveCommitMax = max(c.stats.MoveCommitMax, held)
	c.stats.Compactions++
	c.stats.CompactedRows += uint64(n)
	if level > 0 {
		c.stats.Promoted++
	}
	c.mu.Unlock()
	c.logger.Debug("analytics: run made", "run", run, "level", level, "rows", n, "took", time.Since(start))
	return nil
}

func (c *Consumer) mergeLevel(stop context.Context, level int) error {
	ctx := context.WithoutCancel(stop)
	if err := stop.Err(); err != nil {
		return err
	}
	if err := c.db.gate.enter(stop); err != nil {
		return err
	}
	defer c.db.gate.leave()
	tx, err := c.compactConn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	type listed struct{ run, rows int64 }
	rows, err := tx.QueryContext(ctx, `SELECT run, rows FROM `+RunsTable+` WHERE level = ? ORDER BY run`, level)
	all, err := collect(rows, err, func(rows *sql.Rows) (l listed, err error) {
		err = rows.Scan(&l.run, &l.rows)
		return l, err
	})
	if err != nil {
		return err
	}
	if len(all) < c.compactFanout || stop.Err() != nil {
		return stop.Err()
	}
	// The oldest runs that fit the budget, and at least two whatever their size (runs made
	// since schema version 3 hold less than half the budget each, so two always fit; a bigger
	// level-0 run migrated from version 2 is merged once, over budget).
	budget := c.mergeBudget()
	var inputs []int64
	var total int64
	for _, l := range all[:c.compactFanout] {
		if len(inputs) >= 2 && total+l.rows > budget {
			break
		}
		inputs = append(inputs, l.run)
		total += l.rows
	}
	run, err := nextRun(ctx, tx)
	if err != nil {
		return err
	}
	start := time.Now()
	var from, in []string
	for _, r := range inputs {
		from = append(from, "SELECT "+columnList+" FROM "+runTable(r))
		in = append(in, strconv.FormatInt(r, 10))
	}
	source := "(" + strings.Join(from, " UNION ALL ") + ") m WHERE true"
	home := runHome(run, level+1)
	if _, err := tx.ExecContext(ctx, eventTableDDL(home)); err != nil {
		return err
	}
	moved, err := c.moveSorted(ctx, tx, home, columnList, "book_id", source, total)
	if err != nil {
		return err
	}
	if moved != total {
		return fmt.Errorf("%d rows merged, expected %d", moved, total)
	}
	if err := stop.Err(); err != nil {
		return err
	}
	for _, r := range inputs {
		if _, err := tx.ExecContext(ctx, `DROP TABLE `+runTable(r)); err != nil {
			return err
		}
	}
	if err := execN(ctx, tx, int64(len(inputs)), `DELETE FROM `+RunsTable+` WHERE run IN (`+strings.Join(in, ", ")+`)`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+RunsTable+` VALUES (?, ?, ?, ?)`, run, level+1, total, time.Now().UTC()); err != nil {
		return err
	}
	if err := replaceEventsView(ctx, tx); err != nil {
		return err
	}
	if err := c.step(stepMerged); err != nil {
		return err
	}
	if err := stop.Err(); err != nil {
		return err
	}
	held, err := c.db.commitMove(tx)
	if err != nil {
		return err
	}
	c.written += total
	c.mu.Lock()
	c.stats.MoveCommitMax = max(c.stats.MoveCommitMax, held)
	c.stats.Merges++
	c.mu.Unlock()
	c.logger.Debug("analytics: runs merged", "runs", len(inputs), "into", run, "level", level+1, "rows", total, "took", time.Since(start))
	return nil
}

// moveSorted inserts the rows of source (a FROM clause ending in a WHERE condition; book is
// its book_id column, cols its event columns) into table, in sortKey order, and returns how
// many it inserted. Up to c.compactChunk rows (by the caller's count, an upper bound) are one
// sort; more are sorted in consecutive ranges of books of about c.compactChunk rows each (a
// book is never split), appended one after another, so the run is still in sortKey order. One
// sort of a whole merge (8-16M rows) took DuckDB to its memory limit and spilled, and the process's
// memory between such sorts crept up over a long run; sorts of a bounded size keep the
// compactor's memory independent of how much waits or is merged. A range's statement finds
// its rows through the zone maps of sorted runs, or by scanning book_id of RecentTable.
func (c *Consumer) moveSorted(ctx context.Context, tx *sql.Tx, table, cols, book, source string, count int64) (int64, error) {
	insert := func(cond string, args ...any) (int64, error) {
		res, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s%s ORDER BY %s`,
			table, columnList, cols, source, cond, sortKey), args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	if count <= c.compactChunk {
		return insert("")
	}
	// The first book of each range: books in order, each with the rows before it, grouped by
	// which chunk those rows fall in.
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT min(book_id) FROM (
		SELECT book_id, sum(n) OVER (ORDER BY book_id) - n AS before FROM (
			SELECT %s AS book_id, count(*) AS n FROM %s GROUP BY 1))
		GROUP BY before // %d ORDER BY 1`, book, source, c.compactChunk))
	if err != nil {
		return 0, err
	}
	var starts []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return 0, err
		}
		starts = append(starts, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var total int64
	for i := range starts {
		// The first range has no lower bound and the last no upper one, so every row is in
		// exactly one range whatever the snapshot of this statement shows.
		var where string
		var args []any
		if i > 0 {
			where += " AND " + book + " >= ?"
			args = append(args, starts[i])
		}
		if i+1 < len(starts) {
			where += " AND " + book + " < ?"
			args = append(args, starts[i+1])
		}
		n, err := insert(where, args...)
		if err != nil {
			return 0, err
		}
		total += n
		c.mu.Lock()
		c.stats.CompactChunks++
		c.mu.Unlock()
	}
	return total, nil
}
