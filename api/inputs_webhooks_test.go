package api

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/actors"
)

// webhookStub is a WebhookBackend that records the input its last call received.
type webhookStub struct{ got *any }

// webhookKeep records in and answers an empty reply.
func webhookKeep[D, M any](w webhookStub, in any) (*Reply[D, M], error) {
	*w.got = in
	return &Reply[D, M]{}, nil
}

func (w webhookStub) ListWebhooks(*Request) (*Reply[[]Webhook, WebhookListMeta], error) {
	return webhookKeep[[]Webhook, WebhookListMeta](w, nil)
}
func (w webhookStub) WebhookOptions(*Request) (*Reply[WebhookOptions, WebhookOptionsMeta], error) {
	return webhookKeep[WebhookOptions, WebhookOptionsMeta](w, nil)
}
func (w webhookStub) CreateWebhook(_ *Request, in *WebhookCreate) (*Data[Webhook], error) {
	return webhookKeep[Webhook, None](w, in)
}
func (w webhookStub) WebhookSampleEvents(_ *Request, in *WebhookSampleEvents) (*Reply[[]SampleEvent, SampleEventsMeta], error) {
	return webhookKeep[[]SampleEvent, SampleEventsMeta](w, in)
}
func (w webhookStub) UpdateWebhook(_ *Request, in *WebhookUpdate) (*Data[Webhook], error) {
	return webhookKeep[Webhook, None](w, in)
}
func (w webhookStub) DeleteWebhook(_ *Request, in *WebhookDelete) (*Reply[WebhookDeleted, WebhookDeletedMeta], error) {
	return webhookKeep[WebhookDeleted, WebhookDeletedMeta](w, in)
}
func (w webhookStub) ListWebhookDeliveries(_ *Request, in *WebhookDeliveries) (*Reply[[]WebhookDelivery, WebhookDeliveriesMeta], error) {
	return webhookKeep[[]WebhookDelivery, WebhookDeliveriesMeta](w, in)
}
func (w webhookStub) TestWebhook(_ *Request, in *WebhookTest) (*Data[WebhookDelivery], error) {
	return webhookKeep[WebhookDelivery, None](w, in)
}
func (w webhookStub) DispatchSample(_ *Request, in *WebhookDispatchSample) (*Reply[WebhookDispatch, WebhookDispatchMeta], error) {
	return webhookKeep[WebhookDispatch, WebhookDispatchMeta](w, in)
}

// The declarations of the webhook operations before their input structs (kept as written then):
// what the structs' tags, with their Adjust, must still declare.

