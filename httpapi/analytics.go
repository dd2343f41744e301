package httpapi

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bytedance/sonic"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/ingest"
	"flipbook/storage"
)

// Analytics operations (spec §4.4): SQL over the DuckDB views (analytics/db.go), one book of
// the caller's tenant at a time (reader journey: every book of the tenant). Measures are defined
// in docs/ANALYTICS.md.

// analyticsTimeout bounds one analytics query.
const analyticsTimeout = 30 * time.Second

// parseDate reads the date parameter (DESIGN §11): one UTC day or an inclusive range of days.
// It returns [from, to).
func parseDate(s string) (time.Time, time.Time, error) {
	if s == "" {
		return time.Time{}, time.Time{}, nil
	}
	a, b, isRange := strings.Cut(s, "..")
	from, err := time.Parse(time.DateOnly, a)
	if err != nil {
		return time.Time{}, time.Time{}, api.FieldError("date", "must be YYYY-MM-DD or YYYY-MM-DD..YYYY-MM-DD")
	}
	to := from
	if isRange {
		if to, err = time.Parse(time.DateOnly, b); err != nil {
			return time.Time{}, time.Time{}, api.FieldError("date", "must be YYYY-MM-DD or YYYY-MM-DD..YYYY-MM-DD")
		}
		if to.Before(from) {
			return time.Time{}, time.Time{}, api.FieldError("date", "the range ends before it starts")
		}
	}
	return from, to.AddDate(0, 0, 1), nil
}

// analyticsService runs the analytics operations (spec §4.4) and the CSV exports (spec §4.5):
// books and viewers come from the store, events from DuckDB.
type analyticsService struct {
	Store     *storage.Store
	Analytics *analytics.DB
	cursors   *cursors
	// readersBatch is Config.ReadersExportBatch, which a test may lower on a running service.
	readersBatch *atomic.Int64
	log          *slog.Logger
}

// analyticsFilter builds the filter of a request: the caller's tenant, the book (404 when it is
// not the tenant's) and every filter parameter the operation declares.
func (s *analyticsService) analyticsFilter(r *api.Request, q *api.AnalyticsQuery, needBook bool) (analytics.Filter, *storage.Book, error) {
	t := r.Auth.Tenant
	f := analytics.Filter{Workspace: t.Workspace, Mode: string(byte(t.Mode))}
	var b *storage.Book
	if needBook {
		var err error
		b, err = s.Store.GetBook(t, q.BookRef())
		if err != nil {
			return f, nil, notFoundAs(err, "book")
		}
		f.BookID = b.RandomID
	}
	var err error
	if f.From, f.To, err = parseDate(q.Date); err != nil {
		return f, nil, err
	}
	f.ViewerID, f.TrackedLinkID = q.ViewerID, q.TrackedLinkID
	f.PageNumber = int32(q.PageNumber)
	f.SessionID = q.SessionID
	f.SourceHost = strings.ToLower(q.SourceHost)
	if q.EventType != "" {
		f.EventTypes = []string{q.EventType}
	}
	return f, b, nil
}

// keyset is a position in a list ordered by (time, id): the cursor's payload.
type keyset struct {
	at time.Time
	id int64
}

func (k keyset) bytes() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(k.at.UnixMicro()))
	return binary.BigEndian.AppendUint64(b, uint64(k.id))
}

func keysetFrom(b []byte) (keyset, bool) {
	if len(b) != 16 {
		return keyset{}, false
	}
	return keyset{at: time.UnixMicro(int64(binary.BigEndian.Uint64(b))).UTC(), id: int64(binary.BigEndian.Uint64(b[8:]))}, true
}

// filterBinding is what a cursor is bound to: the operation and every filter.
func filterBinding(op string, f analytics.Filter) string {
	return fmt.Sprintf("%s|%d|%s|%s|%d|%d|%d|%s|%d|%s|%s|%s", op, f.Workspace, f.Mode, f.BookID,
		f.From.Unix(), f.To.Unix(), f.ViewerID, f.SessionID, f.TrackedLinkID, f.SourceHost,
		strings.Join(f.EventTypes, ","), fmt.Sprint(f.PageNumber))
}

