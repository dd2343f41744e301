package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"flipbook/actors"
	"flipbook/api"
	"flipbook/internal/testutil"
	"flipbook/storage"
)

const shopifyHook = "/api/v1/integrations/shopify/webhooks"

// shopifyBody is a GDPR webhook as the connector forwards it; customer nil leaves it out.
func shopifyBody(topic, shop string, customer map[string]any, dataRequest int) map[string]any {
	p := map[string]any{"shop_domain": shop, "shop_id": 954889}
	if customer != nil {
		p["customer"] = customer
	}
	if dataRequest != 0 {
		p["data_request"] = map[string]any{"id": dataRequest}
	}
	return map[string]any{"topic": topic, "shopDomain": shop, "payload": p}
}

// shopifyCall posts a GDPR webhook and requires status.
func (h *harness) shopifyCall(t *testing.T, key string, status int, body map[string]any) *resp {
	t.Helper()
	r := h.do(t, "POST", shopifyHook, key, body)
	require.Equal(t, status, r.Status, "%s", r.Body)
	return r
}

// counts is the answer's counts as integers.
func counts(r *resp) map[string]int {
	out := map[string]int{}
	for k, v := range r.data()["counts"].(map[string]any) {
		out[k] = int(v.(float64))
	}
	return out
}

func TestShopifyWebhookStatuses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "free", "live", "catalogs:write") // any plan
	shop := "acme.myshopify.com"
	cust := map[string]any{"id": 191167, "email": "john@example.com"}

	require.Equal(t, 401, h.do(t, "POST", shopifyHook, "", shopifyBody("customers/data_request", shop, cust, 9999)).Status)
	require.Equal(t, 401, h.do(t, "POST", shopifyHook, "wsk_live_nope", shopifyBody("customers/data_request", shop, cust, 9999)).Status)
	readOnly := h.key(t, ws, "live", "catalogs:read")
	r := h.shopifyCall(t, readOnly, 403, shopifyBody("customers/data_request", shop, cust, 9999))
	require.Equal(t, "MissingScope", r.errType())

	for name, c := range map[string]struct {
		body  any
		field string
	}{
		"no topic":             {map[string]any{"shopDomain": shop, "payload": map[string]any{"shop_domain": shop, "shop_id": 1}}, "topic"},
		"unknown topic":        {shopifyBody("orders/create", shop, nil, 0), "topic"},
		"no shopDomain":        {map[string]any{"topic": "shop/redact", "payload": map[string]any{"shop_domain": shop, "shop_id": 1}}, "shopDomain"},
		"long shopDomain":      {shopifyBody("shop/redact", strings.Repeat("a", 250)+".myshopify.com", nil, 0), "shopDomain"},
		"not a domain":         {shopifyBody("shop/redact", "not a domain!", nil, 0), "shopDomain"},
		"no payload":           {map[string]any{"topic": "shop/redact", "shopDomain": shop}, "payload"},
		"payload not object":   {map[string]any{"topic": "shop/redact", "shopDomain": shop, "payload": "x"}, "payload"},
		"no payload domain":    {map[string]any{"topic": "shop/redact", "shopDomain": shop, "payload": map[string]any{"shop_id": 1}}, "payload.shop_domain"},
		"no shop_id":           {map[string]any{"topic": "shop/redact", "shopDomain": shop, "payload": map[string]any{"shop_domain": shop}}, "payload.shop_id"},
		"shop_id not integer":  {map[string]any{"topic": "shop/redact", "shopDomain": shop, "payload": map[string]any{"shop_domain": shop, "shop_id": 1.5}}, "payload.shop_id"},
		"domains differ":       {map[string]any{"topic": "shop/redact", "shopDomain": shop, "payload": map[string]any{"shop_domain": "other.myshopify.com", "shop_id": 1}}, "shopDomain"},
		"customer missing":     {shopifyBody("customers/redact", shop, nil, 0), "payload.customer"},
		"customer empty":       {shopifyBody("customers/data_request", shop, map[string]any{}, 1), "payload.customer"},
		"customer bad email":   {shopifyBody("customers/redact", shop, map[string]any{"email": "not-an-address"}, 0), "payload.customer.email"},
		"customer long email":  {shopifyBody("customers/redact", shop, map[string]any{"email": strings.Repeat("a", 250) + "@example.com"}, 0), "payload.customer.email"},
		"customer id string":   {shopifyBody("customers/redact", shop, map[string]any{"id": "abc"}, 0), "payload.customer.id"},
		"data_request id text": {shopifyBody("customers/data_request", shop, cust, 0), ""},
	} {
		t.Run(name, func(t *testing.T) {
			b := c.body
			if c.field == "" { // a data_request id that is not an integer
				m := b.(map[string]any)
				m["payload"].(map[string]any)["data_request"] = map[string]any{"id": "x"}
				c.field = "payload.data_request.id"
			}
			r := h.do(t, "POST", shopifyHook, key, b)
			require.Equal(t, 422, r.Status, "%s", r.Body)
			require.Equal(t, "ValidationException", r.errType())
			require.Contains(t, r.details(), c.field, "%s", r.Body)
		})
	}

	// 202 on every topic, with the usual envelope; the same request again is replayed.
	for _, topic := range []string{"customers/data_request", "customers/redact", "shop/redact"} {
		body := shopifyBody(topic, shop, cust, 9999)
		first := h.shopifyCall(t, key, 202, body)
		d := first.data()
		require.Equal(t, false, d["replayed"], topic)
		require.Equal(t, "completed", d["status"], topic)
		require.Equal(t, map[string]string{"customers/data_request": "data_request", "customers/redact": "redact_customer",
			"shop/redact": "redact_shop"}[topic], d["action"])
		again := h.shopifyCall(t, key, 202, body)
		require.Equal(t, true, again.data()["replayed"], topic)
		require.Equal(t, d["counts"], again.data()["counts"], topic)
		require.Equal(t, d["action"], again.data()["action"])
	}
	// Another data request id, or the shop domain in other case with another customer, is
	// another request.
	require.Equal(t, false, h.shopifyCall(t, key, 202, shopifyBody("customers/data_request", shop, cust, 10000)).data()["replayed"])
	// A customer known only by id: accepted, nothing matches (readers are known by address).
	r = h.shopifyCall(t, key, 202, shopifyBody("customers/redact", "ACME.myshopify.com", map[string]any{"id": 5}, 0))
	require.Equal(t, false, r.data()["replayed"])
	for k, n := range counts(r) {
		require.Zero(t, n, k)
	}
}

