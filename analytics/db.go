// Package analytics is the DuckDB side of reader events: the schema, the consumer that appends
// Arrow batches read from the event log (ingest.Log) together with the log offsets they came
// from, and the handle the analytics queries and CSV exports run on.
//
// Connections (docs/ARCHITECTURE.md, "Analytics store"): one connection appends, owned by the
// Consumer's goroutine; every query uses the pool behind DB.Query.
package analytics

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"flipbook/ingest"
)

// SchemaVersion is the version of the tables created by Open. A database written by a newer
// version is refused rather than misread.
//
// Version 2 added book_pages (and fills latitude/longitude); a version 1 database gets the new
// columns with ALTER TABLE on open, its rows keep NULL there. Version 3 keeps each sorted run
// in a table of its own until it reaches the top level, then in the archive table (runs.go);
// Open moves the runs of an older database's one sorted table there.
const SchemaVersion = 3

// Tables and views (docs/ARCHITECTURE.md, "Analytics store").
//
// Every reader event, interaction and access events alike, is one row of the same shape (one
// append per batch, and the audit log, which mixes both, is one ordered scan). Rows live in
// RecentTable, where the consumer appends in arrival order, or in a run: rows sorted by
// (book_id, occurred_at, id) that the compactor moves them into (in a table of the run's own,
// or appended to ArchiveTable: runs.go), so a query for one book reads a few row groups per
// run (DuckDB's min/max zone maps) instead of every book's rows. A row is in exactly one table
// at any snapshot. Queries use the views.
const (
	RecentTable  = "events_recent"
	RunsTable    = "event_runs" // run, level, rows, created_at: the runs (where each lives: runHome)
	OffsetsTable = "consumer_offsets"

	// EventsView is every stored event (ArchiveTable, the other runs' tables, RecentTable).
	EventsView = "events"
	// InteractionView is the interaction events (spec §2.8): EventsView without access events.
	InteractionView = "interaction_events"
	// SessionView is the view events (spec §2.8): one row per reading session (workspace,
	// mode, book, session) with its measures, derived from the session's interaction events
	// (definitions: docs/ANALYTICS.md).
	SessionView = "view_events"
	// AuditView is the audit log (spec §2.8): access events and audited interaction events,
	// with source ("access" or "interaction") and source_event_id.
	AuditView = "audit_events"
)

// AuditTypes are the event types of the audit log (spec §2.8): the access gate's events plus
// the interaction events an owner audits.
// The spec lists eight values "plus one more value that is not shown": this service's ninth is
// checkout_redirect_clicked, the other outbound purchase action (docs/DECISIONS.md).
var AuditTypes = []string{ingest.AccessRequested, ingest.AccessGranted, ingest.AccessRejected,
	ingest.DocumentDownloaded, ingest.LinkClicked, ingest.LeadFormSubmitted, ingest.FormWidgetOpened,
	ingest.CheckoutWidgetOpened, ingest.CheckoutRedirectClicked}

// DB is an opened analytics database: one DuckDB instance with a query pool and one
// connection reserved for appends.
type DB struct {
	path      string
	sql       *sql.DB
	appending atomic.Bool  // a Consumer holds the appending connection
	exp       exportState  // running exports (export.go)
	gate      gate         // statements on the file pass it; a reattach shuts it (reattach.go)
	moving    sync.RWMutex // queries read-hold it, a commit moving rows holds it (commitMove)

	reattached atomic.Uint64
}

// Option configures Open.
type Option func(*options)

type options struct {
	threads     int
	memoryLimit string
	maxConns    int
	maxExports  int
}

// RowGroupSize is the row group size of the analytics file (DuckDB's default is 122,880). An
// insert that fills whole row groups writes them compressed straight into the file; rows of a
// partly filled one go through the WAL and are compressed again at the next checkpoint, which
// costs about twice the CPU per row (measured with 1M events: batches of 65,536 rows into
// 122,880-row groups 9-14 µs of CPU per row, whole row groups 4-5 µs). With 32,768-row groups
// the consumer's batches under load are whole row groups (it aligns them, consumer.go), and
// the compactor's runs and one-book queries read smaller units (1M events: level-0 runs 3.8 vs
// 6.0 µs of CPU per row, a one-book aggregate p50 1.1 vs 2.1 ms).
const RowGroupSize = 32768

// catalog is the name the analytics file is attached under.
const catalog = "flipbook_analytics"

