package httpapi

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bytedance/sonic"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/ingest"
	"flipbook/storage"
)

// CSV exports (spec §4.5): one book of the caller's tenant, the rows of the matching JSON
// operation (same filters, same order, same values; docs/API.md "Exports" lists every
// export's columns), streamed as DuckDB produces them (analytics/export.go, csv.go, stream.go).

// csvContentType is the Content-Type of every export.
const csvContentType = "text/csv; charset=utf-8"

// exportDef is one export's query and columns.
type exportDef struct {
	name    string // in the file name: <book>-<name>-<YYYY-MM-DD>.csv
	from    string // the view
	timeCol string // the date filter's column (and the order, unless byID)
	desc    bool
	byID    bool
	cols    []csvColumn
}

// runExport starts an export and returns it as a streamed result. The first batch is read here,
// so a failing query answers with the JSON error envelope.
func (s *analyticsService) runExport(r *api.Request, b *storage.Book, f analytics.Filter, d exportDef) (*api.Result, error) {
	// The context only bounds the wait for a connection; DuckDB never sees it.
	ctx, cancel := context.WithTimeout(context.Background(), analyticsTimeout)
	defer cancel()
	rows, err := s.Analytics.Export(ctx, analytics.ExportQuery{From: d.from, Columns: selectList(d.cols), Filter: f,
		TimeCol: d.timeCol, Desc: d.desc, ByID: d.byID})
	if errors.Is(err, analytics.ErrExportsBusy) {
		return nil, errExportsBusy()
	}
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", d.name, err)
	}
	st, err := newCSVStream(rows, d.cols)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", d.name, err)
	}
	return &api.Result{Stream: st, ContentType: csvContentType,
		Filename: b.RandomID + "-" + d.name + "-" + r.Now.UTC().Format(time.DateOnly) + ".csv"}, nil
}

// Columns. Names are the JSON records' field names (spec §2.8) where the export is such a
// record; docs/API.md "Exports" documents each list, and testdata/exports/*.golden.csv pins the
// header rows.

// interactionColumns: spec §2.8's interaction event, in the JSON operation's field order.
func interactionColumns() []csvColumn {
	return []csvColumn{
		{name: "id"}, {name: "book_id"}, {name: "viewer_id"}, {name: "viewer_email"}, {name: "tracked_link_id"},
		{name: "session_id"}, {name: "event_type"}, {name: "page_number"}, {name: "active_ms"},
		{name: "active_seconds", sql: "active_ms / 1000"},
		{name: "exit_reason"}, {name: "source_type"}, {name: "source_host"},
		{name: "country"}, {name: "region"}, {name: "city"}, {name: "latitude"}, {name: "longitude"},
		{name: "metadata", bind: bindString(formFieldsText)},
		{name: "url", bind: bindString(ingest.SafeURL)}, {name: "occurred_at"}, {name: "created_at"},
	}
}

// auditColumns: spec §2.8's audit log event.
func auditColumns() []csvColumn {
	return []csvColumn{
		{name: "id", sql: "source || '-' || CAST(id AS VARCHAR)"}, {name: "source"}, {name: "source_event_id"},
		{name: "book_id"}, {name: "viewer_id"}, {name: "viewer_email"}, {name: "event_type"}, {name: "page_number"},
		{name: "active_ms"}, {name: "active_seconds", sql: "active_ms / 1000"}, {name: "reason"},
		{name: "metadata", bind: bindString(objectText)}, {name: "occurred_at"},
	}
}

// leadColumns: one lead form submission per row; the form's fields as a JSON object, and its
// email and name fields (matched case-insensitively) in their own columns.
func leadColumns() []csvColumn {
	return []csvColumn{
		{name: "id"}, {name: "book_id"}, {name: "session_id"}, {name: "viewer_id"}, {name: "viewer_email"},
		{name: "email", sql: "metadata", bind: bindString(formField("email"))},
		{name: "name", sql: "metadata", bind: bindString(formField("name"))},
		{name: "fields", sql: "metadata", bind: bindString(objectText)},
		{name: "page_number"}, {name: "tracked_link_id"}, {name: "source_type"}, {name: "source_host"},
		{name: "country"}, {name: "region"}, {name: "city"}, {name: "occurred_at"}, {name: "created_at"},
	}
}