// pageQuery runs a keyset-paginated query: rows ordered by (timeCol, id) in dir ("ASC" or
// "DESC"), or by id alone when byID, limit+1 fetched to know whether another page follows.
// The date filter applies to timeCol. scan reads one row and returns its keyset position.
func (s *analyticsService) pageQuery(q *api.AnalyticsQuery, op, from, cols, timeCol string, byID bool, dir string, f analytics.Filter,
	scan func(*sql.Rows) (keyset, error)) (*api.CursorMeta, error) {
	where, args := f.Where(timeCol)
	binding := filterBinding(op, f)
	if q.Cursor != "" {
		payload, err := s.cursors.decode(binding, q.Cursor)
		k, ok := keysetFrom(payload)
		if err != nil || !ok {
			return nil, api.FieldError("cursor", "is not a cursor issued for this query; use meta.next_cursor of the previous page with the same filters")
		}
		cmp := "<"
		if dir == "ASC" {
			cmp = ">"
		}
		if byID {
			where += " AND id " + cmp + " ?"
			args = append(args, k.id)
		} else {
			where += fmt.Sprintf(" AND (%[1]s %[2]s ? OR (%[1]s = ? AND id %[2]s ?))", timeCol, cmp)
			args = append(args, k.at, k.at, k.id)
		}
	}
	limit := q.RowLimit()
	order := fmt.Sprintf("%s %s, id %s", timeCol, dir, dir)
	if byID {
		order = "id " + dir
	}
	sqlText := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %d", cols, from, where, order, limit+1)
	ctx, cancel := context.WithTimeout(context.Background(), analyticsTimeout)
	defer cancel()
	rows, err := s.Analytics.Query().QueryContext(ctx, sqlText, args...)
	if err != nil {
		return nil, fmt.Errorf("analytics %s: %w", op, err)
	}
	defer rows.Close()
	meta := &api.CursorMeta{Limit: limit}
	n := 0
	var last keyset
	for rows.Next() {
		if n == limit {
			meta.HasMore = true
			break
		}
		if last, err = scan(rows); err != nil {
			return nil, fmt.Errorf("analytics %s: %w", op, err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("analytics %s: %w", op, err)
	}
	if meta.HasMore {
		c := s.cursors.encode(binding, last.bytes())
		meta.NextCursor = &c
	}
	return meta, nil
}

func nullInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

func nullStr(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

func nullFloat(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	return &v.Float64
}

func seconds(ms sql.NullInt64) *float64 {
	if !ms.Valid {
		return nil
	}
	v := float64(ms.Int64) / 1000
	return &v
}

// formFields renders stored metadata (a JSON object) as the array of spec §2.8's interaction
// event: [{"name", "value"}] sorted by name; null when there is none.
func formFields(meta sql.NullString) []map[string]any {
	if !meta.Valid {
		return nil
	}
	var m map[string]any
	if err := sonic.UnmarshalString(meta.String, &m); err != nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]map[string]any, len(names))
	for i, k := range names {
		out[i] = map[string]any{"name": k, "value": m[k]}
	}
	return out
}

const interactionCols = `id, book_id, viewer_id, viewer_email, tracked_link_id, session_id, event_type,
	page_number, active_ms, exit_reason, source_type, source_host, country, region, city, latitude,
	longitude, metadata, url, occurred_at, created_at`

func scanInteraction(rows *sql.Rows) (api.InteractionEvent, keyset, error) {
	var e api.InteractionEvent
	var viewer, link, page, ms sql.NullInt64
	var host, country, region, city, meta sql.NullString
	var lat, lon sql.NullFloat64
	var occurred, created time.Time
	err := rows.Scan(&e.ID, &e.BookID, &viewer, &e.ViewerEmail, &link, &e.SessionID, &e.EventType, &page, &ms,
		&e.ExitReason, &e.SourceType, &host, &country, &region, &city, &lat, &lon, &meta, &e.URL, &occurred, &created)
	if err != nil {
		return e, keyset{}, err
	}
	e.ViewerID, e.TrackedLinkID, e.PageNumber, e.ActiveMs = nullInt(viewer), nullInt(link), nullInt(page), nullInt(ms)
	e.ActiveSeconds = seconds(ms)
	e.SourceHost, e.Country, e.Region, e.City = nullStr(host), nullStr(country), nullStr(region), nullStr(city)
	e.Latitude, e.Longitude = nullFloat(lat), nullFloat(lon)
	e.Metadata = formFields(meta)
	e.URL = ingest.SafeURL(e.URL) // one stored before intake refused it shows as ""
	e.OccurredAt, e.CreatedAt = fmtTime(occurred), fmtTime(created)
	return e, keyset{at: occurred, id: e.ID}, nil
}

// listInteractionEvents is GET /analytics/interaction-events: newest first (occurred_at, then
// id, descending).
func (s *analyticsService) ListInteractionEvents(r *api.Request, q *api.AnalyticsQuery) (*api.Reply[[]api.InteractionEvent, api.CursorMeta], error) {
	f, _, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	data := []api.InteractionEvent{}
	meta, err := s.pageQuery(q, "interaction-events", analytics.InteractionView, interactionCols, "occurred_at", false, "DESC", f,
		func(rows *sql.Rows) (keyset, error) {
			e, k, err := scanInteraction(rows)
			data = append(data, e)
			return k, err
		})
	if err != nil {
		return nil, err
	}
	return api.With(data, *meta), nil
}

const auditCols = `id, source, source_event_id, book_id, viewer_id, viewer_email, event_type, page_number,
	active_ms, reason, metadata, occurred_at`

func scanAudit(rows *sql.Rows) (api.AuditEvent, keyset, error) {
	var e api.AuditEvent
	var id int64
	var viewer, page, ms sql.NullInt64
	var meta sql.NullString
	var occurred time.Time
	if err := rows.Scan(&id, &e.Source, &e.SourceEventID, &e.BookID, &viewer, &e.ViewerEmail, &e.EventType, &page,
		&ms, &e.Reason, &meta, &occurred); err != nil {
		return e, keyset{}, err
	}
	e.ID = fmt.Sprintf("%s-%d", e.Source, id)
	e.ViewerID, e.PageNumber, e.ActiveMs, e.ActiveSeconds = nullInt(viewer), nullInt(page), nullInt(ms), seconds(ms)
	if meta.Valid {
		var v any
		if sonic.UnmarshalString(meta.String, &v) == nil {
			e.Metadata = v
		}
	}
	e.OccurredAt = fmtTime(occurred)
	return e, keyset{at: occurred, id: id}, nil
}

// listAuditLog is GET /analytics/audit-log: chronological (occurred_at, then id, ascending).
func (s *analyticsService) ListAuditLog(r *api.Request, q *api.AnalyticsQuery) (*api.Reply[[]api.AuditEvent, api.CursorMeta], error) {
	f, _, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	data := []api.AuditEvent{}
	meta, err := s.pageQuery(q, "audit-log", analytics.AuditView, auditCols, "occurred_at", false, "ASC", f,
		func(rows *sql.Rows) (keyset, error) {
			e, k, err := scanAudit(rows)
			data = append(data, e)
			return k, err
		})
	if err != nil {
		return nil, err
	}
	return api.With(data, *meta), nil
}

const viewEventCols = `id, book_id, viewer_id, viewer_email, source_host, from_embedded, impressions, reads,
	clicks, pages_viewed, duration_seconds, engagement_score, country, region, city, latitude, longitude,
	tracked_link_id, session_id, recorded_at, updated_at`

// linkRefs returns a lookup of a book's tracked links by id.
func (s *analyticsService) linkRefs(b *storage.Book) func(sql.NullInt64) *api.TrackedLinkRef {
	var byID map[int64]*api.TrackedLinkRef
	return func(id sql.NullInt64) *api.TrackedLinkRef {
		if !id.Valid {
			return nil
		}
		if byID == nil {
			byID = map[int64]*api.TrackedLinkRef{}
			if list, err := s.Store.TrackedLinks(b.Tenant(), b.RandomID); err == nil {
				for _, l := range list {
					byID[l.ID] = &api.TrackedLinkRef{ID: l.ID, Name: l.Name, Slug: l.Slug}
				}
			}
		}
		if ref, ok := byID[id.Int64]; ok {
			return ref
		}
		return &api.TrackedLinkRef{ID: id.Int64}
	}
}

// listViewEvents is GET /analytics/book-view-events: one record per reading session, newest
// session first (by id: a session's id is its first event's, so the order never changes).
func (s *analyticsService) ListViewEvents(r *api.Request, q *api.AnalyticsQuery) (*api.Reply[[]api.ViewEvent, api.CursorMeta], error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	link := s.linkRefs(b)
	data := []api.ViewEvent{}
	// The date applies to the session's start.
	meta, err := s.pageQuery(q, "book-view-events", analytics.SessionView, viewEventCols, "started_at", true, "DESC", f,
		func(rows *sql.Rows) (keyset, error) {
			var e api.ViewEvent
			var viewer, linkID sql.NullInt64
			var host, country, region, city sql.NullString
			var lat, lon sql.NullFloat64
			var recorded, updated time.Time
			if err := rows.Scan(&e.ID, &e.BookID, &viewer, &e.ViewerEmail, &host, &e.FromEmbedded, &e.Impressions,
				&e.Reads, &e.Clicks, &e.PagesViewed, &e.DurationSeconds, &e.EngagementScore, &country, &region, &city,
				&lat, &lon, &linkID, &e.SessionID, &recorded, &updated); err != nil {
				return keyset{}, err
			}
			e.BookTitle = b.Name
			e.ViewerID, e.SourceHost = nullInt(viewer), nullStr(host)
			e.Country, e.Region, e.City, e.Latitude, e.Longitude = nullStr(country), nullStr(region), nullStr(city), nullFloat(lat), nullFloat(lon)
			e.TrackedLink = link(linkID)
			e.RecordedAt, e.UpdatedAt = fmtTime(recorded), fmtTime(updated)
			data = append(data, e)
			return keyset{id: e.ID}, nil
		})
	if err != nil {
		return nil, err
	}
	return api.With(data, *meta), nil
}
