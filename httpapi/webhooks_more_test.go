package httpapi

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/actors"
	"flipbook/api"
	"flipbook/internal/testutil"
	"flipbook/storage"
)

// Over-HTTP tests of webhook subscriptions and deliveries (spec §2.6, §4.7, §6): a real service
// on loopback (newHarness), real receivers (httptest, see receiver in webhooks_test.go).

const whSecret = "whsec_0123456789abcdef"

// whOpts is a webhook config for tests: private (loopback) targets allowed, the given schedule,
// quick polling, and mod for the rest.
func whOpts(schedule []time.Duration, mod func(*actors.WebhookOptions)) func(*Config) {
	return func(c *Config) {
		c.AllowPrivateTargets = true
		c.Webhooks = actors.WebhookOptions{Schedule: schedule, Timeout: 2 * time.Second, Poll: 5 * time.Millisecond}
		if mod != nil {
			mod(&c.Webhooks)
		}
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// whBody is a create request: a generic subscription signed with whSecret.
func whBody(name, url string, types ...string) map[string]any {
	return map[string]any{"name": name, "provider": "generic", "target_url": url, "event_types": types,
		"signing_secret": whSecret}
}

// with returns m with the given key/value pairs added.
func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func whCreate(tb testing.TB, h *harness, key string, body map[string]any) map[string]any {
	tb.Helper()
	r := h.do(tb, "POST", "/api/v1/webhook-subscriptions", key, body)
	require.Equal(tb, 201, r.Status, "%s", r.Body)
	return r.data()
}

func idOf(m map[string]any) int64 { return int64(m["id"].(float64)) }

func whPath(id int64, rest string) string { return "/api/v1/webhook-subscriptions/" + itoa(id) + rest }

// whDeliveries lists a subscription's deliveries (newest first, up to 100).
func whDeliveries(tb testing.TB, h *harness, key string, id int64) []map[string]any {
	tb.Helper()
	r := h.do(tb, "GET", whPath(id, "/deliveries?limit=100"), key, nil)
	require.Equal(tb, 200, r.Status, "%s", r.Body)
	out := []map[string]any{}
	for _, x := range r.list() {
		out = append(out, x.(map[string]any))
	}
	return out
}

// whGet is a subscription as the list returns it (nil when not listed).
func whGet(tb testing.TB, h *harness, key string, id int64) map[string]any {
	tb.Helper()
	r := h.do(tb, "GET", "/api/v1/webhook-subscriptions", key, nil)
	require.Equal(tb, 200, r.Status, "%s", r.Body)
	for _, x := range r.list() {
		if m := x.(map[string]any); idOf(m) == id {
			return m
		}
	}
	return nil
}

// post sends reader events of one session to the collector; extra adds body fields
// (tracked_link, reader_token).
func post(tb testing.TB, h *harness, rid, session string, extra map[string]any, events ...map[string]any) {
	tb.Helper()
	b := collectBody(rid, events...)
	b["session_id"] = session
	for k, v := range extra {
		b[k] = v
	}
	r := h.do(tb, "POST", "/collect", "", b)
	require.Equal(tb, 202, r.Status, "%s", r.Body)
}

func opened() map[string]any { return map[string]any{"type": "session_started", "page_number": 1} }
func ended() map[string]any  { return map[string]any{"type": "session_ended", "exit_reason": "closed"} }

// payloadData is data of a delivery's payload (the signed body).
func payloadData(d map[string]any) map[string]any {
	p, _ := d["payload"].(map[string]any)
	m, _ := p["data"].(map[string]any)
	return m
}

func sessionOf(d map[string]any) string { s, _ := payloadData(d)["session_id"].(string); return s }

func history(d map[string]any) []map[string]any {
	var out []map[string]any
	for _, x := range d["history"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// sessionDelivered is a condition for testutil.Eventually: the receiver answered 2xx a delivery
// of an event of session sid.
func (rc *receiver) sessionDelivered(sid string) func() error {
	return func() error {
		got := rc.succeeded()
		for _, g := range got {
			if g.Payload["data"].(map[string]any)["session_id"] == sid {
				return nil
			}
		}
		return fmt.Errorf("no event of session %s delivered among %d successful requests", sid, len(got))
	}
}

func countStatus(ds []map[string]any, status string) int {
	n := 0
	for _, d := range ds {
		if d["status"] == status {
			n++
		}
	}
	return n
}

func valuesOf(list any) []string {
	var out []string
	for _, x := range list.([]any) {
		out = append(out, x.(map[string]any)["value"].(string))
	}
	return out
}

// 1. Retries with the schedule; the history of every attempt.
func TestWebhookRetries(t *testing.T) {
	h := newHarness(t, fastWebhooks) // schedule 0, 100ms, 200ms, 300ms: 4 attempts
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Retries", "publish")
	flaky := newReceiver(t, whSecret).failing(2, 500, "")
	dead := newReceiver(t, whSecret).failing(1<<30, 500, "")
	fid := idOf(whCreate(t, h, key, whBody("flaky", flaky.url(), "flipbook_opened")))
	did := idOf(whCreate(t, h, key, whBody("dead", dead.url(), "flipbook_opened")))
	post(t, h, rid, "s1", nil, opened())

	sawRetrying := false
	var fd map[string]any
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		ds := whDeliveries(t, h, key, fid)
		if len(ds) != 1 {
			return fmt.Errorf("the flaky receiver's subscription has %d deliveries, want 1", len(ds))
		}
		fd = ds[0]
		if fd["status"] == "retrying" {
			sawRetrying = true
			require.NotNil(t, fd["next_attempt_at"], "a retrying delivery says when it is tried next")
		}
		if fd["status"] != "succeeded" {
			return fmt.Errorf("the flaky receiver's delivery is %v after %v attempts, want succeeded", fd["status"], fd["attempts"])
		}
		return nil
	})
	t.Logf("status retrying observed: %v", sawRetrying)
	require.EqualValues(t, 3, fd["attempts"])
	require.EqualValues(t, 200, fd["response_status"])
	require.Nil(t, fd["error_message"], "the last attempt succeeded")
	require.NotNil(t, fd["delivered_at"])
	require.Nil(t, fd["next_attempt_at"])
	hist := history(fd)
	require.Len(t, hist, 3)
	for i, a := range hist {
		require.EqualValues(t, i+1, a["number"])
		require.NotEmpty(t, a["attempted_at"])
	}
	require.EqualValues(t, 500, hist[0]["response_status"])
	require.EqualValues(t, 500, hist[1]["response_status"])
	require.EqualValues(t, 200, hist[2]["response_status"])
	require.Equal(t, "the receiver answered 500", hist[0]["error_message"])
	require.Equal(t, "the receiver answered 500", hist[1]["error_message"])
	require.Nil(t, hist[2]["error_message"])

	got := flaky.all()
	require.Len(t, got, 3)
	for i, g := range got {
		require.Equal(t, "whd_"+itoa(idOf(fd)), g.ID, "one delivery id across its attempts")
		require.Equal(t, fd["event_id"], g.EventID)
		require.Equal(t, i+1, g.Attempt, "X-Webhook-Attempt")
		require.True(t, g.Verified, "every attempt is signed afresh")
	}
	require.Equal(t, []int{500, 500, 200}, []int{got[0].Status, got[1].Status, got[2].Status})
	// The schedule (±20% jitter): 100ms before attempt 2, 200ms before attempt 3.
	require.GreaterOrEqual(t, got[1].At.Sub(got[0].At), ms(75))
	require.GreaterOrEqual(t, got[2].At.Sub(got[1].At), ms(155))

	// Always failing: failed after len(Schedule) attempts, nothing more due.
	var dd map[string]any
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		ds := whDeliveries(t, h, key, did)
		if len(ds) != 1 {
			return fmt.Errorf("the dead receiver's subscription has %d deliveries, want 1", len(ds))
		}
		dd = ds[0]
		if dd["status"] != "failed" {
			return fmt.Errorf("the dead receiver's delivery is %v after %v attempts, want failed", dd["status"], dd["attempts"])
		}
		return nil
	})
	require.EqualValues(t, 4, dd["attempts"])
	require.Nil(t, dd["next_attempt_at"])
	require.Nil(t, dd["delivered_at"])
	require.EqualValues(t, 500, dd["response_status"])
	require.Equal(t, `{"received":true}`, dd["response_body"])
	require.Equal(t, "the receiver answered 500", dd["error_message"])
	require.Len(t, history(dd), 4)
	require.Len(t, dead.all(), 4)
	f := h.do(t, "GET", whPath(did, "/deliveries?status=failed"), key, nil)
	require.Len(t, f.list(), 1)
	require.Empty(t, h.do(t, "GET", whPath(did, "/deliveries?status=succeeded"), key, nil).list())
}

