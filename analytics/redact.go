package analytics

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Erasing one reader's events (GDPR: Shopify's customers/redact webhook; docs/DECISIONS.md,
// "Shopify integration").
//
// A reader's events are the rows that name the reader (viewer_email or viewer_id, or a form
// whose values include the address: a lead form sent by an anonymous reader) and every other row
// of the reading sessions those rows belong to (a session's events before the email gate are
// the same person's reading). They can live in every event table: RecentTable, the level-0
// run tables and ArchiveTable.
//
// Who deletes: the tables have one writer each (DESIGN §8). The consumer's run goroutine only
// appends to RecentTable, and DuckDB appends do not conflict with deletes of other rows; the
// compactor goroutine is the one that removes and moves rows (compaction, merges, reattach). A
// redaction is a job of the compactor goroutine (RedactReader hands it over, compactLoop runs
// it between two compactions), on the compacting connection, in one transaction: so it never
// races a move of the same rows (a row being moved into a run while it is deleted would be a
// write-write conflict, or be copied into the run after the delete), never deletes from a run
// table a merge is dropping, and never runs while the file is detached.
//
// Rows the consumer has not stored yet are not in DuckDB: the caller first waits until the
// consumer has passed the log's end as of the request (Consumer.WaitFor), so every event
// logged before the request is deleted.
//
// The archive is otherwise never deleted from (runs.go): a redaction marks a few rows deleted
// in the row groups that hold them. DuckDB rewrites a table's later row groups only when a
// checkpoint vacuums row groups whose deletes free a whole row group, which one reader's rows
// do not; so the memory concern of runs.go (a deleted run shifting every later row group) does
// not arise from erasing one reader at a time. event_runs keeps listing each level-0 run's
// rows exactly (a merge checks them); the top-level runs' counts keep their sum equal to the
// archive's rows (which top-level run a deleted archive row came from is not recorded).

// ReaderMatch identifies one reader in one tenant.
type ReaderMatch struct {
	Workspace int64
	Mode      string // "l" or "t"
	Email     string // lower case; "" when only the viewer id is known
	ViewerID  int64  // 0: none
}

// ReaderCounts is what the tenant holds of a reader: events (every row, access events
// included), distinct reading sessions, lead form submissions.
type ReaderCounts struct {
	Events   int64 `json:"events"`
	Sessions int64 `json:"sessions"`
	Leads    int64 `json:"leads"`
}

func (m ReaderMatch) empty() bool { return m.Email == "" && m.ViewerID <= 0 }

// needles are the address as a JSON string value: quoted, as encoding/json and sonic's
// standard config write it (HTML characters escaped) and unescaped.
func (m ReaderMatch) needles() []string {
	plain := `"` + m.Email + `"`
	out := []string{plain}
	if b, err := json.Marshal(m.Email); err == nil && string(b) != plain {
		out = append(out, strings.ToLower(string(b)))
	}
	return out
}

// cond is the SQL condition (over one event table or view, unqualified columns) of the rows
// that name the reader, and its arguments.
func (m ReaderMatch) cond() (string, []any) {
	var parts []string
	args := []any{m.Workspace, m.Mode}
	if m.Email != "" {
		parts = append(parts, "lower(viewer_email) = ?")
		args = append(args, m.Email)
		for _, n := range m.needles() {
			parts = append(parts, "strpos(lower(metadata), ?) > 0")
			args = append(args, n)
		}
	}
	if m.ViewerID > 0 {
		parts = append(parts, "viewer_id = ?")
		args = append(args, m.ViewerID)
	}
	return "workspace = ? AND mode = ? AND (" + strings.Join(parts, " OR ") + ")", args
}

// sessionKey is a session's key in the match set (book and session id; session ids are the
// viewer's, unique only within a book).
const sessionKey = "book_id || chr(0) || session_id"

// countReaderSQL counts the reader's rows: those named by cond, and the other rows of their
// sessions.
func (m ReaderMatch) countSQL() (string, []any) {
	cond, args := m.cond()
	q := `WITH d AS (SELECT id, book_id, session_id, event_type FROM ` + EventsView + ` WHERE ` + cond + `),
s AS (SELECT DISTINCT ` + sessionKey + ` AS k FROM d WHERE session_id <> ''),
r AS (
	SELECT id, book_id, session_id, event_type FROM ` + EventsView + `
		WHERE workspace = ? AND mode = ? AND session_id <> '' AND ` + sessionKey + ` IN (SELECT k FROM s)
	UNION
	SELECT id, book_id, session_id, event_type FROM d)
SELECT count(*),
	count(DISTINCT ` + sessionKey + `) FILTER (WHERE session_id <> ''),
	count(*) FILTER (WHERE event_type = 'lead_form_submitted')
FROM r`
	return q, append(args, m.Workspace, m.Mode)
}

func countReader(ctx context.Context, q querier, m ReaderMatch) (ReaderCounts, error) {
	var c ReaderCounts
	if m.empty() {
		return c, nil
	}
	query, args := m.countSQL()
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return c, fmt.Errorf("analytics: count reader: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&c.Events, &c.Sessions, &c.Leads); err != nil {
			return c, fmt.Errorf("analytics: count reader: %w", err)
		}
	}
	return c, rows.Err()
}

