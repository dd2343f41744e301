package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"flipbook/actors"
	"flipbook/analytics"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/ingest"
	"flipbook/storage"
)

// The Shopify integration (spec §4.10; docs/DECISIONS.md, "Shopify integration"): the GDPR
// webhooks Shopify requires of every app (forwarded by the connector) and the one rename of
// the workspace the connector generated at sign-up.

// Bounds of a GDPR webhook's waits.
const (
	// ShopifyLogWait bounds the wait for the event log's readers (the analytics consumer, the
	// webhook dispatcher) to pass the log's end as of the request; past it the answer is 503
	// and nothing was changed (Shopify retries).
	ShopifyLogWait = 30 * time.Second
	// ShopifyRedactWait bounds the wait for the analytics compactor to run a redaction (it
	// runs after the compaction or merge in progress).
	ShopifyRedactWait = 2 * time.Minute
)

// shopifyRequest is a validated GDPR webhook.
type shopifyRequest struct {
	topic, action string
	shop          string // lower case
	shopID        int64
	customerID    *int64
	email         string // lower case; "" when the payload has none
	dataRequestID *int64
	hash          []byte // SHA-256 of the canonical request: the replay key
}

// shopifyCounts are the counts of an answer.
type shopifyCounts = map[string]int64

// shopifyInput checks what the parameter table cannot: the two shop domains agree and name a
// host, and a customer topic names the customer.
func shopifyInput(w *api.ShopifyWebhook) (*shopifyRequest, error) {
	in := &shopifyRequest{topic: w.Topic}
	in.action = api.ShopifyActions[indexOf(api.ShopifyTopics, in.topic)]
	payload := &w.Payload
	v := api.Validation{}
	in.shop = strings.ToLower(strings.TrimSpace(w.ShopDomain))
	if !validHost(in.shop) || net.ParseIP(in.shop) != nil {
		v.Add("shopDomain", "must be a shop domain, such as example.myshopify.com")
	} else if strings.ToLower(strings.TrimSpace(payload.ShopDomain)) != in.shop {
		v.Add("shopDomain", "must equal payload.shop_domain")
	}
	in.shopID = payload.ShopID
	customer := payload.Customer
	if customer != nil {
		in.customerID = customer.ID
		in.email = strings.ToLower(strings.TrimSpace(customer.Email))
	}
	if payload.DataRequest != nil {
		in.dataRequestID = payload.DataRequest.ID
	}
	if in.topic != api.ShopifyShopRedact {
		switch {
		case customer == nil:
			v.Add("payload.customer", "is required for "+in.topic)
		case in.email == "" && in.customerID == nil:
			v.Add("payload.customer", "must have an email or an id")
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	opt := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	h := sha256.Sum256([]byte(strings.Join([]string{in.topic, in.shop, strconv.FormatInt(in.shopID, 10),
		opt(in.customerID), in.email, opt(in.dataRequestID)}, "\x00")))
	in.hash = h[:]
	return in, nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return 0
}

// keyLocks serialises the requests with the same key (a GDPR webhook and its retry).
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

var shopifyLocks keyLocks

// ShopifyReplayWindow is how long a GDPR webhook's answer is replayed to a retry of it:
// Shopify retries a webhook for up to 48 hours.
const ShopifyReplayWindow = 48 * time.Hour

// shopifyService runs the Shopify integration operations (spec §4.10): GDPR webhooks read and
// redact the workspace's data everywhere it is kept (store, event log, DuckDB).
type shopifyService struct {
	Store     *storage.Store
	Actors    *actors.System
	Analytics *analytics.DB
	events    ingest.Log
	consumer  *analytics.Consumer
	caller    *api.Caller
	log       *slog.Logger
}

// ShopifyWebhook is POST /integrations/shopify/webhooks.
func (s *shopifyService) ShopifyWebhook(r *api.Request, w *api.ShopifyWebhook) (*api.Data[api.ShopifyAnswer], error) {
	in, err := shopifyInput(w)
	if err != nil {
		return nil, err
	}
	t := r.Auth.Tenant
	unlock := shopifyLocks.lock(string(rune(t.Mode)) + strconv.FormatInt(t.Workspace, 10) + "/" + hex.EncodeToString(in.hash))
	defer unlock()
	// A retry of a request already answered gets the first answer, and nothing is done again,
	// within Shopify's retry window: after it the same body is a new request (a shop that
	// reinstalls and uninstalls again, a returning customer) and is carried out again (found
	// by a review: the first answer was replayed for good, and the new data stayed).
	a, err := s.Store.ShopifyAnswer(t, in.shop, in.hash)
	switch {
	case err == nil && r.Now.Sub(a.CreatedAt) < ShopifyReplayWindow:
		return &api.Data[api.ShopifyAnswer]{Status: 202,
			Data: api.ShopifyAnswer{Action: a.Action, Counts: a.Counts, Replayed: true, Status: a.Status}}, nil
	case err != nil && !errors.Is(err, errs.ErrNotFound):
		return nil, err
	}
	received := r.Now.UTC()
	var counts shopifyCounts
	switch in.topic {
	case api.ShopifyDataRequest:
		counts, err = s.shopifyDataRequest(r, in)
	case api.ShopifyCustomerRedact:
		counts, err = s.shopifyRedactCustomer(r, in)
	default:
		counts, err = s.shopifyRedactShop(r, in)
	}
	if err != nil {
		return nil, err
	}
	answer := &storage.ShopifyAnswer{Action: in.action, Counts: counts, Status: "completed", CreatedAt: time.Now().UTC()}
	id, err := s.Store.NextIDFor(t.Workspace, "shopify_gdpr")
	if err != nil {
		return nil, err
	}
	rec := &storage.ShopifyGDPRRecord{ID: id, Topic: in.topic, ShopDomain: in.shop, ShopID: in.shopID,
		CustomerID: in.customerID, DataRequestID: in.dataRequestID, RequestSHA256: hex.EncodeToString(in.hash),
		Action: in.action, Status: answer.Status, Counts: counts, ReceivedAt: received, CompletedAt: answer.CreatedAt}
	if in.email != "" {
		h := sha256.Sum256([]byte(in.email))
		rec.EmailSHA256 = hex.EncodeToString(h[:])
	}
	b := s.Store.NewBatch()
	if in.topic == api.ShopifyShopRedact {
		// The shop's stored answers and audit records go (the shop asked for all its data to be
		// erased); the record of this erasure and its answer are written after them, in the
		// same batch, so the erasure stays provable and a retry is still replayed.
		n, err := s.Store.DeleteShopifyRecords(b, t, in.shop)
		if err != nil {
			b.Close()
			return nil, err
		}
		counts["shopify_records"] = int64(n)
	}
	if err := b.PutShopifyAnswer(t, in.shop, in.hash, answer); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.PutShopifyGDPR(t, rec); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Commit(); err != nil {
		return nil, err
	}
	return &api.Data[api.ShopifyAnswer]{Status: 202, Data: api.ShopifyAnswer{Action: in.action, Counts: counts, Status: answer.Status}}, nil
}

// readerMatch is the customer as the analytics store knows readers (their address, and the
// viewer id the address has in the tenant).
func (s *shopifyService) readerMatch(t storage.Tenant, email string) (analytics.ReaderMatch, error) {
	m := analytics.ReaderMatch{Workspace: t.Workspace, Mode: string(rune(t.Mode)), Email: email}
	if email == "" {
		return m, nil
	}
	id, err := s.Store.ViewerID(t, email)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return m, err
	}
	m.ViewerID = id
	return m, nil
}

// customerSubscribers are the tenant's access-list entries of an address.
func (s *shopifyService) customerSubscribers(t storage.Tenant, email string) ([]*storage.Subscriber, error) {
	if email == "" {
		return nil, nil
	}
	subs, _, err := s.Store.Subscribers(t, func(sub *storage.Subscriber) bool {
		return sub.Type == "email" && sub.Email == email
	}, 0, 1<<30)
	return subs, err
}

// errLogWait is the answer when the event log's readers did not pass the request's position in
// time: nothing was changed, Shopify retries.
var errLogWait = &api.Error{Status: 503, Type: api.TypeUnavailable,
	Message: "reader events are still being stored; nothing was changed, retry shortly"}

// waitLogged waits (at most ShopifyLogWait) until the analytics consumer, and the webhook
// dispatcher when the tenant has subscriptions, have stored every event of the tenant's log
// partition that was in the log when it was called: so a count or an erasure covers every
// reader event logged before the request.
func (s *shopifyService) waitLogged(r *api.Request) error {
	ctx, cancel := context.WithTimeout(context.Background(), ShopifyLogWait)
	defer cancel()
	t := r.Auth.Tenant
	p := ingest.PartitionOf(t.Workspace, s.events.Partitions())
	eo, ok := s.events.(ingest.EndOffsets)
	if !ok {
		if err := s.consumer.WaitCaughtUp(ctx); err != nil {
			return errLogWait
		}
		return nil
	}
	ends, err := eo.EndOffsets(ctx)
	if err != nil || p >= len(ends) {
		s.log.Error("shopify: event log end offsets", "err", err)
		return errLogWait
	}
	end := ends[p]
	s.consumer.Wake()
	if err := s.consumer.WaitFor(ctx, map[int]uint64{p: end}); err != nil {
		return errLogWait
	}
	subs, err := s.Store.WebhookSubscriptions(t)
	if err != nil {
		return err
	}
	if len(subs) == 0 {
		// A subscription receives only events the service received while it existed: none of
		// the events already logged can become a delivery of this tenant.
		return nil
	}
	for {
		pos, ok, err := s.Store.WebhookPosition(p)
		if err != nil {
			return err
		}
		if ok && pos >= end {
			return nil
		}
		select {
		case <-ctx.Done():
			return errLogWait
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *shopifyService) shopifyDataRequest(r *api.Request, in *shopifyRequest) (shopifyCounts, error) {
	t := r.Auth.Tenant
	counts := shopifyCounts{"viewers": 0, "subscribers": 0, "events": 0, "sessions": 0, "leads": 0, "webhook_deliveries": 0,
		"stored_export_rows": 0}
	if in.email == "" {
		return counts, nil // readers are known by their address only
	}
	if err := s.waitLogged(r); err != nil {
		return nil, err
	}
	m, err := s.readerMatch(t, in.email)
	if err != nil {
		return nil, err
	}
	if m.ViewerID != 0 {
		counts["viewers"] = 1
	}
	subs, err := s.customerSubscribers(t, in.email)
	if err != nil {
		return nil, err
	}
	counts["subscribers"] = int64(len(subs))
	ctx, cancel := context.WithTimeout(context.Background(), ShopifyLogWait)
	defer cancel()
	rc, err := s.Analytics.CountReader(ctx, m)
	if err != nil {
		return nil, err
	}
	counts["events"], counts["sessions"], counts["leads"] = rc.Events, rc.Sessions, rc.Leads
	n, err := s.customerDeliveries(t, in.email, false)
	if err != nil {
		return nil, err
	}
	counts["webhook_deliveries"] = int64(n)
	if counts["stored_export_rows"], err = s.customerExports(t, in.email, false); err != nil {
		return nil, err
	}
	return counts, nil
}

// customerExports counts the rows of the tenant's stored exports (the MCP export tools'
// output_path and output_object_key files) that name the address; with scrub it drops them.
func (s *shopifyService) customerExports(t storage.Tenant, email string, scrub bool) (int64, error) {
	n, err := s.Store.EraseFromExports(t, func(field string) bool { return mentions(strings.ToLower(field), email) }, !scrub)
	return int64(n), err
}

// shopifyRedactCustomer erases a customer's reader data: first the analytics rows (while the
// viewer record still gives the viewer id), then the access-list entries (through the book
// actors), the webhook payloads naming the address, the stored exports' rows naming it, and
// last the viewer record. Each step
// finds nothing the second time, so a request that failed half-way is completed by its retry.
func (s *shopifyService) shopifyRedactCustomer(r *api.Request, in *shopifyRequest) (shopifyCounts, error) {
	t := r.Auth.Tenant
	counts := shopifyCounts{"viewers": 0, "subscribers": 0, "events": 0, "sessions": 0, "leads": 0, "webhook_deliveries": 0,
		"stored_export_rows": 0}
	if in.email == "" {
		return counts, nil // readers are known by their address only: nothing is stored under a customer id
	}
	if err := s.waitLogged(r); err != nil {
		return nil, err
	}
	m, err := s.readerMatch(t, in.email)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ShopifyRedactWait)
	defer cancel()
	rc, err := s.consumer.RedactReader(ctx, m)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, analytics.ErrConsumerStopped) {
			return nil, &api.Error{Status: 503, Type: api.TypeUnavailable, Message: "the analytics store is busy; retry shortly"}
		}
		return nil, err
	}
	counts["events"], counts["sessions"], counts["leads"] = rc.Events, rc.Sessions, rc.Leads
	subs, err := s.customerSubscribers(t, in.email)
	if err != nil {
		return nil, err
	}
	for _, sub := range subs {
		// The book actor removes the entry and keeps eod_enabled right in the same commit.
		if _, err := s.Actors.RemoveSubscriber(t, sub.BookID, sub.ID); err != nil {
			if errors.Is(err, errs.ErrNotFound) {
				continue // removed meanwhile
			}
			return nil, err
		}
		counts["subscribers"]++
	}
	n, err := s.customerDeliveries(t, in.email, true)
	if err != nil {
		return nil, err
	}
	counts["webhook_deliveries"] = int64(n)
	if counts["stored_export_rows"], err = s.customerExports(t, in.email, true); err != nil {
		return nil, err
	}
	if m.ViewerID != 0 {
		b := s.Store.NewBatch()
		b.DeleteViewer(t, m.ViewerID, in.email)
		if err := b.Commit(); err != nil {
			return nil, err
		}
		counts["viewers"] = 1
	}
	return counts, nil
}