// 2. A 429 with Retry-After postpones the next attempt beyond the schedule.
func TestWebhookRetryAfter(t *testing.T) {
	h := newHarness(t, whOpts([]time.Duration{0, ms(50), ms(50)}, nil))
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Retry-After", "publish")
	rc := newReceiver(t, whSecret).failing(1, 429, "1")
	id := idOf(whCreate(t, h, key, whBody("limited", rc.url(), "flipbook_opened")))
	post(t, h, rid, "s1", nil, opened())

	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(1, "the second attempt succeeds"))
	got := rc.all()
	require.Len(t, got, 2)
	require.Equal(t, 429, got[0].Status)
	gap := got[1].At.Sub(got[0].At)
	require.GreaterOrEqual(t, gap, ms(950), "Retry-After: 1 is honoured (schedule says 50ms)")
	require.Less(t, gap, 5*time.Second)
	var d map[string]any
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		d = whDeliveries(t, h, key, id)[0]
		if d["status"] != "succeeded" {
			return fmt.Errorf("the delivery is recorded as %v, want succeeded", d["status"])
		}
		return nil
	})
	hist := history(d)
	require.Len(t, hist, 2)
	require.EqualValues(t, 429, hist[0]["response_status"])
	require.Equal(t, "the receiver answered 429", hist[0]["error_message"])
}

// 3. A receiver that never answers: the attempt times out; other subscriptions are not slowed.
func TestWebhookHangingReceiver(t *testing.T) {
	// One attempt at a time per subscription: the hanging lane needs ≥ 4×500ms for its first
	// attempts, so a healthy lane finishing first shows lanes do not wait on each other.
	h := newHarness(t, whOpts([]time.Duration{0, ms(100)}, func(o *actors.WebhookOptions) {
		o.Timeout, o.LaneConcurrency = ms(500), 1
	}))
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Slow", "publish")
	slow := newReceiver(t, whSecret)
	slow.hang.Store(true)
	fast := newReceiver(t, whSecret)
	sid := idOf(whCreate(t, h, key, whBody("slow", slow.url(), "flipbook_opened")))
	fid := idOf(whCreate(t, h, key, whBody("fast", fast.url(), "flipbook_opened")))
	for i := 0; i < 4; i++ {
		post(t, h, rid, fmt.Sprintf("s%d", i), nil, opened())
	}
	start := time.Now()
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, fast.succeededN(4, "the healthy receiver gets its four deliveries"))
	took := time.Since(start)
	tried := 0
	for _, d := range whDeliveries(t, h, key, sid) {
		if d["attempts"].(float64) > 0 {
			tried++
		}
	}
	require.Less(t, tried, 4, "the healthy lane finished (in %s) before the hanging one had made its first attempts", took)
	t.Logf("healthy lane done in %s; hanging lane had %d recorded attempts", took, tried)
	require.Len(t, whDeliveries(t, h, key, fid), 4)

	var d map[string]any
	testutil.Eventually(t, 15*time.Second, 10*time.Millisecond, func() error {
		ds := whDeliveries(t, h, key, sid)
		for _, x := range ds {
			if x["status"] == "failed" {
				d = x
				return nil
			}
		}
		return fmt.Errorf("no hanging delivery failed after its two attempts: %d deliveries, %d retrying", len(ds), countStatus(ds, "retrying"))
	})
	require.EqualValues(t, 2, d["attempts"])
	require.Equal(t, "no answer within 500ms", d["error_message"])
	require.Nil(t, d["response_status"], "no answer, no status")
	for _, a := range history(d) {
		require.Equal(t, "no answer within 500ms", a["error_message"])
		require.Nil(t, a["response_status"])
		require.GreaterOrEqual(t, a["duration_ms"].(float64), float64(450))
	}
}

// 4. Filters: books, tracked links, recipient emails (ANDed), and event types.
func TestWebhookFilters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	bookA := h.konva(t, key, "Book A", "publish")
	bookB := h.konva(t, key, "Book B", "publish")
	tl := h.do(t, "POST", "/api/v1/books/"+bookA+"/tracked-links", key, map[string]any{"name": "news", "slug": "wh-news"})
	require.Equal(t, 201, tl.Status, "%s", tl.Body)
	link := int64(tl.data()["id"].(float64))
	rc := newReceiver(t, whSecret)

	all := idOf(whCreate(t, h, key, whBody("all", rc.url(), api9()...)))
	byBook := whCreate(t, h, key, with(whBody("book", rc.url(), "flipbook_opened"), "filters", map[string]any{"book_ids": []string{bookB}}))
	byLink := whCreate(t, h, key, with(whBody("link", rc.url(), "flipbook_opened"), "filters", map[string]any{"tracked_link_ids": []int64{link}}))
	byEmail := whCreate(t, h, key, with(whBody("email", rc.url(), "access_requested", "access_granted", "flipbook_opened"),
		"filters", map[string]any{"recipient_emails": []string{"Ann@Example.com"}}))
	bothAnd := whCreate(t, h, key, with(whBody("and", rc.url(), "access_granted", "flipbook_opened"),
		"filters", map[string]any{"book_ids": []string{bookB}, "recipient_emails": []string{"ann@example.com"}}))
	onlyEnd := idOf(whCreate(t, h, key, whBody("ends", rc.url(), "session_ended")))
	require.Equal(t, []any{bookB}, byBook["filters"].(map[string]any)["book_ids"])
	require.Equal(t, []any{float64(link)}, byLink["filters"].(map[string]any)["tracked_link_ids"])
	require.Equal(t, []any{"ann@example.com"}, byEmail["filters"].(map[string]any)["recipient_emails"], "emails are kept lower case")
	require.Equal(t, []any{}, byEmail["filters"].(map[string]any)["book_ids"])

	post(t, h, bookA, "anon-a", nil, opened(), map[string]any{"type": "link_clicked", "page_number": 1, "url": "https://example.com/"})
	post(t, h, bookB, "anon-b", nil, opened())
	post(t, h, bookA, "linked", map[string]any{"tracked_link": "wh-news"}, opened())
	ann := h.do(t, "POST", "/view/"+bookA+"/access", "", map[string]any{"email": "ann@example.com", "session_id": "ann"})
	require.Equal(t, 200, ann.Status, "%s", ann.Body)
	post(t, h, bookA, "ann", map[string]any{"reader_token": ann.data()["reader_token"]}, opened(), ended())
	bob := h.do(t, "POST", "/view/"+bookA+"/access", "", map[string]any{"email": "bob@example.com", "session_id": "bob"})
	require.Equal(t, 200, bob.Status, "%s", bob.Body)

	// 10 mapped events in all; once "all" has them, every event was matched against every
	// subscription (they share the tenant's log partition).
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := len(whDeliveries(t, h, key, all)); n != 10 {
			return fmt.Errorf("%d of all ten events reached the unfiltered subscription", n)
		}
		return nil
	})

	ds := whDeliveries(t, h, key, idOf(byBook))
	require.Len(t, ds, 1)
	require.Equal(t, bookB, payloadData(ds[0])["book"].(map[string]any)["id"])

	ds = whDeliveries(t, h, key, idOf(byLink))
	require.Len(t, ds, 1)
	require.Equal(t, "linked", sessionOf(ds[0]))
	require.EqualValues(t, link, payloadData(ds[0])["tracked_link_id"])
	require.Equal(t, "tracked_link", payloadData(ds[0])["source"].(map[string]any)["type"])

	ds = whDeliveries(t, h, key, idOf(byEmail))
	types := []string{}
	for _, d := range ds {
		types = append(types, d["event_type"].(string))
		require.Equal(t, "ann@example.com", payloadData(d)["reader"].(map[string]any)["email"])
	}
	sort.Strings(types)
	require.Equal(t, []string{"access_granted", "access_requested", "flipbook_opened"}, types,
		"ann's events only: not bob's, not anonymous ones")

	require.Empty(t, whDeliveries(t, h, key, idOf(bothAnd)), "filters are ANDed: ann read book A, not B")

	ds = whDeliveries(t, h, key, onlyEnd)
	require.Len(t, ds, 1, "event types not subscribed are not delivered")
	require.Equal(t, "session_ended", ds[0]["event_type"])
	require.Equal(t, "ann", sessionOf(ds[0]))

	clicks := 0
	for _, d := range whDeliveries(t, h, key, all) {
		if d["event_type"] == "link_clicked" {
			clicks++
		}
	}
	require.Equal(t, 1, clicks)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(10+1+1+3+0+1, "every matched delivery is sent"))
	require.Len(t, rc.all(), 16, "and nothing else")
}

