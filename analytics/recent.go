package analytics

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"flipbook/ingest"
)

// RecentEvent is a stored reader event with its id (the webhook sample payloads).
type RecentEvent struct {
	ID    int64
	Event ingest.Event
}

// RecentEvents returns a tenant's newest events of the given reader event types, at most
// perType of each, newest first. It reads every stored event of the tenant of those types
// (a configuration-time call, not a hot path).
func (r Reader) RecentEvents(ctx context.Context, workspace int64, mode string, types []string, perType int) ([]RecentEvent, error) {
	if len(types) == 0 || perType <= 0 {
		return nil, nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(types)), ", ")
	args := []any{workspace, mode}
	for _, t := range types {
		args = append(args, t)
	}
	args = append(args, perType)
	q := `SELECT id, book_id, session_id, event_type, coalesce(viewer_id, 0), viewer_email,
		coalesce(tracked_link_id, 0), coalesce(source_type, ''), coalesce(source_host, ''),
		coalesce(page_number, 0), coalesce(active_ms, 0), url, exit_reason, reason,
		coalesce(metadata, ''), coalesce(country, ''), coalesce(region, ''), coalesce(city, ''),
		occurred_at, created_at
	FROM (SELECT *, row_number() OVER (PARTITION BY event_type ORDER BY id DESC) AS rn
		FROM events WHERE workspace = ? AND mode = ? AND event_type IN (` + ph + `))
	WHERE rn <= ? ORDER BY id DESC`
	rows, err := r.QueryContext(ctx, q, args...)
	return collect(rows, err, func(rows *sql.Rows) (RecentEvent, error) {
		var e RecentEvent
		ev := &e.Event
		var occurred, created time.Time
		err := rows.Scan(&e.ID, &ev.BookID, &ev.SessionID, &ev.Type, &ev.ViewerID, &ev.ViewerEmail,
			&ev.TrackedLinkID, &ev.SourceType, &ev.SourceHost, &ev.PageNumber, &ev.ActiveMs, &ev.URL,
			&ev.ExitReason, &ev.Reason, &ev.Metadata, &ev.Country, &ev.Region, &ev.City, &occurred, &created)
		ev.Workspace = workspace
		if mode != "" {
			ev.Mode = mode[0]
		}
		ev.OccurredAt, ev.ReceivedAt = occurred.UTC(), created.UTC()
		return e, err
	})
}
