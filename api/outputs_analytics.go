package api

// The answers of the analytics operations (spec §4.4) besides the rows of package analytics
// (PageSummary, ReaderPage, ReaderSummary, SessionPage, BookFlow): the event lists of spec §2.8
// and the reader journey.

// ViewEvent is spec §2.8's view event: one reading session with its measures.
type ViewEvent struct {
	ID              int64           `json:"id"`
	BookID          string          `json:"book_id"`
	BookTitle       string          `json:"book_title"`
	ViewerID        *int64          `json:"viewer_id"`
	ViewerEmail     string          `json:"viewer_email"`
	SourceHost      *string         `json:"source_host"`
	FromEmbedded    bool            `json:"from_embedded"`
	Impressions     int64           `json:"impressions"`
	Reads           int64           `json:"reads"`
	Clicks          int64           `json:"clicks"`
	PagesViewed     int64           `json:"pages_viewed"`
	DurationSeconds int64           `json:"duration_seconds"`
	EngagementScore string          `json:"engagement_score"`
	Country         *string         `json:"country"`
	Region          *string         `json:"region"`
	City            *string         `json:"city"`
	Latitude        *float64        `json:"latitude"`
	Longitude       *float64        `json:"longitude"`
	TrackedLink     *TrackedLinkRef `json:"tracked_link"`
	SessionID       string          `json:"session_id"`
	RecordedAt      *string         `json:"recorded_at" format:"date-time"`
	UpdatedAt       *string         `json:"updated_at" format:"date-time"`
}

// TrackedLinkRef is the tracked link a view event is attributed to (only its id when the link
// was deleted since: name and slug are then empty).
type TrackedLinkRef struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// InteractionEvent is spec §2.8's interaction event.
type InteractionEvent struct {
	ID            int64    `json:"id"`
	BookID        string   `json:"book_id"`
	ViewerID      *int64   `json:"viewer_id"`
	ViewerEmail   string   `json:"viewer_email"`
	TrackedLinkID *int64   `json:"tracked_link_id"`
	SessionID     string   `json:"session_id"`
	EventType     string   `json:"event_type"`
	PageNumber    *int64   `json:"page_number"`
	ActiveMs      *int64   `json:"active_ms"`
	ActiveSeconds *float64 `json:"active_seconds"`
	ExitReason    string   `json:"exit_reason"`
	SourceType    string   `json:"source_type"`
	SourceHost    *string  `json:"source_host"`
	Country       *string  `json:"country"`
	Region        *string  `json:"region"`
	City          *string  `json:"city"`
	Latitude      *float64 `json:"latitude"`
	Longitude     *float64 `json:"longitude"`
	// Metadata is a form's fields as [{"name", "value"}] sorted by name, null when the event
	// has none.
	Metadata   []map[string]any `json:"metadata" type:"array|null"`
	URL        string           `json:"url" desc:"the URL a link_clicked or checkout_redirect_clicked event went to (empty for other events)"`
	OccurredAt *string          `json:"occurred_at" format:"date-time"`
	CreatedAt  *string          `json:"created_at" format:"date-time"`
}

// AuditEvent is spec §2.8's audit log event.
type AuditEvent struct {
	ID            string   `json:"id"`
	Source        string   `json:"source"`
	SourceEventID int64    `json:"source_event_id"`
	BookID        string   `json:"book_id"`
	ViewerID      *int64   `json:"viewer_id"`
	ViewerEmail   string   `json:"viewer_email"`
	EventType     string   `json:"event_type"`
	PageNumber    *int64   `json:"page_number"`
	ActiveMs      *int64   `json:"active_ms"`
	ActiveSeconds *float64 `json:"active_seconds"`
	Reason        string   `json:"reason"`
	// Metadata is the stored JSON as it is: null, an object, a string or an array.
	Metadata   any     `json:"metadata" type:"null|object|string|array"`
	OccurredAt *string `json:"occurred_at" format:"date-time"`
}

// Journey is spec §2.8's reader journey: one reader's or one anonymous session's activity
// across every book of the workspace. Every leaf value is a string.
type Journey struct {
	Viewer     JourneyViewer     `json:"viewer"`
	Aggregates JourneyAggregates `json:"aggregates"`
	Books      []JourneyBook     `json:"books"`
	Timeline   []JourneyVisit    `json:"timeline"`
}

// JourneyViewer is the journey's reader (empty strings for an anonymous session).
type JourneyViewer struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

// JourneyAggregates are the journey's totals.
type JourneyAggregates struct {
	TotalBooks             string `json:"total_books"`
	TotalPagesViewed       string `json:"total_pages_viewed"`
	TotalDurationSeconds   string `json:"total_duration_seconds"`
	OverallEngagementScore string `json:"overall_engagement_score"`
	TotalVisits            string `json:"total_visits"`
}

// JourneyBook is the journey's activity on one book.
type JourneyBook struct {
	BookID          string `json:"book_id"`
	Title           string `json:"title"`
	Visits          string `json:"visits"`
	PagesViewed     string `json:"pages_viewed"`
	DurationSeconds string `json:"duration_seconds"`
	EngagementScore string `json:"engagement_score"`
	LastVisit       string `json:"last_visit"`
}

// JourneyVisit is one visit (reading session) of the journey's timeline.
type JourneyVisit struct {
	ViewEventID     string `json:"view_event_id"`
	BookID          string `json:"book_id"`
	Title           string `json:"title"`
	SessionID       string `json:"session_id"`
	StartedAt       string `json:"started_at"`
	EndedAt         string `json:"ended_at"`
	PagesViewed     string `json:"pages_viewed"`
	DurationSeconds string `json:"duration_seconds"`
	EngagementScore string `json:"engagement_score"`
}