func api9() []string {
	out := []string{}
	for _, t := range actors.WebhookEventTypes {
		out = append(out, t.Value)
	}
	return out
}

// 5. Validation and the SSRF guard (the service without --allow-private-targets).
func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	require.False(t, h.cfg.AllowPrivateTargets)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Mine", "draft")
	other := h.workspace(t, "company", "live")
	theirs := h.konva(t, other, "Theirs", "draft")
	tl := h.do(t, "POST", "/api/v1/books/"+rid+"/tracked-links", key, map[string]any{"name": "n", "slug": "wh-val"})
	require.Equal(t, 201, tl.Status)
	link := int64(tl.data()["id"].(float64))
	const public = "https://93.184.215.14/hook" // a public address literal: no DNS needed

	check := func(name string, body map[string]any, fields ...string) {
		t.Helper()
		r := h.do(t, "POST", "/api/v1/webhook-subscriptions", key, body)
		require.Equal(t, 422, r.Status, "%s: %s", name, r.Body)
		require.Equal(t, api.TypeValidation, r.errType(), name)
		for _, f := range fields {
			require.Contains(t, r.details(), f, "%s: %s", name, r.Body)
		}
	}
	check("empty", map[string]any{}, "name", "provider", "target_url", "event_types")
	check("blank name", with(whBody(" ", public, "flipbook_opened")), "name")
	check("bad event type", whBody("x", public, "flipbook_opened", "book_burned"), "event_types.1")
	check("no event types", whBody("x", public), "event_types")
	check("provider", with(whBody("x", public, "flipbook_opened"), "provider", "slack"), "provider")
	for _, u := range []string{
		"http://93.184.215.14/hook",      // not https
		"https://127.0.0.1/",             // loopback
		"https://10.0.0.1/",              // private
		"https://192.168.1.10/",          // private
		"https://169.254.169.254/",       // link-local (cloud metadata)
		"https://[::1]/",                 // IPv6 loopback
		"https://[::ffff:127.0.0.1]/",    // IPv4-mapped loopback
		"https://user:pw@93.184.215.14/", // credentials
		"not a url",                      // not absolute
		"ftp://93.184.215.14/",           // scheme
		"https://0.0.0.0/",               // unspecified
		"https://100.64.0.1/",            // CGNAT
	} {
		check(u, whBody("x", u, "flipbook_opened"), "target_url")
	}
	{
		check("localhost", whBody("x", "https://localhost/", "flipbook_opened"), "target_url") // resolves to loopback
	}
	check("short secret", with(whBody("x", public, "flipbook_opened"), "signing_secret", "short"), "signing_secret")
	check("another workspace's book", with(whBody("x", public, "flipbook_opened"),
		"filters", map[string]any{"book_ids": []string{rid, theirs}}), "filters.book_ids.1")
	check("unknown tracked link", with(whBody("x", public, "flipbook_opened"),
		"filters", map[string]any{"tracked_link_ids": []int64{link, link + 1000}}), "filters.tracked_link_ids.1")
	check("bad email", with(whBody("x", public, "flipbook_opened"),
		"filters", map[string]any{"recipient_emails": []string{"not-an-email"}}), "filters.recipient_emails.0")
	require.Empty(t, h.do(t, "GET", "/api/v1/webhook-subscriptions", key, nil).list(), "nothing was created")

	// A valid request with the same filters is accepted (the checks above are not blanket).
	ok := whCreate(t, h, key, with(whBody("ok", public), "event_types", []any{"flipbook_opened", map[string]any{"value": "session_ended"}},
		"filters", map[string]any{"book_ids": []string{rid}, "tracked_link_ids": []int64{link}}))
	require.Equal(t, []string{"flipbook_opened", "session_ended"}, valuesOf(ok["event_types"]), "{value} objects are accepted")
	id := idOf(ok)
	for body, field := range map[string]map[string]any{
		"target_url":         {"target_url": "https://127.0.0.1/"},
		"filters.book_ids.0": {"filters": map[string]any{"book_ids": []string{theirs}}},
		"signing_secret":     {"signing_secret": "short"},
		"event_types.0":      {"event_types": []string{"nope"}},
	} {
		r := h.do(t, "PUT", whPath(id, ""), key, field)
		require.Equal(t, 422, r.Status, "%s", r.Body)
		require.Contains(t, r.details(), body, "%s", r.Body)
	}
	after := whGet(t, h, key, id)
	require.Equal(t, public, after["target_url"], "a refused update changes nothing")
	require.Equal(t, []any{rid}, after["filters"].(map[string]any)["book_ids"])

	// POST /webhooks is guarded the same way.
	refused := []string{"https://127.0.0.1:1/", "http://93.184.215.14/", "https://[::1]:1/", "https://10.0.0.1/"}
	{
		refused = append(refused, "https://localhost:1/")
	}
	for _, u := range refused {
		r := h.do(t, "POST", "/api/v1/webhooks", key, map[string]any{"event": "flipbook.created", "url": u})
		require.Equal(t, 422, r.Status, "%s: %s", u, r.Body)
		require.Contains(t, r.details(), "url", "%s", r.Body)
	}
}

// 6. PUT changes only what is given; filters replaces the set; secret removal; pause/resume.
func TestWebhookUpdate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Updated", "publish")
	tl := h.do(t, "POST", "/api/v1/books/"+rid+"/tracked-links", key, map[string]any{"name": "n", "slug": "wh-upd"})
	require.Equal(t, 201, tl.Status)
	link := int64(tl.data()["id"].(float64))
	rc := newReceiver(t, whSecret)
	barrier := newReceiver(t, whSecret)
	idOf(whCreate(t, h, key, whBody("barrier", barrier.url(), "flipbook_opened")))

	orig := whCreate(t, h, key, with(whBody("crm", rc.url(), "flipbook_opened", "session_ended"),
		"filters", map[string]any{"book_ids": []string{rid}, "recipient_emails": []string{"a@example.com"}}))
	id := idOf(orig)

	r := h.do(t, "PUT", whPath(id, ""), key, map[string]any{"name": "renamed"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	u := r.data()
	require.Equal(t, "renamed", u["name"])
	for _, f := range []string{"id", "provider", "target_url", "event_types", "filters", "has_signing_secret", "is_active", "created_at"} {
		require.Equal(t, orig[f], u[f], "%s is unchanged", f)
	}
	t0, _ := time.Parse(time.RFC3339Nano, orig["updated_at"].(string))
	t1, _ := time.Parse(time.RFC3339Nano, u["updated_at"].(string))
	require.True(t, t1.After(t0), "updated_at moves")
	require.Equal(t, u, whGet(t, h, key, id), "the list shows the stored change")

	// filters replaces the whole set.
	r = h.do(t, "PUT", whPath(id, ""), key, map[string]any{"filters": map[string]any{"tracked_link_ids": []int64{link}}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, map[string]any{"book_ids": []any{}, "tracked_link_ids": []any{float64(link)}, "recipient_emails": []any{}},
		r.data()["filters"])
	r = h.do(t, "PUT", whPath(id, ""), key, map[string]any{"filters": nil, "event_types": []string{"flipbook_opened"}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, map[string]any{"book_ids": []any{}, "tracked_link_ids": []any{}, "recipient_emails": []any{}}, r.data()["filters"])
	require.Equal(t, []string{"flipbook_opened"}, valuesOf(r.data()["event_types"]))
	require.Equal(t, true, r.data()["has_signing_secret"])

	// The kept secret still signs.
	post(t, h, rid, "one", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(1, "delivered"))
	require.True(t, rc.all()[0].Verified)

	// null removes the secret: deliveries are unsigned.
	r = h.do(t, "PUT", whPath(id, ""), key, map[string]any{"signing_secret": nil})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, false, r.data()["has_signing_secret"])
	require.Equal(t, "renamed", r.data()["name"])
	post(t, h, rid, "two", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(2, "delivered"))
	require.False(t, rc.all()[1].Signed, "no secret, no signature")
	r = h.do(t, "PUT", whPath(id, ""), key, map[string]any{"signing_secret": "another-secret-0123456789"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, true, r.data()["has_signing_secret"])
	require.NotContains(t, string(r.Body), "another-secret")

	// Inactive: events are not delivered, then resumed for new events only.
	r = h.do(t, "PUT", whPath(id, ""), key, map[string]any{"is_active": false})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, false, r.data()["is_active"])
	require.Nil(t, r.data()["disabled_reason"], "paused by the user, not deactivated")
	post(t, h, rid, "paused", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, barrier.succeededN(3, "the barrier subscription got the paused event"))
	require.Len(t, whDeliveries(t, h, key, id), 2, "no delivery for the inactive subscription")
	r = h.do(t, "PUT", whPath(id, ""), key, map[string]any{"is_active": true})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, true, r.data()["is_active"])
	post(t, h, rid, "resumed", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(3, "delivered after resuming"))
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, barrier.succeededN(4, "barrier"))
	sessions := []string{}
	for _, g := range rc.all() {
		sessions = append(sessions, g.Payload["data"].(map[string]any)["session_id"].(string))
	}
	require.Equal(t, []string{"one", "two", "resumed"}, sessions, "the event of the pause is never delivered")
	require.EqualValues(t, 3, whGet(t, h, key, id)["deliveries_count"])

	// target_url moves the next deliveries; the new secret signs them.
	rc2 := newReceiver(t, "another-secret-0123456789")
	r = h.do(t, "PUT", whPath(id, ""), key, map[string]any{"target_url": rc2.url()})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, rc2.url(), r.data()["target_url"])
	require.Equal(t, true, r.data()["has_signing_secret"])
	post(t, h, rid, "moved", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc2.succeededN(1, "delivered to the new target"))
	require.True(t, rc2.all()[0].Verified, "signed with the new secret")
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, barrier.succeededN(5, "barrier"))
	require.Len(t, rc.all(), 3, "nothing more to the old target")

	require.Equal(t, 404, h.do(t, "PUT", whPath(id+1000, ""), key, map[string]any{"name": "x"}).Status)
}

