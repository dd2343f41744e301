package analytics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Reattaching the analytics file.
//
// DuckDB keeps in memory (malloc'd, outside its memory limit and duckdb_memory()) the
// metadata of every row group written since the file was attached: about 1.5-1.9 MB per
// million events (a column segment's statistics and state for each of the ~50 columns of each
// 32,768-row group), freed only when those rows are deleted. A file attached afresh loads that
// metadata lazily, per column, as queries touch it (20M events: 38 MB written this session, 6
// MB after reattaching, 11 MB after aggregating three columns over every row). Under a steady
// ingest of 150k events/s that was 20+ MB more every minute: memory grew with the events
// stored, not with the load. So every DefaultReattachRows rows written into sorted runs, the
// compactor detaches the file and attaches it again (about 50-100 ms; the file's data does not
// change). Its buffer-pool pages go with it.
//
// Nothing may use the file while that happens: every statement (a query, an export's batch,
// the consumer's transaction, a compaction's transaction) passes DB.gate, which the reattach
// shuts. duckdb-go materialises a query's result before QueryContext returns, so a query holds
// the gate only while it runs, not while its rows are read; an export holds it for each batch,
// not for the whole download.

// DefaultReattachRows is how many rows written into sorted runs (by compaction and merges)
// make the compactor reattach the analytics file: about 8 MB of DuckDB's metadata, every
// 30 s or so at 150k events/s (merges write rows again). Measured in the ingest benchmark: with
// 2^24 the RSS peaks of the last minute were 1.32-1.37x those of minute 2, with 2^22 1.07x.
const DefaultReattachRows = 4 << 20

// reattachWait bounds how long a reattach waits for running statements; it tries again after
// the next compaction when they did not end in time (new statements wait meanwhile).
const reattachWait = 2 * time.Second

// gate lets statements on the analytics file run together, and a reattach alone.
type gate struct {
	mu      sync.Mutex
	active  int
	drained chan struct{} // while a reattach waits: closed when active reaches 0
	shut    chan struct{} // while a reattach waits or runs: closed when the gate opens again
}

// enter waits until no reattach holds the gate and counts a statement in; leave counts it out.
func (g *gate) enter(ctx context.Context) error {
	for {
		g.mu.Lock()
		shut := g.shut
		if shut == nil {
			g.active++
			g.mu.Unlock()
			return nil
		}
		g.mu.Unlock()
		select {
		case <-shut:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *gate) leave() {
	g.mu.Lock()
	g.active--
	if g.active == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
	g.mu.Unlock()
}

// close keeps new statements out and waits up to wait for the running ones to end; false (the
// gate open again) when they did not.
func (g *gate) close(wait time.Duration) bool {
	g.mu.Lock()
	if g.shut != nil {
		g.mu.Unlock()
		return false // another reattach holds it
	}
	g.shut = make(chan struct{})
	if g.active == 0 {
		g.mu.Unlock()
		return true
	}
	drained := make(chan struct{})
	g.drained = drained
	g.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-drained:
		return true
	case <-t.C:
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active == 0 { // drained while the timer fired
		return true
	}
	g.drained = nil
	close(g.shut)
	g.shut = nil
	return false
}

// open lets statements in again after close.
func (g *gate) open() {
	g.mu.Lock()
	close(g.shut)
	g.shut = nil
	g.mu.Unlock()
}

// use runs f, statements on the file (a query, a transaction), through the gate.
func (d *DB) use(ctx context.Context, f func() error) error {
	if err := d.gate.enter(ctx); err != nil {
		return err
	}
	defer d.gate.leave()
	return f()
}

// read runs f, a query's statement, through the gate and never while rows move between
// tables (commitMove).
func (d *DB) read(ctx context.Context, f func() error) error {
	if err := d.gate.enter(ctx); err != nil {
		return err
	}
	defer d.gate.leave()
	d.moving.RLock()
	defer d.moving.RUnlock()
	return f()
}

// commitMove commits tx, a compaction or merge that moves rows from one table (or run) to
// another, while no query runs. With duckdb-go v2.10505.0 a query running while such a move
// commits can see the rows in neither place: in a stress test (sessions_test.go) the view
// events of a session read during its rows' first compaction were missing about once in a
// hundred runs, while a plain count(*) never was, which points at DuckDB pruning a table by
// column statistics that the commit had not widened yet. Queries wait for the commit (it
// writes no data: the rows are already in the transaction's storage) and the commit waits
// for the running queries. held is how long queries were kept out (the commit, which may
// checkpoint the file, and the wait for the queries before it).
func (d *DB) commitMove(tx *sql.Tx) (held time.Duration, err error) {
	start := time.Now()
	d.moving.Lock()
	defer func() {
		d.moving.Unlock()
		held = time.Since(start)
	}()
	return 0, tx.Commit()
}

// Reader runs queries on the analytics file through its gate (DB.Query). It is a Querier.
type Reader struct{ d *DB }

// QueryContext runs query; its result is complete when it returns.
func (r Reader) QueryContext(ctx context.Context, query string, args ...any) (rows *sql.Rows, err error) {
	err = r.d.read(ctx, func() error {
		rows, err = r.d.sql.QueryContext(ctx, query, args...)
		return err
	})
	return rows, err
}

// QueryRowContext runs a query expected to return at most one row.
func (r Reader) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	var row *sql.Row
	if err := r.d.read(ctx, func() error {
		row = r.d.sql.QueryRowContext(ctx, query, args...)
		return nil
	}); err != nil {
		return r.d.sql.QueryRowContext(ctx, query, args...) // ctx is done: a Row holding its error
	}
	return row
}

// attachSQL attaches the file at path as catalog.
func attachSQL(path string) string {
	return fmt.Sprintf("ATTACH IF NOT EXISTS '%s' AS %s (ROW_GROUP_SIZE %d, STORAGE_VERSION 'v1.5.0')",
		strings.ReplaceAll(path, "'", "''"), catalog, RowGroupSize)
}

// reattach detaches the file and attaches it again on conn (a connection of d that holds no
// transaction), once every running statement has ended; false when they did not end within
// reattachWait (nothing done). The other connections keep catalog as their default: USE
// names it, and it names the new attachment.
func (d *DB) reattach(ctx context.Context, conn *sql.Conn) (bool, error) {
	if !d.gate.close(reattachWait) {
		return false, nil
	}
	defer d.gate.open()
	for _, q := range []string{"USE memory", "DETACH " + catalog} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			// Still attached (DETACH is the last step that can fail before it is gone).
			_, uerr := conn.ExecContext(ctx, "USE "+catalog)
			return false, errors.Join(fmt.Errorf("analytics: reattach: %s: %w", q, err), uerr)
		}
	}
	// Detached: every statement fails until the file is back, so keep trying (the gate stays
	// shut) unless the file cannot be opened at all.
	var err error
	for wait := 50 * time.Millisecond; wait < 10*time.Second; wait *= 2 {
		if _, err = conn.ExecContext(ctx, attachSQL(d.path)); err == nil {
			_, err = conn.ExecContext(ctx, "USE "+catalog)
			if err == nil {
				d.reattached.Add(1)
				return true, nil
			}
		}
		time.Sleep(wait)
	}
	return false, fmt.Errorf("analytics: reattach %s: %w", d.path, err)
}

// Reattaches is how many times the file was detached and attached again since Open.
func (d *DB) Reattaches() uint64 { return d.reattached.Load() }
