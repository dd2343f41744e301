package httpapi

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"flipbook/actors"
	"flipbook/analytics"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/ingest"
	"flipbook/outbound"
	"flipbook/storage"
)

// Webhook subscriptions, deliveries and sample sends (spec §2.6, §4.7, §6; docs/WEBHOOKS.md).

func eventLabel(v string) string {
	for _, t := range actors.WebhookEventTypes {
		if t.Value == v {
			return t.Label
		}
	}
	return v
}

// webhookService runs the webhook operations (spec §4.7): subscriptions and deliveries in the
// store, changed through the actors; sample payloads from DuckDB's recent events.
type webhookService struct {
	links
	Store        *storage.Store
	Actors       *actors.System
	Analytics    *analytics.DB
	cursors      *cursors
	allowPrivate bool // Config.AllowPrivateTargets: the SSRF guard's policy
}

func (s *webhookService) webhookJSON(w *storage.WebhookSubscription) (api.Webhook, error) {
	n, err := s.Store.WebhookCount(w.Tenant(), w.ID)
	if err != nil {
		return api.Webhook{}, err
	}
	out := api.Webhook{ID: w.ID, Name: w.Name, Provider: w.Provider, TargetURL: w.TargetURL,
		EventTypes: make([]api.LabelValue, len(w.EventTypes)),
		Filters: api.WebhookFilters{BookIDs: orEmpty(w.Filters.BookIDs), TrackedLinkIDs: orEmpty(w.Filters.TrackedLinkIDs),
			RecipientEmails: orEmpty(w.Filters.RecipientEmails)},
		HasSigningSecret: len(w.Secret) > 0, IsActive: w.IsActive, DisabledAt: fmtTimePtr(w.DisabledAt),
		DeliveriesCount: n, CreatedAt: fmtTime(w.CreatedAt), UpdatedAt: fmtTime(w.UpdatedAt)}
	for i, t := range w.EventTypes {
		out.EventTypes[i] = api.LabelValue{Label: eventLabel(t), Value: t}
	}
	if w.DisabledReason != "" {
		out.DisabledReason = &w.DisabledReason
	}
	return out, nil
}

// detached is the request's context without its cancellation: REST hands handlers the pooled
// fasthttp.RequestCtx as the context, whose Done a derived context would watch from another
// goroutine while fasthttp's shutdown writes it (a data race). What these calls wait on is
// bounded by their own timeouts.
func detached(r *api.Request) context.Context { return context.WithoutCancel(r.Ctx) }

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *webhookService) ListWebhooks(r *api.Request) (*api.Reply[[]api.Webhook, api.WebhookListMeta], error) {
	list, err := s.Store.WebhookSubscriptions(r.Auth.Tenant)
	if err != nil {
		return nil, err
	}
	data := make([]api.Webhook, len(list))
	for i, w := range list {
		if data[i], err = s.webhookJSON(w); err != nil {
			return nil, err
		}
	}
	return api.With(data, api.WebhookListMeta{Total: len(data)}), nil
}

// webhookInput reads the subscription fields of a create or update request into a patch (nil
// fields, and settings not Set, were not given), checking what the parameter table cannot:
// event type values, the target URL (https, public address), and that filtered books and
// tracked links belong to the workspace.
func (s *webhookService) webhookInput(r *api.Request, name, provider, target *string, events []any,
	set *api.WebhookSettings) (*actors.WebhookPatch, error) {
	p := &actors.WebhookPatch{Provider: provider, IsActive: set.IsActive}
	v := api.Validation{}
	if name != nil {
		n := strings.TrimSpace(*name)
		if n == "" {
			v.Add("name", "must not be blank")
		}
		p.Name = &n
	}
	if target != nil {
		u := *target
		pol := outbound.Policy{AllowPrivate: s.allowPrivate}
		if err := pol.CheckURL(detached(r), u); err != nil {
			v.Add("target_url", err.Error())
		}
		p.TargetURL = &u
	}
	if events != nil {
		p.EventTypes = webhookEventTypes(events, v)
	}
	if set.SigningSecret.Set {
		p.SetSecret = true
		if sec := set.SigningSecret.V; sec != "" {
			sealed, err := s.Actors.SealSecret(sec)
			if err != nil {
				return nil, err
			}
			p.Secret = sealed
		}
	}
	if set.Filters.Set {
		f, err := s.webhookFilters(r, &set.Filters.V, v)
		if err != nil {
			return nil, err
		}
		p.Filters = f
	}
	return p, v.Err()
}