// viewEventColumns: spec §2.8's view event, its tracked_link object as three columns.
func (s *analyticsService) viewEventColumns(b *storage.Book) []csvColumn {
	link := s.linkRefs(b)
	linkField := func(get func(*api.TrackedLinkRef) string) cellBinder {
		return bindInt(func(id int64, ok bool) string {
			if ref := link(sql.NullInt64{Int64: id, Valid: ok}); ref != nil {
				return get(ref)
			}
			return ""
		})
	}
	return []csvColumn{
		{name: "id"}, {name: "book_id"}, {name: "book_title", sql: "NULL", bind: constant(b.Name)},
		{name: "viewer_id"}, {name: "viewer_email"}, {name: "source_host"}, {name: "from_embedded"},
		{name: "impressions"}, {name: "reads"}, {name: "clicks"}, {name: "pages_viewed"}, {name: "duration_seconds"},
		{name: "engagement_score"}, {name: "country"}, {name: "region"}, {name: "city"}, {name: "latitude"}, {name: "longitude"},
		{name: "tracked_link_id"},
		{name: "tracked_link_name", sql: "tracked_link_id", bind: linkField(func(r *api.TrackedLinkRef) string { return r.Name })},
		{name: "tracked_link_slug", sql: "tracked_link_id", bind: linkField(func(r *api.TrackedLinkRef) string { return r.Slug })},
		{name: "session_id"}, {name: "recorded_at"}, {name: "updated_at"},
	}
}

// formFieldsText is the interaction event's metadata as the JSON operation shows it: the form's
// fields as [{"name", "value"}] sorted by name ("" when the stored value is not an object).
func formFieldsText(raw string) string {
	return jsonText(formFields(sql.NullString{String: raw, Valid: true}))
}

// objectText is stored metadata (a JSON object) as the JSON operations show it.
func objectText(raw string) string {
	var v any
	if sonic.UnmarshalString(raw, &v) != nil {
		return ""
	}
	return jsonText(v)
}

// formField is the value of one form field (the first key equal to name ignoring case):
// strings as they are, other values as JSON; "" when the form has no such field.
func formField(name string) func(raw string) string {
	return func(raw string) string {
		var m map[string]any
		if sonic.UnmarshalString(raw, &m) != nil {
			return ""
		}
		v, ok := m[name]
		if !ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				if strings.EqualFold(k, name) {
					keys = append(keys, k)
				}
			}
			if len(keys) == 0 {
				return ""
			}
			v = m[minString(keys)]
		}
		if s, ok := v.(string); ok {
			return s
		}
		if v == nil {
			return ""
		}
		return jsonText(v)
	}
}

func minString(ss []string) string {
	m := ss[0]
	for _, s := range ss[1:] {
		m = min(m, s)
	}
	return m
}

// jsonText is v encoded as the responses encode it ("" for nil).
func jsonText(v any) string {
	if v == nil {
		return ""
	}
	if l, ok := v.([]map[string]any); ok && l == nil {
		return ""
	}
	b, err := respJSON.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func (s *analyticsService) ExportInteractionEvents(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	return s.runExport(r, b, f, exportDef{name: "interaction-events", from: analytics.InteractionView,
		timeCol: "occurred_at", desc: true, cols: interactionColumns()})
}

func (s *analyticsService) ExportAuditLog(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	return s.runExport(r, b, f, exportDef{name: "audit-log", from: analytics.AuditView,
		timeCol: "occurred_at", cols: auditColumns()})
}

func (s *analyticsService) ExportAccessAudit(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	if len(f.EventTypes) == 0 {
		f.EventTypes = api.AccessTypes
	}
	return s.runExport(r, b, f, exportDef{name: "access-audit", from: analytics.AuditView,
		timeCol: "occurred_at", cols: auditColumns()})
}

func (s *analyticsService) ExportLeads(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	f.EventTypes = []string{ingest.LeadFormSubmitted}
	return s.runExport(r, b, f, exportDef{name: "leads", from: analytics.InteractionView,
		timeCol: "occurred_at", cols: leadColumns()})
}

func (s *analyticsService) ExportAnalytics(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	if q.Source == "interaction_events" {
		return s.runExport(r, b, f, exportDef{name: "analytics-interaction-events", from: analytics.InteractionView,
			timeCol: "occurred_at", desc: true, cols: interactionColumns()})
	}
	// View events: newest session first; the date applies to the session's start (as GET
	// /analytics/book-view-events).
	return s.runExport(r, b, f, exportDef{name: "analytics-view-events", from: analytics.SessionView,
		timeCol: "started_at", desc: true, byID: true, cols: s.viewEventColumns(b)})
}
