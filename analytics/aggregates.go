package analytics

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"flipbook/errs"
	"flipbook/ingest"
)

// Aggregate analytics (spec §4.4: page performance, book flow, readers, reader pages, reading
// session pages, reader journey): SQL over InteractionView. Every measure is defined in
// docs/ANALYTICS.md; the functions here are shared by the API operations and the CSV exports,
// so the row types carry the JSON names of the records and rows stream through a callback.
//
// Every query filters by workspace, mode and (except the journey) book first: the event
// tables are sorted by book, so DuckDB's zone maps skip other books' row groups.

// Querier runs a query: *sql.DB (DB.Query()), *sql.Conn and *sql.Tx all are.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// TimeFormat is how the records' timestamps render: RFC 3339 in UTC with microseconds, as
// every timestamp of the API.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// Time is a timestamp of an aggregate record. It renders as TimeFormat in UTC, and as null when
// zero.
type Time struct{ time.Time }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + t.UTC().Format(TimeFormat) + `"`), nil
}

// String is the timestamp as TimeFormat ("" when zero).
func (t Time) String() string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeFormat)
}

// Seconds is milliseconds as seconds (the *_seconds fields are their *_ms field / 1000).
func Seconds(ms int64) float64 { return float64(ms) / 1000 }

// avg is num/den rounded half up to an integer (0 when den is 0), in exact integer arithmetic.
func avg(num, den int64) int64 {
	if den <= 0 {
		return 0
	}
	return (2*num + den) / (2 * den)
}

// rate is num/den rounded to 4 decimals (0 when den is 0).
func rate(num, den int64) float64 {
	if den <= 0 {
		return 0
	}
	return math.Round(float64(num)/float64(den)*10000) / 10000
}

// Score renders an engagement score kept in hundredths ("62.50").
func Score(hundredths int64) string { return fmt.Sprintf("%d.%02d", hundredths/100, hundredths%100) }

// engagementSQL is the engagement score (docs/ANALYTICS.md, "engagement_score") in hundredths
// of a point, a BIGINT from 0 to 10000, over SQL expressions for the distinct pages viewed, the
// active milliseconds and the book's page count (may be NULL). It is the formula of the
// view events' engagement_score (db.go), so one session's score is its view event's.
func engagementSQL(pages, ms, bookPages string) string {
	p := fmt.Sprintf("greatest(%s, %s, 1)", bookPages, pages)
	e := fmt.Sprintf("round(100 * (0.5 * least(1.0, %[2]s / %[1]s) + 0.5 * least(1.0, %[3]s / (%[1]s * 10000.0))), 2)", p, pages, ms)
	return "CAST(round(" + e + " * 100) AS BIGINT)"
}

const seg = `event_type = '` + ingest.PageSegmentCompleted + `'`

// readerScope says which events and readers a reader query covers, beyond the Filter's
// conditions on the events (workspace, mode, book, date, tracked link, session).
type readerScope struct {
	includeAnonymous bool
	snapshot         int64 // > 0: only events with id ≤ snapshot
}

// readerCTE is the common start of the per-book reader queries:
//
//	ev   the book's interaction events that match the filter (no viewer or page condition)
//	sess one row per reading session: its reader (the viewer of its latest identified event,
//	     as in view events) and that viewer's address
//	rev  the events with their reader: reader is 'viewer-<id>' for an identified session,
//	     'session-<session_id>' for an anonymous one; the viewer and page conditions, and
//	     whether anonymous readers count, apply here
//
// A session's reader depends on the session's events, not on the viewer or page filter, so
// every operation attributes a session to the same reader. The queries are meant for one book
// (f.BookID set): that is what keeps them to a range of the sorted table.
func readerCTE(f Filter, sc readerScope) (string, []any) {
	base := f
	base.ViewerID, base.PageNumber, base.EventTypes = 0, 0, nil
	where, args := base.Where("occurred_at")
	if sc.snapshot > 0 {
		where += " AND id <= ?"
		args = append(args, sc.snapshot)
	}
	var revConds []string
	if f.ViewerID != 0 {
		revConds = append(revConds, "s.sviewer = ?")
		args = append(args, f.ViewerID)
	} else if !sc.includeAnonymous {
		revConds = append(revConds, "s.sviewer IS NOT NULL")
	}
	if f.PageNumber != 0 {
		revConds = append(revConds, "ev.page_number = ?")
		args = append(args, f.PageNumber)
	}
	revWhere := ""
	if len(revConds) > 0 {
		revWhere = "WHERE " + strings.Join(revConds, " AND ")
	}
	return `WITH ev AS (
	SELECT id, book_id, session_id, event_type, viewer_id, viewer_email, page_number,
		coalesce(active_ms, 0) AS ms, url, occurred_at, book_pages
	FROM ` + InteractionView + ` WHERE ` + where + `
), sess AS (
	SELECT book_id, session_id,
		arg_max(viewer_id, id) FILTER (WHERE viewer_id IS NOT NULL) AS sviewer,
		arg_max(viewer_email, id) FILTER (WHERE viewer_id IS NOT NULL AND viewer_email <> '') AS semail
	FROM ev GROUP BY book_id, session_id
), rev AS (
	SELECT ev.id, ev.book_id, ev.session_id, ev.event_type, s.sviewer AS viewer_id,
		coalesce(s.semail, '') AS viewer_email, ev.page_number, ev.ms, ev.url, ev.occurred_at, ev.book_pages,
		CASE WHEN s.sviewer IS NULL THEN 'session-' || ev.session_id
			ELSE 'viewer-' || CAST(s.sviewer AS VARCHAR) END AS reader
	FROM ev JOIN sess s USING (book_id, session_id)
	` + revWhere + `
)
`, args
}