// redactedPayload replaces a delivery payload that named an erased customer.
var redactedPayload = []byte(`{"redacted":true}`)

// customerDeliveries counts the tenant's webhook deliveries whose payload names the address, or
// whose stored response body does (a receiver that echoes what it got); with scrub, it replaces
// those payloads with {"redacted": true} and those response bodies with redactedResponse.
// Payloads are shared by the deliveries of an event (t/<tenant>/whp/<event>), written once by
// the dispatcher before any of them is attempted: rewriting them races no other writer. A
// delivery record is rewritten only once finished (no attempt writes it any more): one from
// before payloads were shared without its own payload, one whose response named the address
// without that response. An unfinished one loses both at its next attempt, whose record write
// drops the payload and stores the new answer.
func (s *shopifyService) customerDeliveries(t storage.Tenant, email string, scrub bool) (int, error) {
	match := func(p []byte) bool { return payloadNames(p, email) }
	events, err := s.Store.WebhookPayloadsMatching(t, match)
	if err != nil {
		return 0, err
	}
	named := map[string]bool{}
	for _, e := range events {
		named[e] = true
	}
	n := 0
	var legacy, rewrite []*storage.WebhookDelivery
	err = s.Store.TenantWebhookDeliveries(t, func(d *storage.WebhookDelivery) error {
		hit := false
		if len(d.Payload) > 0 && string(d.Payload) != "null" {
			if match(d.Payload) {
				hit = true
				legacy = append(legacy, d)
			}
		} else {
			hit = named[d.EventID]
		}
		// Found by a review: an echoing receiver's answer kept the address after the erasure.
		echoed := d.ResponseBody != "" && mentions(strings.ToLower(d.ResponseBody), email)
		if echoed {
			d.ResponseBody = redactedResponse
		}
		finished := d.Status == storage.DeliverySucceeded || d.Status == storage.DeliveryFailed
		if finished && (echoed || len(d.Payload) > 0 && string(d.Payload) != "null" && hit) {
			rewrite = append(rewrite, d)
		}
		if hit || echoed {
			n++
		}
		return nil
	})
	if err != nil || !scrub || (len(events) == 0 && len(legacy) == 0 && len(rewrite) == 0) {
		return n, err
	}
	b := s.Store.NewBatch()
	for _, e := range events {
		b.PutWebhookPayload(t, e, redactedPayload)
	}
	for _, d := range legacy {
		b.PutWebhookPayload(t, d.EventID, redactedPayload)
	}
	for _, d := range rewrite {
		if err := b.PutWebhookDelivery(t, d); err != nil { // written without its own payload
			b.Close()
			return 0, err
		}
	}
	return n, b.Commit()
}

