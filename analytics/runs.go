package analytics

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Run tables.
//
// Every sorted run is a table of its own, named by runTable, holding the event columns (the
// same declarations as RecentTable) in sortKey order; RunsTable lists them. A merge writes a
// new table and drops the ones it merged. So no table that holds old rows ever has rows
// deleted from it, and no statement of a merge reads a table other than its inputs.
//
// This is what keeps the compactor's memory from growing with the events stored. With
// every run in one table (schema version 2), DuckDB (1.5.5) paid at each full checkpoint for
// every row group stored after the ones a merge deleted: their row ids shift, and a shifted
// row group is rewritten in full, its column metadata loaded for it and kept until the file
// was attached again (RowGroup::MoveToCollection marks it changed). Measured on one table of
// 16M events: deleting a run near its start and checkpointing took malloc's in-use bytes to
// a peak of 52 MB, deleting the last run 9 MB. A dropped table costs its own blocks only.

// runTablePrefix names run tables: runTablePrefix + the run's number.
const runTablePrefix = "events_run_"

// runTable is the table of run.
func runTable(run int64) string { return runTablePrefix + strconv.FormatInt(run, 10) }

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

// listRuns returns the runs RunsTable lists, oldest first.
func listRuns(ctx context.Context, q execQuerier) ([]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT run FROM `+RunsTable+` ORDER BY run`)
	return collect(rows, err, scanInt64)
}

// eventsViewDDL defines EventsView over the given runs' tables and RecentTable.
func eventsViewDDL(runs []int64) string {
	var b strings.Builder
	b.WriteString(`CREATE OR REPLACE VIEW ` + EventsView + ` AS`)
	for _, r := range runs {
		b.WriteString("\n\tSELECT " + columnList + " FROM " + runTable(r) + "\n\tUNION ALL")
	}
	b.WriteString("\n\tSELECT " + columnList + " FROM " + RecentTable)
	return b.String()
}

// replaceEventsView makes EventsView read the runs RunsTable lists (as q sees it) and
// RecentTable. A move or merge calls it in its own transaction, so the view and the tables it
// reads change together; the views built on EventsView are bound when a query runs, so they
// follow.
func replaceEventsView(ctx context.Context, q execQuerier) error {
	runs, err := listRuns(ctx, q)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, eventsViewDDL(runs))
	return err
}

// AddSortedRun registers rows already in sortKey order as one run of the given level: it
// creates the run's table, fills it with fill (an INSERT on tx into the table it is given,
// naming its columns, returning the rows inserted), lists the run and points EventsView at
// it, in one transaction on conn. It is for data generated straight into the store
// (benchmarks and tests), never while a Consumer runs on d.
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
	if _, err := tx.ExecContext(ctx, eventTableDDL(runTable(run))); err != nil {
		return err
	}
	n, err := fill(tx, runTable(run))
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

// migrateSortedTable moves every run of legacySortedTable into a table of its own (in sort
// order), makes RunsTable list exactly those runs with their row counts (a run it did not list
// becomes a run of the top level), and drops legacySortedTable. It runs in the schema
// transaction of Open, so a crash leaves the version 2 layout whole.
func migrateSortedTable(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT run FROM `+legacySortedTable+` ORDER BY run`)
	runs, err := collect(rows, err, scanInt64)
	if err != nil {
		return err
	}
	var stmts []string
	for _, r := range runs {
		stmts = append(stmts, eventTableDDL(runTable(r)), fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s WHERE run = %d ORDER BY %s`,
			runTable(r), columnList, columnList, legacySortedTable, r, sortKey))
	}
	stmts = append(stmts,
		`DELETE FROM `+RunsTable+` WHERE run NOT IN (SELECT DISTINCT run FROM `+legacySortedTable+`)`,
		fmt.Sprintf(`INSERT INTO %s SELECT run, %d, count(*), max(created_at) FROM %s
			WHERE run NOT IN (SELECT run FROM %s) GROUP BY run`, RunsTable, DefaultCompactMaxLevel, legacySortedTable, RunsTable),
		`UPDATE `+RunsTable+` SET rows = s.n FROM (SELECT run, count(*) AS n FROM `+legacySortedTable+` GROUP BY run) s
			WHERE `+RunsTable+`.run = s.run`,
		`DROP TABLE `+legacySortedTable,
	)
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%w\n%s", err, q)
		}
	}
	return nil
}