func queryRows(ctx context.Context, q Querier, what, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("analytics %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("analytics %s: %w", what, err)
	}
	return nil
}

// --- Page performance ---

// PageSummary is spec §2.8's page summary (GET /analytics/page-performance).
type PageSummary struct {
	ID                            int64   `json:"id" desc:"the page number"`
	BookID                        string  `json:"book_id"`
	PageNumber                    int64   `json:"page_number"`
	UniqueReaders                 int64   `json:"unique_readers"`
	TotalActiveMs                 int64   `json:"total_active_ms"`
	TotalActiveSeconds            float64 `json:"total_active_seconds"`
	AvgActiveMsPerReader          int64   `json:"avg_active_ms_per_reader"`
	AvgActiveSecondsPerReader     float64 `json:"avg_active_seconds_per_reader"`
	AvgActiveMsPerSegment         int64   `json:"avg_active_ms_per_segment"`
	AvgActiveSecondsPerSegment    float64 `json:"avg_active_seconds_per_segment"`
	MedianActiveMsPerSegment      int64   `json:"median_active_ms_per_segment"`
	MedianActiveSecondsPerSegment float64 `json:"median_active_seconds_per_segment"`
	TotalSegments                 int64   `json:"total_segments"`
}

// PagePerformance streams one page summary per page of the book, in page order: every page
// from 1 to pageCount (the book's current page count; pages nobody viewed have zeros), plus
// any page beyond it that has segments (from before the book shrank). With f.PageNumber set,
// only that page. Readers of every kind count (identified and anonymous).
func PagePerformance(ctx context.Context, q Querier, f Filter, pageCount int, fn func(PageSummary) error) error {
	cte, args := readerCTE(f, readerScope{includeAnonymous: true})
	pages := `SELECT CAST(range AS INTEGER) AS page_number FROM range(1, ?)`
	args = append(args, int64(pageCount)+1)
	if f.PageNumber != 0 {
		pages = `SELECT CAST(? AS INTEGER) AS page_number`
		args[len(args)-1] = f.PageNumber
	}
	query := cte + `, p AS (
	SELECT page_number, count(DISTINCT reader) AS readers, sum(ms) AS total, count(*) AS segments,
		CAST(round(quantile_cont(ms, 0.5)) AS BIGINT) AS median
	FROM rev WHERE ` + seg + ` GROUP BY page_number
), pages AS (` + pages + ` UNION SELECT page_number FROM p)
SELECT pages.page_number, coalesce(p.readers, 0), coalesce(p.total, 0), coalesce(p.segments, 0),
	coalesce(p.median, 0)
FROM pages LEFT JOIN p USING (page_number) ORDER BY pages.page_number`
	return queryRows(ctx, q, "page performance", query, args, func(rows *sql.Rows) error {
		s := PageSummary{BookID: f.BookID}
		if err := rows.Scan(&s.PageNumber, &s.UniqueReaders, &s.TotalActiveMs, &s.TotalSegments,
			&s.MedianActiveMsPerSegment); err != nil {
			return fmt.Errorf("analytics page performance: %w", err)
		}
		s.ID = s.PageNumber
		s.AvgActiveMsPerReader = avg(s.TotalActiveMs, s.UniqueReaders)
		s.AvgActiveMsPerSegment = avg(s.TotalActiveMs, s.TotalSegments)
		s.TotalActiveSeconds = Seconds(s.TotalActiveMs)
		s.AvgActiveSecondsPerReader = Seconds(s.AvgActiveMsPerReader)
		s.AvgActiveSecondsPerSegment = Seconds(s.AvgActiveMsPerSegment)
		s.MedianActiveSecondsPerSegment = Seconds(s.MedianActiveMsPerSegment)
		return fn(s)
	})
}

// --- Reader pages ---

// ReaderPage is spec §2.8's reader page summary (GET /analytics/reader-pages), plus the
// reader's key (reader_id, as in the readers operation) and, for an anonymous reader, its
// session.
type ReaderPage struct {
	ID                         int64   `json:"id" desc:"stable: derived from the book, the reader and the page"` // FNV-1a: ReaderPageID
	BookID                     string  `json:"book_id"`
	ReaderID                   string  `json:"reader_id"`
	ViewerID                   *int64  `json:"viewer_id"`
	ViewerEmail                string  `json:"viewer_email"`
	SessionID                  *string `json:"session_id" desc:"anonymous readers only"`
	PageNumber                 int64   `json:"page_number"`
	TotalActiveMs              int64   `json:"total_active_ms"`
	TotalActiveSeconds         float64 `json:"total_active_seconds"`
	Segments                   int64   `json:"segments"`
	AvgActiveMsPerSegment      int64   `json:"avg_active_ms_per_segment"`
	AvgActiveSecondsPerSegment float64 `json:"avg_active_seconds_per_segment"`
	FirstViewedAt              Time    `json:"first_viewed_at"`
	LastViewedAt               Time    `json:"last_viewed_at"`
}