// shopifyWorkspace creates a workspace as the Shopify connector does at sign-up and a key with
// scopes; it returns the key, the workspace id and the created workspace.
func (h *harness) shopifyWorkspace(t *testing.T, name string, scopes ...string) (string, int64, map[string]any) {
	t.Helper()
	w := h.adminDo(t, "POST", "/workspaces", map[string]any{"name": name, "plan": "free", "signup_source": "shopify"})
	require.Equal(t, 201, w.Status, "%s", w.Body)
	id := int64(w.data()["id"].(float64))
	return h.key(t, id, "live", scopes...), id, w.data()
}

// tenantValues returns every value stored under a tenant's key prefix.
func tenantValues(t *testing.T, h *harness, ws int64, mode byte) [][]byte {
	t.Helper()
	p := append([]byte("t/"), binary.BigEndian.AppendUint64(nil, uint64(ws))...)
	p = append(p, mode, '/')
	upper := append([]byte(nil), p...)
	upper[len(upper)-1]++
	it, err := h.svc.Store.DB().NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: upper})
	require.NoError(t, err)
	defer it.Close()
	var out [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, append(append([]byte(nil), it.Key()...), append([]byte{0}, it.Value()...)...))
	}
	require.NoError(t, it.Error())
	return out
}

// TestShopifyCustomerData: a data request counts what a workspace holds of a customer (reader
// records, access-list entries, events, sessions and leads in DuckDB, webhook deliveries); a
// redaction deletes all of it everywhere: no analytics operation or export returns the
// customer afterwards, other readers stay, events logged just before the request are deleted
// too, and another workspace's data of the same address is untouched.
func TestShopifyCustomerData(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	keyA, wsA := h.workspaceKey(t, "company", "live", "*")
	keyB, wsB := h.workspaceKey(t, "company", "live", "*")
	const ann, bob, shop = "ann@example.com", "bob@example.com", "acme.myshopify.com"
	rc := newReceiver(t, "")
	sub := h.do(t, "POST", "/api/v1/webhook-subscriptions", keyA, map[string]any{"name": "crm", "provider": "generic",
		"target_url": rc.url(), "event_types": []string{"access_requested", "access_granted", "access_denied", "flipbook_opened",
			"page_dwelled", "link_clicked", "cta_submitted", "session_ended"}})
	require.Equal(t, 201, sub.Status, "%s", sub.Body)
	subID := itoa(int64(sub.data()["id"].(float64)))

	gated := h.konva(t, keyA, "Gated", "publish")
	open := h.konva(t, keyA, "Open", "publish")
	annOnly := h.konva(t, keyA, "Ann only", "publish")
	bookB := h.konva(t, keyB, "B's", "publish")
	for _, s := range []struct{ key, book, email string }{{keyA, gated, ann}, {keyA, gated, bob}, {keyA, annOnly, "Ann@Example.com"}, {keyB, bookB, ann}} {
		r := h.do(t, "POST", "/api/v1/subscribers", s.key, map[string]any{"book_id": s.book, "email": s.email})
		require.Equal(t, 201, r.Status, "%s", r.Body)
	}
	gate := func(book, email, session string) (string, float64) {
		r := h.do(t, "POST", "/view/"+book+"/access", "", map[string]any{"email": email, "session_id": session})
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.data()["reader_token"].(string), r.data()["viewer_id"].(float64)
	}
	post := func(book, session, token string, events ...map[string]any) {
		b := collectBody(book, events...)
		b["session_id"] = session
		if token != "" {
			b["reader_token"] = token
		}
		r := h.do(t, "POST", "/collect", "", b)
		require.Equal(t, 202, r.Status, "%s", r.Body)
	}
	annTok, annViewer := gate(gated, "Ann@Example.com", "s-ann")
	post(gated, "s-ann", annTok,
		map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 4000},
		map[string]any{"type": "lead_form_submitted", "page_number": 2, "form": map[string]any{"email": ann, "name": "Ann"}},
		map[string]any{"type": "link_clicked", "page_number": 2, "url": "https://shop.example.com/p/1"},
		map[string]any{"type": "session_ended", "exit_reason": "closed"})
	bobTok, bobViewer := gate(gated, bob, "s-bob")
	post(gated, "s-bob", bobTok,
		map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 3000})
	require.Equal(t, 403, h.do(t, "POST", "/view/"+gated+"/access", "", map[string]any{"email": "eve@evil.example", "session_id": "s-eve"}).Status)
	// An anonymous reader's lead form with Ann's address (another case), and someone else's.
	post(open, "s-anon-ann", "",
		map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "lead_form_submitted", "page_number": 1, "form": map[string]any{"Email": "Ann@Example.com", "company": "X"}})
	post(open, "s-zoe", "",
		map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "lead_form_submitted", "page_number": 1, "form": map[string]any{"email": "zoe@example.org"}})
	// The same address in workspace B.
	annTokB, _ := gate(bookB, ann, "s-ann-b")
	post(bookB, "s-ann-b", annTokB, map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 2500})
	h.logged(t)

	// Before: Ann is in A's analytics and exports.
	annViewerID := itoa(int64(annViewer))
	readers := h.do(t, "GET", "/api/v1/analytics/readers?book_id="+gated, keyA, nil)
	require.Equal(t, 200, readers.Status, "%s", readers.Body)
	require.Contains(t, strings.ToLower(string(readers.Body)), ann)
	require.Contains(t, string(h.do(t, "GET", "/api/v1/analytics/reader-journey?viewer_id="+annViewerID, keyA, nil).Body), ann)
	require.Contains(t, strings.ToLower(string(h.export(t, keyA, "/api/v1/exports/books/"+open+"/leads").resp.Body)), ann)

	// The data request: what A holds of Ann. It waits for the webhook dispatcher, so every
	// delivery of her events exists when it answers.
	dr := h.shopifyCall(t, keyA, 202, shopifyBody("customers/data_request", shop, map[string]any{"id": 1, "email": "ANN@example.com"}, 77))
	require.Equal(t, "data_request", dr.data()["action"])
	deliveries := func() (naming, redacted int, other int) {
		r := h.do(t, "GET", "/api/v1/webhook-subscriptions/"+subID+"/deliveries?limit=100", keyA, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, d := range r.list() {
			p, _ := json.Marshal(d.(map[string]any)["payload"])
			switch {
			case strings.Contains(strings.ToLower(string(p)), ann):
				naming++
			case string(p) == `{"redacted":true}`:
				redacted++
			default:
				other++
			}
		}
		return
	}
	naming, _, others := deliveries()
	require.Positive(t, naming)
	require.Positive(t, others)
	require.Equal(t, map[string]int{"viewers": 1, "subscribers": 2, "events": 9, "sessions": 2, "leads": 2,
		"webhook_deliveries": naming, "stored_export_rows": 0}, counts(dr))
	// Nothing was deleted by it.
	require.Equal(t, counts(dr), counts(h.shopifyCall(t, keyA, 202, shopifyBody("customers/data_request", shop,
		map[string]any{"id": 1, "email": ann}, 78))))

	// One more event of Ann's, and at once the redaction: it waits for the consumer, so this
	// event is deleted too.
	post(gated, "s-ann", annTok, map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 2000})
	redactBody := shopifyBody("customers/redact", shop, map[string]any{"id": 1, "email": ann}, 0)
	red := h.shopifyCall(t, keyA, 202, redactBody)
	require.Equal(t, "redact_customer", red.data()["action"])
	require.Equal(t, false, red.data()["replayed"])
	naming, redacted, others2 := deliveries()
	require.Zero(t, naming, "no delivery payload names Ann any more")
	require.Equal(t, others, others2, "other readers' deliveries are untouched")
	require.Equal(t, map[string]int{"viewers": 1, "subscribers": 2, "events": 10, "sessions": 2, "leads": 2,
		"webhook_deliveries": redacted, "stored_export_rows": 0}, counts(red))
	// A retry is replayed: nothing is done again.
	again := h.shopifyCall(t, keyA, 202, redactBody)
	require.Equal(t, true, again.data()["replayed"])
	require.Equal(t, red.data()["counts"], again.data()["counts"])
	// Nothing is left to count.
	for k, n := range counts(h.shopifyCall(t, keyA, 202, shopifyBody("customers/data_request", shop, map[string]any{"email": ann}, 79))) {
		require.Zero(t, n, k)
	}

	// No per-reader operation or export of A returns Ann; the other readers are still there.
	absent := func(path string, present ...string) {
		t.Helper()
		r := h.do(t, "GET", path, keyA, nil)
		require.Equal(t, 200, r.Status, "%s: %s", path, r.Body)
		body := strings.ToLower(string(r.Body))
		require.NotContains(t, body, ann, path)
		require.NotContains(t, body, `"viewer_id":`+annViewerID+`,`, path)
		for _, p := range present {
			require.Contains(t, body, p, path)
		}
	}
	for _, book := range []string{gated, open, annOnly} {
		absent("/api/v1/analytics/interaction-events?book_id=" + book)
		absent("/api/v1/analytics/audit-log?book_id=" + book)
		absent("/api/v1/analytics/book-view-events?book_id=" + book)
		absent("/api/v1/analytics/readers?book_id=" + book + "&include_anonymous=true")
		absent("/api/v1/analytics/reader-pages?book_id=" + book + "&include_anonymous=true")
		for _, e := range []string{"interaction-events", "audit-log", "access-audit", "leads", "readers", "reader-pages"} {
			absent("/api/v1/exports/books/" + book + "/" + e)
		}
		absent("/api/v1/exports/analytics/" + book)
	}
	absent("/api/v1/analytics/readers?book_id="+gated, bob)
	absent("/api/v1/exports/books/"+gated+"/readers", bob)
	absent("/api/v1/exports/books/"+gated+"/interaction-events", bob)
	absent("/api/v1/analytics/audit-log?book_id="+gated, bob, "eve@evil.example")
	absent("/api/v1/exports/books/"+open+"/leads", "zoe@example.org")
	absent("/api/v1/analytics/interaction-events?book_id="+open, "zoe@example.org", "s-zoe")
	// Ann is no longer a viewer of the workspace: her journey is a 404, naming no one.
	gone := h.do(t, "GET", "/api/v1/analytics/reader-journey?viewer_id="+annViewerID, keyA, nil)
	require.Equal(t, 404, gone.Status, "%s", gone.Body)
	require.NotContains(t, strings.ToLower(string(gone.Body)), ann)
	absent("/api/v1/analytics/reader-journey?viewer_id="+itoa(int64(bobViewer)), bob)
	absent("/api/v1/analytics/reader-journey?session_id=s-anon-ann")
	absent("/api/v1/subscribers", bob)
	// Sample payloads come from the stored events (examples carry a made-up viewer id 1).
	samples := h.do(t, "GET", "/api/v1/webhook-subscriptions/sample-events", keyA, nil)
	require.Equal(t, 200, samples.Status, "%s", samples.Body)
	require.NotContains(t, strings.ToLower(string(samples.Body)), ann)

	// The access lists: Ann's entries went through the book actors, so the book gated by her
	// entry alone is open again and the other stays gated.
	settings := func(rid string) map[string]any { return h.bookData(t, keyA, rid)["settings"].(map[string]any) }
	require.Equal(t, false, settings(annOnly)["eod_enabled"])
	require.Equal(t, true, settings(gated)["eod_enabled"])

	// Nothing stored under A holds the address; the audit log of the requests has its hash.
	for _, kv := range tenantValues(t, h, wsA, 'l') {
		require.NotContains(t, strings.ToLower(string(kv)), ann)
	}
	recs, err := h.svc.Store.ShopifyGDPRRecords(storage.Tenant{Workspace: wsA, Mode: storage.ModeLive}, shop)
	require.NoError(t, err)
	require.Len(t, recs, 4) // three data requests and the redaction (the replay is not a new request)
	sum := sha256.Sum256([]byte(ann))
	for _, rec := range recs {
		require.Equal(t, hex.EncodeToString(sum[:]), rec.EmailSHA256)
		require.Equal(t, int64(954889), rec.ShopID)
	}
	require.Equal(t, []string{"customers/data_request", "customers/data_request", "customers/redact", "customers/data_request"},
		[]string{recs[0].Topic, recs[1].Topic, recs[2].Topic, recs[3].Topic})
	require.EqualValues(t, 10, recs[2].Counts["events"])
	require.EqualValues(t, 77, *recs[0].DataRequestID)

	// Workspace B still holds its data of the same address.
	b := counts(h.shopifyCall(t, keyB, 202, shopifyBody("customers/data_request", shop, map[string]any{"email": ann}, 80)))
	require.Equal(t, map[string]int{"viewers": 1, "subscribers": 1, "events": 4, "sessions": 1, "leads": 0, "webhook_deliveries": 0,
		"stored_export_rows": 0}, b)
	require.Contains(t, strings.ToLower(string(h.do(t, "GET", "/api/v1/analytics/readers?book_id="+bookB, keyB, nil).Body)), ann)
	found := false
	for _, kv := range tenantValues(t, h, wsB, 'l') {
		found = found || bytes.Contains(bytes.ToLower(kv), []byte(ann))
	}
	require.True(t, found, "B's records of the address stay")

	// Last (it records a new access attempt with the address): Ann no longer passes A's gate.
	require.Equal(t, 403, h.do(t, "POST", "/view/"+gated+"/access", "", map[string]any{"email": ann, "session_id": "s-2"}).Status)
}