// An empty signing_secret is refused (null removes the secret), as the parameter says.
func TestWebhookUpdateEmptySecret(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rc := newReceiver(t, whSecret)
	id := idOf(whCreate(t, h, key, whBody("s", rc.url(), "flipbook_opened")))
	r := h.do(t, "PUT", whPath(id, ""), key, map[string]any{"signing_secret": ""})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "signing_secret")
	r = h.do(t, "PUT", whPath(id, ""), key, map[string]any{"signing_secret": nil})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, false, r.data()["has_signing_secret"])
}

// 7. Delete: gone from every route, history kept, unfinished deliveries failed.
func TestWebhookDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, whOpts([]time.Duration{0, time.Hour}, nil))
	key := h.workspace(t, "company", "live")
	tenant := h.principal(t, key).Tenant
	rid := h.konva(t, key, "Doomed", "publish")
	dead := newReceiver(t, whSecret).failing(1<<30, 500, "")
	barrier := newReceiver(t, whSecret)
	idOf(whCreate(t, h, key, whBody("barrier", barrier.url(), "flipbook_opened")))
	id := idOf(whCreate(t, h, key, whBody("doomed", dead.url(), "flipbook_opened")))
	post(t, h, rid, "a", nil, opened())
	post(t, h, rid, "b", nil, opened())
	want := 2
	{
		tr := h.do(t, "POST", whPath(id, "/test"), key, nil)
		require.Equal(t, 202, tr.Status, "%s", tr.Body)
		want = 3
	}
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		ds := whDeliveries(t, h, key, id)
		if n := countStatus(ds, "retrying"); len(ds) != want || n != want {
			return fmt.Errorf("%d deliveries, %d waiting for their second attempt (an hour away), want %d each", len(ds), n, want)
		}
		return nil
	})

	r := h.do(t, "DELETE", whPath(id, ""), key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.NotEmpty(t, r.data()["message"])
	require.Nil(t, whGet(t, h, key, id), "not listed")
	require.Len(t, h.do(t, "GET", "/api/v1/webhook-subscriptions", key, nil).list(), 1)
	for _, c := range []struct{ method, path string }{
		{"PUT", whPath(id, "")}, {"DELETE", whPath(id, "")}, {"GET", whPath(id, "/deliveries")}, {"POST", whPath(id, "/test")},
	} {
		var body any
		if c.method == "PUT" {
			body = map[string]any{"name": "back"}
		}
		r := h.do(t, c.method, c.path, key, body)
		require.Equal(t, 404, r.Status, "%s %s: %s", c.method, c.path, r.Body)
		require.Equal(t, api.TypeNotFound, r.errType())
	}
	require.NotEqual(t, 200, h.do(t, "GET", whPath(id, ""), key, nil).Status, "no single-subscription GET")

	var kept []*storage.WebhookDelivery
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		var err error
		kept, _, err = h.svc.Store.WebhookDeliveries(tenant, id, 0, 100, nil)
		require.NoError(t, err)
		if n := countStored(kept, storage.DeliveryFailed); len(kept) != want || n != want {
			return fmt.Errorf("%d deliveries kept, %d failed, want %d each", len(kept), n, want)
		}
		return nil
	})
	tests := 0
	for _, d := range kept {
		require.Equal(t, "subscription deleted", d.ErrorMessage)
		require.Nil(t, d.NextAttemptAt)
		require.Equal(t, 1, d.Attempts, "the history is kept")
		require.Len(t, d.History, 1)
		if d.Test {
			tests++
		}
	}
	require.Equal(t, want-2, tests)
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		lanes, err := h.svc.Store.WebhookLanes()
		require.NoError(t, err)
		for _, l := range lanes {
			if l.Tenant == tenant && l.Sub == id {
				return fmt.Errorf("the queue still holds a lane of the deleted subscription: %+v", l)
			}
		}
		return nil
	})

	// Later events make no deliveries for it.
	post(t, h, rid, "c", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, barrier.succeededN(3, "barrier"))
	kept, _, err := h.svc.Store.WebhookDeliveries(tenant, id, 0, 100, nil)
	require.NoError(t, err)
	require.Len(t, kept, want)
	require.Len(t, dead.all(), want, "one attempt each, none after the deletion")
}

func countStored(ds []*storage.WebhookDelivery, status string) int {
	n := 0
	for _, d := range ds {
		if d.Status == status {
			n++
		}
	}
	return n
}

// 8. Test deliveries: queued (202), signed, marked test, also for an inactive subscription.
func TestWebhookTestDelivery(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Tested", "draft")
	rc := newReceiver(t, whSecret)
	id := idOf(whCreate(t, h, key, whBody("t", rc.url(), "session_ended", "flipbook_opened")))

	r := h.do(t, "POST", whPath(id, "/test"), key, nil)
	require.Equal(t, 202, r.Status, "%s", r.Body)
	d := r.data()
	require.Equal(t, true, d["test"])
	require.Equal(t, "pending", d["status"])
	require.EqualValues(t, 0, d["attempts"])
	require.EqualValues(t, id, d["subscription_id"])
	require.Equal(t, "session_ended", d["event_type"], "default: the first event type")
	require.Regexp(t, `^evt_test_`, d["event_id"])
	require.Equal(t, true, d["payload"].(map[string]any)["test"])
	require.Equal(t, rid, payloadData(d)["book"].(map[string]any)["id"], "an example on the workspace's book")

	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(1, "the test delivery arrives"))
	g := rc.all()[0]
	require.Equal(t, "whd_"+itoa(idOf(d)), g.ID)
	require.True(t, g.Verified)
	require.Equal(t, "session_ended", g.Event)
	require.Equal(t, true, g.Payload["test"])
	require.Equal(t, d["event_id"], g.Payload["id"])
	require.Equal(t, d["event_id"], g.EventID)
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		ds := whDeliveries(t, h, key, id)
		if len(ds) != 1 || ds[0]["status"] != "succeeded" || ds[0]["test"] != true {
			return fmt.Errorf("not recorded as one succeeded test delivery: %v", ds)
		}
		return nil
	})

	// Another type; then on an inactive subscription.
	r = h.do(t, "POST", whPath(id, "/test"), key, map[string]any{"event_type": "flipbook_opened"})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(2, "second test delivery"))
	require.Equal(t, "flipbook_opened", rc.all()[1].Payload["type"])
	require.Equal(t, 200, h.do(t, "PUT", whPath(id, ""), key, map[string]any{"is_active": false}).Status)
	r = h.do(t, "POST", whPath(id, "/test"), key, nil)
	require.Equal(t, 202, r.Status, "%s", r.Body)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(3, "a test reaches an inactive subscription"))
	require.Equal(t, true, rc.all()[2].Payload["test"])

	r = h.do(t, "POST", whPath(id, "/test"), key, map[string]any{"event_type": "book_burned"})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Equal(t, 404, h.do(t, "POST", whPath(id+1000, "/test"), key, nil).Status)
	require.EqualValues(t, 3, whGet(t, h, key, id)["deliveries_count"])
}