// ReaderPageID is the stable id of a reader page summary: 53 bits (exact in JSON numbers) of
// FNV-1a over the book, the reader key and the page, never 0.
func ReaderPageID(book, reader string, page int64) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", book, reader, page)
	id := int64(h.Sum64() >> 11)
	if id == 0 {
		id = 1
	}
	return id
}

// ReaderPages streams one row per reader and page the reader viewed (has a segment of),
// ordered by viewer id (anonymous readers after identified ones, by session), then page.
// Anonymous readers are included when includeAnonymous is set (or f names a session).
func ReaderPages(ctx context.Context, q Querier, f Filter, includeAnonymous bool, fn func(ReaderPage) error) error {
	_, err := ReaderPagesAfter(ctx, q, f, includeAnonymous, nil, 0, fn)
	return err
}

// ReaderPageKey is a position in the order of ReaderPages (for batches: the CSV export reads
// them in bounded batches, so its memory does not grow with the book's readers).
type ReaderPageKey struct {
	ViewerID int64 // 0 for anonymous readers
	Reader   string
	Page     int64
}

// ReaderPagesAfter is ReaderPages from after a position (nil: from the start), at most limit
// rows (0: all). It returns the number of rows streamed.
func ReaderPagesAfter(ctx context.Context, q Querier, f Filter, includeAnonymous bool, after *ReaderPageKey, limit int,
	fn func(ReaderPage) error) (int, error) {
	cte, args := readerCTE(f, readerScope{includeAnonymous: includeAnonymous || f.SessionID != ""})
	query := cte + `, rp AS (SELECT reader, any_value(viewer_id) AS viewer_id, arg_max(viewer_email, id) AS email,
	min(session_id) AS session_id, page_number, count(*) AS segments, sum(ms) AS ms,
	min(occurred_at) AS first_at, max(occurred_at) AS last_at,
	CAST(any_value(viewer_id) IS NULL AS INTEGER) AS anon
FROM rev WHERE ` + seg + `
GROUP BY reader, page_number)
SELECT reader, viewer_id, email, session_id, page_number, segments, ms, first_at, last_at FROM rp`
	if after != nil {
		anon := 0
		if after.ViewerID == 0 {
			anon = 1
		}
		query += ` WHERE anon > ? OR (anon = ? AND (coalesce(viewer_id, 0) > ? OR (coalesce(viewer_id, 0) = ?
	AND (reader > ? OR (reader = ? AND page_number > ?)))))`
		args = append(args, anon, anon, after.ViewerID, after.ViewerID, after.Reader, after.Reader, after.Page)
	}
	query += `
ORDER BY anon, viewer_id, reader, page_number`
	if limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", limit)
	}
	n := 0
	err := queryRows(ctx, q, "reader pages", query, args, func(rows *sql.Rows) error {
		n++
		p := ReaderPage{BookID: f.BookID}
		var viewer sql.NullInt64
		var session string
		if err := rows.Scan(&p.ReaderID, &viewer, &p.ViewerEmail, &session, &p.PageNumber, &p.Segments,
			&p.TotalActiveMs, &p.FirstViewedAt.Time, &p.LastViewedAt.Time); err != nil {
			return fmt.Errorf("analytics reader pages: %w", err)
		}
		if viewer.Valid {
			p.ViewerID = &viewer.Int64
		} else {
			p.SessionID = &session
		}
		p.ID = ReaderPageID(p.BookID, p.ReaderID, p.PageNumber)
		p.TotalActiveSeconds = Seconds(p.TotalActiveMs)
		p.AvgActiveMsPerSegment = avg(p.TotalActiveMs, p.Segments)
		p.AvgActiveSecondsPerSegment = Seconds(p.AvgActiveMsPerSegment)
		return fn(p)
	})
	return n, err
}

// --- Readers ---

// Reader sort orders.
const (
	SortRecent     = "recent"     // last_seen_at, newest first
	SortEngagement = "engagement" // engagement_score, highest first
)

// ReaderSummary is one reader of a book (GET /analytics/readers).
type ReaderSummary struct {
	ID                 string  `json:"id"` // the reader key: viewer-<viewer_id> or session-<session_id>
	BookID             string  `json:"book_id"`
	ViewerID           *int64  `json:"viewer_id"`
	ViewerEmail        string  `json:"viewer_email"`
	SessionID          *string `json:"session_id"` // anonymous readers only
	Anonymous          bool    `json:"anonymous"`
	Sessions           int64   `json:"sessions"`
	PagesViewed        int64   `json:"pages_viewed"`
	TotalActiveMs      int64   `json:"total_active_ms"`
	TotalActiveSeconds float64 `json:"total_active_seconds"`
	DurationSeconds    int64   `json:"duration_seconds"`
	Downloads          int64   `json:"downloads"`
	LinkClicks         int64   `json:"link_clicks"`
	EngagementScore    string  `json:"engagement_score"`
	FirstSeenAt        Time    `json:"first_seen_at"`
	LastSeenAt         Time    `json:"last_seen_at"`

	// Engagement is the score in hundredths; SortValue is the value the row is ordered by
	// (descending, then ID ascending): last_seen_at in Unix microseconds or Engagement.
	Engagement int64 `json:"-"`
	SortValue  int64 `json:"-"`
}

