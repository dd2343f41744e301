package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/actors"
	"flipbook/internal/testutil"
)

// receiver is a real webhook receiver on loopback that verifies every request the way
// docs/WEBHOOKS.md tells customers to (raw body, constant-time compare, 300-second window).
type receiver struct {
	srv    *httptest.Server
	secret []byte
	// failFirst makes the first n requests of each delivery id fail with status (500 default).
	failFirst  int
	failStatus int
	retryAfter string      // Retry-After header of the failed answers ("" none)
	hang       atomic.Bool // never answer (until the client gives up)

	mu   sync.Mutex
	got  []received
	seen map[string]int // X-Webhook-Id → requests
}

type received struct {
	ID, EventID, Event string
	Attempt            int
	Verified           bool
	Signed             bool // an X-Webhook-Signature header was sent
	Status             int  // what the receiver answered
	Payload            map[string]any
	Raw                string // the body as received
	At                 time.Time
}

func newReceiver(t *testing.T, secret string) *receiver {
	rc := &receiver{secret: []byte(secret), seen: map[string]int{}, failStatus: 500}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(func() { rc.hang.Store(false); rc.srv.CloseClientConnections(); rc.srv.Close() })
	return rc
}

func (rc *receiver) url() string { return rc.srv.URL + "/hook" }

// failing makes the first n requests of every delivery id fail with status (and, when
// retryAfter is set, a Retry-After header). Safe while requests are served.
func (rc *receiver) failing(n, status int, retryAfter string) *receiver {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.failFirst, rc.failStatus, rc.retryAfter = n, status, retryAfter
	return rc
}

// verify is the receiver's check of spec §6.3.
func verify(secret []byte, r *http.Request, body []byte) bool {
	ts := r.Header.Get("X-Webhook-Timestamp")
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if d := time.Since(time.Unix(n, 0)); d > 300*time.Second || d < -300*time.Second {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	got, err := hex.DecodeString(r.Header.Get("X-Webhook-Signature"))
	return err == nil && hmac.Equal(got, want)
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if rc.hang.Load() {
		<-r.Context().Done()
		return
	}
	rec := received{ID: r.Header.Get("X-Webhook-Id"), EventID: r.Header.Get("X-Webhook-Event-Id"),
		Event: r.Header.Get("X-Webhook-Event"), At: time.Now()}
	rec.Attempt, _ = strconv.Atoi(r.Header.Get("X-Webhook-Attempt"))
	rec.Verified = len(rc.secret) > 0 && verify(rc.secret, r, body)
	rec.Signed = r.Header.Get("X-Webhook-Signature") != ""
	rec.Raw = string(body)
	_ = json.Unmarshal(body, &rec.Payload)
	rc.mu.Lock()
	rc.seen[rec.ID]++
	n := rc.seen[rec.ID]
	rec.Status = 200
	if n <= rc.failFirst {
		rec.Status = rc.failStatus
	}
	rc.got = append(rc.got, rec)
	retry := rc.retryAfter
	rc.mu.Unlock()
	if rec.Status/100 != 2 && retry != "" {
		w.Header().Set("Retry-After", retry)
	}
	w.WriteHeader(rec.Status)
	_, _ = w.Write([]byte(`{"received":true}`))
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// succeededN is a condition for testutil.Eventually: the receiver answered n requests 2xx.
func (rc *receiver) succeededN(n int, what string) func() error {
	return func() error {
		if got := len(rc.succeeded()); got != n {
			return fmt.Errorf("%s: the receiver answered %d requests 2xx, want %d", what, got, n)
		}
		return nil
	}
}

// succeeded are the requests the receiver answered 2xx.
func (rc *receiver) succeeded() []received {
	var out []received
	for _, r := range rc.all() {
		if r.Status/100 == 2 {
			out = append(out, r)
		}
	}
	return out
}

// fastWebhooks makes retries quick for tests.
func fastWebhooks(c *Config) {
	c.AllowPrivateTargets = true
	c.Webhooks = actors.WebhookOptions{Schedule: []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond,
		300 * time.Millisecond}, Timeout: 2 * time.Second, Poll: 5 * time.Millisecond}
}

func TestWebhookDeliveriesSignedAndRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Spring catalogue", "publish")
	rc := newReceiver(t, "whsec_0123456789abcdef")

	r := h.do(t, "POST", "/api/v1/webhook-subscriptions", key, map[string]any{
		"name": "crm", "provider": "generic", "target_url": rc.url(),
		"event_types": []string{"flipbook_opened", "page_dwelled", "session_ended"}, "signing_secret": "whsec_0123456789abcdef"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	sub := r.data()
	require.Equal(t, true, sub["has_signing_secret"])
	require.NotContains(t, string(r.Body), "whsec_", "the secret is never returned")
	id := int64(sub["id"].(float64))

	c := h.do(t, "POST", "/collect", "", collectBody(rid,
		map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 5200},
		map[string]any{"type": "link_clicked", "page_number": 2, "url": "https://example.com/x"},
		map[string]any{"type": "session_ended", "exit_reason": "closed"}))
	require.Equal(t, 202, c.Status, "%s", c.Body)

	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(3, "three deliveries (link_clicked is not subscribed)"))
	for _, g := range rc.all() {
		require.True(t, g.Verified, "signature verifies: %+v", g)
		data, ok := g.Payload["data"].(map[string]any)
		require.True(t, ok, "payload has data: %+v", g)
		require.Equal(t, rid, data["book"].(map[string]any)["id"])
		require.Equal(t, "Spring catalogue", data["book"].(map[string]any)["title"])
		require.Equal(t, g.Event, g.Payload["type"])
	}
	types := map[string]bool{}
	for _, g := range rc.all() {
		types[g.Event] = true
	}
	require.Equal(t, map[string]bool{"flipbook_opened": true, "page_dwelled": true, "session_ended": true}, types)

	// The receiver answered before the service recorded the answers: wait for the records.
	var d *resp
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		d = h.do(t, "GET", "/api/v1/webhook-subscriptions/"+itoa(id)+"/deliveries", key, nil)
		require.Equal(t, 200, d.Status, "%s", d.Body)
		for _, x := range d.list() {
			if st := x.(map[string]any)["status"]; st != "succeeded" {
				return fmt.Errorf("a delivery is recorded as %v, want three succeeded", st)
			}
		}
		if n := len(d.list()); n != 3 {
			return fmt.Errorf("%d deliveries recorded, want three succeeded", n)
		}
		return nil
	})
	for _, x := range d.list() {
		m := x.(map[string]any)
		require.Equal(t, "succeeded", m["status"])
		require.EqualValues(t, 1, m["attempts"])
		require.EqualValues(t, 200, m["response_status"])
	}
	l := h.do(t, "GET", "/api/v1/webhook-subscriptions", key, nil)
	require.EqualValues(t, 3, l.list()[0].(map[string]any)["deliveries_count"])
}

