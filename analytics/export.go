package analytics

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// Exports (CSV, spec §4.5; docs/ARCHITECTURE.md, "Exports") read a query's rows as Arrow record
// batches of up to 2,048 rows, one bounded window of the result at a time:
//
//   - rows ordered by time (raw events): the time range is cut into windows of about
//     ExportQuery.Window rows (approx_quantile over the time column), and each window is one
//     query ordered within it. Events are stored roughly in time order (events_recent in arrival
//     order, events_sorted by book and time), so DuckDB's zone maps let a window's query read
//     little more than its own row groups: the whole export reads each row about once.
//   - rows ordered by id (aggregates such as view_events, where a time condition cannot be
//     pushed below the grouping): keyset batches, id < last id, LIMIT Window.
//
// duckdb-go materialises every result before the first row can be read (it does not use
// DuckDB's streaming results), and an ORDER BY over a whole export holds the whole export
// sorted; windows bound both to one window, so memory does not grow with the export.
//
// Stopping: the caller stops calling Next and calls Close; windows not yet queried never run,
// and the current window's result (already computed) is dropped. No context given to DuckDB is
// ever cancelled (docs/DEPENDENCIES.md: an interrupted query can make a later reopen of the
// file spin forever), so a query in flight finishes; a window query is short by construction.

// DefaultExportWindow is the rows per window or keyset batch of an export.
const DefaultExportWindow = 65536

// DefaultMaxExports bounds the exports running at once: each holds a query connection for its
// whole duration (as long as its client takes to download), so half the pool is left for the
// analytics queries.
const DefaultMaxExports = DefaultMaxQueryConns / 2

// Export errors.
var (
	// ErrExportsBusy: DefaultMaxExports (WithMaxExports) exports are running.
	ErrExportsBusy = errors.New("analytics: too many exports running")
	// ErrClosed: the database is closing; running exports stop at their next batch.
	ErrClosed = errors.New("analytics: database closed")
)

// ExportQuery is the query of one export.
type ExportQuery struct {
	// From is the view read (InteractionView, AuditView, SessionView).
	From string
	// Columns is the select list; its columns are the record batches' columns, in order. With
	// ByID it must include the view's id as "id".
	Columns string
	Filter  Filter
	// TimeCol is the column the filter's date range applies to and, unless ByID, the order and
	// the windows.
	TimeCol string
	// Desc orders newest first: by (TimeCol, id) descending, or id descending with ByID.
	Desc bool
	// ByID orders by id alone and reads keyset batches instead of time windows.
	ByID bool
	// Window is the rows per window (0: DefaultExportWindow).
	Window int
}

// ExportStats counts exports since Open (tests observe that a stopped export stopped reading).
type ExportStats struct {
	Running int64 // exports open now
	Started int64
	Queries int64 // window and keyset queries run
	Rows    int64 // rows handed out
}

// exportState is the DB's bookkeeping of running exports (db.go holds one).
type exportState struct {
	mu      sync.Mutex
	closing chan struct{}
	closed  bool
	running sync.WaitGroup
	max     int64
	stats   struct{ running, started, queries, rows atomic.Int64 }
}

func (s *exportState) init(max int) {
	s.closing = make(chan struct{})
	s.max = int64(max)
}

// begin registers a new export, unless the database is closing or the limit is reached.
func (s *exportState) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.max > 0 && s.stats.running.Load() >= s.max {
		return ErrExportsBusy
	}
	s.stats.running.Add(1)
	s.stats.started.Add(1)
	s.running.Add(1)
	return nil
}

func (s *exportState) end() {
	s.stats.running.Add(-1)
	s.running.Done()
}