// ReaderPosition is a position in a readers list: the sort value and key of the last row
// seen.
type ReaderPosition struct {
	Value int64
	Key   string
}

// ReadersQuery are the options of Readers beyond the Filter.
type ReadersQuery struct {
	IncludeAnonymous bool   // also anonymous readers (implied when the filter names a session)
	Sort             string // SortRecent (default) or SortEngagement
	// Snapshot > 0 limits the events to those with id ≤ Snapshot: the snapshot a walk started
	// on (the value Readers returned for its first page). 0 starts a new snapshot.
	Snapshot int64
	After    *ReaderPosition // rows after this position only
	Limit    int             // 0: every row
}

// Readers streams one summary per reader of the book in the order of q.Sort, total over
// (value descending, key ascending). It returns the snapshot the rows were computed on: the
// highest event id that matched the filter (0 when none). A workspace's events share one log
// partition, so its event ids grow in arrival order: passing the snapshot back with the
// position of the last row makes every page of a walk read the same events, so a walk sees
// every reader once, with the values of its first page.
func Readers(ctx context.Context, q Querier, f Filter, o ReadersQuery, fn func(ReaderSummary) error) (int64, error) {
	cte, args := readerCTE(f, readerScope{includeAnonymous: o.IncludeAnonymous || f.SessionID != "", snapshot: o.Snapshot})
	value := "recent_us"
	if o.Sort == SortEngagement {
		value = "engagement"
	}
	where := ""
	if o.After != nil {
		where = fmt.Sprintf("WHERE %[1]s < ? OR (%[1]s = ? AND reader > ?)", value)
		args = append(args, o.After.Value, o.After.Value, o.After.Key)
	}
	limit := ""
	if o.Limit > 0 {
		limit = fmt.Sprintf(" LIMIT %d", o.Limit)
	}
	query := cte + `, r AS (
	SELECT reader, max(viewer_id) AS viewer_id, arg_max(viewer_email, id) AS viewer_email,
		min(session_id) AS session_id, count(DISTINCT session_id) AS sessions,
		count(DISTINCT page_number) FILTER (WHERE ` + seg + `) AS pages_viewed,
		coalesce(sum(ms) FILTER (WHERE ` + seg + `), 0) AS active_ms,
		count(*) FILTER (WHERE event_type = '` + ingest.DocumentDownloaded + `') AS downloads,
		count(*) FILTER (WHERE event_type = '` + ingest.LinkClicked + `') AS link_clicks,
		max(book_pages) AS book_pages, min(occurred_at) AS first_seen, max(occurred_at) AS last_seen
	FROM rev GROUP BY reader
), k AS (
	SELECT *, ` + engagementSQL("pages_viewed", "active_ms", "book_pages") + ` AS engagement,
		epoch_us(last_seen) AS recent_us
	FROM r
)
SELECT reader, viewer_id, viewer_email, session_id, sessions, pages_viewed, active_ms, downloads, link_clicks,
	engagement, first_seen, last_seen, ` + value + `, (SELECT coalesce(max(id), 0) FROM ev)
FROM k ` + where + `
ORDER BY ` + value + ` DESC, reader ASC` + limit
	snapshot := o.Snapshot
	err := queryRows(ctx, q, "readers", query, args, func(rows *sql.Rows) error {
		r := ReaderSummary{BookID: f.BookID}
		var viewer sql.NullInt64
		var session string
		var mark int64
		if err := rows.Scan(&r.ID, &viewer, &r.ViewerEmail, &session, &r.Sessions, &r.PagesViewed, &r.TotalActiveMs,
			&r.Downloads, &r.LinkClicks, &r.Engagement, &r.FirstSeenAt.Time, &r.LastSeenAt.Time, &r.SortValue, &mark); err != nil {
			return fmt.Errorf("analytics readers: %w", err)
		}
		if snapshot == 0 {
			snapshot = mark
		}
		if viewer.Valid {
			r.ViewerID = &viewer.Int64
		} else {
			r.SessionID, r.Anonymous = &session, true
		}
		r.TotalActiveSeconds = Seconds(r.TotalActiveMs)
		r.DurationSeconds = avg(r.TotalActiveMs, 1000)
		r.EngagementScore = Score(r.Engagement)
		return fn(r)
	})
	return snapshot, err
}

// --- Book flow ---