// CountReader counts what the analytics store holds of a reader (nothing is changed).
func (d *DB) CountReader(ctx context.Context, m ReaderMatch) (ReaderCounts, error) {
	return countReader(ctx, d.Query(), m)
}

// redactJob is a redaction handed to the compactor goroutine.
type redactJob struct {
	m    ReaderMatch
	done chan redactResult // buffered: the compactor never waits for the asker
}

type redactResult struct {
	counts ReaderCounts
	err    error
}

// ErrConsumerStopped is returned by RedactReader when the consumer stops before the job ran.
var ErrConsumerStopped = errors.New("analytics: consumer stopped")

// RedactReader deletes every stored event of a reader (see the top of this file) and returns
// what was deleted: Events is the rows deleted, Sessions and Leads as counted in the same
// transaction before the delete. It runs on the compactor goroutine, after the compaction or
// merge in progress; ctx bounds the wait for it (once taken, the job runs to its end even if
// ctx ends: DuckDB is never handed a cancelled context). Events still in the log are not
// touched: wait for the consumer first (WaitFor).
func (c *Consumer) RedactReader(ctx context.Context, m ReaderMatch) (ReaderCounts, error) {
	if m.empty() {
		return ReaderCounts{}, nil
	}
	job := &redactJob{m: m, done: make(chan redactResult, 1)}
	select {
	case c.redactq <- job:
	case <-c.done:
		return ReaderCounts{}, ErrConsumerStopped
	case <-ctx.Done():
		return ReaderCounts{}, ctx.Err()
	}
	select {
	case r := <-job.done:
		return r.counts, r.err
	case <-ctx.Done():
		return ReaderCounts{}, ctx.Err()
	}
}

// redactTemp holds the keys of the reader's sessions during a redaction (a temporary table of
// the compacting connection, dropped in the same transaction).
const redactTemp = "temp.main.redact_sessions"

// redact runs a redaction job on the compacting connection (compactLoop's goroutine).
func (c *Consumer) redact(stop context.Context, m ReaderMatch) (ReaderCounts, error) {
	ctx := context.WithoutCancel(stop)
	if err := c.db.gate.enter(stop); err != nil {
		return ReaderCounts{}, err
	}
	defer c.db.gate.leave()
	tx, err := c.compactConn.BeginTx(ctx, nil)
	if err != nil {
		return ReaderCounts{}, err
	}
	defer tx.Rollback()
	counts, err := countReader(ctx, tx, m)
	if err != nil || counts.Events == 0 {
		return counts, err
	}
	cond, args := m.cond()
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE `+strings.TrimPrefix(redactTemp, "temp.main.")+` AS SELECT DISTINCT `+
		sessionKey+` AS k FROM `+EventsView+` WHERE `+cond+` AND session_id <> ''`, args...); err != nil {
		return counts, fmt.Errorf("analytics: redact: sessions: %w", err)
	}
	runs, err := listRunTables(ctx, tx)
	if err != nil {
		return counts, err
	}
	del := func(table string) (int64, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE (`+cond+`) OR (workspace = ? AND mode = ? AND session_id <> '' AND `+
			sessionKey+` IN (SELECT k FROM `+redactTemp+`))`, append(append([]any(nil), args...), m.Workspace, m.Mode)...)
		if err != nil {
			return 0, fmt.Errorf("analytics: redact %s: %w", table, err)
		}
		return res.RowsAffected()
	}
	var deleted int64
	n, err := del(ArchiveTable)
	if err != nil {
		return counts, err
	}
	deleted += n
	if err := lowerTopLevelRows(ctx, tx, n); err != nil {
		return counts, err
	}
	for _, r := range runs {
		n, err := del(runTable(r))
		if err != nil {
			return counts, err
		}
		deleted += n
		if n > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE `+RunsTable+` SET rows = rows - ? WHERE run = ?`, n, r); err != nil {
				return counts, err
			}
		}
	}
	if n, err = del(RecentTable); err != nil {
		return counts, err
	}
	deleted += n
	if _, err := tx.ExecContext(ctx, `DROP TABLE `+redactTemp); err != nil {
		return counts, err
	}
	if err := tx.Commit(); err != nil {
		return counts, fmt.Errorf("analytics: redact: commit: %w", err)
	}
	counts.Events = deleted
	return counts, nil
}

// lowerTopLevelRows takes n deleted archive rows off the top-level runs' counts, newest run
// first, so their sum stays the archive's row count.
func lowerTopLevelRows(ctx context.Context, tx *sql.Tx, n int64) error {
	if n == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT run, rows FROM `+RunsTable+` WHERE level >= ? ORDER BY run DESC`, TopLevel)
	type listed struct{ run, rows int64 }
	all, err := collect(rows, err, func(rows *sql.Rows) (l listed, err error) {
		err = rows.Scan(&l.run, &l.rows)
		return l, err
	})
	if err != nil {
		return err
	}
	for _, l := range all {
		if n == 0 {
			break
		}
		take := min(n, l.rows)
		if take == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+RunsTable+` SET rows = rows - ? WHERE run = ?`, take, l.run); err != nil {
			return err
		}
		n -= take
	}
	return nil
}