// webhookEventTypes reads the event_types given (event types, or {value} objects) into their
// distinct values, recording in v the items that are not event types.
func webhookEventTypes(list []any, v api.Validation) []string {
	var out []string
	seen := map[string]bool{}
	for i, item := range list {
		val, _ := item.(string)
		if m, ok := item.(map[string]any); ok {
			val, _ = m["value"].(string)
		}
		if !api.Contains(api.WebhookEventValues(), val) {
			v.Add(fmt.Sprintf("event_types.%d", i), "must be one of: "+strings.Join(api.WebhookEventValues(), ", "))
			continue
		}
		if !seen[val] {
			seen[val] = true
			out = append(out, val)
		}
	}
	if len(list) == 0 {
		v.Add("event_types", "must list at least one event type")
	}
	return out
}

// webhookFilters reads the filters given into a filter set without repeats, recording in v the
// books and tracked links that are not the workspace's.
func (s *webhookService) webhookFilters(r *api.Request, in *api.WebhookFilters, v api.Validation) (*storage.WebhookFilters, error) {
	f := &storage.WebhookFilters{}
	for i, rid := range in.BookIDs {
		if _, err := s.Store.GetBook(r.Auth.Tenant, rid); err != nil {
			if !errors.Is(err, errs.ErrNotFound) {
				return nil, err
			}
			v.Add(fmt.Sprintf("filters.book_ids.%d", i), "is not a flipbook of this workspace")
			continue
		}
		if !api.Contains(f.BookIDs, rid) {
			f.BookIDs = append(f.BookIDs, rid)
		}
	}
	if len(in.TrackedLinkIDs) > 0 {
		links, err := s.Store.TenantTrackedLinks(r.Auth.Tenant)
		if err != nil {
			return nil, err
		}
		known := map[int64]bool{}
		for _, l := range links {
			known[l.ID] = true
		}
		for i, n := range in.TrackedLinkIDs {
			if !known[n] {
				v.Add(fmt.Sprintf("filters.tracked_link_ids.%d", i), "is not a tracked link of this workspace")
				continue
			}
			if !containsInt(f.TrackedLinkIDs, n) {
				f.TrackedLinkIDs = append(f.TrackedLinkIDs, n)
			}
		}
	}
	for _, e := range in.RecipientEmails {
		a := strings.ToLower(strings.TrimSpace(e))
		if !api.Contains(f.RecipientEmails, a) {
			f.RecipientEmails = append(f.RecipientEmails, a)
		}
	}
	return f, nil
}

func containsInt(list []int64, v int64) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (s *webhookService) CreateWebhook(r *api.Request, in *api.WebhookCreate) (*api.Data[api.Webhook], error) {
	p, err := s.webhookInput(r, &in.Name, &in.Provider, &in.TargetURL, in.EventTypes, &in.WebhookSettings)
	if err != nil {
		return nil, err
	}
	w := &storage.WebhookSubscription{Name: *p.Name, Provider: *p.Provider, TargetURL: *p.TargetURL,
		EventTypes: p.EventTypes, Secret: p.Secret, IsActive: true}
	if p.Filters != nil {
		w.Filters = *p.Filters
	}
	if p.IsActive != nil {
		w.IsActive = *p.IsActive
	}
	created, err := s.Actors.CreateWebhook(r.Auth.Tenant, w)
	if err != nil {
		return nil, err
	}
	data, err := s.webhookJSON(created)
	if err != nil {
		return nil, err
	}
	return &api.Data[api.Webhook]{Status: 201, Data: data}, nil
}

