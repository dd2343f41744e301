package api

import (
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"flipbook/actors"
)

// Webhook limits (docs/WEBHOOKS.md).
const (
	MaxWebhookFilterValues = 100 // values per filter list
	MinSigningSecret       = 16
	MaxSigningSecret       = 255
	DefaultDeliveriesLimit = 25
	MaxDeliveriesLimit     = 100
	DefaultSamplesLimit    = 10
	MaxSamplesLimit        = 50
)

// WebhookBackend runs the webhook operations (spec §4.7).
type WebhookBackend interface {
	ListWebhooks(*Request) (*Result, error)
	CreateWebhook(*Request) (*Result, error)
	WebhookOptions(*Request) (*Result, error)
	WebhookSampleEvents(*Request) (*Result, error)
	UpdateWebhook(*Request) (*Result, error)
	DeleteWebhook(*Request) (*Result, error)
	ListWebhookDeliveries(*Request) (*Result, error)
	TestWebhook(*Request) (*Result, error)
	DispatchSample(*Request) (*Result, error)
}

// WebhookProviders are the providers of spec §4.7.
var WebhookProviders = []string{"generic", "zapier"}

// SampleEvents are the events POST /webhooks sends (spec §6.2).
var SampleEvents = []string{"flipbook.created", "flipbook.updated", "subscriber.added"}

// WebhookEventValues are the nine subscription event types (spec §6.1).
func WebhookEventValues() []string {
	out := make([]string, len(actors.WebhookEventTypes))
	for i, t := range actors.WebhookEventTypes {
		out[i] = t.Value
	}
	return out
}

var (
	labelValueSchema = object(prop("label", str), prop("value", str))

	// webhookSubscriptionSchema is spec §2.6's subscription.
	webhookSubscriptionSchema = object(
		prop("id", integer), prop("name", str), prop("provider", enumOf(WebhookProviders...)),
		prop("target_url", str), prop("event_types", arrayOf(labelValueSchema)),
		prop("filters", object(prop("book_ids", arrayOf(str)), prop("tracked_link_ids", arrayOf(integer)),
			prop("recipient_emails", arrayOf(str)))),
		prop("has_signing_secret", boolean), prop("is_active", boolean), prop("disabled_reason", strN),
		prop("disabled_at", dateTime), prop("deliveries_count", integer),
		prop("created_at", dateTime), prop("updated_at", dateTime),
	)

	// webhookDeliverySchema is spec §2.6's delivery.
	webhookDeliverySchema = object(
		prop("id", integer), prop("subscription_id", integer), prop("event_id", str), prop("event_type", str),
		prop("status", enumOf("pending", "retrying", "succeeded", "failed")), prop("attempts", integer),
		prop("payload", anyObject), prop("response_status", intN), prop("response_body", strN),
		prop("error_message", strN), prop("test", boolean), prop("created_at", dateTime),
		prop("delivered_at", dateTime), prop("next_attempt_at", dateTime),
		prop("history", arrayOf(object(prop("number", integer), prop("attempted_at", dateTime),
			prop("response_status", intN), prop("error_message", strN), prop("duration_ms", integer)))),
	)

	webhookOptionsSchema = object(
		prop("books", arrayOf(object(prop("id", str), prop("name", str)))),
		prop("tracked_links", arrayOf(object(prop("id", integer), prop("name", str), prop("book_id", str)))),
		prop("event_types", arrayOf(labelValueSchema)),
		prop("providers", arrayOf(labelValueSchema)),
	)

	sampleEventSchema = optional(object(prop("id", str), prop("type", str), prop("created_at", dateTime),
		prop("livemode", boolean), prop("data", anyObject)),
		prop("test", boolean).describe("true on a made-up example (a type the workspace has no event of yet); absent otherwise"))
	sampleEventsMetaSchema = object(prop("event_types", arrayOf(str)),
		prop("examples", arrayOf(str)).describe("the types answered with a made-up example"), prop("limit", integer))

	dispatchSampleSchema = object(prop("event", str), prop("message", str), prop("payload", anyObject),
		prop("target_url", str))
	dispatchSampleMetaSchema = optional(object(prop("response_status", integer)),
		prop("response_body", str).describe("the receiver's answer, when it sent one"))
)

