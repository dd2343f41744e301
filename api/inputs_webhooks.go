package api

import "flipbook/actors"

// The input structs of the webhook operations (table_webhooks.go, spec §4.7).

// WebhookCreate is the input of webhooks.create (spec §4.7).
type WebhookCreate struct {
	Name      string `param:"name,body,required" max:"255" minlen:"1"`
	Provider  string `param:"provider,body,required" enum:"generic|zapier" desc:"generic, or zapier (a Zapier REST hook: a 410 Gone answer deactivates the subscription)"`
	TargetURL string `param:"target_url,body,required" max:"2048" format:"uri" desc:"https URL receiving the deliveries; private, loopback and link-local addresses are refused"`
	// EventTypes are event types or {value} objects (eventTypes declares the items).
	EventTypes []any `param:"event_types,body,required" minitems:"1"`
	WebhookSettings
}

// WebhookUpdate is the input of webhooks.update (spec §4.7): a nil field, or an Opt not Set,
// was not given and stays as it is.
type WebhookUpdate struct {
	Subscription int64   `param:"subscription,path,required" min:"1"`
	Name         *string `param:"name,body" max:"255" minlen:"1"`
	Provider     *string `param:"provider,body" enum:"generic|zapier" desc:"generic, or zapier (a Zapier REST hook: a 410 Gone answer deactivates the subscription)"`
	TargetURL    *string `param:"target_url,body" max:"2048" format:"uri" desc:"https URL receiving the deliveries; private, loopback and link-local addresses are refused"`
	// EventTypes are event types or {value} objects (eventTypes declares the items); nil when
	// not given.
	EventTypes []any `param:"event_types,body" minitems:"1"`
	WebhookSettings
}

// WebhookSettings are the optional subscription fields of webhooks.create and webhooks.update
// (spec §4.7): Set tells whether each was given, Null whether it was null.
type WebhookSettings struct {
	SigningSecret actors.Opt[string]         `param:"signing_secret,body,nullable" max:"255" minlen:"16" desc:"the HMAC key of X-Webhook-Signature (never returned); null on update removes it"`
	Filters       actors.Opt[WebhookFilters] `param:"filters,body,nullable" desc:"narrow deliveries; every list given replaces the filter set (an empty or missing list does not narrow)"`
	IsActive      *bool                      `param:"is_active,body" desc:"default true; setting it true again clears a deactivation"`
}

// WebhookFilters are the filters of a subscription (spec §4.7): nil or empty lists do not
// narrow. The same type is the filters of an answer (Webhook), where every list is present.
type WebhookFilters struct {
	BookIDs         []string `json:"book_ids" param:"book_ids,body,nullable" maxitems:"100" itemmax:"64"`
	TrackedLinkIDs  []int64  `json:"tracked_link_ids" param:"tracked_link_ids,body,nullable" maxitems:"100" itemmin:"1"`
	RecipientEmails []string `json:"recipient_emails" param:"recipient_emails,body,nullable" maxitems:"100" itemmax:"255" itemformat:"email"`
}

// WebhookSampleEvents is the input of webhooks.sample_events (spec §4.7).
type WebhookSampleEvents struct {
	EventTypes string `param:"event_types,query" max:"512" desc:"comma-separated event types (default: all nine)"`
	Limit      *int64 `param:"limit,query" min:"1" max:"50" desc:"payloads per event type (default 10)"`
}

// WebhookDelete is the input of webhooks.delete (spec §4.7).
type WebhookDelete struct {
	Subscription int64 `param:"subscription,path,required" min:"1"`
}

// WebhookDeliveries is the input of webhooks.deliveries (spec §4.7).
type WebhookDeliveries struct {
	Subscription int64  `param:"subscription,path,required" min:"1"`
	Limit        *int64 `param:"limit,query" min:"1" max:"100" desc:"per page (default 25)"`
	Cursor       string `param:"cursor,query" max:"256" desc:"meta.next_cursor of the previous page"`
	Status       string `param:"status,query" enum:"pending|retrying|succeeded|failed"`
}

// WebhookTest is the input of webhooks.test (spec §4.7).
type WebhookTest struct {
	Subscription int64 `param:"subscription,path,required" min:"1"`
	// EventType is one of WebhookEventValues (eventTypeEnum declares them); "" when not given.
	EventType string `param:"event_type,body" desc:"default: the subscription's first event type"`
}

// WebhookDispatchSample is the input of webhooks.dispatch_sample (spec §4.7).
type WebhookDispatchSample struct {
	Event   string `param:"event,body,required" enum:"flipbook.created|flipbook.updated|subscriber.added"`
	Payload []any  `param:"payload,body,nullable" maxitems:"100" desc:"the records sent as data (default: the workspace's newest book or subscriber)"`
	URL     string `param:"url,body,required" max:"2048" format:"uri"`
}