// A workspace moved below the Company plan (PUT /admin/v1/workspaces/{id}) gets no more webhook
// deliveries: every webhook operation, the delete included, answers 403 PlanRequired, and the
// subscription kept receiving reader events, a Company feature it did not pay for and could
// not switch off (found by a review).
func TestDowngradeStopsWebhookDeliveries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fastWebhooks)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	tenant := h.principal(t, key).Tenant
	rid := h.konva(t, key, "Downgraded", "publish")
	rc := newReceiver(t, whSecret)
	id := idOf(whCreate(t, h, key, whBody("hook", rc.url(), "flipbook_opened")))
	post(t, h, rid, "before", nil, opened())
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.sessionDelivered("before"))

	down := h.adminDo(t, "PUT", "/workspaces/"+itoa(ws), map[string]any{"plan": "free"})
	require.Equal(t, 200, down.Status, "%s", down.Body)
	del := h.do(t, "DELETE", whPath(id, ""), key, nil)
	t.Logf("DELETE of the subscription after the downgrade: %d %s", del.Status, del.Body)

	post(t, h, rid, "after", nil, opened())
	// Wait until the webhook dispatcher has read every event in the log (its position is the
	// log's end in each partition), so whatever it would deliver is queued by now.
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		r := h.adminDo(t, "GET", "/ingest", nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, p := range r.data()["partitions"].([]any) {
			pm := p.(map[string]any)
			if end := pm["log_end"].(float64); end > 0 && pm["webhooks"].(float64) < end {
				return fmt.Errorf("the webhook dispatcher is at %v of %v in partition %v", pm["webhooks"], pm["log_end"], pm["partition"])
			}
		}
		return nil
	})
	ds, _, err := h.svc.Store.WebhookDeliveries(tenant, id, 0, 100, nil)
	require.NoError(t, err)
	require.Len(t, ds, 1, "a reader event after the downgrade to free was queued for delivery to a "+
		"Company-plan webhook subscription the workspace can no longer manage (DELETE answered %d)", del.Status)
}