// TestShopifyShopRedact: shop/redact deletes the shop's catalogs (source shopify, by external
// id or source URL host) and the shop's stored Shopify records, nothing of other shops.
func TestShopifyShopRedact(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
	const shop, other = "acme.myshopify.com", "other.myshopify.com"
	str := func(s string) *string { return &s }
	mk := func(name, source string, ext, url *string) int64 {
		c, err := h.svc.Actors.CreateCatalog(tn, &actors.CreateCatalog{Catalog: &storage.Catalog{Name: name, Source: source,
			ExternalID: ext, SourceURL: url}})
		require.NoError(t, err)
		return c.Catalog.ID
	}
	byExt := mk("by external id", "shopify", str("ACME.myshopify.com"), nil)
	byURL := mk("by url", "shopify", str("gid-1"), str("https://acme.myshopify.com/collections/all"))
	keepOther := mk("other shop", "shopify", str(other), str("https://"+other+"/"))
	keepSource := mk("not shopify", "woocommerce", str(shop), str("https://"+shop+"/"))

	cust := map[string]any{"email": "x@example.com"}
	mine := shopifyBody("customers/data_request", shop, cust, 1)
	theirs := shopifyBody("customers/data_request", other, cust, 1)
	h.shopifyCall(t, key, 202, mine)
	h.shopifyCall(t, key, 202, theirs)

	r := h.shopifyCall(t, key, 202, shopifyBody("shop/redact", shop, nil, 0))
	require.Equal(t, "redact_shop", r.data()["action"])
	require.Equal(t, map[string]int{"catalogs": 2, "items": 0, "shopify_records": 2}, counts(r))
	left, err := h.svc.Store.Catalogs(tn, 0, 0)
	require.NoError(t, err)
	var ids []int64
	for _, c := range left {
		ids = append(ids, c.ID)
	}
	require.ElementsMatch(t, []int64{keepOther, keepSource}, ids)
	for _, id := range []int64{byExt, byURL} {
		c, err := h.svc.Store.Catalog(tn, id)
		require.NoError(t, err)
		require.Equal(t, storage.CatalogArchived, c.Status)
	}
	// The shop's records went (its data request is answered afresh), the other shop's stay;
	// the erasure itself is recorded and replayed.
	require.Equal(t, false, h.shopifyCall(t, key, 202, mine).data()["replayed"])
	require.Equal(t, true, h.shopifyCall(t, key, 202, theirs).data()["replayed"])
	again := h.shopifyCall(t, key, 202, shopifyBody("shop/redact", shop, nil, 0))
	require.Equal(t, true, again.data()["replayed"])
	require.Equal(t, r.data()["counts"], again.data()["counts"])
	recs, err := h.svc.Store.ShopifyGDPRRecords(tn, shop)
	require.NoError(t, err)
	require.Len(t, recs, 2) // the erasure, and the data request made after it
	require.Equal(t, "shop/redact", recs[0].Topic)
}

