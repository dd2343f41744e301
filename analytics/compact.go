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
// rows into SortedTable as one run sorted by sortKey, and merges runs of one level into one run
// of the next (size-tiered, like an LSM tree). A query for one book then reads, per run, the
// one or two row groups whose min/max book_id bracket it, plus RecentTable (at most about
// CompactRows rows). Each move is one transaction on the compacting connection: the rows leave
// one place and arrive in the other together, so a row is never in both and never in neither.
// Appends to RecentTable go on meanwhile (DuckDB appends do not conflict with deletes of other
// rows).

// Defaults of compaction.
const (
	// DefaultCompactRows is how many rows RecentTable gathers before they become a run.
	DefaultCompactRows = 1 << 20
	// DefaultCompactFanout runs of one level are merged into one run of the next.
	DefaultCompactFanout = 8
	// DefaultCompactMaxLevel: runs of this level are not merged further. With the defaults a
	// row is rewritten at most twice (into a run of ~1M rows, then into one of ~8M), and a
	// query for one book reads one or two row groups of each ~8M-row run.
	DefaultCompactMaxLevel = 1
	// DefaultCompactEvery is how often the compactor looks at the tables.
	DefaultCompactEvery = time.Second
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
		case <-t.C:
		}
		err := c.compactOnce(ctx)
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

// compactOnce makes a run of RecentTable if it is big enough, then merges every level that
// has gathered enough runs.
func (c *Consumer) compactOnce(ctx context.Context) error {
	if err := c.compactRecent(ctx); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	for level := 0; level < c.compactMaxLevel; level++ {
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
	res, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (%s, run) SELECT %s, %d FROM %s ORDER BY %s`,
		SortedTable, columnList, recentColumns, run, movable, sortKey))
	if err != nil {
		return err
	}
	if n, err = res.RowsAffected(); err != nil {
		return err
	}
	if err := stop.Err(); err != nil {
		return err
	}
	if err := execN(ctx, tx, n, fmt.Sprintf(`DELETE FROM %s r USING %s o WHERE o."partition" = (r.id & %d) AND (r.id >> %d) < o.next_offset`,
		RecentTable, OffsetsTable, ingest.MaxPartitions-1, partitionBits)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+RunsTable+` VALUES (?, 0, ?, ?)`, run, n, time.Now().UTC()); err != nil {
		return err
	}
	if err := c.step(stepCompacted); err != nil {
		return err
	}
	if err := stop.Err(); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	c.mu.Lock()
	c.stats.Compactions++
	c.stats.CompactedRows += uint64(n)
	c.mu.Unlock()
	c.logger.Debug("analytics: run made", "run", run, "rows", n, "took", time.Since(start))
	return nil
}

func (c *Consumer) mergeLevel(stop context.Context, level int) error {
	ctx := context.WithoutCancel(stop)
	if err := stop.Err(); err != nil {
		return err
	}
	tx, err := c.compactConn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT run, rows FROM `+RunsTable+` WHERE level = ? ORDER BY run`, level)
	if err != nil {
		return err
	}
	var runs []string
	var total int64
	for rows.Next() {
		var run, n int64
		if err := rows.Scan(&run, &n); err != nil {
			rows.Close()
			return err
		}
		runs = append(runs, strconv.FormatInt(run, 10))
		total += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(runs) < c.compactFanout || stop.Err() != nil {
		return stop.Err()
	}
	run, err := nextRun(ctx, tx)
	if err != nil {
		return err
	}
	start := time.Now()
	in := "(" + strings.Join(runs, ", ") + ")"
	if err := execN(ctx, tx, total, fmt.Sprintf(`INSERT INTO %s (%s, run) SELECT %s, %d FROM %s WHERE run IN %s ORDER BY %s`,
		SortedTable, columnList, columnList, run, SortedTable, in, sortKey)); err != nil {
		return err
	}
	if err := stop.Err(); err != nil {
		return err
	}
	if err := execN(ctx, tx, total, `DELETE FROM `+SortedTable+` WHERE run IN `+in); err != nil {
		return err
	}
	if err := execN(ctx, tx, int64(len(runs)), `DELETE FROM `+RunsTable+` WHERE run IN `+in); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+RunsTable+` VALUES (?, ?, ?, ?)`, run, level+1, total, time.Now().UTC()); err != nil {
		return err
	}
	if err := c.step(stepMerged); err != nil {
		return err
	}
	if err := stop.Err(); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	c.mu.Lock()
	c.stats.Merges++
	c.mu.Unlock()
	c.logger.Debug("analytics: runs merged", "runs", len(runs), "into", run, "level", level+1, "rows", total, "took", time.Since(start))
	return nil
}