func (s *webhookService) UpdateWebhook(r *api.Request, in *api.WebhookUpdate) (*api.Data[api.Webhook], error) {
	id := in.Subscription
	if _, err := s.Store.WebhookSubscription(r.Auth.Tenant, id); err != nil {
		return nil, notFoundAs(notFoundErr(err), "webhook subscription")
	}
	p, err := s.webhookInput(r, in.Name, in.Provider, in.TargetURL, in.EventTypes, &in.WebhookSettings)
	if err != nil {
		return nil, err
	}
	updated, err := s.Actors.UpdateWebhook(r.Auth.Tenant, id, p)
	if err != nil {
		return nil, notFoundAs(err, "webhook subscription")
	}
	data, err := s.webhookJSON(updated)
	if err != nil {
		return nil, err
	}
	return api.OK(data), nil
}

// notFoundErr turns storage's ErrNotFound into the actors' one (for notFoundAs).
func notFoundErr(err error) error {
	if errors.Is(err, errs.ErrNotFound) {
		return errs.ErrNotFound
	}
	return err
}

func (s *webhookService) DeleteWebhook(r *api.Request, in *api.WebhookDelete) (*api.Reply[api.WebhookDeleted, api.WebhookDeletedMeta], error) {
	id := in.Subscription
	if _, err := s.Actors.DeleteWebhook(r.Auth.Tenant, id); err != nil {
		return nil, notFoundAs(err, "webhook subscription")
	}
	return api.With(api.WebhookDeleted{Message: "webhook subscription deleted; its delivery history is kept"},
		api.WebhookDeletedMeta{ID: id}), nil
}

// MaxOptionBooks bounds the books the options operation lists (newest first).
const MaxOptionBooks = 1000

func (s *webhookService) WebhookOptions(r *api.Request) (*api.Reply[api.WebhookOptions, api.WebhookOptionsMeta], error) {
	page, err := s.Store.ListBooks(r.Auth.Tenant, storage.BookQuery{Sort: storage.SortCreated, Desc: true, Limit: MaxOptionBooks})
	if err != nil {
		return nil, err
	}
	books := make([]api.WebhookBookOption, len(page.Books))
	for i, b := range page.Books {
		books[i] = api.WebhookBookOption{ID: b.RandomID, Name: b.Name}
	}
	links, err := s.Store.TenantTrackedLinks(r.Auth.Tenant)
	if err != nil {
		return nil, err
	}
	lopts := make([]api.WebhookLinkOption, len(links))
	for i, l := range links {
		lopts[i] = api.WebhookLinkOption{ID: l.ID, Name: l.Name, BookID: l.BookID}
	}
	types := make([]api.LabelValue, len(actors.WebhookEventTypes))
	for i, t := range actors.WebhookEventTypes {
		types[i] = api.LabelValue{Label: t.Label, Value: t.Value}
	}
	return api.With(api.WebhookOptions{Books: books, TrackedLinks: lopts, EventTypes: types,
		Providers: []api.LabelValue{{Label: "Generic (any HTTPS endpoint)", Value: "generic"}, {Label: "Zapier", Value: "zapier"}},
	}, api.WebhookOptionsMeta{BooksTruncated: page.HasMore, MaxBooks: MaxOptionBooks}), nil
}