func TestShopifyWorkspaceName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	const path = "/api/v1/integrations/shopify/workspace-name"
	key, ws, created := h.shopifyWorkspace(t, "acme-store.myshopify.com", "workspace:write", "books:read")
	require.Equal(t, true, created["can_rename"])
	require.Equal(t, "acme-store-myshopify-com", created["slug"])
	plainKey, _ := h.workspaceKey(t, "pro", "live", "workspace:write")
	require.Equal(t, false, h.do(t, "GET", "/api/v1/me", plainKey, nil).data()["workspace"].(map[string]any)["can_rename"])

	require.Equal(t, 401, h.do(t, "POST", path, "", map[string]any{"workspace_name": "Acme"}).Status)
	noScope := h.key(t, ws, "live", "books:write")
	r := h.do(t, "POST", path, noScope, map[string]any{"workspace_name": "Acme"})
	require.Equal(t, 403, r.Status)
	require.Equal(t, "MissingScope", r.errType())
	// Not generated by the connector: 403.
	r = h.do(t, "POST", path, plainKey, map[string]any{"workspace_name": "Acme"})
	require.Equal(t, 403, r.Status, "%s", r.Body)
	require.Equal(t, "Forbidden", r.errType())
	require.Contains(t, string(r.Body), "not generated by the Shopify connector")
	// A test-mode key is a sandbox: it cannot use up the live workspace's one rename.
	r = h.do(t, "POST", path, h.key(t, ws, "test", "workspace:write"), map[string]any{"workspace_name": "Sandbox name"})
	require.Equal(t, 403, r.Status, "%s", r.Body)
	require.Equal(t, "Forbidden", r.errType())
	require.Equal(t, true, h.do(t, "GET", "/api/v1/me", key, nil).data()["workspace"].(map[string]any)["can_rename"])

	_, _, taken := h.shopifyWorkspace(t, "Taken Co", "workspace:write")
	for name, c := range map[string]struct {
		body  map[string]any
		field string
	}{
		"no name":      {map[string]any{}, "workspace_name"},
		"empty name":   {map[string]any{"workspace_name": ""}, "workspace_name"},
		"blank name":   {map[string]any{"workspace_name": "   "}, "workspace_name"},
		"long name":    {map[string]any{"workspace_name": strings.Repeat("n", 256)}, "workspace_name"},
		"name type":    {map[string]any{"workspace_name": 12}, "workspace_name"},
		"slug chars":   {map[string]any{"workspace_name": "Acme", "workspace_slug": "Acme Store"}, "workspace_slug"},
		"slug hyphen":  {map[string]any{"workspace_name": "Acme", "workspace_slug": "-acme"}, "workspace_slug"},
		"slug long":    {map[string]any{"workspace_name": "Acme", "workspace_slug": strings.Repeat("a", 256)}, "workspace_slug"},
		"slug empty":   {map[string]any{"workspace_name": "Acme", "workspace_slug": ""}, "workspace_slug"},
		"slug taken":   {map[string]any{"workspace_name": "Acme", "workspace_slug": taken["slug"]}, "workspace_slug"},
		"slug of mode": {map[string]any{"workspace_name": "Acme", "workspace_slug": "ws-pro"}, "workspace_slug"},
	} {
		t.Run(name, func(t *testing.T) {
			r := h.do(t, "POST", path, key, c.body)
			require.Equal(t, 422, r.Status, "%s", r.Body)
			require.Contains(t, r.details(), c.field, "%s", r.Body)
		})
	}
	// Still renamable after the refusals.
	require.Equal(t, true, h.do(t, "GET", "/api/v1/me", key, nil).data()["workspace"].(map[string]any)["can_rename"])

	r = h.do(t, "POST", path, key, map[string]any{"workspace_name": "Acme Store", "workspace_slug": "acme"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, map[string]any{"id": float64(ws), "name": "Acme Store", "slug": "acme", "plan": "free", "can_rename": false},
		r.data()["workspace"])
	require.Equal(t, map[string]any{"previous_name": "acme-store.myshopify.com", "previous_slug": "acme-store-myshopify-com"}, r.meta())
	me := h.do(t, "GET", "/api/v1/me", key, nil).data()["workspace"].(map[string]any)
	require.Equal(t, "Acme Store", me["name"])
	require.Equal(t, false, me["can_rename"])
	// Once only.
	r = h.do(t, "POST", path, key, map[string]any{"workspace_name": "Again"})
	require.Equal(t, 403, r.Status, "%s", r.Body)
	require.Equal(t, "Forbidden", r.errType())
	require.Contains(t, string(r.Body), "already been renamed")
	// The slug index moved: the old slug is free again, the new one is taken.
	w := h.adminDo(t, "POST", "/workspaces", map[string]any{"name": "acme-store.myshopify.com", "plan": "free"})
	require.Equal(t, "acme-store-myshopify-com", w.data()["slug"])
	w = h.adminDo(t, "POST", "/workspaces", map[string]any{"name": "Acme", "plan": "free"})
	require.Equal(t, "acme-2", w.data()["slug"])

	// Without a slug, one is derived from the name, with a suffix when it is taken.
	k2, _, _ := h.shopifyWorkspace(t, "second.myshopify.com", "workspace:write")
	r = h.do(t, "POST", path, k2, map[string]any{"workspace_name": "Acme"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "acme-3", r.data()["workspace"].(map[string]any)["slug"])

	// Two workspaces claiming one slug at once: one gets it, the other a 422.
	var keys []string
	for i := 0; i < 6; i++ {
		k, _, _ := h.shopifyWorkspace(t, fmt.Sprintf("race-%d.myshopify.com", i), "workspace:write")
		keys = append(keys, k)
	}
	statuses := make([]int, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() {
			statuses[i] = h.do(t, "POST", path, k, map[string]any{"workspace_name": "Race", "workspace_slug": "the-race"}).Status
		})
	}
	wg.Wait()
	won := 0
	for _, st := range statuses {
		require.Contains(t, []int{200, 422}, st)
		if st == 200 {
			won++
		}
	}
	require.Equal(t, 1, won, "%v", statuses)
}