// 9. POST /webhooks: a sample sent now; 502 when the receiver fails or is unreachable.
func TestWebhookDispatchSample(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Sampled", "draft")
	rc := newReceiver(t, "")

	r := h.do(t, "POST", "/api/v1/webhooks", key, map[string]any{"event": "flipbook.created", "url": rc.url()})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	d := r.data()
	require.Equal(t, "flipbook.created", d["event"])
	require.Equal(t, rc.url(), d["target_url"])
	require.NotEmpty(t, d["message"])
	p := d["payload"].(map[string]any)
	require.Equal(t, "flipbook.created", p["type"])
	require.Equal(t, true, p["test"])
	require.Equal(t, rid, p["data"].([]any)[0].(map[string]any)["random_id"], "the workspace's newest book")
	require.Len(t, rc.all(), 1, "sent before the answer")
	g := rc.all()[0]
	require.Equal(t, "flipbook.created", g.Event)
	require.Equal(t, p["id"], g.Payload["id"], "the receiver got the payload returned")
	require.False(t, g.Signed, "no subscription, no secret")

	r = h.do(t, "POST", "/api/v1/webhooks", key, map[string]any{"event": "subscriber.added", "url": rc.url(),
		"payload": []any{map[string]any{"email": "x@example.com"}}})
	require.Equal(t, 202, r.Status, "%s", r.Body)
	require.Equal(t, []any{map[string]any{"email": "x@example.com"}}, rc.all()[1].Payload["data"])

	bad := newReceiver(t, "").failing(1<<30, 500, "")
	r = h.do(t, "POST", "/api/v1/webhooks", key, map[string]any{"event": "flipbook.updated", "url": bad.url()})
	require.Equal(t, 502, r.Status, "%s", r.Body)
	require.Equal(t, "DeliveryFailed", r.errType())
	require.Contains(t, string(r.Body), "500")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String() + "/hook"
	require.NoError(t, ln.Close())
	r = h.do(t, "POST", "/api/v1/webhooks", key, map[string]any{"event": "flipbook.updated", "url": closed})
	require.Equal(t, 502, r.Status, "%s", r.Body)
	require.Equal(t, "DeliveryFailed", r.errType())

	r = h.do(t, "POST", "/api/v1/webhooks", key, map[string]any{"event": "book.deleted", "url": rc.url()})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "event")
	r = h.do(t, "POST", "/api/v1/webhooks", key, map[string]any{"event": "flipbook.created"})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "url")
	require.Len(t, rc.all(), 2)
}

// 10. Options: the books and tracked links of the workspace only, the event types, the providers.
func TestWebhookOptions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	a1 := h.konva(t, key, "A one", "publish")
	a2 := h.konva(t, key, "A two", "draft")
	tl := h.do(t, "POST", "/api/v1/books/"+a1+"/tracked-links", key, map[string]any{"name": "news", "slug": "wh-opt-a"})
	require.Equal(t, 201, tl.Status)
	link := tl.data()["id"].(float64)
	other := h.workspace(t, "company", "live")
	b1 := h.konva(t, other, "B one", "publish")
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/books/"+b1+"/tracked-links", other, map[string]any{"name": "theirs", "slug": "wh-opt-b"}).Status)

	o := h.do(t, "GET", "/api/v1/webhook-subscriptions/options", key, nil)
	require.Equal(t, 200, o.Status, "%s", o.Body)
	opts := o.data()
	ids := []string{}
	for _, b := range opts["books"].([]any) {
		ids = append(ids, b.(map[string]any)["id"].(string))
	}
	sort.Strings(ids)
	want := []string{a1, a2}
	sort.Strings(want)
	require.Equal(t, want, ids, "the workspace's books, not another's")
	require.Equal(t, []any{map[string]any{"id": link, "name": "news", "book_id": a1}}, opts["tracked_links"])
	require.Equal(t, api9(), valuesOf(opts["event_types"]))
	for _, e := range opts["event_types"].([]any) {
		require.NotEmpty(t, e.(map[string]any)["label"])
	}
	require.Equal(t, []string{"generic", "zapier"}, valuesOf(opts["providers"]))
	ob := h.do(t, "GET", "/api/v1/webhook-subscriptions/options", other, nil).data()
	require.Len(t, ob["books"], 1)
	require.Equal(t, b1, ob["books"].([]any)[0].(map[string]any)["id"])
	require.Len(t, ob["tracked_links"], 1)
}

// 10b. Sample events: real payloads from DuckDB, the same a delivery carries; examples for
// types without events.
func TestWebhookSampleEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	a1 := h.konva(t, key, "A one", "publish")
	other := h.workspace(t, "company", "live")
	b1 := h.konva(t, other, "B one", "publish")
	rc := newReceiver(t, whSecret)
	sub := idOf(whCreate(t, h, key, whBody("s", rc.url(), "flipbook_opened")))
	post(t, h, a1, "first", nil, opened(), map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 4000})
	post(t, h, a1, "second", nil, opened())
	var samples []any
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
		r := h.do(t, "GET", "/api/v1/webhook-subscriptions/sample-events?event_types=flipbook_opened", key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		samples = r.list()
		if len(samples) != 2 || samples[0].(map[string]any)["test"] != nil {
			return fmt.Errorf("analytics does not have the two real events yet: %s", r.Body)
		}
		return nil
	})
	evtID := regexp.MustCompile(`^evt_[0-9]+$`)
	for _, s := range samples {
		m := s.(map[string]any)
		require.Regexp(t, evtID, m["id"])
		require.Equal(t, "flipbook_opened", m["type"])
		require.Equal(t, true, m["livemode"])
		require.Equal(t, a1, m["data"].(map[string]any)["book"].(map[string]any)["id"])
		require.Equal(t, "A one", m["data"].(map[string]any)["book"].(map[string]any)["title"])
	}
	require.Equal(t, "second", samples[0].(map[string]any)["data"].(map[string]any)["session_id"], "newest first")
	// The sample of an event is the payload its delivery carried.
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(2, "deliveries"))
	for _, g := range rc.all() {
		if g.Payload["data"].(map[string]any)["session_id"] == "second" {
			s := samples[0].(map[string]any)
			require.Equal(t, g.EventID, s["id"], "same event id in samples and deliveries")
			require.Equal(t, g.Payload["data"], s["data"])
		}
	}
	require.Len(t, whDeliveries(t, h, key, sub), 2)

	r := h.do(t, "GET", "/api/v1/webhook-subscriptions/sample-events?event_types=flipbook_opened&limit=1", key, nil)
	require.Len(t, r.list(), 1)
	r = h.do(t, "GET", "/api/v1/webhook-subscriptions/sample-events?event_types=access_denied,page_dwelled", key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, []any{"access_denied"}, r.meta()["examples"])
	byType := map[string]map[string]any{}
	for _, s := range r.list() {
		byType[s.(map[string]any)["type"].(string)] = s.(map[string]any)
	}
	require.Len(t, byType, 2)
	require.Equal(t, true, byType["access_denied"]["test"], "no such event yet: an example")
	require.Equal(t, "evt_example_access_denied", byType["access_denied"]["id"])
	require.Nil(t, byType["page_dwelled"]["test"])
	require.EqualValues(t, 4, byType["page_dwelled"]["data"].(map[string]any)["active_seconds"])

	all := h.do(t, "GET", "/api/v1/webhook-subscriptions/sample-events", key, nil)
	require.Equal(t, 200, all.Status)
	seen := map[string]bool{}
	for _, s := range all.list() {
		seen[s.(map[string]any)["type"].(string)] = true
	}
	require.Len(t, seen, 9, "every type: real or example")

	// Another workspace sees none of these events.
	ro := h.do(t, "GET", "/api/v1/webhook-subscriptions/sample-events?event_types=flipbook_opened", other, nil)
	require.Len(t, ro.list(), 1)
	require.Equal(t, true, ro.list()[0].(map[string]any)["test"])
	require.Equal(t, b1, ro.list()[0].(map[string]any)["data"].(map[string]any)["book"].(map[string]any)["id"])

	for _, q := range []string{"event_types=bogus", "event_types=flipbook_opened,nope", "limit=0", "limit=51"} {
		r := h.do(t, "GET", "/api/v1/webhook-subscriptions/sample-events?"+q, key, nil)
		require.Equal(t, 422, r.Status, "%s: %s", q, r.Body)
	}
}