// samplePayloads returns up to perType recent payloads of each webhook type of the tenant (newest
// first), built from the events stored in DuckDB exactly as the dispatcher builds deliveries,
// and the types that had none.
func (s *webhookService) samplePayloads(r *api.Request, types []string, perType int) ([]actors.WebhookPayload, []string, error) {
	var readerTypes []string
	for _, t := range types {
		readerTypes = append(readerTypes, actors.ReaderTypesOf(t)...)
	}
	t := r.Auth.Tenant
	evs, err := s.Analytics.Query().RecentEvents(detached(r), t.Workspace, string(rune(t.Mode)), readerTypes, perType)
	if err != nil {
		return nil, nil, err
	}
	count := map[string]int{}
	titles := map[string]string{}
	out := []actors.WebhookPayload{}
	for i := range evs {
		ev := &evs[i].Event
		typ := actors.WebhookTypeOf(ev.Type)
		if count[typ] >= perType {
			continue
		}
		count[typ]++
		title, ok := titles[ev.BookID]
		if !ok {
			if b, err := s.Store.GetBook(t, ev.BookID); err == nil {
				title = b.Name
			}
			titles[ev.BookID] = title
		}
		out = append(out, actors.BuildPayload(evs[i].ID, ev, title, s.previewURL(ev.BookID)))
	}
	var none []string
	for _, typ := range types {
		if count[typ] == 0 {
			none = append(none, typ)
		}
	}
	return out, none, nil
}

// examplePayload is a made-up payload of a type, for a workspace without such events yet: on
// its newest book when it has one.
func (s *webhookService) examplePayload(r *api.Request, typ string) actors.WebhookPayload {
	rid, title := "bk_example", "Example flipbook"
	if page, err := s.Store.ListBooks(r.Auth.Tenant, storage.BookQuery{Sort: storage.SortCreated, Desc: true, Limit: 1}); err == nil && len(page.Books) > 0 {
		rid, title = page.Books[0].RandomID, page.Books[0].Name
	}
	readerType := actors.ReaderTypesOf(typ)[0]
	viewer := int64(1)
	ev := &ingest.Event{Workspace: r.Auth.Tenant.Workspace, Mode: byte(r.Auth.Tenant.Mode), BookID: rid,
		SessionID: "ses_example", Type: readerType, ViewerID: viewer, ViewerEmail: "reader@example.com",
		SourceType: "direct", PageNumber: 1, ActiveMs: 12500, URL: "https://example.com/",
		ExitReason: "closed", Reason: "address on the access list", Metadata: `{"email":"reader@example.com"}`,
		OccurredAt: r.Now.UTC().Truncate(time.Second)}
	switch readerType {
	case ingest.SessionStarted, ingest.DocumentDownloaded:
		ev.PageNumber = 0
	case ingest.AccessRequested, ingest.AccessGranted, ingest.AccessRejected:
		ev.PageNumber, ev.ViewerID = 0, 0
	}
	p := actors.BuildPayload(0, ev, title, s.previewURL(rid))
	p.ID = "evt_example_" + typ
	p.Test = true
	return p
}

