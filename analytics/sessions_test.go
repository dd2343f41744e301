package analytics

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/ingest"
)

// viewEvent is a row of SessionView as the tests read it.
type viewEvent struct {
	ID                                                   int64
	Book, Session                                        string
	Viewer                                               sql.NullInt64
	Email                                                string
	Host                                                 sql.NullString
	Embedded                                             bool
	Link                                                 sql.NullInt64
	Impressions, Reads, Clicks, Pages, ActiveMs, Seconds int64
	Score                                                string
	Country, City                                        sql.NullString
	Lat                                                  sql.NullFloat64
	Started, Recorded, Updated                           time.Time
}

func readViewEvents(t *testing.T, db *DB) map[string]viewEvent {
	t.Helper()
	// Through the query path the service uses (DB.Query), which never overlaps a compaction's
	// commit: this test's first read races the first compaction.
	rows, err := db.Query().QueryContext(context.Background(), `SELECT id, book_id, session_id, viewer_id, viewer_email, source_host,
		from_embedded, tracked_link_id, impressions, reads, clicks, pages_viewed, active_ms,
		duration_seconds, engagement_score, country, city, latitude, started_at, recorded_at, updated_at
		FROM `+SessionView+` ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]viewEvent{}
	for rows.Next() {
		var v viewEvent
		require.NoError(t, rows.Scan(&v.ID, &v.Book, &v.Session, &v.Viewer, &v.Email, &v.Host, &v.Embedded,
			&v.Link, &v.Impressions, &v.Reads, &v.Clicks, &v.Pages, &v.ActiveMs, &v.Seconds, &v.Score,
			&v.Country, &v.City, &v.Lat, &v.Started, &v.Recorded, &v.Updated))
		out[v.Book+"/"+v.Session] = v
	}
	require.NoError(t, rows.Err())
	return out
}

// TestViewEventMeasures checks every measure of SessionView (docs/ANALYTICS.md, "View events")
// against sessions computed by hand. The events of the first session arrive in two rounds with
// a compaction between them, so the session spans both tables.
func TestViewEventMeasures(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(2)
	c := startConsumer(t, db, log, WithCompaction(1, 8), withCompactEvery(5*time.Millisecond))
	defer c.Close()

	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	ev := func(book, sess, typ string, page int32, ms int64, sec int) ingest.Event {
		return ingest.Event{Workspace: 1, Mode: 'l', BookID: book, SessionID: sess, Type: typ, PageNumber: page,
			ActiveMs: ms, SourceType: "direct", BookPages: 10, OccurredAt: at(sec), ReceivedAt: at(sec + 1)}
	}
	appendAll := func(events ...ingest.Event) {
		t.Helper()
		require.NoError(t, log.Append(context.Background(), events))
		require.NoError(t, c.WaitFor(waitCtx(t, 10*time.Second), log.ends()))
	}

	// Session A, anonymous and direct, book of 10 pages: 3 distinct pages, 10,400 ms active
	// (page 2 twice), a link click and a checkout redirect click.
	appendAll(
		ev("bookA", "A", ingest.SessionStarted, 1, 0, 0),
		ev("bookA", "A", ingest.PageSegmentCompleted, 1, 3000, 3),
		ev("bookA", "A", ingest.PageSegmentCompleted, 2, 4000, 7),
	)
	first := readViewEvents(t, db)["bookA/A"]
	require.Eventually(t, func() bool { // compacted: the first round is in a sorted run
		var n int
		return db.Handle().QueryRow(`SELECT count(*) FROM `+RecentTable).Scan(&n) == nil && n == 0
	}, 10*time.Second, 5*time.Millisecond)

	linkClick := ev("bookA", "A", ingest.LinkClicked, 2, 0, 8)
	linkClick.URL = "https://example.com"
	checkout := ev("bookA", "A", ingest.CheckoutRedirectClicked, 3, 0, 12)
	checkout.URL = "https://shop.example.com"
	// Session B: an identified reader on an embedding site through a tracked link, located,
	// who reloaded (two starts) and read one page for 2 s of a 4-page book.
	b := func(typ string, page int32, ms int64, sec int) ingest.Event {
		e := ev("bookB", "B", typ, page, ms, sec)
		e.ViewerID, e.ViewerEmail, e.SourceHost, e.SourceType, e.TrackedLinkID = 7, "ada@example.com", "blog.example.com", "tracked_link", 5
		e.BookPages, e.Country, e.City, e.HasLatLong, e.Latitude, e.Longitude = 4, "DE", "Berlin", true, 52.52, 13.4
		return e
	}
	// Session C: no session_started, two pages of a 2-page book for 50 s each (capped at 100).
	cEv := func(page int32, ms int64, sec int) ingest.Event {
		e := ev("bookC", "C", ingest.PageSegmentCompleted, page, ms, sec)
		e.BookPages = 2
		return e
	}
	// Session D: book page count unknown, one page for 500 ms.
	d := ev("bookD", "D", ingest.PageSegmentCompleted, 1, 500, 1)
	d.BookPages = 0
	// Access events alone make no view event; the same session id in another book is another session.
	access := ev("bookE", "E", ingest.AccessRequested, 0, 0, 1)
	appendAll(
		ev("bookA", "A", ingest.PageSegmentCompleted, 2, 2000, 10),
		linkClick,
		ev("bookA", "A", ingest.PageSegmentCompleted, 3, 1400, 12),
		checkout,
		ev("bookA", "A", ingest.DocumentDownloaded, 3, 0, 13),
		ev("bookA", "A", ingest.SessionEnded, 3, 0, 14),
		b(ingest.SessionStarted, 1, 0, 100), b(ingest.SessionStarted, 1, 0, 160), b(ingest.PageSegmentCompleted, 1, 2000, 162),
		cEv(1, 50000, 50), cEv(2, 50000, 100),
		d, access,
		ev("bookC", "A", ingest.SessionStarted, 1, 0, 5),
	)
	got := readViewEvents(t, db)
	require.Len(t, got, 5, "%v", got)

	a := got["bookA/A"]
	require.Equal(t, first.ID, a.ID, "a session's id does not change as its events arrive")
	require.Equal(t, viewEvent{ID: a.ID, Book: "bookA", Session: "A", Impressions: 1, Reads: 1, Clicks: 2, Pages: 3,
		ActiveMs: 10400, Seconds: 10, Score: "20.20", // 100 × (0.5 × 3/10 + 0.5 × 10.4 s / (10 × 10 s))
		Started: at(0), Recorded: at(1), Updated: at(15)}, a)

	bb := got["bookB/B"]
	require.Equal(t, viewEvent{ID: bb.ID, Book: "bookB", Session: "B", Viewer: sql.NullInt64{Int64: 7, Valid: true},
		Email: "ada@example.com", Host: sql.NullString{String: "blog.example.com", Valid: true}, Embedded: true,
		Link: sql.NullInt64{Int64: 5, Valid: true}, Impressions: 2, Reads: 0, Clicks: 0, Pages: 1, ActiveMs: 2000,
		Seconds: 2, Score: "15.00", // 100 × (0.5 × 1/4 + 0.5 × 2 s / 40 s)
		Country: sql.NullString{String: "DE", Valid: true}, City: sql.NullString{String: "Berlin", Valid: true},
		Lat: sql.NullFloat64{Float64: 52.52, Valid: true}, Started: at(100), Recorded: at(101), Updated: at(163)}, bb)

	cc := got["bookC/C"]
	require.Equal(t, [6]int64{1, 1, 0, 2, 100000, 100}, [6]int64{cc.Impressions, cc.Reads, cc.Clicks, cc.Pages, cc.ActiveMs, cc.Seconds})
	require.Equal(t, "100.00", cc.Score)

	dd := got["bookD/D"]
	require.Equal(t, [5]int64{1, 0, 1, 500, 1}, [5]int64{dd.Impressions, dd.Reads, dd.Pages, dd.ActiveMs, dd.Seconds})
	require.Equal(t, "52.50", dd.Score, "unknown page count: the pages viewed are the book") // 100 × (0.5 × 1 + 0.5 × 0.5 s / 10 s)

	other := got["bookC/A"]
	require.Equal(t, [4]int64{1, 0, 0, 0}, [4]int64{other.Impressions, other.Reads, other.Pages, other.Seconds})
	require.Equal(t, "0.00", other.Score)
	require.NotContains(t, got, "bookE/E")
}

// TestSchemaVersion1Migrates: a database written by schema version 1 (no book_pages) opens,
// keeps its rows, gets the new column (after run in the sorted table), and takes new batches
// and compactions with the columns in their new places.
func TestSchemaVersion1Migrates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOldDatabase(t, dir, "book_pages", func(defs string) []string {
		return []string{
			`CREATE TABLE schema_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)`,
			`INSERT INTO schema_meta VALUES ('version', '1')`,
			`CREATE TABLE ` + RecentTable + ` (` + defs + `)`,
			`CREATE TABLE ` + legacySortedTable + ` (` + defs + `, run BIGINT NOT NULL)`,
			`INSERT INTO ` + legacySortedTable + ` (id, workspace, mode, book_id, session_id, event_type, viewer_email,
				source_type, url, exit_reason, reason, occurred_at, created_at, page_number, active_ms, run)
				VALUES (1, 1, 'l', 'old', 's', 'page_segment_completed', '', 'direct', '', '', '',
				TIMESTAMP '2026-01-01 00:00:00', TIMESTAMP '2026-01-01 00:00:00', 1, 4000, 1)`,
		}
	})

	db := openTestDB(t, dir)
	defer db.Close()
	var version string
	require.NoError(t, db.Handle().QueryRow(`SELECT value FROM schema_meta WHERE key = 'version'`).Scan(&version))
	require.Equal(t, strconv.Itoa(SchemaVersion), version)
	checkRuns(t, db)

	log := newMemLog(1)
	c := startConsumer(t, db, log, WithCompaction(1, 8), withCompactEvery(5*time.Millisecond))
	defer c.Close()
	now := time.Now().UTC()
	require.NoError(t, log.Append(context.Background(), []ingest.Event{{Workspace: 1, Mode: 'l', BookID: "new",
		SessionID: "s", Type: ingest.PageSegmentCompleted, PageNumber: 2, ActiveMs: 1000, SourceType: "direct",
		BookPages: 8, OccurredAt: now, ReceivedAt: now}}))
	require.NoError(t, c.WaitFor(waitCtx(t, 10*time.Second), log.ends()))
	require.Eventually(t, func() bool {
		var n int
		return db.Handle().QueryRow(`SELECT count(*) FROM `+RecentTable).Scan(&n) == nil && n == 0
	}, 10*time.Second, 5*time.Millisecond, "compacted into a run")

	rows, err := db.Query().QueryContext(context.Background(), `SELECT book_id, book_pages, page_number, active_ms, event_type FROM `+EventsView+` ORDER BY book_id`)
	require.NoError(t, err)
	defer rows.Close()
	var got []string
	for rows.Next() {
		var book, typ string
		var pages sql.NullInt32
		var page, ms int64
		require.NoError(t, rows.Scan(&book, &pages, &page, &ms, &typ))
		got = append(got, strings.Join([]string{book, nullInt(pages), itoa(page), itoa(ms), typ}, " "))
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"new 8 2 1000 page_segment_completed", "old NULL 1 4000 page_segment_completed"}, got)
}

func nullInt(v sql.NullInt32) string {
	if !v.Valid {
		return "NULL"
	}
	return itoa(int64(v.Int32))
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