// checkShopifyResponses checks a success of both Shopify operations (and their refusals)
// against the OpenAPI document and returns the operations covered
// (TestOpenAPIDocumentMatchesResponses can take them).
func checkShopifyResponses(t *testing.T) map[string]bool {
	h := newHarness(t, nil)
	c := newOpenAPIChecker(t, h)
	key := h.workspace(t, "free", "live")
	cust := map[string]any{"id": 1, "email": "x@example.com"}
	c.check(t, 202, "POST", shopifyHook, key, shopifyBody("customers/data_request", "a.myshopify.com", cust, 1))
	c.check(t, 202, "POST", shopifyHook, key, shopifyBody("customers/data_request", "a.myshopify.com", cust, 1))
	c.check(t, 202, "POST", shopifyHook, key, shopifyBody("customers/redact", "a.myshopify.com", cust, 0))
	c.check(t, 202, "POST", shopifyHook, key, shopifyBody("shop/redact", "a.myshopify.com", nil, 0))
	c.check(t, 422, "POST", shopifyHook, key, shopifyBody("customers/redact", "a.myshopify.com", nil, 0))
	c.check(t, 401, "POST", shopifyHook, "", shopifyBody("shop/redact", "a.myshopify.com", nil, 0))
	skey, _, _ := h.shopifyWorkspace(t, "a.myshopify.com", "*")
	const path = "/api/v1/integrations/shopify/workspace-name"
	c.check(t, 200, "POST", path, skey, map[string]any{"workspace_name": "A", "workspace_slug": "a-shop"})
	c.check(t, 403, "POST", path, skey, map[string]any{"workspace_name": "B"})
	c.check(t, 403, "POST", path, key, map[string]any{"workspace_name": "B"})
	c.check(t, 422, "POST", path, key, map[string]any{"workspace_name": ""})
	return c.covered
}