// 11. Isolation between workspaces on every route and in deliveries.
func TestWebhookIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	keyA := h.workspace(t, "company", "live")
	keyB := h.workspace(t, "company", "live")
	testA := h.key(t, h.principal(t, keyA).Tenant.Workspace, "test", "*")
	rid := h.konva(t, keyA, "A's book", "publish")
	rcA, rcB := newReceiver(t, whSecret), newReceiver(t, whSecret)
	idA := idOf(whCreate(t, h, keyA, whBody("a", rcA.url(), "flipbook_opened")))

	require.Empty(t, h.do(t, "GET", "/api/v1/webhook-subscriptions", keyB, nil).list())
	for _, k := range []string{keyB, testA} { // another workspace, and another mode of the same one
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"PUT", whPath(idA, ""), map[string]any{"name": "stolen"}},
			{"PUT", whPath(idA, ""), map[string]any{"is_active": false}},
			{"DELETE", whPath(idA, ""), nil},
			{"GET", whPath(idA, "/deliveries"), nil},
			{"POST", whPath(idA, "/test"), nil},
		} {
			r := h.do(t, c.method, c.path, k, c.body)
			require.Equal(t, 404, r.Status, "%s %s: %s", c.method, c.path, r.Body)
		}
	}
	a := whGet(t, h, keyA, idA)
	require.NotNil(t, a, "still there")
	require.Equal(t, "a", a["name"])
	require.Equal(t, true, a["is_active"])
	require.Empty(t, rcA.all(), "no test delivery was queued by B")

	idB := idOf(whCreate(t, h, keyB, whBody("b", rcB.url(), api9()...)))
	bl := h.do(t, "GET", "/api/v1/webhook-subscriptions", keyB, nil).list()
	require.Len(t, bl, 1)
	require.EqualValues(t, idB, idOf(bl[0].(map[string]any)))
	r := h.do(t, "POST", "/api/v1/webhook-subscriptions", keyB, with(whBody("b2", rcB.url(), "flipbook_opened"),
		"filters", map[string]any{"book_ids": []string{rid}}))
	require.Equal(t, 422, r.Status, "B cannot filter on A's book")

	post(t, h, rid, "s", nil, opened(), ended())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rcA.succeededN(1, "A's subscription gets A's event"))
	require.Empty(t, whDeliveries(t, h, keyB, idB), "B's subscription gets none of A's events")
	require.Empty(t, rcB.all())

	// A's test mode is another tenant: its events reach its own subscriptions only.
	ridT := h.konva(t, testA, "A's test book", "publish")
	rcT := newReceiver(t, whSecret)
	idT := idOf(whCreate(t, h, testA, whBody("t", rcT.url(), "flipbook_opened")))
	require.Len(t, h.do(t, "GET", "/api/v1/webhook-subscriptions", testA, nil).list(), 1)
	require.Nil(t, whGet(t, h, keyA, idT), "the live list does not show it")
	post(t, h, ridT, "t", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rcT.succeededN(1, "the test-mode subscription gets its event"))
	require.Equal(t, false, rcT.all()[0].Payload["livemode"])
	require.Equal(t, true, rcA.all()[0].Payload["livemode"])
	require.Len(t, whDeliveries(t, h, keyA, idA), 1, "the live subscription gets no test-mode event")
	require.Empty(t, rcB.all())
}

// 12. Plan (Company) and scopes.
func TestWebhookPlanAndScope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	rc := newReceiver(t, whSecret)
	routes := func(id int64) []struct {
		method, path string
		body         any
		write        bool
	} {
		return []struct {
			method, path string
			body         any
			write        bool
		}{
			{"GET", "/api/v1/webhook-subscriptions", nil, false},
			{"GET", "/api/v1/webhook-subscriptions/options", nil, false},
			{"GET", "/api/v1/webhook-subscriptions/sample-events", nil, false},
			{"GET", whPath(id, "/deliveries"), nil, false},
			{"POST", "/api/v1/webhook-subscriptions", whBody("x", rc.url(), "flipbook_opened"), true},
			{"PUT", whPath(id, ""), map[string]any{"name": "y"}, true},
			{"POST", whPath(id, "/test"), nil, true},
			{"POST", "/api/v1/webhooks", map[string]any{"event": "flipbook.created", "url": rc.url()}, true},
			{"DELETE", whPath(id, ""), nil, true},
		}
	}

	pro := h.workspace(t, "pro", "live")
	for _, c := range routes(1) {
		r := h.do(t, c.method, c.path, pro, c.body)
		require.Equal(t, 403, r.Status, "%s %s: %s", c.method, c.path, r.Body)
		require.Equal(t, api.TypePlanRequired, r.errType(), "%s %s", c.method, c.path)
	}

	full, ws := h.workspaceKey(t, "company", "live", "*")
	id := idOf(whCreate(t, h, full, whBody("x", rc.url(), "flipbook_opened")))
	read := h.key(t, ws, "live", "webhooks:read")
	for _, c := range routes(id) {
		r := h.do(t, c.method, c.path, read, c.body)
		if c.write {
			require.Equal(t, 403, r.Status, "%s %s: %s", c.method, c.path, r.Body)
			require.Equal(t, api.TypeMissingScope, r.errType())
			require.Contains(t, string(r.Body), "webhooks:read", "the key's scopes are listed")
		} else {
			require.Equal(t, 200, r.Status, "%s %s: %s", c.method, c.path, r.Body)
		}
	}
	books := h.key(t, ws, "live", "books:read")
	for _, c := range routes(id) {
		require.Equal(t, 403, h.do(t, c.method, c.path, books, c.body).Status, "%s %s", c.method, c.path)
	}
	write := h.key(t, ws, "live", "webhooks:write")
	r := h.do(t, "PUT", whPath(id, ""), write, map[string]any{"name": "by writer"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Empty(t, rc.all(), "no refused request sent anything")
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/webhook-subscriptions", "wsk_live_nope", nil).Status)
}

// 13. Deactivation after failing for DisableAfter; Zapier's 410 at once.
func TestWebhookAutoDeactivation(t *testing.T) {
	sched := []time.Duration{0}
	for i := 0; i < 12; i++ {
		sched = append(sched, ms(150))
	}
	h := newHarness(t, whOpts(sched, func(o *actors.WebhookOptions) { o.DisableAfter, o.BreakerFailures = time.Second, 1000 }))
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Failing", "publish")
	dead := newReceiver(t, whSecret).failing(1<<30, 500, "")
	gone := newReceiver(t, whSecret).failing(1<<30, 410, "")
	deadID := idOf(whCreate(t, h, key, whBody("dead", dead.url(), "flipbook_opened")))
	zap := whCreate(t, h, key, with(whBody("zap", gone.url(), "flipbook_opened"), "provider", "zapier"))
	zapID := idOf(zap)
	require.Equal(t, "zapier", zap["provider"])
	barrier := newReceiver(t, whSecret)
	whCreate(t, h, key, whBody("barrier", barrier.url(), "flipbook_opened"))
	post(t, h, rid, "s", nil, opened())

	// Zapier: one attempt answered 410 → delivery failed, subscription off.
	var z map[string]any
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		z = whGet(t, h, key, zapID)
		if z["is_active"] != false {
			return fmt.Errorf("the zapier subscription is not deactivated by 410: is_active %v", z["is_active"])
		}
		return nil
	})
	require.Contains(t, z["disabled_reason"], "410")
	require.NotNil(t, z["disabled_at"])
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		ds := whDeliveries(t, h, key, zapID)
		if len(ds) != 1 || ds[0]["status"] != "failed" {
			return fmt.Errorf("its delivery did not fail at once: %v", ds)
		}
		return nil
	})
	zd := whDeliveries(t, h, key, zapID)[0]
	require.EqualValues(t, 1, zd["attempts"])
	require.EqualValues(t, 410, zd["response_status"])
	require.Len(t, gone.all(), 1)

	// Generic: failing for more than DisableAfter.
	var d map[string]any
	testutil.Eventually(t, 15*time.Second, 10*time.Millisecond, func() error {
		d = whGet(t, h, key, deadID)
		if d["is_active"] != false {
			return fmt.Errorf("the failing subscription is not deactivated: is_active %v", d["is_active"])
		}
		return nil
	})
	require.Contains(t, d["disabled_reason"], "failed")
	require.NotNil(t, d["disabled_at"])
	hist := history(whDeliveries(t, h, key, deadID)[0])
	first, err := time.Parse(time.RFC3339Nano, hist[0]["attempted_at"].(string))
	require.NoError(t, err)
	disabledAt, err := time.Parse(time.RFC3339Nano, d["disabled_at"].(string))
	require.NoError(t, err)
	// The supervisor measures DisableAfter from its reading of the first failure to its reading
	// of the failure that deactivates, each taken once the attempt's record is committed; the
	// attempts' own times can be closer together than that (the last commit slower than the
	// first). The first attempt comes before the first reading, the deactivation after the last.
	require.GreaterOrEqual(t, disabledAt.Sub(first), time.Second, "deactivated only once failures spanned DisableAfter")
	require.Less(t, len(hist), len(sched), "retries stop once deactivated")
	require.Equal(t, "retrying", whDeliveries(t, h, key, deadID)[0]["status"], "the delivery waits, paused")

	// Events while deactivated are not delivered; reactivating clears the reason and resumes
	// the waiting delivery.
	post(t, h, rid, "while-off", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, barrier.succeededN(2, "the event while deactivated was read"))
	dead.failing(0, 500, "")
	r := h.do(t, "PUT", whPath(deadID, ""), key, map[string]any{"is_active": true})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, true, r.data()["is_active"])
	require.Nil(t, r.data()["disabled_reason"])
	require.Nil(t, r.data()["disabled_at"])
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		ds := whDeliveries(t, h, key, deadID)
		if len(ds) == 0 || ds[len(ds)-1]["status"] != "succeeded" {
			return fmt.Errorf("the paused delivery is not sent after reactivation: %d deliveries, %d succeeded", len(ds), countStatus(ds, "succeeded"))
		}
		return nil
	})
	for _, x := range whDeliveries(t, h, key, deadID) {
		require.NotEqual(t, "while-off", sessionOf(x), "no delivery for an event while deactivated")
	}
	require.Equal(t, true, whGet(t, h, key, deadID)["is_active"])
}