// Defaults of Open. DuckDB itself defaults to every core and 80% of RAM; the service shares the
// machine with Pebble and the HTTP front end, so the memory limit is named here.
//
// The limit is what compaction's sorts use: in the ingest benchmark the service's memory
// peaked during merges, with DuckDB at its limit and spilling the rest. With 2 GB the service
// peaked at 2.4-3.0 GB (growing with the runs' sizes: last minute 1.03x and 1.20x of minute
// 2 in two 10-minute runs); with 1 GB at 1.4-1.6 GB (1.10x in a 5-minute run) at the same
// events/s and CPU per event (154.7k/s, 11.1 us vs 144.4k/s, 11.8 us). --analytics-memory
// sets it for the service.
const (
	DefaultMemoryLimit = "1GB"
	// DefaultMaxQueryConns bounds concurrent analytics queries (each DuckDB query already uses
	// every thread; more connections only queue inside DuckDB).
	DefaultMaxQueryConns = 8
)

// WithThreads sets DuckDB's worker threads (0: one per core).
func WithThreads(n int) Option { return func(o *options) { o.threads = n } }

// WithMemoryLimit sets DuckDB's memory limit, e.g. "1GB" ("" keeps DuckDB's default).
func WithMemoryLimit(s string) Option { return func(o *options) { o.memoryLimit = s } }

// WithMaxQueryConns bounds the query pool (the appending connection is not counted).
func WithMaxQueryConns(n int) Option { return func(o *options) { o.maxConns = n } }

// WithMaxExports bounds the exports running at once (default DefaultMaxExports).
func WithMaxExports(n int) Option { return func(o *options) { o.maxExports = n } }