func TestShopifyOpenAPI(t *testing.T) {
	t.Parallel()
	covered := checkShopifyResponses(t)
	require.True(t, covered["integrations_shopify_webhooks"])
	require.True(t, covered["integrations_shopify_workspace_name"])
	// Neither has an MCP tool.
	h := newHarness(t, nil)
	for _, op := range h.svc.Operations() {
		if strings.HasPrefix(op.ID, "integrations.") {
			require.Empty(t, op.Tool, op.ID)
		}
	}
}

// The address matcher of delivery payloads.
func TestShopifyPayloadNames(t *testing.T) {
	t.Parallel()
	const e = "ann@example.com"
	for payload, want := range map[string]bool{
		`{"data":{"reader":{"email":"ann@example.com"}}}`:      true,
		`{"data":{"reader":{"email":"Ann@Example.COM"}}}`:      true,
		`{"fields":{"note":"write to ann@example.com."}}`:      true,
		`{"fields":["x", {"e": "<ann@example.com>"}]}`:         true,
		`{"data":{"reader":{"email":"joann@example.com"}}}`:    false,
		`{"data":{"reader":{"email":"ann@example.com.au"}}}`:   false,
		`{"data":{"reader":{"email":"ann.b@example.com"}}}`:    false,
		`{"data":{"reader":{"email":null}},"x":"example.com"}`: false,
		`{"redacted":true}`:                                       false,
		`not json ann@example.com`:                                false,
		`{"data":{"reader":{"email":"ann@example.community"}}}`:   false,
		`{"ann@example.com": 1}`:                                  true,
		`{"list":["bob@example.com", "ann@example.com", "carl"]}`: true,
		// A number no float64 holds, stored before the collector refused them: the payload
		// is still read (it was passed over, and the address stayed after an erasure).
		`{"form":{"email":"ann@example.com","budget":1e400}}`: true,
	} {
		require.Equal(t, want, payloadNames([]byte(payload), e), payload)
	}
}