// BookFlow is GET /analytics/book-flow: how readers move through a book.
type BookFlow struct {
	BookID    string `json:"book_id"`
	PageCount int    `json:"page_count"`
	// Readers opened the book (have any interaction event): the base of the reach rates.
	Readers int64 `json:"readers"`
	// ReadersWithPageViews have at least one page segment (the readers a drop-off is counted for).
	ReadersWithPageViews int64            `json:"readers_with_page_views"`
	Sessions             int64            `json:"sessions"`
	Pages                []FlowPage       `json:"pages"`
	Transitions          []FlowTransition `json:"transitions"`
	Downloads            ActionStats      `json:"downloads"`
	LinkClicks           LinkClickStats   `json:"link_clicks"`
}

// FlowPage is one page of a book flow.
type FlowPage struct {
	PageNumber int64 `json:"page_number"`
	// Readers reached the page (have a segment of it); ReachRate = Readers / BookFlow.Readers.
	Readers   int64   `json:"readers"`
	ReachRate float64 `json:"reach_rate"`
	// DropOffs are readers whose last viewed page (latest segment) is this one; DropOffRate =
	// DropOffs / Readers of the page.
	DropOffs    int64   `json:"drop_offs"`
	DropOffRate float64 `json:"drop_off_rate"`
}

// FlowTransition counts moves from one page to another: consecutive segments of a session on
// different pages.
type FlowTransition struct {
	FromPage int64 `json:"from_page"`
	ToPage   int64 `json:"to_page"`
	Count    int64 `json:"count"`
	Readers  int64 `json:"readers"`
}

// ActionStats counts events of one kind and the distinct readers behind them.
type ActionStats struct {
	Count         int64 `json:"count"`
	UniqueReaders int64 `json:"unique_readers"`
}

// LinkClickStats are ActionStats of link clicks with the most clicked URLs.
type LinkClickStats struct {
	Count         int64     `json:"count"`
	UniqueReaders int64     `json:"unique_readers"`
	TopURLs       []URLStat `json:"top_urls"`
}

// safeURLSQL keeps the URLs of the schemes intake accepts (ingest.URLProblem) in top_urls: one
// stored before it refused the others (javascript:, data:) is neither counted there nor shown.
const safeURLSQL = `(lower(url) LIKE 'http://%' OR lower(url) LIKE 'https://%' OR lower(url) LIKE 'mailto:%' OR lower(url) LIKE 'tel:%')`

// URLStat is one clicked URL.
type URLStat struct {
	URL           string `json:"url"`
	Count         int64  `json:"count"`
	UniqueReaders int64  `json:"unique_readers"`
}

// TopURLs is how many URLs a book flow lists.
const TopURLs = 10

