package analytics

import (
	"strings"
	"time"
)

// Filter selects one tenant's events for an analytics query (spec §4.4 parameters). The zero
// value of each optional field means "no condition". Build turns it into a WHERE clause over
// one of the views, with placeholders, never with values spliced into the SQL.
type Filter struct {
	Workspace int64
	Mode      string // "l" or "t"
	BookID    string // "" for every book of the tenant (reader journey)
	// From and To bound occurred_at: From ≤ t < To (zero: open).
	From, To      time.Time
	ViewerID      int64 // 0: any
	SessionID     string
	TrackedLinkID int64
	PageNumber    int32
	SourceHost    string
	EventTypes    []string
}

// Where is the filter as a SQL condition (no "WHERE") and its arguments. timeCol is the column
// the date range applies to (occurred_at for events, started_at for view events).
func (f Filter) Where(timeCol string) (string, []any) {
	conds := []string{"workspace = ?", "mode = ?"}
	args := []any{f.Workspace, f.Mode}
	add := func(cond string, v any) {
		conds = append(conds, cond)
		args = append(args, v)
	}
	if f.BookID != "" {
		add("book_id = ?", f.BookID)
	}
	if !f.From.IsZero() {
		add(timeCol+" >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		add(timeCol+" < ?", f.To.UTC())
	}
	if f.ViewerID != 0 {
		add("viewer_id = ?", f.ViewerID)
	}
	if f.SessionID != "" {
		add("session_id = ?", f.SessionID)
	}
	if f.TrackedLinkID != 0 {
		add("tracked_link_id = ?", f.TrackedLinkID)
	}
	if f.PageNumber != 0 {
		add("page_number = ?", f.PageNumber)
	}
	if f.SourceHost != "" {
		add("source_host = ?", f.SourceHost)
	}
	if len(f.EventTypes) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?, ", len(f.EventTypes)), ", ")
		conds = append(conds, "event_type IN ("+ph+")")
		for _, t := range f.EventTypes {
			args = append(args, t)
		}
	}
	return strings.Join(conds, " AND "), args
}