// echoReceiver answers every webhook delivery 200 with the body it received, as many
// receivers (request bins, debugging endpoints, some CRMs) do.
func echoReceiver(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true,"echo":`))
		_, _ = w.Write(body)
		_, _ = w.Write([]byte(`}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestShopifyRedactEchoedResponseBody: customers/redact also reaches the first 4 KB of the
// receiver's answer each delivery keeps (response_body): a receiver echoing the payload left the
// address in the delivery log, readable by GET .../deliveries and stored in Pebble after the
// erasure (found by a review).
func TestShopifyRedactEchoedResponseBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	const ann, shop = "ann.review@example.com", "acme.myshopify.com"
	rc := echoReceiver(t)
	sub := h.do(t, "POST", "/api/v1/webhook-subscriptions", key, map[string]any{"name": "crm", "provider": "generic",
		"target_url": rc.URL + "/hook", "event_types": []string{"cta_submitted"}})
	require.Equal(t, 201, sub.Status, "%s", sub.Body)
	subID := itoa(int64(sub.data()["id"].(float64)))

	book := h.konva(t, key, "Open", "publish")
	b := collectBody(book, map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "lead_form_submitted", "page_number": 1, "form": map[string]any{"email": ann, "name": "Ann"}})
	b["session_id"] = "s-ann"
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", b).Status)

	deliveries := func() *resp {
		r := h.do(t, "GET", "/api/v1/webhook-subscriptions/"+subID+"/deliveries?limit=100", key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r
	}
	testutil.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, d := range deliveries().list() {
			if d.(map[string]any)["status"] == "succeeded" {
				return nil
			}
		}
		return fmt.Errorf("the lead form's delivery has not succeeded yet")
	})

	red := h.shopifyCall(t, key, 202, shopifyBody("customers/redact", shop, map[string]any{"email": ann}, 0))
	require.Equal(t, "redact_customer", red.data()["action"])
	require.Positive(t, counts(red)["webhook_deliveries"])

	for _, d := range deliveries().list() {
		m := d.(map[string]any)
		p, _ := json.Marshal(m["payload"])
		require.NotContains(t, strings.ToLower(string(p)), ann, "payload")
		require.NotContains(t, strings.ToLower(fmt.Sprint(m["response_body"])), ann,
			"the delivery's response_body still names the erased customer")
	}
	for _, kv := range tenantValues(t, h, ws, 'l') {
		require.NotContains(t, strings.ToLower(string(kv)), ann, "a Pebble record still names the erased customer")
	}
}