// shutdown makes running exports stop at their next batch and waits (at most wait) until they
// have released their connections: closing the database under a live connection leaves the
// DuckDB instance referenced, and reopening the file in this process would then spin.
func (s *exportState) shutdown(wait time.Duration) bool {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

// ExportStats returns the export counters.
func (d *DB) ExportStats() ExportStats {
	s := &d.exp.stats
	return ExportStats{Running: s.running.Load(), Started: s.started.Load(), Queries: s.queries.Load(), Rows: s.rows.Load()}
}

// DefaultExportPrefetch is how many record batches an export reads ahead of its consumer, on
// its own goroutine: DuckDB computes the next window and converts batches to Arrow while the
// consumer formats and writes the previous ones.
const DefaultExportPrefetch = 4

// ExportRows iterates over the rows of an export, one Arrow record batch at a time. Next,
// Record, Err and Close are called by one goroutine at a time; Close must be called.
//
// A reader goroutine, started by the first Next, runs the queries and reads the batches up to
// DefaultExportPrefetch ahead; it alone uses the connection until it ends.
type ExportRows struct {
	d      *DB
	q      ExportQuery
	conn   *sql.Conn
	where  string
	args   []any
	bounds []time.Time // window cut points, ascending (time windows)

	// The reader's state.
	win    int   // windows: the next window to query (counting in read order)
	lastID int64 // keyset: the last id read
	inWin  int   // keyset: rows of the current batch so far
	rr     array.RecordReader
	cur    arrow.RecordBatch
	done   bool
	rerr   error

	// The consumer's state.
	out      chan exportBatch
	stop     chan struct{}
	reader   sync.WaitGroup
	started  bool
	finished bool
	rec      arrow.RecordBatch // retained until the next Next or Close
	err      error
	closed   bool
}

type exportBatch struct {
	rec arrow.RecordBatch
	err error
}

// Export starts an export: it takes a query connection (waiting at most as long as ctx allows;
// ctx is never handed to DuckDB) and plans the windows. Nothing is read until Next.
func (d *DB) Export(ctx context.Context, q ExportQuery) (*ExportRows, error) {
	if q.Window <= 0 {
		q.Window = DefaultExportWindow
	}
	if err := d.exp.begin(); err != nil {
		return nil, err
	}
	conn, err := d.sql.Conn(ctx)
	if err != nil {
		d.exp.end()
		return nil, fmt.Errorf("analytics: export: %w", err)
	}
	e := &ExportRows{d: d, q: q, conn: conn, out: make(chan exportBatch, DefaultExportPrefetch), stop: make(chan struct{})}
	e.where, e.args = q.Filter.Where(q.TimeCol)
	if !q.ByID {
		if err := e.planWindows(); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// planWindows cuts the time range into windows of about q.Window rows.
func (e *ExportRows) planWindows() error {
	bg := context.Background()
	var n int64
	err := e.d.read(bg, func() error {
		return e.conn.QueryRowContext(bg, "SELECT count(*) FROM "+e.q.From+" WHERE "+e.where, e.args...).Scan(&n)
	})
	if err != nil {
		return fmt.Errorf("analytics: export: count: %w", err)
	}
	e.d.exp.stats.queries.Add(1)
	k := int((n + int64(e.q.Window) - 1) / int64(e.q.Window))
	if k <= 1 {
		return nil
	}
	fr := make([]string, k-1)
	for i := range fr {
		fr[i] = strconv.FormatFloat(float64(i+1)/float64(k), 'f', 6, 64)
	}
	var cuts duckdb.Composite[[]time.Time]
	err = e.d.read(bg, func() error {
		return e.conn.QueryRowContext(bg, "SELECT approx_quantile("+e.q.TimeCol+", ["+strings.Join(fr, ", ")+"]) FROM "+
			e.q.From+" WHERE "+e.where, e.args...).Scan(&cuts)
	})
	if err != nil {
		return fmt.Errorf("analytics: export: windows: %w", err)
	}
	e.d.exp.stats.queries.Add(1)
	for _, t := range cuts.Get() {
		if len(e.bounds) == 0 || t.After(e.bounds[len(e.bounds)-1]) {
			e.bounds = append(e.bounds, t)
		}
	}
	return nil
}

// Next advances to the next record batch (never empty); false at the end or on an error (Err).
// The previous batch is released.
func (e *ExportRows) Next() bool {
	if e.rec != nil {
		e.rec.Release()
		e.rec = nil
	}
	if e.finished || e.closed {
		return false
	}
	select {
	case <-e.d.exp.closing: // the database is closing: stop now, batches read ahead included
		e.err, e.finished = ErrClosed, true
		return false
	default:
	}
	if !e.started {
		e.started = true
		e.reader.Add(1)
		go e.readAhead()
	}
	b, ok := <-e.out
	switch {
	case !ok:
		e.finished = true
		return false
	case b.err != nil:
		e.err, e.finished = b.err, true
		return false
	}
	e.rec = b.rec
	return true
}

// readAhead is the reader goroutine: it reads batches and hands them over (retained) until the
// end, an error or Close.
func (e *ExportRows) readAhead() {
	defer e.reader.Done()
	defer close(e.out)
	defer e.release()
	for e.read() {
		rec := e.cur
		rec.Retain() // the record reader releases its reference at its next batch
		select {
		case e.out <- exportBatch{rec: rec}:
		case <-e.stop:
			rec.Release()
			return
		case <-e.d.exp.closing:
			rec.Release()
			return
		}
	}
	if e.rerr != nil {
		select {
		case e.out <- exportBatch{err: e.rerr}:
		case <-e.stop:
		}
	}
}

// read reads the next batch into e.cur, querying windows as needed; false at the end, on an
// error (e.rerr) or when the export is stopped.
func (e *ExportRows) read() bool {
	e.cur = nil
	for !e.done {
		select {
		case <-e.d.exp.closing:
			e.fail(ErrClosed)
			return false
		case <-e.stop:
			e.done = true
			return false
		default:
		}
		if e.rr == nil {
			if !e.open() {
				return false
			}
			continue
		}
		var ok bool
		err := e.conn.Raw(func(any) error { ok = e.rr.Next(); return nil })
		if err == nil && ok {
			rec := e.rr.RecordBatch()
			if rec.NumRows() == 0 {
				continue
			}
			e.cur = rec
			e.d.exp.stats.rows.Add(rec.NumRows())
			if e.q.ByID {
				e.inWin += int(rec.NumRows())
				ids, ok := rec.Column(idColumn(rec)).(*array.Int64)
				if !ok {
					e.fail(errors.New("analytics: export: the keyset column id is not BIGINT"))
					return false
				}
				e.lastID = ids.Value(ids.Len() - 1)
			}
			return true
		}
		if err == nil {
			err = e.rr.Err()
		}
		e.release()
		if err != nil {
			e.fail(fmt.Errorf("analytics: export: %w", err))
			return false
		}
		// The window or batch is done: move on, or finish.
		if e.q.ByID {
			if e.inWin < e.q.Window {
				e.done = true
			}
		} else if e.win > len(e.bounds) {
			e.done = true
		}
	}
	return false
}

func idColumn(rec arrow.RecordBatch) int {
	for i, f := range rec.Schema().Fields() {
		if f.Name == "id" {
			return i
		}
	}
	return 0
}

// open runs the query of the next window or keyset batch.
func (e *ExportRows) open() bool {
	where, args := e.where, append([]any(nil), e.args...)
	// Order and keyset name the view's columns qualified: the select list may alias an
	// expression to a column's name (the audit log's "id"), and ORDER BY prefers aliases.
	col := func(c string) string { return e.q.From + "." + c }
	var order string
	dir := "ASC"
	if e.q.Desc {
		dir = "DESC"
	}
	if e.q.ByID {
		if e.inWin > 0 {
			cmp := ">"
			if e.q.Desc {
				cmp = "<"
			}
			where += " AND " + col("id") + " " + cmp + " ?"
			args = append(args, e.lastID)
		}
		e.inWin = 0
		order = fmt.Sprintf("%s %s LIMIT %d", col("id"), dir, e.q.Window)
	} else {
		// Window i of len(bounds)+1 in time order: [bounds[i-1], bounds[i]).
		i := e.win
		if e.q.Desc {
			i = len(e.bounds) - e.win
		}
		if i > 0 {
			where += " AND " + col(e.q.TimeCol) + " >= ?"
			args = append(args, e.bounds[i-1])
		}
		if i < len(e.bounds) {
			where += " AND " + col(e.q.TimeCol) + " < ?"
			args = append(args, e.bounds[i])
		}
		e.win++
		order = fmt.Sprintf("%[1]s %[3]s, %[2]s %[3]s", col(e.q.TimeCol), col("id"), dir)
	}
	query := "SELECT " + e.q.Columns + " FROM " + e.q.From + " WHERE " + where + " ORDER BY " + order
	bg := context.Background()
	err := e.d.read(bg, func() error {
		return e.conn.Raw(func(dc any) error {
			ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
			if err != nil {
				return err
			}
			e.rr, err = ar.QueryContext(bg, query, args...)
			return err
		})
	})
	if err != nil {
		e.fail(fmt.Errorf("analytics: export: %w", err))
		return false
	}
	e.d.exp.stats.queries.Add(1)
	return true
}

// Record is the current batch, valid until the next call of Next or Close.
func (e *ExportRows) Record() arrow.RecordBatch { return e.rec }

// Err is the error that ended the iteration, if any.
func (e *ExportRows) Err() error { return e.err }

func (e *ExportRows) fail(err error) {
	e.rerr, e.done = err, true
	e.release()
}

// release drops the current window's result (the reader's, or Close's once the reader ended).
func (e *ExportRows) release() {
	if e.rr != nil {
		e.conn.Raw(func(any) error { e.rr.Release(); return nil })
		e.rr, e.cur = nil, nil
	}
}

// Close stops the reader (a query in flight finishes first), drops what is left of the export
// and returns its connection. It may be called more than once.
func (e *ExportRows) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.rec != nil {
		e.rec.Release()
		e.rec = nil
	}
	if e.started {
		close(e.stop)
		for b := range e.out {
			if b.rec != nil {
				b.rec.Release()
			}
		}
		e.reader.Wait()
	}
	e.release()
	err := e.conn.Close()
	e.d.exp.end()
	return err
}

// ExportGuard accounts for an export that runs its own queries on the query pool (the
// aggregate exports call the functions of aggregates.go): it counts against the limit of
// running exports, Close of the database waits until Done, and Closing tells the export to
// stop.
type ExportGuard struct {
	d    *DB
	once sync.Once
}

// GuardExport registers an export; ErrExportsBusy or ErrClosed when it may not start.
func (d *DB) GuardExport() (*ExportGuard, error) {
	if err := d.exp.begin(); err != nil {
		return nil, err
	}
	return &ExportGuard{d: d}, nil
}

// Closing is closed when the database begins to close.
func (g *ExportGuard) Closing() <-chan struct{} { return g.d.exp.closing }

// Rows counts rows handed out (ExportStats).
func (g *ExportGuard) Rows(n int) { g.d.exp.stats.rows.Add(int64(n)) }

// Done ends the export (once its queries are finished).
func (g *ExportGuard) Done() { g.once.Do(g.d.exp.end) }
