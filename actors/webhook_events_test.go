package actors

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/ingest"
	"flipbook/storage"
)

func TestWebhookTypeMapping(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		ingest.SessionStarted: WebhookFlipbookOpened, ingest.PageSegmentCompleted: WebhookPageDwelled,
		ingest.LinkClicked: WebhookLinkClicked, ingest.DocumentDownloaded: WebhookDownloadRequested,
		ingest.LeadFormSubmitted: WebhookCTASubmitted, ingest.CheckoutWidgetOpened: WebhookCTASubmitted,
		ingest.CheckoutRedirectClicked: WebhookCTASubmitted, ingest.SessionEnded: WebhookSessionEnded,
		ingest.AccessRequested: WebhookAccessRequested, ingest.AccessGranted: WebhookAccessGranted,
		ingest.AccessRejected: WebhookAccessDenied, ingest.FormWidgetOpened: "",
	}
	for reader, hook := range want {
		require.Equal(t, hook, WebhookTypeOf(reader), reader)
	}
	// Every subscription type has a source, and ReaderTypesOf inverts the mapping.
	for _, typ := range WebhookEventTypes {
		src := ReaderTypesOf(typ.Value)
		require.NotEmpty(t, src, typ.Value)
		for _, r := range src {
			require.Equal(t, typ.Value, WebhookTypeOf(r))
		}
	}
	require.Len(t, WebhookEventTypes, 9)
}

func TestBuildPayload(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 9, 14, 3, 0, time.UTC)
	ev := &ingest.Event{Workspace: 3, Mode: 'l', BookID: "bk1", SessionID: "s1", Type: ingest.PageSegmentCompleted,
		ViewerID: 17, ViewerEmail: "ana@example.com", TrackedLinkID: 4, SourceType: "tracked_link", PageNumber: 4,
		ActiveMs: 12500, Country: "PT", OccurredAt: at}
	raw, err := json.Marshal(BuildPayload(41984, ev, "Spring", "https://x/view/bk1"))
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"evt_41984","type":"page_dwelled","created_at":"2026-11-25T09:14:03Z","livemode":true,
		"data":{"book":{"id":"bk1","title":"Spring","url":"https://x/view/bk1"},"session_id":"s1",
		"reader":{"viewer_id":17,"email":"ana@example.com"},"tracked_link_id":4,
		"source":{"type":"tracked_link","host":null},"location":{"country":"PT"},
		"reader_event_type":"page_segment_completed","page_number":4,"active_seconds":12.5}}`, string(raw))

	lead := &ingest.Event{Workspace: 3, Mode: 't', BookID: "bk1", SessionID: "s2", Type: ingest.LeadFormSubmitted,
		Metadata: `{"company":"Acme"}`, OccurredAt: at}
	p := BuildPayload(7, lead, "Spring", "u")
	require.False(t, p.Livemode)
	require.Equal(t, "lead_form", p.Data.CTA.Kind)
	require.JSONEq(t, `{"company":"Acme"}`, string(p.Data.Fields))
	require.Nil(t, p.Data.Reader.ViewerID)
	require.Equal(t, "direct", p.Data.Source.Type)
}

func TestWebhookMatches(t *testing.T) {
	t.Parallel()
	now := time.Now()
	until := now.Add(time.Minute)
	sub := &storage.WebhookSubscription{EventTypes: []string{WebhookLinkClicked}, ActiveFrom: now, ActiveUntil: &until,
		Filters: storage.WebhookFilters{BookIDs: []string{"a", "b"}, TrackedLinkIDs: []int64{5}, RecipientEmails: []string{"x@y.z"}}}
	ev := &ingest.Event{BookID: "a", TrackedLinkID: 5, ViewerEmail: "X@Y.Z", Type: ingest.LinkClicked, ReceivedAt: now.Add(time.Second)}
	require.True(t, webhookMatches(sub, WebhookLinkClicked, ev))
	require.False(t, webhookMatches(sub, WebhookPageDwelled, ev), "type not subscribed")
	for _, change := range []func(e *ingest.Event){
		func(e *ingest.Event) { e.BookID = "c" },
		func(e *ingest.Event) { e.TrackedLinkID = 0 },
		func(e *ingest.Event) { e.TrackedLinkID = 6 },
		func(e *ingest.Event) { e.ViewerEmail = "" },
		func(e *ingest.Event) { e.ViewerEmail = "other@y.z" },
		func(e *ingest.Event) { e.ReceivedAt = now.Add(-time.Second) },
		func(e *ingest.Event) { e.ReceivedAt = until },
	} {
		e := *ev
		change(&e)
		require.False(t, webhookMatches(sub, WebhookLinkClicked, &e), "%+v", e)
	}
	open := &storage.WebhookSubscription{EventTypes: []string{WebhookLinkClicked}}
	require.True(t, webhookMatches(open, WebhookLinkClicked, &ingest.Event{}), "no filters: everything of the type")
}

func TestSignWebhook(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_1"}`)
	m := hmac.New(sha256.New, []byte("secret"))
	m.Write([]byte("1700000000." + string(body)))
	require.Equal(t, hex.EncodeToString(m.Sum(nil)), SignWebhook([]byte("secret"), "1700000000", body))
}

// A receiver's Retry-After is read as seconds or an HTTP date, only on a 429 or 503, and capped
// at MaxRetryAfter: a count of seconds past what a Duration holds wrapped to a negative wait
// before (a review found the retry then came at once).
func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	at := func(status int, v string) time.Duration {
		return retryAfter(&http.Response{StatusCode: status, Header: http.Header{"Retry-After": {v}}})
	}
	for v, want := range map[string]time.Duration{
		"120": 2 * time.Minute, " 7 ": 7 * time.Second, "86400": MaxRetryAfter, "86401": MaxRetryAfter,
		"10000000000": MaxRetryAfter, "99999999999999999999999": MaxRetryAfter,
		"0": 0, "-5": 0, "+5": 0, "soon": 0, "": 0,
		time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat):      0,
		time.Now().Add(400 * time.Hour).UTC().Format(http.TimeFormat): MaxRetryAfter,
	} {
		require.Equal(t, want, at(429, v), "%q", v)
	}
	d := at(503, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
	require.Greater(t, d, 58*time.Minute)
	require.LessOrEqual(t, d, time.Hour)
	require.Zero(t, at(500, "120"))
}
