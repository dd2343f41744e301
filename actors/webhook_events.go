package actors

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"flipbook/ingest"
	"flipbook/storage"
)

// Webhook event types of spec §6.1, in the options operation's order.
const (
	WebhookAccessRequested   = "access_requested"
	WebhookAccessGranted     = "access_granted"
	WebhookAccessDenied      = "access_denied"
	WebhookFlipbookOpened    = "flipbook_opened"
	WebhookPageDwelled       = "page_dwelled"
	WebhookLinkClicked       = "link_clicked"
	WebhookDownloadRequested = "download_requested"
	WebhookCTASubmitted      = "cta_submitted"
	WebhookSessionEnded      = "session_ended"
)

// WebhookEventTypes are the nine subscription event types with their labels.
var WebhookEventTypes = []struct{ Value, Label string }{
	{WebhookAccessRequested, "Access requested"},
	{WebhookAccessGranted, "Access granted"},
	{WebhookAccessDenied, "Access denied"},
	{WebhookFlipbookOpened, "Flipbook opened"},
	{WebhookPageDwelled, "Page dwelled"},
	{WebhookLinkClicked, "Link clicked"},
	{WebhookDownloadRequested, "Download requested"},
	{WebhookCTASubmitted, "Call to action submitted"},
	{WebhookSessionEnded, "Session ended"},
}

// WebhookTypeOf maps a reader event type to its subscription event type ("" when the event is
// not pushed: form_widget_opened). docs/WEBHOOKS.md documents the mapping.
func WebhookTypeOf(readerType string) string {
	switch readerType {
	case ingest.SessionStarted:
		return WebhookFlipbookOpened
	case ingest.PageSegmentCompleted:
		return WebhookPageDwelled
	case ingest.LinkClicked:
		return WebhookLinkClicked
	case ingest.DocumentDownloaded:
		return WebhookDownloadRequested
	case ingest.LeadFormSubmitted, ingest.CheckoutWidgetOpened, ingest.CheckoutRedirectClicked:
		return WebhookCTASubmitted
	case ingest.SessionEnded:
		return WebhookSessionEnded
	case ingest.AccessRequested:
		return WebhookAccessRequested
	case ingest.AccessGranted:
		return WebhookAccessGranted
	case ingest.AccessRejected:
		return WebhookAccessDenied
	}
	return ""
}

// ReaderTypesOf are the reader event types that map to a subscription event type.
func ReaderTypesOf(webhookType string) []string {
	var out []string
	for _, t := range append(append([]string{}, ingest.InteractionTypes...), ingest.AccessRequested, ingest.AccessGranted, ingest.AccessRejected) {
		if WebhookTypeOf(t) == webhookType {
			out = append(out, t)
		}
	}
	return out
}

// WebhookPayload is the signed body of a delivery (docs/WEBHOOKS.md has an example of every
// type).
type WebhookPayload struct {
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	CreatedAt time.Time   `json:"created_at"`
	Livemode  bool        `json:"livemode"`
	Test      bool        `json:"test,omitempty"`
	Data      PayloadData `json:"data"`
}