func (s *webhookService) WebhookSampleEvents(r *api.Request, in *api.WebhookSampleEvents) (*api.Reply[[]api.SampleEvent, api.SampleEventsMeta], error) {
	types := api.WebhookEventValues()
	if raw := strings.TrimSpace(in.EventTypes); raw != "" {
		types = nil
		for _, t := range strings.Split(raw, ",") {
			t = strings.TrimSpace(t)
			if !api.Contains(api.WebhookEventValues(), t) {
				return nil, api.FieldError("event_types", "must be a comma-separated list of: "+strings.Join(api.WebhookEventValues(), ", "))
			}
			if !api.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	limit := int64(api.DefaultSamplesLimit)
	if in.Limit != nil {
		limit = *in.Limit
	}
	out, none, err := s.samplePayloads(r, types, int(limit))
	if err != nil {
		return nil, err
	}
	for _, typ := range none {
		out = append(out, s.examplePayload(r, typ))
	}
	data := make([]api.SampleEvent, len(out))
	for i := range out {
		data[i] = sampleEvent(&out[i])
	}
	return api.With(data, api.SampleEventsMeta{EventTypes: types, Examples: orEmpty(none), Limit: limit}), nil
}

// sampleEvent is a payload as the sample events answer it.
func sampleEvent(p *actors.WebhookPayload) api.SampleEvent {
	return api.SampleEvent{ID: p.ID, Type: p.Type, CreatedAt: &p.CreatedAt, Livemode: p.Livemode, Test: p.Test, Data: p.Data}
}

func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func deliveryWire(d *storage.WebhookDelivery) api.WebhookDelivery {
	out := api.WebhookDelivery{ID: d.ID, SubscriptionID: d.SubscriptionID, EventID: d.EventID, EventType: d.EventType,
		Status: d.Status, Attempts: d.Attempts, Payload: d.Payload, ResponseStatus: nonZero(d.ResponseStatus),
		ResponseBody: nonZero(d.ResponseBody), ErrorMessage: nonZero(d.ErrorMessage), Test: d.Test,
		CreatedAt: fmtTime(d.CreatedAt), DeliveredAt: fmtTimePtr(d.DeliveredAt), NextAttemptAt: fmtTimePtr(d.NextAttemptAt),
		History: make([]api.WebhookAttempt, len(d.History))}
	if d.Attempts > 0 && d.ResponseStatus == 0 {
		out.ResponseBody = nil
	}
	for i, a := range d.History {
		out.History[i] = api.WebhookAttempt{Number: a.Number, At: fmtTime(a.At), ResponseStatus: nonZero(a.ResponseStatus),
			ErrorMessage: nonZero(a.ErrorMessage), DurationMs: a.DurationMs}
	}
	return out
}

func (s *webhookService) loadWebhook(r *api.Request, id int64) (*storage.WebhookSubscription, error) {
	w, err := s.Store.WebhookSubscription(r.Auth.Tenant, id)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("webhook subscription")
	}
	return w, err
}

func (s *webhookService) ListWebhookDeliveries(r *api.Request, in *api.WebhookDeliveries) (*api.Reply[[]api.WebhookDelivery, api.WebhookDeliveriesMeta], error) {
	w, err := s.loadWebhook(r, in.Subscription)
	if err != nil {
		return nil, err
	}
	limit := int64(api.DefaultDeliveriesLimit)
	if in.Limit != nil {
		limit = *in.Limit
	}
	binding := "whd/" + strconv.FormatInt(w.Workspace, 10) + string(rune(w.Mode)) + "/" + strconv.FormatInt(w.ID, 10) + "/" + in.Status
	var before int64
	if c := in.Cursor; c != "" {
		payload, err := s.cursors.decode(binding, c)
		if err != nil || len(payload) != 8 {
			return nil, api.FieldError("cursor", "is not a cursor of this list")
		}
		before = int64(binary.BigEndian.Uint64(payload))
	}
	var keep func(*storage.WebhookDelivery) bool
	if st := in.Status; st != "" {
		keep = func(d *storage.WebhookDelivery) bool { return d.Status == st }
	}
	list, more, err := s.Store.WebhookDeliveries(r.Auth.Tenant, w.ID, before, int(limit), keep)
	if err != nil {
		return nil, err
	}
	data := make([]api.WebhookDelivery, len(list))
	for i, d := range list {
		if err := s.Store.FillPayload(r.Auth.Tenant, d); err != nil && !errors.Is(err, errs.ErrNotFound) {
			return nil, err
		}
		data[i] = deliveryWire(d)
	}
	var next *string
	if more && len(list) > 0 {
		c := s.cursors.encode(binding, binary.BigEndian.AppendUint64(nil, uint64(list[len(list)-1].ID)))
		next = &c
	}
	return api.With(data, api.WebhookDeliveriesMeta{NextCursor: next, HasMore: more, Limit: int(limit)}), nil
}

func (s *webhookService) TestWebhook(r *api.Request, in *api.WebhookTest) (*api.Data[api.WebhookDelivery], error) {
	w, err := s.loadWebhook(r, in.Subscription)
	if err != nil {
		return nil, err
	}
	typ := in.EventType
	if typ == "" {
		typ = w.EventTypes[0]
	}
	payloads, _, err := s.samplePayloads(r, []string{typ}, 1)
	if err != nil {
		return nil, err
	}
	var p actors.WebhookPayload
	if len(payloads) > 0 {
		p = payloads[0]
	} else {
		p = s.examplePayload(r, typ)
	}
	p.ID, p.Test = "evt_test_"+actors.RandomString(16), true
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	d, err := s.Actors.QueueTestDelivery(w, typ, p.ID, body)
	if err != nil {
		return nil, err
	}
	return &api.Data[api.WebhookDelivery]{Status: 202, Data: deliveryWire(d)}, nil
}

// dispatchedEvent is the body of a sample event POST /webhooks sends (and answers as payload):
// data is the records of the event.
type dispatchedEvent struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CreatedAt string `json:"created_at"`
	Livemode  bool   `json:"livemode"`
	Test      bool   `json:"test"`
	Data      []any  `json:"data"`
}