// GetBookFlow computes the book flow of f's book, whose current page count is pageCount (the
// pages listed are 1..pageCount plus any other page with segments). Readers of every kind
// count.
func GetBookFlow(ctx context.Context, q Querier, f Filter, pageCount int) (*BookFlow, error) {
	cte, args := readerCTE(f, readerScope{includeAnonymous: true})
	cte = strings.Replace(cte, "), rev AS (", "), rev AS MATERIALIZED (", 1)
	query := cte + `, sg AS (
	SELECT reader, session_id, page_number, occurred_at, id FROM rev WHERE ` + seg + `
), moves AS (
	SELECT reader, lag(page_number) OVER (PARTITION BY session_id ORDER BY occurred_at, id) AS from_page,
		page_number AS to_page
	FROM sg
), last AS (
	SELECT reader, page_number,
		row_number() OVER (PARTITION BY reader ORDER BY occurred_at DESC, id DESC) AS n
	FROM sg
)
SELECT 'total', NULL::BIGINT, NULL::BIGINT, count(DISTINCT reader), count(DISTINCT session_id),
	NULL::VARCHAR, count(DISTINCT reader) FILTER (WHERE ` + seg + `) FROM rev
UNION ALL
SELECT 'reach', page_number, NULL, count(DISTINCT reader), NULL, NULL, NULL FROM sg GROUP BY page_number
UNION ALL
SELECT 'drop', page_number, NULL, count(*), NULL, NULL, NULL FROM last WHERE n = 1 GROUP BY page_number
UNION ALL
SELECT 'move', from_page, to_page, count(*), count(DISTINCT reader), NULL, NULL FROM moves
	WHERE from_page IS NOT NULL AND from_page <> to_page GROUP BY from_page, to_page
UNION ALL
SELECT 'download', NULL, NULL, count(*), count(DISTINCT reader), NULL, NULL FROM rev
	WHERE event_type = '` + ingest.DocumentDownloaded + `'
UNION ALL
SELECT 'link', NULL, NULL, count(*), count(DISTINCT reader), NULL, NULL FROM rev
	WHERE event_type = '` + ingest.LinkClicked + `'
UNION ALL
SELECT * FROM (SELECT 'url', NULL, NULL, count(*) AS c, count(DISTINCT reader), url, NULL FROM rev
	WHERE event_type = '` + ingest.LinkClicked + `' AND ` + safeURLSQL + ` GROUP BY url ORDER BY c DESC, url LIMIT ` + fmt.Sprint(TopURLs) + `)`
	flow := &BookFlow{BookID: f.BookID, PageCount: pageCount, Transitions: []FlowTransition{},
		LinkClicks: LinkClickStats{TopURLs: []URLStat{}}}
	pages := map[int64]*FlowPage{}
	page := func(n int64) *FlowPage {
		p := pages[n]
		if p == nil {
			p = &FlowPage{PageNumber: n}
			pages[n] = p
		}
		return p
	}
	for n := int64(1); n <= int64(pageCount); n++ {
		page(n)
	}
	if f.PageNumber != 0 {
		pages = map[int64]*FlowPage{}
		page(int64(f.PageNumber))
	}
	err := queryRows(ctx, q, "book flow", query, args, func(rows *sql.Rows) error {
		var kind string
		var a, b, c, d, e sql.NullInt64
		var u sql.NullString
		if err := rows.Scan(&kind, &a, &b, &c, &d, &u, &e); err != nil {
			return fmt.Errorf("analytics book flow: %w", err)
		}
		switch kind {
		case "total":
			flow.Readers, flow.Sessions, flow.ReadersWithPageViews = c.Int64, d.Int64, e.Int64
		case "reach":
			page(a.Int64).Readers = c.Int64
		case "drop":
			page(a.Int64).DropOffs = c.Int64
		case "move":
			flow.Transitions = append(flow.Transitions, FlowTransition{FromPage: a.Int64, ToPage: b.Int64, Count: c.Int64, Readers: d.Int64})
		case "download":
			flow.Downloads = ActionStats{Count: c.Int64, UniqueReaders: d.Int64}
		case "link":
			flow.LinkClicks.Count, flow.LinkClicks.UniqueReaders = c.Int64, d.Int64
		case "url":
			// A URL stored before intake refused it (javascript:, data:) is not listed.
			if ingest.SafeURL(u.String) != "" {
				flow.LinkClicks.TopURLs = append(flow.LinkClicks.TopURLs, URLStat{URL: u.String, Count: c.Int64, UniqueReaders: d.Int64})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	flow.Pages = make([]FlowPage, 0, len(pages))
	for _, p := range pages {
		p.ReachRate = rate(p.Readers, flow.Readers)
		p.DropOffRate = rate(p.DropOffs, p.Readers)
		flow.Pages = append(flow.Pages, *p)
	}
	slices.SortFunc(flow.Pages, func(x, y FlowPage) int { return cmp.Compare(x.PageNumber, y.PageNumber) })
	slices.SortFunc(flow.Transitions, func(x, y FlowTransition) int {
		return cmp.Or(cmp.Compare(x.FromPage, y.FromPage), cmp.Compare(x.ToPage, y.ToPage))
	})
	slices.SortFunc(flow.LinkClicks.TopURLs, func(x, y URLStat) int {
		return cmp.Or(-cmp.Compare(x.Count, y.Count), strings.Compare(x.URL, y.URL))
	})
	return flow, nil
}

// --- Reading session pages ---

// ViewEvent is a row of SessionView (spec §2.8's view event without the book title and the
// tracked link's name and slug, which live in the store).
type ViewEvent struct {
	ID                                                                 int64
	BookID, SessionID, ViewerEmail, EngagementScore                    string
	ViewerID, TrackedLinkID                                            sql.NullInt64
	SourceHost, Country, Region, City                                  sql.NullString
	FromEmbedded                                                       bool
	Impressions, Reads, Clicks, PagesViewed, ActiveMs, DurationSeconds int64
	Latitude, Longitude                                                sql.NullFloat64
	StartedAt, LastEventAt, RecordedAt, UpdatedAt                      time.Time
}

// GetViewEvent returns the view event id of f's book: the reading session whose first event
// has that id. errs.ErrNotFound when there is none (another book's, or not a session's first event).
func GetViewEvent(ctx context.Context, q Querier, f Filter, id int64) (*ViewEvent, error) {
	where, args := Filter{Workspace: f.Workspace, Mode: f.Mode, BookID: f.BookID}.Where("occurred_at")
	var session string
	found := false
	err := queryRows(ctx, q, "view event", `SELECT session_id FROM `+InteractionView+` WHERE `+where+` AND id = ?`,
		append(args, id), func(rows *sql.Rows) error {
			found = true
			return rows.Scan(&session)
		})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errs.ErrNotFound
	}
	where, args = Filter{Workspace: f.Workspace, Mode: f.Mode, BookID: f.BookID, SessionID: session}.Where("started_at")
	var v *ViewEvent
	err = queryRows(ctx, q, "view event", `SELECT id, book_id, session_id, viewer_id, viewer_email, source_host,
	from_embedded, tracked_link_id, impressions, reads, clicks, pages_viewed, active_ms, duration_seconds,
	engagement_score, country, region, city, latitude, longitude, started_at, last_event_at, recorded_at, updated_at
FROM `+SessionView+` WHERE `+where+` AND id = ?`, append(args, id), func(rows *sql.Rows) error {
		v = &ViewEvent{}
		return rows.Scan(&v.ID, &v.BookID, &v.SessionID, &v.ViewerID, &v.ViewerEmail, &v.SourceHost, &v.FromEmbedded,
			&v.TrackedLinkID, &v.Impressions, &v.Reads, &v.Clicks, &v.PagesViewed, &v.ActiveMs, &v.DurationSeconds,
			&v.EngagementScore, &v.Country, &v.Region, &v.City, &v.Latitude, &v.Longitude, &v.StartedAt,
			&v.LastEventAt, &v.RecordedAt, &v.UpdatedAt)
	})
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errs.ErrNotFound
	}
	return v, nil
}

// SessionPage is one page of one reading session (GET /analytics/reading-session-pages).
type SessionPage struct {
	ID          int64  `json:"id"` // the page number
	ViewEventID int64  `json:"view_event_id"`
	BookID      string `json:"book_id"`
	SessionID   string `json:"session_id"`
	PageNumber  int64  `json:"page_number"`
	// VisitOrder is the rank of the page's first segment in the session (1: the first page
	// the reader left).
	VisitOrder                 int64   `json:"visit_order"`
	Segments                   int64   `json:"segments"`
	TotalActiveMs              int64   `json:"total_active_ms"`
	TotalActiveSeconds         float64 `json:"total_active_seconds"`
	AvgActiveMsPerSegment      int64   `json:"avg_active_ms_per_segment"`
	AvgActiveSecondsPerSegment float64 `json:"avg_active_seconds_per_segment"`
	FirstViewedAt              Time    `json:"first_viewed_at"`
	LastViewedAt               Time    `json:"last_viewed_at"`
}

// SessionPages streams the pages the session of view event v viewed, in page order.
func SessionPages(ctx context.Context, q Querier, f Filter, v *ViewEvent, fn func(SessionPage) error) error {
	where, args := Filter{Workspace: f.Workspace, Mode: f.Mode, BookID: v.BookID, SessionID: v.SessionID}.Where("occurred_at")
	query := `SELECT page_number, count(*), coalesce(sum(active_ms), 0), min(occurred_at), max(occurred_at),
	row_number() OVER (ORDER BY min(occurred_at), min(id)) AS visit_order
FROM ` + InteractionView + ` WHERE ` + where + ` AND ` + seg + `
GROUP BY page_number ORDER BY page_number`
	return queryRows(ctx, q, "session pages", query, args, func(rows *sql.Rows) error {
		p := SessionPage{ViewEventID: v.ID, BookID: v.BookID, SessionID: v.SessionID}
		if err := rows.Scan(&p.PageNumber, &p.Segments, &p.TotalActiveMs, &p.FirstViewedAt.Time, &p.LastViewedAt.Time,
			&p.VisitOrder); err != nil {
			return fmt.Errorf("analytics session pages: %w", err)
		}
		p.ID = p.PageNumber
		p.TotalActiveSeconds = Seconds(p.TotalActiveMs)
		p.AvgActiveMsPerSegment = avg(p.TotalActiveMs, p.Segments)
		p.AvgActiveSecondsPerSegment = Seconds(p.AvgActiveMsPerSegment)
		return fn(p)
	})
}

// --- Reader journey ---

// Journey is one reader's (or one anonymous session's) activity across a tenant's books.
type Journey struct {
	ViewerID      int64 // 0: anonymous
	ViewerEmail   string
	Books         []JourneyBook  // latest visit first
	Visits        []JourneyVisit // chronological: the latest MaxJourneyVisits visits
	TotalVisits   int64
	TotalActiveMs int64
}

// JourneyBook is the reader's activity on one book.
type JourneyBook struct {
	BookID      string
	Visits      int64 // reading sessions
	PagesViewed int64 // distinct pages
	ActiveMs    int64
	Engagement  int64 // hundredths, as the readers operation's engagement_score
	LastVisit   time.Time
}

// JourneyVisit is one reading session of the reader.
type JourneyVisit struct {
	BookID, SessionID  string
	ViewEventID        int64
	StartedAt, EndedAt time.Time // first and last event of the session in the date range
	PagesViewed        int64
	ActiveMs           int64
	Engagement         int64 // hundredths: the view event's engagement_score
}

// MaxJourneyVisits bounds the visits of a journey's timeline (the latest ones).
const MaxJourneyVisits = 500

// ReaderJourney returns the journey of f.ViewerID (an identified reader: every session whose
// reader is that viewer) or of f.SessionID (every session with that id, on any book), across
// every book of f's tenant, counting events in f's date range. It never reads other
// workspaces' rows; it scans the tenant's rows once to find the reader's sessions and once
// for their events.
func ReaderJourney(ctx context.Context, q Querier, f Filter) (*Journey, error) {
	var ev string
	var args []any
	dateWhere, dateArgs := Filter{From: f.From, To: f.To}.Where("occurred_at")
	dateWhere = strings.TrimPrefix(dateWhere, "workspace = ? AND mode = ?")
	dateArgs = dateArgs[2:]
	revWhere := "WHERE true" + dateWhere
	if f.ViewerID != 0 {
		// The sessions with an event of the viewer in the range, then all their events (a
		// session's reader is the viewer of its latest identified event).
		ev = `cand AS (SELECT DISTINCT book_id, session_id FROM ` + InteractionView + `
	WHERE workspace = ? AND mode = ? AND viewer_id = ?` + dateWhere + `
), ev AS (
	SELECT e.id, e.book_id, e.session_id, e.event_type, e.viewer_id, e.viewer_email, e.page_number,
		coalesce(e.active_ms, 0) AS ms, e.occurred_at, e.book_pages
	FROM ` + InteractionView + ` e SEMI JOIN cand USING (book_id, session_id)
	WHERE e.workspace = ? AND e.mode = ?
)`
		args = append([]any{f.Workspace, f.Mode, f.ViewerID}, dateArgs...)
		args = append(args, f.Workspace, f.Mode)
		revWhere += " AND s.sviewer = ?"
	} else {
		ev = `ev AS (
	SELECT id, book_id, session_id, event_type, viewer_id, viewer_email, page_number,
		coalesce(active_ms, 0) AS ms, occurred_at, book_pages
	FROM ` + InteractionView + ` WHERE workspace = ? AND mode = ? AND session_id = ?
)`
		args = []any{f.Workspace, f.Mode, f.SessionID}
	}
	args = append(args, dateArgs...)
	if f.ViewerID != 0 {
		args = append(args, f.ViewerID)
	}
	query := `WITH ` + ev + `, sess AS (
	SELECT book_id, session_id, min(id) AS view_event_id,
		arg_max(viewer_id, id) FILTER (WHERE viewer_id IS NOT NULL) AS sviewer,
		arg_max(viewer_email, id) FILTER (WHERE viewer_id IS NOT NULL AND viewer_email <> '') AS semail
	FROM ev GROUP BY book_id, session_id
), rev AS MATERIALIZED (
	SELECT ev.*, s.view_event_id, s.sviewer, s.semail
	FROM ev JOIN sess s USING (book_id, session_id) ` + revWhere + `
), visits AS (
	SELECT book_id, session_id, any_value(view_event_id) AS view_event_id, min(occurred_at) AS started,
		max(occurred_at) AS ended, count(DISTINCT page_number) FILTER (WHERE ` + seg + `) AS pages,
		coalesce(sum(ms) FILTER (WHERE ` + seg + `), 0) AS ms, max(book_pages) AS book_pages,
		any_value(sviewer) AS viewer, arg_max(semail, id) AS email
	FROM rev GROUP BY book_id, session_id
), books AS (
	SELECT book_id, count(DISTINCT session_id) AS visits,
		count(DISTINCT page_number) FILTER (WHERE ` + seg + `) AS pages,
		coalesce(sum(ms) FILTER (WHERE ` + seg + `), 0) AS ms, max(book_pages) AS book_pages,
		max(occurred_at) AS last_visit, arg_max(sviewer, id) AS viewer, arg_max(semail, id) AS email
	FROM rev GROUP BY book_id
)
SELECT 'book', book_id, '', 0, visits, pages, ms, ` + engagementSQL("pages", "ms", "book_pages") + `, last_visit,
	last_visit, viewer, email
FROM books
UNION ALL
SELECT * FROM (SELECT 'visit', book_id, session_id, view_event_id, 1, pages, ms,
	` + engagementSQL("pages", "ms", "book_pages") + `, started, ended, viewer, email
	FROM visits ORDER BY started DESC, view_event_id DESC LIMIT ` + fmt.Sprint(MaxJourneyVisits) + `)`
	j := &Journey{Books: []JourneyBook{}, Visits: []JourneyVisit{}}
	var latest time.Time
	err := queryRows(ctx, q, "reader journey", query, args, func(rows *sql.Rows) error {
		var kind, book, session string
		var id, visits, pages, ms, score int64
		var t1, t2 time.Time
		var viewer sql.NullInt64
		var email sql.NullString
		if err := rows.Scan(&kind, &book, &session, &id, &visits, &pages, &ms, &score, &t1, &t2, &viewer, &email); err != nil {
			return fmt.Errorf("analytics reader journey: %w", err)
		}
		if kind == "visit" {
			j.Visits = append(j.Visits, JourneyVisit{BookID: book, SessionID: session, ViewEventID: id,
				StartedAt: t1, EndedAt: t2, PagesViewed: pages, ActiveMs: ms, Engagement: score})
			return nil
		}
		j.Books = append(j.Books, JourneyBook{BookID: book, Visits: visits, PagesViewed: pages, ActiveMs: ms,
			Engagement: score, LastVisit: t1})
		j.TotalVisits += visits
		j.TotalActiveMs += ms
		if viewer.Valid && !t1.Before(latest) {
			latest, j.ViewerID, j.ViewerEmail = t1, viewer.Int64, email.String
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(j.Books, func(x, y JourneyBook) int {
		return cmp.Or(y.LastVisit.Compare(x.LastVisit), strings.Compare(x.BookID, y.BookID))
	})
	slices.SortFunc(j.Visits, func(x, y JourneyVisit) int {
		return cmp.Or(x.StartedAt.Compare(y.StartedAt), cmp.Compare(x.ViewEventID, y.ViewEventID))
	})
	return j, nil
}

// OverallEngagement is the mean of the books' engagement scores, in hundredths rounded half
// up (0 with no books).
func (j *Journey) OverallEngagement() int64 {
	var sum int64
	for _, b := range j.Books {
		sum += b.Engagement
	}
	return avg(sum, int64(len(j.Books)))
}