// Open opens (creating if needed) the DuckDB database at path, e.g. <data>/analytics.duckdb,
// and creates the schema. It fails if another process has the file open.
func Open(ctx context.Context, path string, opts ...Option) (*DB, error) {
	o := options{memoryLimit: DefaultMemoryLimit, maxConns: DefaultMaxQueryConns, maxExports: DefaultMaxExports}
	for _, f := range opts {
		f(&o)
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("analytics: unusable database path %q", path)
	}
	q := url.Values{}
	if o.threads > 0 {
		q.Set("threads", strconv.Itoa(o.threads))
	}
	if o.memoryLimit != "" {
		q.Set("memory_limit", o.memoryLimit)
	}
	// Where DuckDB spills: beside the file, as when the file is the main database (an
	// in-memory main database would spill to .tmp in the working directory).
	q.Set("temp_directory", path+".tmp")
	dsn := "?" + q.Encode()
	// The file is attached to an in-memory instance rather than opened as its main database,
	// because only ATTACH takes a row group size, and it is not stored in the file: every
	// connection attaches it (the first one really does) and makes it the default catalog.
	attach := attachSQL(path)
	conn, err := duckdb.NewConnector(dsn, func(ex driver.ExecerContext) error {
		for _, q := range []string{attach, "USE " + catalog} {
			// Not Open's ctx: connections are made for the life of the DB.
			if _, err := ex.ExecContext(context.Background(), q, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("analytics: open %s: %w", path, err)
	}
	db := sql.OpenDB(conn) // closes the connector when it is closed
	if o.maxConns > 0 {
		db.SetMaxOpenConns(o.maxConns + 2) // +2: the appending and the compacting connections
	}
	db.SetMaxIdleConns(o.maxConns + 2)
	d := &DB{path: path, sql: db}
	d.exp.init(o.maxExports)
	if err := d.createSchema(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

// Query is what analytics queries use (they read the views): it waits while the compactor
// reattaches the file (reattach.go). Its connections never write events: the appending and
// the compacting connections are the Consumer's.
func (d *DB) Query() Reader { return Reader{d} }

// Handle is the database/sql handle without the reattach gate, for a DB no Consumer runs on
// (the ingest benchmark's raw DuckDB baseline).
func (d *DB) Handle() *sql.DB { return d.sql }

// Path is the database file.
func (d *DB) Path() string { return d.path }

// Close closes every connection and the database. Close the Consumer first. Running exports
// stop at their next batch; Close waits (up to exportCloseWait) until they have let go of their
// connections.
func (d *DB) Close() error {
	if !d.exp.shutdown(exportCloseWait) {
		return errors.Join(errors.New("analytics: close: exports still hold connections"), d.sql.Close())
	}
	return d.sql.Close()
}

// exportCloseWait bounds how long Close waits for running exports.
const exportCloseWait = 10 * time.Second

// acquireAppender hands out the appending connection, once at a time (the Consumer takes it,
// and its compacting connection with it).
func (d *DB) acquireAppender(ctx context.Context) (*sql.Conn, error) {
	if !d.appending.CompareAndSwap(false, true) {
		return nil, errors.New("analytics: the appending connection is already in use (one Consumer per database)")
	}
	c, err := d.sql.Conn(ctx)
	if err != nil {
		d.appending.Store(false)
		return nil, err
	}
	return c, nil
}

func (d *DB) releaseAppender(c *sql.Conn) error {
	err := c.Close()
	d.appending.Store(false)
	return err
}

// baseDDL creates the tables every version has, idempotent. The event tables' columns are
// eventColumns (arrow.go); every insert names its columns, so a column added by a later
// version may sit anywhere in an older table.
func baseDDL() []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS schema_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)`,
		eventTableDDL(RecentTable),
		eventTableDDL(ArchiveTable),
		`CREATE TABLE IF NOT EXISTS ` + RunsTable + ` (run BIGINT PRIMARY KEY, level INTEGER NOT NULL,
	rows BIGINT NOT NULL, created_at TIMESTAMP NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + OffsetsTable + ` ("partition" INTEGER PRIMARY KEY, next_offset UBIGINT NOT NULL)`,
	}
}

// addedColumnsDDL adds the columns added after version 1 (nullable, so existing rows need no
// value) to each of tables.
func addedColumnsDDL(tables []string) []string {
	var ddl []string
	for _, c := range eventColumns {
		if c.nullable() {
			for _, t := range tables {
				ddl = append(ddl, "ALTER TABLE "+t+" ADD COLUMN IF NOT EXISTS "+c.name+" "+c.sqlType)
			}
		}
	}
	return ddl
}

// viewsDDL defines the views built on EventsView (which replaceEventsView defines).
func viewsDDL() []string {
	in := func(types []string) string { return "('" + strings.Join(types, "', '") + "')" }
	return []string{
		`CREATE OR REPLACE VIEW ` + InteractionView + ` AS SELECT * FROM ` + EventsView +
			` WHERE event_type IN ` + in(ingest.InteractionTypes),
		`CREATE OR REPLACE VIEW ` + AuditView + ` AS SELECT
	id, workspace, mode, book_id, session_id, event_type,
	CASE WHEN starts_with(event_type, 'access_') THEN 'access' ELSE 'interaction' END AS source,
	id AS source_event_id, viewer_id, viewer_email, tracked_link_id, page_number, active_ms,
	reason, metadata, occurred_at, created_at
FROM ` + EventsView + ` WHERE event_type IN ` + in(AuditTypes),
		sessionViewDDL,
	}
}

// sessionViewDDL defines SessionView; every measure is defined in docs/ANALYTICS.md, "View
// events", and tested against hand-computed sessions (sessions_test.go). A session's id is the
// id of its first stored event, so it never changes as the session's later events arrive (a
// session's events share a log partition: the log is keyed by workspace). A filter on
// workspace, mode, book_id or session_id is pushed below the grouping, so a query for one
// book reads only that book's rows.
const sessionViewDDL = `CREATE OR REPLACE VIEW ` + SessionView + ` AS
WITH s AS (
	SELECT workspace, mode, book_id, session_id,
		min(id) AS id,
		arg_max(viewer_id, id) FILTER (WHERE viewer_id IS NOT NULL) AS viewer_id,
		arg_max(viewer_email, id) FILTER (WHERE viewer_email <> '') AS viewer_email,
		arg_min(source_host, id) FILTER (WHERE source_host IS NOT NULL) AS source_host,
		arg_min(tracked_link_id, id) FILTER (WHERE tracked_link_id IS NOT NULL) AS tracked_link_id,
		count(*) FILTER (WHERE event_type = 'session_started') AS starts,
		count(DISTINCT page_number) FILTER (WHERE event_type = 'page_segment_completed') AS pages_viewed,
		coalesce(sum(active_ms) FILTER (WHERE event_type = 'page_segment_completed'), 0) AS active_ms,
		count(*) FILTER (WHERE event_type IN ('link_clicked', 'checkout_redirect_clicked')) AS clicks,
		max(book_pages) AS book_pages,
		arg_min(country, id) FILTER (WHERE country IS NOT NULL) AS country,
		arg_min(region, id) FILTER (WHERE country IS NOT NULL) AS region,
		arg_min(city, id) FILTER (WHERE country IS NOT NULL) AS city,
		arg_min(latitude, id) FILTER (WHERE latitude IS NOT NULL) AS latitude,
		arg_min(longitude, id) FILTER (WHERE latitude IS NOT NULL) AS longitude,
		min(occurred_at) AS started_at,
		max(occurred_at) AS last_event_at,
		min(created_at) AS recorded_at,
		max(created_at) AS updated_at
	FROM ` + InteractionView + `
	GROUP BY workspace, mode, book_id, session_id
), m AS (
	SELECT *,
		CAST((active_ms + 500) // 1000 AS BIGINT) AS duration_seconds,
		greatest(book_pages, pages_viewed, 1) AS reach_pages
	FROM s
), e AS (
	SELECT *,
		round(100 * (0.5 * least(1.0, pages_viewed / reach_pages)
			+ 0.5 * least(1.0, active_ms / (reach_pages * 10000.0))), 2) AS engagement
	FROM m
)
SELECT id, workspace, mode, book_id, session_id, viewer_id, coalesce(viewer_email, '') AS viewer_email,
	source_host, source_host IS NOT NULL AS from_embedded, tracked_link_id,
	CAST(greatest(starts, 1) AS BIGINT) AS impressions,
	CAST(CASE WHEN pages_viewed >= 2 OR active_ms >= 10000 THEN 1 ELSE 0 END AS BIGINT) AS reads,
	CAST(clicks AS BIGINT) AS clicks, CAST(pages_viewed AS BIGINT) AS pages_viewed,
	CAST(active_ms AS BIGINT) AS active_ms, duration_seconds,
	engagement, printf('%.2f', engagement) AS engagement_score, book_pages,
	country, region, city, latitude, longitude,
	started_at, last_event_at, recorded_at, updated_at
FROM e`

func (d *DB) createSchema(ctx context.Context) error {
	c, err := d.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("analytics: schema: %w", err)
	}
	defer c.Close()
	var v sql.NullString
	err = c.QueryRowContext(ctx, `SELECT value FROM schema_meta WHERE key = 'version'`).Scan(&v)
	if err == nil {
		n, _ := strconv.Atoi(v.String)
		if n > SchemaVersion {
			return fmt.Errorf("analytics: %s has schema version %d, this build knows %d", d.path, n, SchemaVersion)
		}
	}
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("analytics: schema: %w", err)
	}
	defer tx.Rollback()
	if err := schemaIn(ctx, tx); err != nil {
		return fmt.Errorf("analytics: schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO schema_meta VALUES ('version', ?)`,
		strconv.Itoa(SchemaVersion)); err != nil {
		return fmt.Errorf("analytics: schema: %w", err)
	}
	return tx.Commit()
}

// schemaIn creates or migrates the schema in tx: the tables, the columns added since version
// 1, the runs of a version 2 sorted table moved to where they live now (runs.go), the views.
func schemaIn(ctx context.Context, tx *sql.Tx) error {
	exec := func(stmts []string) error {
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%w\n%s", err, s)
			}
		}
		return nil
	}
	if err := exec(baseDDL()); err != nil {
		return err
	}
	legacy, err := tableExists(ctx, tx, legacySortedTable)
	if err != nil {
		return err
	}
	runs, err := listRunTables(ctx, tx)
	if err != nil {
		return err
	}
	tables := []string{RecentTable, ArchiveTable}
	if legacy {
		tables = append(tables, legacySortedTable)
	} else {
		tables = append(tables, tableNames(runs)...)
	}
	if err := exec(addedColumnsDDL(tables)); err != nil {
		return err
	}
	if legacy {
		if err := migrateSortedTable(ctx, tx); err != nil {
			return err
		}
	}
	if err := replaceEventsView(ctx, tx); err != nil {
		return err
	}
	return exec(viewsDDL())
}

// Offsets returns the stored next offset of every partition that has one.
func (d *DB) Offsets(ctx context.Context) (map[int]uint64, error) {
	if err := d.gate.enter(ctx); err != nil {
		return nil, err
	}
	defer d.gate.leave()
	return loadOffsets(ctx, d.sql)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func loadOffsets(ctx context.Context, q querier) (map[int]uint64, error) {
	rows, err := q.QueryContext(ctx, `SELECT "partition", next_offset FROM `+OffsetsTable)
	if err != nil {
		return nil, fmt.Errorf("analytics: load offsets: %w", err)
	}
	defer rows.Close()
	out := map[int]uint64{}
	for rows.Next() {
		var p int
		var next uint64
		if err := rows.Scan(&p, &next); err != nil {
			return nil, fmt.Errorf("analytics: load offsets: %w", err)
		}
		out[p] = next
	}
	return out, rows.Err()
}