// redactedResponse replaces a delivery's stored response body that named an erased customer.
const redactedResponse = `{"redacted":true}`

// payloadNames reports whether a JSON payload has a string value naming the address (equal to
// it, or containing it between characters an address cannot continue with), ignoring case.
func payloadNames(payload []byte, email string) bool {
	at := strings.LastIndexByte(email, '@')
	if email == "" || at < 0 || !bytes.Contains(bytes.ToLower(payload), []byte(email[at:])) {
		return false // "@" and the domain are never escaped in JSON
	}
	// Numbers as written (UseNumber): one a float64 cannot hold (1e400, taken by the collector
	// before it refused them) failed the whole decoding, and the payload was passed over.
	var v any
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return mentions(strings.ToLower(x), email)
		case map[string]any:
			for k, e := range x {
				if mentions(strings.ToLower(k), email) || walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// mentions reports whether s contains the address as a whole (not inside a longer address).
func mentions(s, email string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], email)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(email)
		if (j == 0 || !addressChar(s[j-1])) && (end == len(s) || !hostChar(s[end], end+1 < len(s) && hostChar(s[end+1], false))) {
			return true
		}
		i = j + 1
	}
}

// addressChar: characters of an address's local part (RFC 5322 atext and dots).
func addressChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-/=?^_`{|}~.", c) >= 0
}

// hostChar: characters continuing a host name; a dot only when a host character follows it
// (an address at the end of a sentence is still the address).
func hostChar(c byte, next bool) bool {
	if c == '.' {
		return next
	}
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
}

// shopifyRedactShop erases the shop's data: its catalogs (source shopify, external_id or
// source_url host equal to the shop domain). The shop's stored answers and audit records are
// removed by the caller in the batch that records this request.
func (s *shopifyService) shopifyRedactShop(r *api.Request, in *shopifyRequest) (shopifyCounts, error) {
	catalogs, items, err := s.redactShopCatalogs(r.Auth.Tenant, in.shop)
	if err != nil {
		return nil, err
	}
	return shopifyCounts{"catalogs": int64(catalogs), "items": items, "shopify_records": 0}, nil
}

// shopCatalogs are the tenant's active catalogs of a shop: source shopify, and an external id
// or a source URL host equal to the shop domain (ignoring case).
func (s *shopifyService) shopCatalogs(t storage.Tenant, shop string) ([]*storage.Catalog, error) {
	all, err := s.Store.Catalogs(t, 0, 0)
	if err != nil {
		return nil, err
	}
	var out []*storage.Catalog
	for _, c := range all {
		if c.Source != "shopify" {
			continue
		}
		match := c.ExternalID != nil && strings.EqualFold(strings.TrimSpace(*c.ExternalID), shop)
		if !match && c.SourceURL != nil {
			raw := strings.TrimSpace(*c.SourceURL)
			if !strings.Contains(raw, "://") {
				raw = "https://" + raw
			}
			if u, err := url.Parse(raw); err == nil {
				match = strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), shop)
			}
		}
		if match {
			out = append(out, c)
		}
	}
	return out, nil
}

// redactShopCatalogs deletes the shop's catalogs through the workspace actor (archived: gone
// from the API at once, their items purged by a background job) and returns how many catalogs
// and items (as their last sync counted them) went.
func (s *shopifyService) redactShopCatalogs(t storage.Tenant, shop string) (catalogs int, items int64, err error) {
	list, err := s.shopCatalogs(t, shop)
	if err != nil {
		return 0, 0, err
	}
	for _, c := range list {
		st, err := s.Store.CatalogState(t, c.ID)
		if err != nil {
			return 0, 0, err
		}
		if _, err := s.Actors.ArchiveCatalog(t, c.ID); err != nil {
			if errors.Is(err, errs.ErrNotFound) {
				continue // archived meanwhile
			}
			return 0, 0, err
		}
		catalogs++
		items += st.Items
	}
	return catalogs, items, nil
}

// workspaceSlugRE: lowercase letters, digits and hyphens, not starting or ending with a hyphen.
var workspaceSlugRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

// ShopifyWorkspaceName is POST /integrations/shopify/workspace-name: the one rename of the
// workspace the connector generated at sign-up, through the accounts actor (which owns names
// and the slug index, so a slug cannot be claimed twice).
//
// The workspace is shared by both modes, so only a live key renames it: the test mode is a
// sandbox whose calls change nothing a live reader sees.
func (s *shopifyService) ShopifyWorkspaceName(r *api.Request, in *api.ShopifyWorkspaceName) (*api.Reply[api.ShopifyRenamed, api.ShopifyRenamedMeta], error) {
	if r.Auth.Tenant.Mode != storage.ModeLive {
		return nil, &api.Error{Status: 403, Type: api.TypeForbidden,
			Message: "the workspace is renamed with a live key: test-mode keys change nothing outside the sandbox"}
	}
	name := strings.TrimSpace(in.WorkspaceName)
	slug := ""
	if in.WorkspaceSlug != nil {
		slug = *in.WorkspaceSlug
		if !workspaceSlugRE.MatchString(slug) {
			return nil, api.FieldError("workspace_slug", "must be lowercase letters, digits and hyphens, not starting or ending with a hyphen")
		}
	}
	res, err := s.Actors.RenameWorkspace(r.Auth.Workspace.ID, name, slug)
	if errors.Is(err, actors.ErrNotRenamable) || errors.Is(err, actors.ErrAlreadyRenamed) {
		return nil, &api.Error{Status: 403, Type: api.TypeForbidden, Message: err.Error()}
	}
	if err != nil {
		return nil, notFoundAs(err, "workspace")
	}
	s.caller.InvalidateAuth() // the cached principal holds the old name
	return api.With(api.ShopifyRenamed{Workspace: wsJSON(res.Workspace)},
		api.ShopifyRenamedMeta{PreviousName: res.OldName, PreviousSlug: res.OldSlug}), nil
}
