// Package ingest is reader-event intake: the event type, validation of collector batches, and
// the event log (one interface, two implementations: an embedded durable log in Pebble and
// Kafka) that the analytics consumer reads into DuckDB.
package ingest

import (
	"net/url"
	"strings"
	"time"
)

// Interaction event types (spec §2.8).
const (
	SessionStarted          = "session_started"
	PageSegmentCompleted    = "page_segment_completed"
	LinkClicked             = "link_clicked"
	DocumentDownloaded      = "document_downloaded"
	LeadFormSubmitted       = "lead_form_submitted"
	FormWidgetOpened        = "form_widget_opened"
	CheckoutWidgetOpened    = "checkout_widget_opened"
	CheckoutRedirectClicked = "checkout_redirect_clicked"
	SessionEnded            = "session_ended"
)

// Access events, recorded by the email gate (audit log only).
const (
	AccessRequested = "access_requested"
	AccessGranted   = "access_granted"
	AccessRejected  = "access_rejected"
)

// InteractionTypes are the interaction event types of the spec (§2.8): those the analytics
// operations list and aggregate.
var InteractionTypes = []string{SessionStarted, PageSegmentCompleted, LinkClicked, DocumentDownloaded,
	LeadFormSubmitted, FormWidgetOpened, CheckoutWidgetOpened, CheckoutRedirectClicked, SessionEnded}

// PageClicked is an extension event (issue 29): where on a page a reader clicked or tapped,
// as page fractions with the zoom, kept in the event's metadata ({"x", "y", "zoom"}). It feeds
// the page heatmap only: the spec's views and aggregates read InteractionTypes.
const PageClicked = "page_clicked"

// CollectTypes are the event types a viewer may post to the collector.
var CollectTypes = append(append([]string(nil), InteractionTypes...), PageClicked)

// Event is one reader event as it travels through the log. Every field is set by the service
// (the collector or the access gate) from a validated request; nothing here is trusted input.
type Event struct {
	Workspace int64  `json:"ws"`
	Mode      byte   `json:"mode"` // 'l' live, 't' test
	BookID    string `json:"book"` // random_id
	SessionID string `json:"session"`
	Type      string `json:"type"`
	// ViewerID is the identified reader (email gate or lead form), 0 for anonymous traffic.
	ViewerID      int64  `json:"viewer,omitempty"`
	ViewerEmail   string `json:"email,omitempty"`
	TrackedLinkID int64  `json:"link,omitempty"`
	SourceHost    string `json:"host,omitempty"` // embedding site, when embedded
	SourceType    string `json:"source"`         // "direct", "embed" or "tracked_link"
	PageNumber    int32  `json:"page,omitempty"`
	ActiveMs      int64  `json:"ms,omitempty"`
	URL           string `json:"url,omitempty"`    // link_clicked
	ExitReason    string `json:"exit,omitempty"`   // session_ended
	Reason        string `json:"reason,omitempty"` // access events: why granted or rejected
	Metadata      string `json:"meta,omitempty"`   // JSON object (lead form fields, ...), "" when none
	// BookPages is the book's page count when the event was collected (the denominator of
	// a session's reach; 0 when unknown).
	BookPages int32  `json:"pages,omitempty"`
	Country   string `json:"country,omitempty"`
	Region    string `json:"region,omitempty"`
	City      string `json:"city,omitempty"`
	// HasLatLong says Latitude and Longitude are known (0,0 is a place too).
	HasLatLong bool      `json:"hasll,omitempty"`
	Latitude   float64   `json:"lat,omitempty"`
	Longitude  float64   `json:"lon,omitempty"`
	OccurredAt time.Time `json:"at"`       // client time (or server time when not given)
	ReceivedAt time.Time `json:"received"` // server time
}

// Record is an event read back from the log with its position.
type Record struct {
	Partition int
	Offset    uint64 // position within the partition, from 0, dense
	Event     Event
}

// ID is the stable integer id of the event stored from this record: the same record always
// gets the same id, so a replayed batch cannot create a second row with another id.
func (r Record) ID() int64 { return int64(r.Offset)<<10 | int64(r.Partition) }

// MaxPartitions bounds partitions so that Record.ID stays unique.
const MaxPartitions = 1024

// LinkURLSchemes are the schemes a reader event's URL may have: web pages (http, https) and the
// mailto: and tel: links a document's link areas hold. Anything else (javascript:, data:,
// vbscript:, file:, a relative reference) is refused at intake and never reaches analytics,
// exports or webhooks (issue 25).
var LinkURLSchemes = []string{"http", "https", "mailto", "tel"}

// URLProblem is why u may not be a reader event's URL, "" when it may: an absolute URL of a
// LinkURLSchemes scheme, in printable ASCII (browsers send URLs percent-encoded), http and https
// with a host and no credentials, mailto and tel with something after the colon.
func URLProblem(u string) string {
	const msg = "must be an absolute http, https, mailto or tel URL"
	for i := 0; i < len(u); i++ {
		if u[i] <= 0x20 || u[i] >= 0x7f {
			return msg + " (percent-encoded: no spaces, control or non-ASCII characters)"
		}
	}
	colon := strings.IndexByte(u, ':')
	if colon <= 0 {
		return msg
	}
	scheme, rest := strings.ToLower(u[:colon]), u[colon+1:]
	switch scheme {
	case "http", "https":
		p, err := url.Parse(u)
		if err != nil || p.Host == "" || p.User != nil || !strings.HasPrefix(rest, "//") {
			return msg
		}
	case "mailto", "tel":
		if rest == "" {
			return msg
		}
	default:
		return msg
	}
	return ""
}

// SafeURL is u when URLProblem accepts it, else "": what an answer shows of a URL stored
// before the rule held.
func SafeURL(u string) string {
	if u == "" || URLProblem(u) != "" {
		return ""
	}
	return u
}