func legacyWebhookParams(create bool) []Param {
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

func legacySubscription() Param {
	return Param{Name: "subscription", In: InPath, Kind: KInt, Required: true, Min: F64(1)}
}

func legacyWebhookDeclarations() map[string][]Param {
	return map[string][]Param{
		"webhooks.list":    nil,
		"webhooks.create":  legacyWebhookParams(true),
		"webhooks.options": nil,
		"webhooks.sample_events": {
			Str("event_types", InQuery, 512).Describe("comma-separated event types (default: all nine)"),
			Int("limit", InQuery, 1, MaxSamplesLimit).Describe("payloads per event type (default " + strconv.Itoa(DefaultSamplesLimit) + ")"),
		},
		"webhooks.update": append([]Param{legacySubscription()}, legacyWebhookParams(false)...),
		"webhooks.delete": {legacySubscription()},
		"webhooks.deliveries": {legacySubscription(),
			Int("limit", InQuery, 1, MaxDeliveriesLimit).Describe("per page (default " + strconv.Itoa(DefaultDeliveriesLimit) + ")"),
			Str("cursor", InQuery, 256).Describe("meta.next_cursor of the previous page"),
			Enum("status", InQuery, "pending", "retrying", "succeeded", "failed"),
		},
		"webhooks.test": {legacySubscription(),
			Enum("event_type", InBody, WebhookEventValues()...).Describe("default: the subscription's first event type")},
		"webhooks.dispatch_sample": {
			Enum("event", InBody, SampleEvents...).Req(),
			{Name: "payload", In: InBody, Kind: KArray, MaxItems: 100, Nullable: true,
				Desc: "the records sent as data (default: the workspace's newest book or subscriber)"},
			Str("url", InBody, 2048).Req().WithFormat("uri"),
		},
	}
}

// The input structs declare exactly what the webhook operations declared before them, so
// validation, the MCP input schemas and the OpenAPI document do not change.
func TestWebhookInputs(t *testing.T) {
	t.Parallel()
	var got any
	want := legacyWebhookDeclarations()
	ops := webhookOperations(webhookStub{&got})
	require.Len(t, ops, len(want))
	for _, op := range ops {
		w, ok := want[op.ID]
		require.True(t, ok, op.ID)
		require.Equal(t, w, op.Params, op.ID)
	}
}

// The handlers receive the validated values: absent, null and given fields told apart where
// an update needs it.
func TestWebhookInputsBind(t *testing.T) {
	t.Parallel()
	var got any
	ops := map[string]*Operation{}
	for _, op := range webhookOperations(webhookStub{&got}) {
		ops[op.ID] = op
	}
	call := func(id string, params map[string]any) any {
		t.Helper()
		got = nil
		_, err := ops[id].Handler(&Request{Params: params})
		require.NoError(t, err)
		return got
	}

	events := []any{"flipbook_opened", map[string]any{"value": "cta_submitted"}}
	require.Equal(t, &WebhookCreate{Name: "crm", Provider: "zapier", TargetURL: "https://h.example.com/in", EventTypes: events,
		WebhookSettings: WebhookSettings{SigningSecret: actors.Val("whsec_0123456789abcdef"),
			Filters: actors.Val(WebhookFilters{BookIDs: []string{"bk_1"}, TrackedLinkIDs: []int64{3},
				RecipientEmails: []string{"a@example.com"}}),
			IsActive: new(bool)}},
		call("webhooks.create", map[string]any{"name": "crm", "provider": "zapier", "target_url": "https://h.example.com/in",
			"event_types": events, "signing_secret": "whsec_0123456789abcdef",
			"filters": map[string]any{"book_ids": []any{"bk_1"}, "tracked_link_ids": []any{int64(3)},
				"recipient_emails": []any{"a@example.com"}}, "is_active": false}))

	name := "renamed"
	require.Equal(t, &WebhookUpdate{Subscription: 7, Name: &name, WebhookSettings: WebhookSettings{
		SigningSecret: actors.Opt[string]{Set: true, Null: true}, Filters: actors.Opt[WebhookFilters]{Set: true, Null: true}}},
		call("webhooks.update", map[string]any{"subscription": int64(7), "name": "renamed", "signing_secret": nil, "filters": nil}))
	require.Equal(t, &WebhookUpdate{Subscription: 7, WebhookSettings: WebhookSettings{
		Filters: actors.Val(WebhookFilters{BookIDs: []string{}})}},
		call("webhooks.update", map[string]any{"subscription": int64(7), "filters": map[string]any{"book_ids": []any{}, "tracked_link_ids": nil}}))
	require.Equal(t, &WebhookUpdate{Subscription: 7}, call("webhooks.update", map[string]any{"subscription": int64(7)}))

	limit := int64(5)
	require.Equal(t, &WebhookSampleEvents{EventTypes: "cta_submitted", Limit: &limit},
		call("webhooks.sample_events", map[string]any{"event_types": "cta_submitted", "limit": int64(5)}))
	require.Equal(t, &WebhookSampleEvents{}, call("webhooks.sample_events", map[string]any{}))
	require.Equal(t, &WebhookDelete{Subscription: 9}, call("webhooks.delete", map[string]any{"subscription": int64(9)}))
	require.Equal(t, &WebhookDeliveries{Subscription: 9, Limit: &limit, Cursor: "c", Status: "failed"},
		call("webhooks.deliveries", map[string]any{"subscription": int64(9), "limit": int64(5), "cursor": "c", "status": "failed"}))
	require.Equal(t, &WebhookTest{Subscription: 9, EventType: "page_dwelled"},
		call("webhooks.test", map[string]any{"subscription": int64(9), "event_type": "page_dwelled"}))
	require.Equal(t, &WebhookDispatchSample{Event: "subscriber.added", URL: "https://h.example.com/x",
		Payload: []any{map[string]any{"email": "a@example.com"}}},
		call("webhooks.dispatch_sample", map[string]any{"event": "subscriber.added", "url": "https://h.example.com/x",
			"payload": []any{map[string]any{"email": "a@example.com"}}}))
	require.Equal(t, &WebhookDispatchSample{Event: "flipbook.created", URL: "https://h.example.com/x"},
		call("webhooks.dispatch_sample", map[string]any{"event": "flipbook.created", "url": "https://h.example.com/x", "payload": nil}))
	require.Nil(t, call("webhooks.list", nil))
}