// 14. Restart in the middle of retries: nothing lost, nothing delivered twice.
func TestWebhookRestart(t *testing.T) {
	t.Parallel()
	// 12 failed attempts per subscription: the breaker (10 by default) would pause the lanes for
	// its cooldown; this test is about the restart.
	h := newHarness(t, whOpts([]time.Duration{0, ms(300), ms(600), ms(600), ms(600), ms(600)},
		func(o *actors.WebhookOptions) { o.BreakerFailures = 1000 }))
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Durable", "publish")
	rc1 := newReceiver(t, whSecret).failing(2, 500, "")
	rc2 := newReceiver(t, whSecret).failing(2, 503, "")
	id1 := idOf(whCreate(t, h, key, whBody("one", rc1.url(), "flipbook_opened", "session_ended")))
	id2 := idOf(whCreate(t, h, key, whBody("two", rc2.url(), "flipbook_opened", "session_ended")))
	// Another tenant with an active and an inactive subscription: the index of active
	// subscriptions is loaded from Pebble at start.
	keyB := h.workspace(t, "company", "live")
	ridB := h.konva(t, keyB, "B", "publish")
	rcB := newReceiver(t, whSecret)
	whCreate(t, h, keyB, whBody("b", rcB.url(), "flipbook_opened"))
	offB := whCreate(t, h, keyB, with(whBody("off", rcB.url(), "flipbook_opened"), "is_active", false))
	require.Equal(t, false, offB["is_active"])
	for i := 0; i < 3; i++ {
		post(t, h, rid, fmt.Sprintf("before-%d", i), nil, opened(), ended())
	}
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n1, n2 := len(rc1.all()), len(rc2.all()); n1 < 6 || n2 < 6 {
			return fmt.Errorf("first attempts not made: the receivers got %d and %d requests, want 6 each", n1, n2)
		}
		return nil
	})
	require.Less(t, len(rc1.succeeded())+len(rc2.succeeded()), 12, "the restart comes in the middle of the retries")
	h.restart(t)
	for i := 0; i < 3; i++ {
		post(t, h, rid, fmt.Sprintf("after-%d", i), nil, opened(), ended())
	}
	post(t, h, ridB, "b-after", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rcB.succeededN(1, "B's active subscription after the restart"))
	require.Empty(t, whDeliveries(t, h, keyB, idOf(offB)), "B's inactive subscription stays inactive")
	require.Len(t, rcB.all(), 1)
	for _, c := range []struct {
		id int64
		rc *receiver
	}{{id1, rc1}, {id2, rc2}} {
		var ds []map[string]any
		if err := testutil.Poll(20*time.Second, 10*time.Millisecond, func() error {
			ds = whDeliveries(t, h, key, c.id)
			if n := countStatus(ds, "succeeded"); len(ds) != 12 || n != 12 {
				return fmt.Errorf("%d deliveries, %d succeeded, want 12 each", len(ds), n)
			}
			return nil
		}); err != nil {
			for _, d := range ds {
				t.Logf("delivery %v %v %v attempts=%v next=%v hist=%v", d["id"], sessionOf(d), d["status"], d["attempts"], d["next_attempt_at"], d["history"])
			}
			t.Logf("stats: %+v", h.svc.Actors.WebhookStats())
			t.Fatalf("every delivery succeeds after the restart: %v", err)
		}
		ok := map[string]int{}
		events := map[string]int{}
		sessions := map[string]int{}
		for _, g := range c.rc.succeeded() {
			ok[g.ID]++
			events[g.EventID]++
			sessions[g.Payload["data"].(map[string]any)["session_id"].(string)+"/"+g.Event]++
			require.True(t, g.Verified)
		}
		for k, n := range ok {
			require.Equal(t, 1, n, "delivery %s answered 2xx once", k)
		}
		for k, n := range events {
			require.Equal(t, 1, n, "event %s delivered once", k)
		}
		require.Len(t, ok, 12)
		require.Len(t, sessions, 12, "each event before and after the restart, once")
		for i := 0; i < 3; i++ {
			for _, p := range []string{"before", "after"} {
				for _, e := range []string{"flipbook_opened", "session_ended"} {
					require.Equal(t, 1, sessions[fmt.Sprintf("%s-%d/%s", p, i, e)])
				}
			}
		}
		for _, d := range whDeliveries(t, h, key, c.id) {
			// Two failures, then success. An attempt in flight when the service stopped is not
			// recorded (docs/WEBHOOKS.md) while the receiver counted its request as one of its two
			// failures: such a delivery succeeds at its second recorded attempt.
			n := d["attempts"].(float64)
			require.True(t, n == 2 || n == 3, "two failures, then success, across the restart: %v attempts", n)
		}
		require.EqualValues(t, 12, whGet(t, h, key, c.id)["deliveries_count"])
	}
}

// 15. The webhook tools over MCP.
func TestWebhookMCP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Tooled", "publish")
	rc := newReceiver(t, whSecret)
	cs := h.mcpSession(t, key, "")
	ok := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, out := callTool(t, cs, name, args)
		require.False(t, res.IsError, "%s: %v", name, out)
		return out
	}

	out := ok("webhooks_create_subscription", map[string]any{"name": "mcp", "provider": "generic", "target_url": rc.url(),
		"event_types": []string{"flipbook_opened"}, "signing_secret": whSecret, "filters": map[string]any{"book_ids": []string{rid}}})
	sub := out["data"].(map[string]any)
	id := idOf(sub)
	require.Equal(t, true, sub["has_signing_secret"])
	require.Equal(t, []any{rid}, sub["filters"].(map[string]any)["book_ids"])

	out = ok("webhooks_list_subscriptions", nil)
	require.Len(t, out["data"], 1)
	require.EqualValues(t, id, idOf(out["data"].([]any)[0].(map[string]any)))

	out = ok("webhooks_update_subscription", map[string]any{"subscription_id": id, "name": "renamed",
		"event_types": []string{"flipbook_opened", "session_ended"}})
	require.Equal(t, "renamed", out["data"].(map[string]any)["name"])
	require.Equal(t, []string{"flipbook_opened", "session_ended"}, valuesOf(out["data"].(map[string]any)["event_types"]))
	require.Equal(t, rc.url(), out["data"].(map[string]any)["target_url"])

	post(t, h, rid, "mcp", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(1, "a real delivery"))
	require.True(t, rc.all()[0].Verified)
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		out = ok("webhooks_list_subscription_deliveries", map[string]any{"subscription_id": id, "limit": 10})
		ds := out["data"].([]any)
		if len(ds) != 1 || ds[0].(map[string]any)["status"] != "succeeded" {
			return fmt.Errorf("not recorded as one succeeded delivery: %v", ds)
		}
		return nil
	})
	require.Equal(t, "flipbook_opened", out["data"].([]any)[0].(map[string]any)["event_type"])

	out = ok("webhooks_get_subscription_options", nil)
	opts := out["data"].(map[string]any)
	require.Len(t, opts["event_types"], 9)
	require.Len(t, opts["providers"], 2)
	require.Equal(t, rid, opts["books"].([]any)[0].(map[string]any)["id"])

	{
		out = ok("webhooks_test_subscription", map[string]any{"subscription_id": id, "event_type": "session_ended"})
		require.Equal(t, true, out["data"].(map[string]any)["test"])
		require.Equal(t, "pending", out["data"].(map[string]any)["status"])
		testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(2, "test delivery"))
		require.True(t, rc.all()[1].Verified)
		require.Equal(t, "session_ended", rc.all()[1].Event)
		testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
			out = ok("webhooks_list_subscription_deliveries", map[string]any{"subscription_id": id, "limit": 1})
			d := out["data"].([]any)[0].(map[string]any)
			if d["test"] != true || d["status"] != "succeeded" {
				return fmt.Errorf("the newest delivery is not the succeeded test delivery: test %v, status %v", d["test"], d["status"])
			}
			return nil
		})
		require.Equal(t, true, out["meta"].(map[string]any)["has_more"])

		testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
			out = ok("webhooks_list_sample_events", map[string]any{"event_types": "flipbook_opened", "limit": 1})
			if l := out["data"].([]any); len(l) != 1 || l[0].(map[string]any)["test"] != nil {
				return fmt.Errorf("no real sample yet: %v", l)
			}
			return nil
		})
		require.Equal(t, rid, out["data"].([]any)[0].(map[string]any)["data"].(map[string]any)["book"].(map[string]any)["id"])

		out = ok("webhooks_dispatch_sample", map[string]any{"event": "flipbook.updated", "url": rc.url()})
		require.Equal(t, "flipbook.updated", out["data"].(map[string]any)["event"])
		require.Len(t, rc.all(), 3, "sent before the answer")
		require.Equal(t, "flipbook.updated", rc.all()[2].Event)
	}

	// Errors carry REST's types.
	res, out := callTool(t, cs, "webhooks_update_subscription", map[string]any{"subscription_id": id + 1000, "name": "x"})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeNotFound, toolErrType(out))
	res, out = callTool(t, cs, "webhooks_create_subscription", map[string]any{"name": "x", "provider": "slack",
		"target_url": rc.url(), "event_types": []string{"flipbook_opened"}})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeValidation, toolErrType(out))
	res, out = callTool(t, cs, "webhooks_list_subscription_deliveries", map[string]any{"subscription_id": id + 1000})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeNotFound, toolErrType(out))

	// A read-only key cannot write through tools either.
	ro := h.mcpSession(t, h.key(t, h.principal(t, key).Tenant.Workspace, "live", "webhooks:read"), "")
	res, out = callTool(t, ro, "webhooks_test_subscription", map[string]any{"subscription_id": id})
	require.True(t, res.IsError)
	require.Equal(t, api.TypeMissingScope, toolErrType(out))
}

