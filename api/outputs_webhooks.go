package api

import "time"

// The answers of the webhook operations (spec §4.7) other than the subscription and the
// delivery themselves (Webhook, WebhookDelivery: outputs.go), as Go types.

// WebhookListMeta is the meta of GET /webhook-subscriptions.
type WebhookListMeta struct {
	Total int `json:"total"`
}

// WebhookOptions is GET /webhook-subscriptions/options: what a subscription can be configured
// with.
type WebhookOptions struct {
	Books        []WebhookBookOption `json:"books"`
	TrackedLinks []WebhookLinkOption `json:"tracked_links"`
	EventTypes   []LabelValue        `json:"event_types"`
	Providers    []LabelValue        `json:"providers"`
}

// WebhookBookOption is a book a subscription's filters can name.
type WebhookBookOption struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// WebhookLinkOption is a tracked link a subscription's filters can name.
type WebhookLinkOption struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	BookID string `json:"book_id"`
}

// WebhookOptionsMeta is the meta of the options: whether the book list stopped at max_books.
type WebhookOptionsMeta struct {
	BooksTruncated bool `json:"books_truncated"`
	MaxBooks       int  `json:"max_books"`
}

// SampleEvent is a reader event's payload as deliveries carry it (GET
// /webhook-subscriptions/sample-events).
type SampleEvent struct {
	ID        string     `json:"id"`
	Type      string     `json:"type"`
	CreatedAt *time.Time `json:"created_at"`
	Livemode  bool       `json:"livemode"`
	Test      bool       `json:"test,omitempty" desc:"true on a made-up example (a type the workspace has no event of yet); absent otherwise"`
	// Data is what happened: an actors.PayloadData.
	Data any `json:"data" type:"object"`
}

// SampleEventsMeta is the meta of the sample events: the types asked for, those answered with
// a made-up example, and the payloads per type.
type SampleEventsMeta struct {
	EventTypes []string `json:"event_types"`
	Examples   []string `json:"examples" desc:"the types answered with a made-up example"`
	Limit      int64    `json:"limit"`
}

// WebhookDeleted is DELETE /webhook-subscriptions/{subscription}'s answer.
type WebhookDeleted struct {
	Message string `json:"message"`
}

// WebhookDeletedMeta names the subscription deleted.
type WebhookDeletedMeta struct {
	ID int64 `json:"id"`
}

// WebhookDeliveriesMeta is the meta of a page of deliveries.
type WebhookDeliveriesMeta struct {
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
	Limit      int     `json:"limit"`
}

// WebhookDispatch is POST /webhooks's answer: the sample event sent and where.
type WebhookDispatch struct {
	Event   string `json:"event"`
	Message string `json:"message"`
	// Payload is the body sent: id, type, created_at, livemode, test and data (the records).
	Payload   any    `json:"payload" type:"object"`
	TargetURL string `json:"target_url"`
}

// WebhookDispatchMeta is the receiver's answer to a sample event.
type WebhookDispatchMeta struct {
	ResponseStatus int    `json:"response_status"`
	ResponseBody   string `json:"response_body,omitempty" desc:"the receiver's answer, when it sent one"`
}