// TestShopifyReplayWindow: the replay answer of a GDPR webhook holds for Shopify's retry window
// only. Shopify's shop/redact body is always the same for a shop ({shop_id, shop_domain}), so a
// shop that reinstalls the app, syncs catalogs again and uninstalls again had its second
// shop/redact "replayed" for good, and nothing erased (found by a review). The stored answer is
// dated back three days here, as if the second uninstall came then.
func TestShopifyReplayWindow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
	const shop = "acme.myshopify.com"
	mk := func(name string) int64 {
		r := h.do(t, "POST", "/api/v1/catalogs", key, map[string]any{"name": name, "source": "shopify", "external_id": shop})
		require.Equal(t, 202, r.Status, "%s", r.Body)
		return int64(r.data()["catalog"].(map[string]any)["id"].(float64))
	}
	first := mk("first install")
	body := shopifyBody("shop/redact", shop, nil, 0)
	r := h.shopifyCall(t, key, 202, body)
	require.Equal(t, 1, counts(r)["catalogs"])
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/catalogs/"+itoa(first), key, nil).Status)

	// Three days later: reinstalled, synced, uninstalled again; Shopify sends shop/redact.
	second := mk("second install")
	in := api.ShopifyWebhook{Topic: "shop/redact", ShopDomain: shop,
		Payload: api.ShopifyPayload{ShopDomain: shop, ShopID: 954889}}
	req, err := shopifyInput(&in)
	require.NoError(t, err)
	a, err := h.svc.Store.ShopifyAnswer(tn, shop, req.hash)
	require.NoError(t, err)
	a.CreatedAt = a.CreatedAt.Add(-72 * time.Hour)
	bt := h.svc.Store.NewBatch()
	require.NoError(t, bt.PutShopifyAnswer(tn, shop, req.hash, a))
	require.NoError(t, bt.Commit())

	again := h.shopifyCall(t, key, 202, body)
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/catalogs/"+itoa(second), key, nil).Status,
		"the shop's new catalog survived its shop/redact (answer: %s)", again.Body)
}

// TestShopifyRedactStoredExport: the rows of an export the MCP export tools stored in the
// workspace's export area (output_path) that name the customer are counted by a data request
// and dropped by customers/redact; the other rows stay (found by a review: the erasure never
// looked there).
func TestShopifyRedactStoredExport(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	const ann, shop = "ann.export@example.com", "acme.myshopify.com"
	book := h.konva(t, key, "Open", "publish")
	b := collectBody(book, map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "lead_form_submitted", "page_number": 1, "form": map[string]any{"email": ann}})
	b["session_id"] = "s-ann"
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", b).Status)
	bob := collectBody(book, map[string]any{"type": "lead_form_submitted", "page_number": 1,
		"form": map[string]any{"email": "bob.export@example.com", "note": "a, \"quoted\" note"}})
	bob["session_id"] = "s-bob"
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", bob).Status)
	h.logged(t)

	r := h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exports_download_book_leads_csv",`+
		`"arguments":{"book_id":"`+book+`","output_path":"leads.csv"}}}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	file := filepath.Join(h.cfg.DataDir, "exports", itoa(ws)+"-live", "leads.csv")
	data, err := os.ReadFile(file)
	require.NoError(t, err, "%s", r.Body)
	require.Contains(t, strings.ToLower(string(data)), ann)

	dr := h.shopifyCall(t, key, 202, shopifyBody("customers/data_request", shop, map[string]any{"email": ann}, 5))
	require.Equal(t, 1, counts(dr)["stored_export_rows"], "%s", dr.Body)
	red := h.shopifyCall(t, key, 202, shopifyBody("customers/redact", shop, map[string]any{"email": ann}, 0))
	require.Equal(t, 1, counts(red)["stored_export_rows"], "%s", red.Body)
	data, err = os.ReadFile(file)
	require.NoError(t, err)
	require.NotContains(t, strings.ToLower(string(data)), ann, "the stored export still names the erased customer")
	require.Contains(t, string(data), "bob.export@example.com", "another reader's row stays")
	require.True(t, strings.HasPrefix(string(data), "id,book_id,"), "the header stays: %s", data)
}