// The circuit breaker: after BreakerFailures consecutive failures a subscription's lane pauses
// for the cooldown (whatever the schedule says), then sends one probe; a failed probe doubles
// the pause, a successful one closes the breaker.
func TestWebhookCircuitBreaker(t *testing.T) {
	sched := []time.Duration{0}
	for i := 0; i < 10; i++ {
		sched = append(sched, ms(50))
	}
	h := newHarness(t, whOpts(sched, func(o *actors.WebhookOptions) {
		o.BreakerFailures, o.BreakerCooldown = 3, ms(800)
	}))
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Breaker", "publish")
	rc := newReceiver(t, whSecret).failing(1<<30, 500, "")
	id := idOf(whCreate(t, h, key, whBody("b", rc.url(), "flipbook_opened")))
	post(t, h, rid, "s1", nil, opened())

	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := len(rc.all()); n < 4 {
			return fmt.Errorf("the receiver got %d requests, want three failures, then the probe", n)
		}
		return nil
	})
	rc.failing(0, 500, "") // the receiver recovers
	got := rc.all()
	require.Len(t, got, 4)
	require.Less(t, got[2].At.Sub(got[0].At), ms(700), "the first three follow the schedule")
	require.GreaterOrEqual(t, got[3].At.Sub(got[2].At), ms(750), "then the breaker holds the lane for the cooldown")
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(1, "the next probe succeeds"))
	got = rc.all()
	require.Len(t, got, 5)
	require.GreaterOrEqual(t, got[4].At.Sub(got[3].At), ms(1550), "a failed probe doubles the pause")
	// The receiver has answered; the delivery is recorded once its response is read.
	var d map[string]any
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		d = whDeliveries(t, h, key, id)[0]
		if d["status"] != "succeeded" {
			return fmt.Errorf("the delivery is recorded as %v, want succeeded", d["status"])
		}
		return nil
	})
	require.EqualValues(t, 5, d["attempts"])

	// Closed again: a new event goes out at once.
	sent := time.Now()
	post(t, h, rid, "s2", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(2, "delivered"))
	require.Less(t, rc.all()[5].At.Sub(sent), ms(1500), "no pause after a success")
	require.Equal(t, 1, rc.all()[5].Attempt)
}

// Delivery lists: newest first, cursor pages, status filter, limits.
func TestWebhookDeliveriesPaging(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Paged", "publish")
	rc := newReceiver(t, whSecret)
	id := idOf(whCreate(t, h, key, whBody("p", rc.url(), "flipbook_opened")))
	other := idOf(whCreate(t, h, key, whBody("q", rc.url(), "session_ended")))
	for i := 0; i < 5; i++ {
		post(t, h, rid, fmt.Sprintf("p%d", i), nil, opened())
	}
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := countStatus(whDeliveries(t, h, key, id), "succeeded"); n != 5 {
			return fmt.Errorf("%d of five deliveries recorded as succeeded", n)
		}
		return nil
	})

	var sessions []string
	var ids []float64
	cursor := ""
	pages := 0
	for {
		path := whPath(id, "/deliveries?limit=2")
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := h.do(t, "GET", path, key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		pages++
		for _, x := range r.list() {
			sessions = append(sessions, sessionOf(x.(map[string]any)))
			ids = append(ids, x.(map[string]any)["id"].(float64))
		}
		more := r.meta()["has_more"].(bool)
		if !more {
			require.Nil(t, r.meta()["next_cursor"])
			break
		}
		cursor = r.meta()["next_cursor"].(string)
	}
	require.Equal(t, 3, pages)
	require.Equal(t, []string{"p4", "p3", "p2", "p1", "p0"}, sessions, "newest first, no repeats")
	require.True(t, sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] > ids[j] }))

	first := h.do(t, "GET", whPath(id, "/deliveries?limit=2"), key, nil).meta()["next_cursor"].(string)
	r := h.do(t, "GET", whPath(other, "/deliveries?cursor="+first), key, nil)
	require.Equal(t, 422, r.Status, "a cursor of another list: %s", r.Body)
	require.Len(t, h.do(t, "GET", whPath(id, "/deliveries?status=succeeded"), key, nil).list(), 5)
	require.Empty(t, h.do(t, "GET", whPath(id, "/deliveries?status=pending"), key, nil).list())
	require.Len(t, h.do(t, "GET", whPath(id, "/deliveries"), key, nil).list(), 5, "default limit 25")
	for _, q := range []string{"limit=0", "limit=101", "status=done", "cursor=garbage"} {
		r := h.do(t, "GET", whPath(id, "/deliveries?"+q), key, nil)
		require.Equal(t, 422, r.Status, "%s: %s", q, r.Body)
	}
}

// A subscription receives the events the service received while it was active
// (docs/WEBHOOKS.md), also when the dispatcher reads them only after a pause and a resume: the
// reader here polls the log every second, so a quick pause/resume happens before it reads the
// event received while the subscription was active.
func TestWebhookPauseResumeKeepsEarlierEvents(t *testing.T) {
	h := newHarness(t, whOpts([]time.Duration{0, ms(100)}, func(o *actors.WebhookOptions) { o.Poll = time.Second }))
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Lagging", "publish")
	rc := newReceiver(t, whSecret)
	id := idOf(whCreate(t, h, key, whBody("s", rc.url(), "flipbook_opened")))

	reproduced := false
	for try := 0; try < 3 && !reproduced; try++ {
		// Sync with the reader: right after it delivered this event it waits a full Poll.
		sync := fmt.Sprintf("sync-%d", try)
		post(t, h, rid, sync, nil, opened())
		testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.sessionDelivered(sync))
		read := h.svc.Actors.WebhookStats().EventsRead
		post(t, h, rid, fmt.Sprintf("early-%d", try), nil, opened()) // received while active
		require.Equal(t, 200, h.do(t, "PUT", whPath(id, ""), key, map[string]any{"is_active": false}).Status)
		require.Equal(t, 200, h.do(t, "PUT", whPath(id, ""), key, map[string]any{"is_active": true}).Status)
		reproduced = h.svc.Actors.WebhookStats().EventsRead == read // the reader had not read it yet
	}
	if !reproduced {
		t.Skip("the reader read the event before the pause in every try; the scenario was not reproduced")
	}
	post(t, h, rid, "late", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.sessionDelivered("late"))
	var sessions []string
	for _, d := range whDeliveries(t, h, key, id) {
		sessions = append(sessions, sessionOf(d))
	}
	early := false
	for _, s := range sessions {
		if strings.HasPrefix(s, "early-") {
			early = true
		}
	}
	require.True(t, early, "an event received while active, read after a pause and resume, is delivered: %v", sessions)
}