// DispatchSample is POST /webhooks: one sample event sent now, unsigned (no subscription, so no
// secret), through the outbound guard; a failed send is a 502 saying why.
func (s *webhookService) DispatchSample(r *api.Request, in *api.WebhookDispatchSample) (*api.Reply[api.WebhookDispatch, api.WebhookDispatchMeta], error) {
	target := in.URL
	pol := outbound.Policy{AllowPrivate: s.allowPrivate}
	if err := pol.CheckURL(detached(r), target); err != nil {
		return nil, api.FieldError("url", err.Error())
	}
	event := in.Event
	payload := in.Payload
	if len(payload) == 0 {
		var err error
		if payload, err = s.sampleRecords(r, event); err != nil {
			return nil, err
		}
	}
	body := dispatchedEvent{ID: "evt_sample_" + actors.RandomString(16), Type: event,
		CreatedAt: r.Now.UTC().Format(time.RFC3339), Livemode: r.Auth.Tenant.Mode == storage.ModeLive, Test: true,
		Data: payload}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	status, respBody, _, sendErr := s.Actors.PostWebhook(detached(r), target, event, nil, raw, nil)
	if sendErr == nil && (status < 200 || status > 299) {
		sendErr = fmt.Errorf("the receiver answered %d", status)
	}
	if sendErr != nil {
		if errors.Is(sendErr, outbound.ErrBlockedAddress) || strings.Contains(sendErr.Error(), outbound.ErrBlockedAddress.Error()) {
			return nil, api.FieldError("url", "must not point to a private, loopback or link-local address")
		}
		return nil, &api.Error{Status: 502, Type: api.TypeDeliveryFailed,
			Message: "the sample event could not be delivered to " + target + ": " + sendErr.Error()}
	}
	return &api.Reply[api.WebhookDispatch, api.WebhookDispatchMeta]{Status: 202,
		Data: api.WebhookDispatch{Event: event, Payload: body, TargetURL: target,
			Message: fmt.Sprintf("sample %s event delivered (the receiver answered %d)", event, status)},
		Meta: &api.WebhookDispatchMeta{ResponseStatus: status, ResponseBody: respBody}}, nil
}

// sampleRecords are the data of a sample event: the workspace's newest book (flipbook.*) or
// access-list entry (subscriber.added), or an example when it has none.
func (s *webhookService) sampleRecords(r *api.Request, event string) ([]any, error) {
	t := r.Auth.Tenant
	if event == "subscriber.added" {
		subs, _, err := s.Store.Subscribers(t, func(*storage.Subscriber) bool { return true }, 0, 1)
		if err != nil {
			return nil, err
		}
		if len(subs) > 0 {
			return []any{subJSON(subs[0])}, nil
		}
		return []any{map[string]any{"id": 1, "book_id": "bk_example", "email": "reader@example.com", "type": "email",
			"created_at": r.Now.UTC().Format(time.RFC3339)}}, nil
	}
	page, err := s.Store.ListBooks(t, storage.BookQuery{Sort: storage.SortUpdated, Desc: true, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(page.Books) > 0 {
		var v any
		raw, err := json.Marshal(s.bookWire(page.Books[0]))
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return []any{v}, nil
	}
	return []any{map[string]any{"random_id": "bk_example", "name": "Example flipbook", "status": "draft",
		"created_at": r.Now.UTC().Format(time.RFC3339)}}, nil
}
