package api

import (
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
	CreateWebhook(*Request, *WebhookCreate) (*Result, error)
	WebhookOptions(*Request) (*Result, error)
	WebhookSampleEvents(*Request, *WebhookSampleEvents) (*Result, error)
	UpdateWebhook(*Request, *WebhookUpdate) (*Result, error)
	DeleteWebhook(*Request, *WebhookDelete) (*Result, error)
	ListWebhookDeliveries(*Request, *WebhookDeliveries) (*Result, error)
	TestWebhook(*Request, *WebhookTest) (*Result, error)
	DispatchSample(*Request, *WebhookDispatchSample) (*Result, error)
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

	// webhookSubscriptionSchema is spec §2.6's subscription; webhookDeliverySchema its
	// delivery (outputs.go).
	webhookSubscriptionSchema = SchemaOf[Webhook]()
	webhookDeliverySchema     = SchemaOf[WebhookDelivery]()

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

// eventTypes declares the event_types of a create or update from the event type list (what a
// tag cannot say: the items' schema, and limits following actors.WebhookEventTypes).
func eventTypes(ps []Param) []Param {
	return Adjust(ps, "event_types", func(p *Param) {
		p.MaxItems = len(actors.WebhookEventTypes)
		p.Items = &Param{Kind: KAny, Schema: eventTypeSchema()}
		p.Desc = "event types: strings of " + joinValues() + ", or {value} objects as returned"
	})
}

// eventTypeEnum declares the event_type of a test delivery: one of the event types.
func eventTypeEnum(ps []Param) []Param {
	return Adjust(ps, "event_type", func(p *Param) { p.Enum = WebhookEventValues() })
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
			Params:  eventTypes(ParamsOf[WebhookCreate]()), Response: webhookSubscriptionSchema, Handler: Bind(b.CreateWebhook)},
		{ID: "webhooks.options", Method: "GET", Path: "/webhook-subscriptions/options", Tool: "webhooks_get_subscription_options",
			Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary:  "What a subscription can be configured with: the workspace's books and tracked links, the event types and the providers.",
			Response: webhookOptionsSchema, ResponseMeta: object(prop("books_truncated", boolean), prop("max_books", integer)),
			Handler: b.WebhookOptions},
		{ID: "webhooks.sample_events", Method: "GET", Path: "/webhook-subscriptions/sample-events", Tool: "webhooks_list_sample_events",
			Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary:  "Recent payloads of the workspace's reader events, as deliveries carry them (to configure a receiver before subscribing).",
			Params:   ParamsOf[WebhookSampleEvents](),
			Response: arrayOf(sampleEventSchema), ResponseMeta: sampleEventsMetaSchema, Handler: Bind(b.WebhookSampleEvents)},
		{ID: "webhooks.update", Method: "PUT", Path: "/webhook-subscriptions/{subscription}", Tool: "webhooks_update_subscription",
			Scope: "webhooks:write", Plan: company, Write: true, OpenWorld: true,
			Summary:  "Change a subscription: only the fields given change; filters replaces the whole filter set.",
			Params:   eventTypes(ParamsOf[WebhookUpdate]()),
			Response: webhookSubscriptionSchema, Handler: Bind(b.UpdateWebhook)},
		{ID: "webhooks.delete", Method: "DELETE", Path: "/webhook-subscriptions/{subscription}",
			Scope: "webhooks:write", Plan: company, Write: true, Destructive: true,
			Summary: "Remove a subscription; its delivery history is kept and unfinished deliveries fail.",
			Params:  ParamsOf[WebhookDelete](), Response: messageSchema, ResponseMeta: object(prop("id", integer)),
			Handler: Bind(b.DeleteWebhook)},
		{ID: "webhooks.deliveries", Method: "GET", Path: "/webhook-subscriptions/{subscription}/deliveries",
			Tool: "webhooks_list_subscription_deliveries", Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary:  "A subscription's deliveries, newest first, with every attempt.",
			Params:   ParamsOf[WebhookDeliveries](),
			Response: arrayOf(webhookDeliverySchema), ResponseMeta: cursorMetaSchema, Handler: Bind(b.ListWebhookDeliveries)},
		{ID: "webhooks.test", Method: "POST", Path: "/webhook-subscriptions/{subscription}/test", Tool: "webhooks_test_subscription",
			Scope: "webhooks:write", Plan: company, Write: true, Status: 202, OpenWorld: true,
			Summary:  "Queue a test delivery (a recent real payload, or an example, marked test) to the subscription, active or not.",
			Params:   eventTypeEnum(ParamsOf[WebhookTest]()),
			Response: webhookDeliverySchema, Handler: Bind(b.TestWebhook)},
		{ID: "webhooks.dispatch_sample", Method: "POST", Path: "/webhooks", Tool: "webhooks_dispatch_sample",
			Scope: "webhooks:write", Plan: company, Write: true, Status: 202, OpenWorld: true, ExtraErrors: []int{502},
			Summary:  "Send a sample flipbook.created, flipbook.updated or subscriber.added event to a URL now (502 when the send fails).",
			Params:   ParamsOf[WebhookDispatchSample](),
			Response: dispatchSampleSchema, ResponseMeta: dispatchSampleMetaSchema, Handler: Bind(b.DispatchSample)},
	}
}