func webhookParams(create bool) []Param {
	req := func(p Param) Param {
		if create {
			return p.Req()
		}
		return p
	}
	return []Param{
		req(Str("name", InBody, 255).MinLength(1)),
		req(Enum("provider", InBody, WebhookProviders...)).
			Describe("generic, or zapier (a Zapier REST hook: a 410 Gone answer deactivates the subscription)"),
		req(Str("target_url", InBody, 2048).WithFormat("uri")).
			Describe("https URL receiving the deliveries; private, loopback and link-local addresses are refused"),
		req(Param{Name: "event_types", In: InBody, Kind: KArray, MinItems: 1, MaxItems: len(actors.WebhookEventTypes),
			Items: &Param{Kind: KAny, Schema: eventTypeSchema()},
			Desc:  "event types: strings of " + joinValues() + ", or {value} objects as returned"}),
		Str("signing_secret", InBody, MaxSigningSecret).MinLength(MinSigningSecret).Null().
			Describe("the HMAC key of X-Webhook-Signature (never returned); null on update removes it"),
		{Name: "filters", In: InBody, Kind: KObject, Nullable: true,
			Desc: "narrow deliveries; every list given replaces the filter set (an empty or missing list does not narrow)",
			Props: []Param{
				{Name: "book_ids", In: InBody, Kind: KArray, MaxItems: MaxWebhookFilterValues, Nullable: true,
					Items: &Param{Kind: KString, MaxLen: 64}},
				{Name: "tracked_link_ids", In: InBody, Kind: KArray, MaxItems: MaxWebhookFilterValues, Nullable: true,
					Items: &Param{Kind: KInt, Min: F64(1)}},
				{Name: "recipient_emails", In: InBody, Kind: KArray, MaxItems: MaxWebhookFilterValues, Nullable: true,
					Items: &Param{Kind: KString, MaxLen: 255, Format: "email"}},
			}},
		Bool("is_active", InBody).Describe("default true; setting it true again clears a deactivation"),
	}
}

// eventTypeSchema is an item of event_types as the handler reads it: an event type, or a
// {value} object as subscriptions and options return them.
func eventTypeSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		enumOf(WebhookEventValues()...),
		{Type: "object", Required: []string{"value"},
			Properties: map[string]*jsonschema.Schema{"value": enumOf(WebhookEventValues()...)}},
	}}
}

func joinValues() string {
	s := ""
	for i, v := range WebhookEventValues() {
		if i > 0 {
			s += ", "
		}
		s += v
	}
	return s
}

func pSubscription() Param {
	return Param{Name: "subscription", In: InPath, Kind: KInt, Required: true, Min: F64(1)}
}

