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
	ListWebhooks(*Request) (*Reply[[]Webhook, WebhookListMeta], error)
	CreateWebhook(*Request, *WebhookCreate) (*Data[Webhook], error)
	WebhookOptions(*Request) (*Reply[WebhookOptions, WebhookOptionsMeta], error)
	WebhookSampleEvents(*Request, *WebhookSampleEvents) (*Reply[[]SampleEvent, SampleEventsMeta], error)
	UpdateWebhook(*Request, *WebhookUpdate) (*Data[Webhook], error)
	DeleteWebhook(*Request, *WebhookDelete) (*Reply[WebhookDeleted, WebhookDeletedMeta], error)
	ListWebhookDeliveries(*Request, *WebhookDeliveries) (*Reply[[]WebhookDelivery, WebhookDeliveriesMeta], error)
	TestWebhook(*Request, *WebhookTest) (*Data[WebhookDelivery], error)
	DispatchSample(*Request, *WebhookDispatchSample) (*Reply[WebhookDispatch, WebhookDispatchMeta], error)
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
	company := actors.WebhooksPlan
	return []*Operation{
		DefineNoParams(Operation{ID: "webhooks.list", Method: "GET", Path: "/webhook-subscriptions", Tool: "webhooks_list_subscriptions",
			Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary: "The workspace's webhook subscriptions, newest first."}, b.ListWebhooks),
		Define(Operation{ID: "webhooks.create", Method: "POST", Path: "/webhook-subscriptions", Tool: "webhooks_create_subscription",
			Scope: "webhooks:write", Plan: company, Write: true, Status: 201, OpenWorld: true,
			Summary: "Subscribe a URL to reader events (signed with the signing secret, retried with backoff).",
			Params:  eventTypes(ParamsOf[WebhookCreate]())}, b.CreateWebhook),
		DefineNoParams(Operation{ID: "webhooks.options", Method: "GET", Path: "/webhook-subscriptions/options", Tool: "webhooks_get_subscription_options",
			Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary: "What a subscription can be configured with: the workspace's books and tracked links, the event types and the providers."},
			b.WebhookOptions),
		Define(Operation{ID: "webhooks.sample_events", Method: "GET", Path: "/webhook-subscriptions/sample-events", Tool: "webhooks_list_sample_events",
			Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary: "Recent payloads of the workspace's reader events, as deliveries carry them (to configure a receiver before subscribing)."},
			b.WebhookSampleEvents),
		Define(Operation{ID: "webhooks.update", Method: "PUT", Path: "/webhook-subscriptions/{subscription}", Tool: "webhooks_update_subscription",
			Scope: "webhooks:write", Plan: company, Write: true, OpenWorld: true,
			Summary: "Change a subscription: only the fields given change; filters replaces the whole filter set.",
			Params:  eventTypes(ParamsOf[WebhookUpdate]())}, b.UpdateWebhook),
		Define(Operation{ID: "webhooks.delete", Method: "DELETE", Path: "/webhook-subscriptions/{subscription}",
			Scope: "webhooks:write", Plan: company, Write: true, Destructive: true,
			Summary: "Remove a subscription; its delivery history is kept and unfinished deliveries fail."}, b.DeleteWebhook),
		Define(Operation{ID: "webhooks.deliveries", Method: "GET", Path: "/webhook-subscriptions/{subscription}/deliveries",
			Tool: "webhooks_list_subscription_deliveries", Scope: "webhooks:read", Plan: company, ReadOnly: true,
			Summary: "A subscription's deliveries, newest first, with every attempt."}, b.ListWebhookDeliveries),
		Define(Operation{ID: "webhooks.test", Method: "POST", Path: "/webhook-subscriptions/{subscription}/test", Tool: "webhooks_test_subscription",
			Scope: "webhooks:write", Plan: company, Write: true, Status: 202, OpenWorld: true,
			Summary: "Queue a test delivery (a recent real payload, or an example, marked test) to the subscription, active or not.",
			Params:  eventTypeEnum(ParamsOf[WebhookTest]())}, b.TestWebhook),
		Define(Operation{ID: "webhooks.dispatch_sample", Method: "POST", Path: "/webhooks", Tool: "webhooks_dispatch_sample",
			Scope: "webhooks:write", Plan: company, Write: true, Status: 202, OpenWorld: true, ExtraErrors: []int{502},
			Summary: "Send a sample flipbook.created, flipbook.updated or subscriber.added event to a URL now (502 when the send fails)."},
			b.DispatchSample),
	}
}