// PayloadData is what happened, to which book, by which reader.
type PayloadData struct {
	Book            PayloadBook     `json:"book"`
	SessionID       string          `json:"session_id"`
	Reader          PayloadReader   `json:"reader"`
	TrackedLinkID   *int64          `json:"tracked_link_id"`
	Source          PayloadSource   `json:"source"`
	Location        *PayloadPlace   `json:"location"`
	ReaderEventType string          `json:"reader_event_type"`
	PageNumber      *int32          `json:"page_number,omitempty"`
	ActiveSeconds   *float64        `json:"active_seconds,omitempty"`
	URL             string          `json:"url,omitempty"`
	ExitReason      string          `json:"exit_reason,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	CTA             *PayloadCTA     `json:"cta,omitempty"`
	Fields          json.RawMessage `json:"fields,omitempty"`
}

type PayloadBook struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

type PayloadReader struct {
	ViewerID *int64  `json:"viewer_id"`
	Email    *string `json:"email"`
}

type PayloadSource struct {
	Type string  `json:"type"`
	Host *string `json:"host"`
}

type PayloadPlace struct {
	Country string `json:"country,omitempty"`
	Region  string `json:"region,omitempty"`
	City    string `json:"city,omitempty"`
}

// PayloadCTA says which call to action was used.
type PayloadCTA struct {
	Kind string `json:"kind"` // lead_form, checkout_widget, checkout_redirect
}

// EventID is the public id of a reader event (stable: derived from its log position).
func EventID(id int64) string { return "evt_" + strconv.FormatInt(id, 10) }

// BuildPayload renders the subscription payload of a reader event. title is the book's name,
// bookURL its viewer address.
func BuildPayload(id int64, ev *ingest.Event, title, bookURL string) WebhookPayload {
	p := WebhookPayload{ID: EventID(id), Type: WebhookTypeOf(ev.Type), CreatedAt: ev.OccurredAt.UTC(),
		Livemode: ev.Mode != byte(storage.ModeTest)}
	d := &p.Data
	d.Book = PayloadBook{ID: ev.BookID, Title: title, URL: bookURL}
	d.SessionID = ev.SessionID
	d.ReaderEventType = ev.Type
	if ev.ViewerID != 0 {
		v := ev.ViewerID
		d.Reader.ViewerID = &v
	}
	if ev.ViewerEmail != "" {
		e := ev.ViewerEmail
		d.Reader.Email = &e
	}
	if ev.TrackedLinkID != 0 {
		l := ev.TrackedLinkID
		d.TrackedLinkID = &l
	}
	d.Source.Type = ev.SourceType
	if d.Source.Type == "" {
		d.Source.Type = "direct"
	}
	if ev.SourceHost != "" {
		h := ev.SourceHost
		d.Source.Host = &h
	}
	if ev.Country != "" || ev.Region != "" || ev.City != "" {
		d.Location = &PayloadPlace{Country: ev.Country, Region: ev.Region, City: ev.City}
	}
	if ev.PageNumber != 0 {
		n := ev.PageNumber
		d.PageNumber = &n
	}
	switch ev.Type {
	case ingest.PageSegmentCompleted:
		s := float64(ev.ActiveMs) / 1000
		d.ActiveSeconds = &s
	case ingest.LinkClicked:
		d.URL = ingest.SafeURL(ev.URL) // a URL stored before intake refused it is left out
	case ingest.SessionEnded:
		d.ExitReason = ev.ExitReason
	case ingest.AccessRequested, ingest.AccessGranted, ingest.AccessRejected:
		d.Reason = ev.Reason
	case ingest.LeadFormSubmitted:
		d.CTA = &PayloadCTA{Kind: "lead_form"}
	case ingest.CheckoutWidgetOpened:
		d.CTA = &PayloadCTA{Kind: "checkout_widget"}
	case ingest.CheckoutRedirectClicked:
		d.CTA = &PayloadCTA{Kind: "checkout_redirect"}
		d.URL = ev.URL
	}
	if d.CTA != nil && strings.HasPrefix(ev.Metadata, "{") && json.Valid([]byte(ev.Metadata)) {
		d.Fields = json.RawMessage(ev.Metadata)
	}
	return p
}

// Matches reports whether a subscription takes an event of webhook type typ.
func webhookMatches(w *storage.WebhookSubscription, typ string, ev *ingest.Event) bool {
	// Only events the service received while the subscription was active.
	if !activeAt(w, ev.ReceivedAt) {
		return false
	}
	found := false
	for _, t := range w.EventTypes {
		if t == typ {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	f := &w.Filters
	if len(f.BookIDs) > 0 && !containsStr(f.BookIDs, ev.BookID) {
		return false
	}
	if len(f.TrackedLinkIDs) > 0 {
		ok := false
		for _, id := range f.TrackedLinkIDs {
			if id == ev.TrackedLinkID {
				ok = true
				break
			}
		}
		if !ok || ev.TrackedLinkID == 0 {
			return false
		}
	}
	if len(f.RecipientEmails) > 0 && (ev.ViewerEmail == "" || !containsStr(f.RecipientEmails, strings.ToLower(ev.ViewerEmail))) {
		return false
	}
	return true
}

// activeAt reports whether the subscription was active at t (its current period or a recent
// earlier one).
func activeAt(w *storage.WebhookSubscription, t time.Time) bool {
	if !t.Before(w.ActiveFrom) && (w.ActiveUntil == nil || t.Before(*w.ActiveUntil)) {
		return true
	}
	for _, p := range w.PastActive {
		if !t.Before(p.From) && t.Before(p.Until) {
			return true
		}
	}
	return false
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