// webhookOperations are the operations of spec §4.7 (Company plan).
func webhookOperations(b WebhookBackend) []*Operation {
	company := actors.PlanCompany
	return []*Operation{
		{ID: "webhooks.list", Method: "GET", Path: "/webhook-subscriptions", Tool: "webhooks_list_subscriptions",
			Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary:  "The workspace's webhook subscriptions, newest first.",
			Response: arrayOf(webhookSubscriptionSchema), ResponseMeta: totalMetaSchema, Handler: b.ListWebhooks},
		{ID: "webhooks.create", Method: "POST", Path: "/webhook-subscriptions", Tool: "webhooks_create_subscription",
			Scope: "webhooks:write", Plan: company, Write: true, Status: 201, OpenWorld: true,
			Summary: "Subscribe a URL to reader events (signed with the signing secret, retried with backoff).",
			Params:  webhookParams(true), Response: webhookSubscriptionSchema, Handler: b.CreateWebhook},
		{ID: "webhooks.options", Method: "GET", Path: "/webhook-subscriptions/options", Tool: "webhooks_get_subscription_options",
			Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary:  "What a subscription can be configured with: the workspace's books and tracked links, the event types and the providers.",
			Response: webhookOptionsSchema, ResponseMeta: object(prop("books_truncated", boolean), prop("max_books", integer)),
			Handler: b.WebhookOptions},
		{ID: "webhooks.sample_events", Method: "GET", Path: "/webhook-subscriptions/sample-events", Tool: "webhooks_list_sample_events",
			Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary: "Recent payloads of the workspace's reader events, as deliveries carry them (to configure a receiver before subscribing).",
			Params: []Param{
				Str("event_types", InQuery, 512).Describe("comma-separated event types (default: all nine)"),
				Int("limit", InQuery, 1, MaxSamplesLimit).Describe("payloads per event type (default " + strconv.Itoa(DefaultSamplesLimit) + ")"),
			},
			Response: arrayOf(sampleEventSchema), ResponseMeta: sampleEventsMetaSchema, Handler: b.WebhookSampleEvents},
		{ID: "webhooks.update", Method: "PUT", Path: "/webhook-subscriptions/{subscription}", Tool: "webhooks_update_subscription",
			Scope: "webhooks:write", Plan: company, Write: true, OpenWorld: true,
			Summary:  "Change a subscription: only the fields given change; filters replaces the whole filter set.",
			Params:   append([]Param{pSubscription()}, webhookParams(false)...),
			Response: webhookSubscriptionSchema, Handler: b.UpdateWebhook},
		{ID: "webhooks.delete", Method: "DELETE", Path: "/webhook-subscriptions/{subscription}",
			Scope: "webhooks:write", Plan: company, Write: true, Destructive: true,
			Summary: "Remove a subscription; its delivery history is kept and unfinished deliveries fail.",
			Params:  []Param{pSubscription()}, Response: messageSchema, ResponseMeta: object(prop("id", integer)),
			Handler: b.DeleteWebhook},
		{ID: "webhooks.deliveries", Method: "GET", Path: "/webhook-subscriptions/{subscription}/deliveries",
			Tool: "webhooks_list_subscription_deliveries", Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary: "A subscription's deliveries, newest first, with every attempt.",
			Params: []Param{pSubscription(),
				Int("limit", InQuery, 1, MaxDeliveriesLimit).Describe("per page (default " + strconv.Itoa(DefaultDeliveriesLimit) + ")"),
				Str("cursor", InQuery, 256).Describe("meta.next_cursor of the previous page"),
				Enum("status", InQuery, "pending", "retrying", "succeeded", "failed"),
			},
			Response: arrayOf(webhookDeliverySchema), ResponseMeta: cursorMetaSchema, Handler: b.ListWebhookDeliveries},
		{ID: "webhooks.test", Method: "POST", Path: "/webhook-subscriptions/{subscription}/test", Tool: "webhooks_test_subscription",
			Scope: "webhooks:write", Plan: company, Write: true, Status: 202, OpenWorld: true,
			Summary: "Queue a test delivery (a recent real payload, or an example, marked test) to the subscription, active or not.",
			Params: []Param{pSubscription(),
				Enum("event_type", InBody, WebhookEventValues()...).Describe("default: the subscription's first event type")},
			Response: webhookDeliverySchema, Handler: b.TestWebhook},
		{ID: "webhooks.dispatch_sample", Method: "POST", Path: "/webhooks", Tool: "webhooks_dispatch_sample",
			Scope: "webhooks:write", Plan: company, Write: true, Status: 202, OpenWorld: true, ExtraErrors: []int{502},
			Summary: "Send a sample flipbook.created, flipbook.updated or subscriber.added event to a URL now (502 when the send fails).",
			Params: []Param{
				Enum("event", InBody, SampleEvents...).Req(),
				{Name: "payload", In: InBody, Kind: KArray, MaxItems: 100, Nullable: true,
					Desc: "the records sent as data (default: the workspace's newest book or subscriber)"},
				Str("url", InBody, 2048).Req().WithFormat("uri"),
			},
			Response: dispatchSampleSchema, ResponseMeta: dispatchSampleMetaSchema, Handler: b.DispatchSample},
	}
}
