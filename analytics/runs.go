package analytics

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Where runs live.
//
// A run that waits to be merged (level below TopLevel) is a table of its own, named by
// runTable; a run of TopLevel, never merged again, is appended to ArchiveTable. RunsTable
// lists them all. A merge writes its output (a new table, or an append to the archive) and
// drops its inputs' tables. So no table ever has rows deleted from its middle (the archive
// only grows at its end, RecentTable loses its oldest rows), and no statement of a merge
// reads a table other than its inputs.
//
// This is what keeps the compactor's memory from growing with the events stored. With
// every run in one table (schema version 2), DuckDB (1.5.5) paid at each full checkpoint for
// every row group stored after the runs a merge deleted: their row ids shift, and a shifted
// row group is rewritten in full, its column metadata loaded for it and kept until the file
// is attached again (RowGroup::MoveToCollection marks it changed). Measured on one table of
// 16M events: deleting a run near its start and checkpointing took malloc's in-use bytes to
// a peak of 52 MB, deleting the last run 9 MB. A dropped table costs its own blocks only.
//
// Top-level runs share one table because each table costs every query over EventsView
// something to plan and scan (measured with 4M events of 32 books, one book's page
// performance: p50 22 ms in 1 table, 23 ms in 16, 52 ms in 64, 117 ms in 128), and their
// number grows with the events stored; within the archive, zone maps find a book's one or two
// row groups per run. The tables of runs waiting to be merged are at most about
// DefaultCompactFanout.

// ArchiveTable holds the runs of TopLevel, one after another, each in sortKey order.
const ArchiveTable = "events_archive"

// TopLevel is the level of runs that are not merged further (they live in ArchiveTable).
const TopLevel = DefaultCompactMaxLevel

// runTablePrefix names the tables of runs below TopLevel: runTablePrefix + the run's number.
const runTablePrefix = "events_run_"

// runTable is the table of run, a run below TopLevel.
func runTable(run int64) string { return runTablePrefix + strconv.FormatInt(run, 10) }

// runHome is where a run of level lives: its own table, or ArchiveTable.
func runHome(run int64, level int) string {
	if level >= TopLevel {
		return ArchiveTable
	}
	return runTable(run)
}

// eventTableDDL creates a table with the event columns, as RecentTable and every run table have
// them.
func eventTableDDL(table string) string {
	defs := make([]string, len(eventColumns))
	for i, c := range eventColumns {
		defs[i] = "\t" + c.name + " " + c.sqlType
	}
	return "CREATE TABLE IF NOT EXISTS " + table + " (\n" + strings.Join(defs, ",\n") + "\n)"
}

// execQuerier is what the run-table helpers run statements on: a transaction or a connection.
type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// collect reads every row of a query's result (rows, err as QueryContext returned them), each
// with scan.
func collect[T any](rows *sql.Rows, err error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanInt64(rows *sql.Rows) (v int64, err error) {
	err = rows.Scan(&v)
	return v, err
}

// listRunTables returns the runs RunsTable lists below TopLevel (each in its own table),
// oldest first.
func listRunTables(ctx context.Context, q execQuerier) ([]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT run FROM `+RunsTable+` WHERE level < ? ORDER BY run`, TopLevel)
	return collect(rows, err, scanInt64)
}

// eventsViewDDL defines EventsView over ArchiveTable, the given runs' tables and RecentTable.
func eventsViewDDL(runs []int64) string {
	var b strings.Builder
	b.WriteString(`CREATE OR REPLACE VIEW ` + EventsView + ` AS`)
	for _, t := range append([]string{ArchiveTable}, tableNames(runs)...) {
		b.WriteString("\n\tSELECT " + columnList + " FROM " + t + "\n\tUNION ALL")
	}
	b.WriteString("\n\tSELECT " + columnList + " FROM " + RecentTable)
	return b.String()
}

func tableNames(runs []int64) []string {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = runTable(r)
	}
	return names
}

// replaceEventsView makes EventsView read ArchiveTable, the tables of the runs RunsTable lists
// below TopLevel (as q sees it) and RecentTable. A move or merge calls it in its own
// transaction, so the view and the tables it reads change together; the views built on
// EventsView are bound when a query runs, so they follow.
func replaceEventsView(ctx context.Context, q execQuerier) error {
	runs, err := listRunTables(ctx, q)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, eventsViewDDL(runs))
	return err
}

// AddSortedRun registers rows already in sortKey order as one run of the given level: it
// creates the run's table (below TopLevel), fills it or appends to ArchiveTable with fill (an
// INSERT on tx into the table it is given, naming its columns, returning the rows inserted),
// lists the run and points EventsView at it, in one transaction on conn. It is for data
// generated straight into the store (benchmarks and tests), never while a Consumer runs on d.
func (d *DB) AddSortedRun(ctx context.Context, conn *sql.Conn, level int, fill func(tx *sql.Tx, table string) (int64, error)) error {
	if err := d.gate.enter(ctx); err != nil {
		return err
	}
	defer d.gate.leave()
	return d.addRunLocked(ctx, conn, level, fill)
}

// addRunLocked is AddSortedRun for a caller that is through the gate.
func (d *DB) addRunLocked(ctx context.Context, conn *sql.Conn, level int, fill func(tx *sql.Tx, table string) (int64, error)) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	run, err := nextRun(ctx, tx)
	if err != nil {
		return err
	}
	home := runHome(run, level)
	if _, err := tx.ExecContext(ctx, eventTableDDL(home)); err != nil {
		return err
	}
	n, err := fill(tx, home)
	if err != nil {
		return fmt.Errorf("analytics: fill run %d: %w", run, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+RunsTable+` VALUES (?, ?, ?, ?)`, run, level, n, time.Now().UTC()); err != nil {
		return err
	}
	if err := replaceEventsView(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// legacySortedTable held every run (with a run column) up to schema version 2;
// migrateSortedTable moves each of its runs into a table of its own.
const legacySortedTable = "events_sorted"

// tableExists tells whether the analytics file has table (in its main schema).
func tableExists(ctx context.Context, q execQuerier, table string) (bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT count(*) FROM duckdb_tables()
		WHERE database_name = ? AND schema_name = 'main' AND table_name = ?`, catalog, table)
	n, err := collect(rows, err, scanInt64)
	return len(n) == 1 && n[0] > 0, err
}

// migrateSortedTable moves every run of legacySortedTable (in sort order) where it lives now:
// a run below TopLevel into a table of its own, the others (and any run RunsTable did not
// list, which becomes a TopLevel run) into ArchiveTable; it makes RunsTable list exactly those
// runs with their row counts, and drops legacySortedTable. It runs in the schema transaction
// of Open, so a crash leaves the version 2 layout whole.
func migrateSortedTable(ctx context.Context, tx *sql.Tx) error {
	stmts := []string{
		`DELETE FROM ` + RunsTable + ` WHERE run NOT IN (SELECT DISTINCT run FROM ` + legacySortedTable + `)`,
		fmt.Sprintf(`INSERT INTO %s SELECT run, %d, count(*), max(created_at) FROM %s
			WHERE run NOT IN (SELECT run FROM %s) GROUP BY run`, RunsTable, TopLevel, legacySortedTable, RunsTable),
		`UPDATE ` + RunsTable + ` SET rows = s.n FROM (SELECT run, count(*) AS n FROM ` + legacySortedTable + ` GROUP BY run) s
			WHERE ` + RunsTable + `.run = s.run`,
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%w\n%s", err, q)
		}
	}
	type listed struct {
		run   int64
		level int
	}
	rows, err := tx.QueryContext(ctx, `SELECT run, level FROM `+RunsTable+` ORDER BY run`)
	runs, err := collect(rows, err, func(rows *sql.Rows) (l listed, err error) {
		err = rows.Scan(&l.run, &l.level)
		return l, err
	})
	if err != nil {
		return err
	}
	stmts = nil
	for _, r := range runs {
		home := runHome(r.run, r.level)
		stmts = append(stmts, eventTableDDL(home), fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s WHERE run = %d ORDER BY %s`,
			home, columnList, columnList, legacySortedTable, r.run, sortKey))
	}
	stmts = append(stmts, `DROP TABLE `+legacySortedTable)
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%w\n%s", err, q)
		}
	}
	return nil
}
