package actors

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/errs"
	"flipbook/storage"
)

// webhookSup is the webhook delivery supervisor (DESIGN §5). Its queue lives in Pebble
// (g/whq/): one lane per subscription (and one for its test deliveries), entries in due order.
// It decides what is attempted when, within each lane's concurrency limit and the global one;
// attempts run in goroutines (they wait on receivers), which record their outcome in Pebble and
// then tell the supervisor. It never waits on anything but Pebble.
type webhookSup struct {
	s        *System
	pid      *actor.PID
	lanes    map[storage.WebhookLane]*whLane
	subs     map[storage.WebhookLane]*whSub // by lane with Test false
	inflight int
	timer    *time.Timer
	next     time.Time
	starved  []storage.WebhookLane // lanes that had work when the global limit was reached
}

// whSub is what the supervisor knows of a subscription.
type whSub struct {
	sub          *storage.WebhookSubscription // nil: deleted
	secret       []byte
	health       storage.WebhookHealth
	deactivating bool
}

// whLane is one delivery queue in flight.
type whLane struct {
	key      storage.WebhookLane
	inflight map[int64]bool // attempts not yet recorded (their entries are skipped by scans)
	// sending counts the attempts waiting for the receiver: LaneConcurrency bounds it. An
	// attempt stops counting once the receiver answered, while its outcome is committed.
	sending   int
	fails     int // consecutive failed attempts
	openUntil time.Time
	cooldown  time.Duration
	next      time.Time // earliest due entry not yet attempted (zero: look)
	// from is where the next scan of the lane's queue starts: no entry below it existed at the
	// last scan, and every entry added since was announced (whQueued, whDone.requeued) and
	// lowered it (nil: the lane's first key). See storage.LaneEntries.
	from []byte
	// ready are due entries read ahead and not attempted yet, in due order.
	ready     []storage.QueueEntry
	finishing bool // a goroutine is failing the entries of a deleted subscription
	again     bool // entries were queued while finishing
}

// Messages of the supervisor.
type (
	// whQueued: new entries were committed; each lane with its smallest new key.
	whQueued struct {
		lanes map[storage.WebhookLane][]byte
	}
	whSubChanged struct {
		t           storage.Tenant
		id          int64
		reactivated bool
	}
	whWake struct{}
	whDone struct {
		lane   storage.WebhookLane
		id     int64
		ok     bool // 2xx
		status int
		errMsg string
		stale  bool // the entry was already finished (nothing was sent)
		sent   bool // whSent was sent before this
		// requeued is the retry's new queue key (nil: none).
		requeued []byte
		noWrite  bool // the outcome could not be recorded (the entry stays queued)
	}
	whFinished struct{ lane storage.WebhookLane }
	// whSent: an attempt's receiver answered (or failed); its outcome is being recorded.
	whSent struct {
		lane storage.WebhookLane
		id   int64
	}
)

func newWebhookSup(s *System) actor.Producer {
	return func() actor.Receiver {
		return &webhookSup{s: s, lanes: map[storage.WebhookLane]*whLane{}, subs: map[storage.WebhookLane]*whSub{}}
	}
}

// reset rebuilds the supervisor's state from Pebble after a recovered panic: every lane with
// queued entries is scanned from its start again. An attempt still in flight then may be made
// a second time, which at-least-once delivery allows (X-Webhook-Id stays the same).
func (w *webhookSup) reset() {
	w.lanes = map[storage.WebhookLane]*whLane{}
	w.subs = map[storage.WebhookLane]*whSub{}
	w.inflight, w.starved = 0, nil
	w.restore()
}

// restore creates a lane for every subscription with queued entries and pumps it.
func (w *webhookSup) restore() {
	lanes, err := w.s.Store.WebhookLanes()
	if err != nil {
		w.s.opts.Logger.Error("webhooks: list queued deliveries", "err", err)
	}
	for _, l := range lanes {
		if w.s.owns(l.Tenant.Workspace) {
			w.pump(w.lane(l))
		}
	}
	w.arm(w.s.whNow().Add(time.Second)) // look again soon
}

func (w *webhookSup) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized:
	case actor.Started:
		w.pid = c.PID()
		w.restore()
	case resumeQueues:
		w.restore()
	case actor.Stopped:
		if w.timer != nil {
			w.timer.Stop()
		}
	case *whQueued:
		for l, key := range m.lanes {
			ln, ok := w.lanes[l]
			if !ok {
				ln = w.lane(l)
				ln.from = key // the lane was empty when it was forgotten
			}
			ln.lower(key)
			ln.next = time.Time{}
			if ln.finishing {
				ln.again = true // queued after the deletion: fail it too
			}
			w.pump(ln)
		}
	case *whSubChanged:
		key := storage.WebhookLane{Tenant: m.t, Sub: m.id}
		delete(w.subs, key)
		sub := w.sub(key)
		if m.reactivated && sub.sub != nil {
			sub.health = storage.WebhookHealth{}
			_ = w.s.Store.SetWebhookHealth(m.t, m.id, sub.health)
			for _, test := range []bool{false, true} {
				if ln, ok := w.lanes[storage.WebhookLane{Tenant: m.t, Sub: m.id, Test: test}]; ok {
					ln.fails, ln.openUntil, ln.cooldown, ln.next = 0, time.Time{}, 0, time.Time{}
				}
			}
		}
		for _, test := range []bool{false, true} {
			l := storage.WebhookLane{Tenant: m.t, Sub: m.id, Test: test}
			if _, ok := w.lanes[l]; ok || sub.sub == nil {
				w.pump(w.lane(l))
			}
		}
	case whWake:
		w.next = time.Time{}
		now := w.s.whNow()
		for _, ln := range w.lanes {
			if ln.next.IsZero() || !ln.next.After(now) || (!ln.openUntil.IsZero() && !ln.openUntil.After(now)) {
				w.pump(ln)
			} else {
				w.arm(ln.next)
			}
		}
	case *whSent:
		if ln, ok := w.lanes[m.lane]; ok && ln.inflight[m.id] {
			ln.sending--
			w.pump(ln)
		}
	case *whDone:
		w.done(c, m)
	case *whFinished:
		if ln, ok := w.lanes[m.lane]; ok {
			ln.finishing = false
			if ln.again {
				ln.again, ln.from = false, nil
				w.pump(ln)
			} else {
				delete(w.lanes, m.lane)
			}
		}
	}
	w.s.whCount(func(st *WebhookStats) { st.Inflight, st.Lanes = w.inflight, len(w.lanes) })
}

// lower makes the next scan start at key or before.
func (ln *whLane) lower(key []byte) {
	if ln.from != nil && key != nil && string(key) < string(ln.from) {
		ln.from = key
	}
}

func (w *webhookSup) lane(l storage.WebhookLane) *whLane {
	ln, ok := w.lanes[l]
	if !ok {
		ln = &whLane{key: l, inflight: map[int64]bool{}}
		w.lanes[l] = ln
	}
	return ln
}

// sub loads (once) what the supervisor needs of a subscription.
func (w *webhookSup) sub(key storage.WebhookLane) *whSub {
	key.Test = false
	if s, ok := w.subs[key]; ok {
		return s
	}
	s := &whSub{}
	sub, err := w.s.Store.WebhookSubscription(key.Tenant, key.Sub)
	switch {
	case err == nil:
		s.sub = sub
		if s.secret, err = w.s.openSecret(sub.Secret); err != nil {
			w.s.opts.Logger.Error("webhooks: open signing secret", "subscription", key.Sub, "err", err)
		}
		s.health, _ = w.s.Store.GetWebhookHealth(key.Tenant, key.Sub)
	case errors.Is(err, errs.ErrNotFound):
	default:
		// Unknown state: treat as paused and look again later.
		w.s.opts.Logger.Error("webhooks: read subscription", "subscription", key.Sub, "err", err)
		return &whSub{sub: &storage.WebhookSubscription{}}
	}
	w.subs[key] = s
	return s
}

// pump starts the attempts a lane may start now.
func (w *webhookSup) pump(ln *whLane) {
	if ln.finishing || !w.s.owns(ln.key.Tenant.Workspace) {
		return // another node's now (cluster mode): its owner delivers, from the same queue
	}
	sub := w.sub(ln.key)
	if sub.sub == nil {
		// Deleted: its unfinished deliveries fail, once the attempts in flight are back.
		if len(ln.inflight) == 0 {
			ln.finishing = true
			w.s.wh.workers.Add(1)
			go w.s.failLane(w.pid, ln.key)
		}
		return
	}
	if !ln.key.Test && !sub.sub.IsActive {
		return // paused until the subscription is active again
	}
	now := w.s.whNow()
	capacity := w.s.wh.opts.LaneConcurrency - ln.sending
	if !ln.openUntil.IsZero() {
		if ln.openUntil.After(now) {
			w.arm(ln.openUntil)
			return
		}
		capacity = 1 - len(ln.inflight) // half open: one probe
	}
	if free := w.s.wh.opts.MaxInflight - w.inflight; free < capacity {
		capacity = free
		if capacity <= 0 {
			w.starved = append(w.starved, ln.key)
			return
		}
	}
	if capacity <= 0 {
		return
	}
	if len(ln.ready) == 0 {
		// Read ahead: one scan serves the next laneReadAhead attempts, not one.
		entries, next, first, err := w.s.Store.LaneEntries(ln.key, ln.from, now, laneReadAhead, func(id int64) bool { return ln.inflight[id] || w.s.whCommitting(id) })
		if err != nil {
			w.s.opts.Logger.Error("webhooks: read queue", "err", err)
			w.arm(now.Add(time.Second))
			return
		}
		if first != nil {
			ln.from = first
		}
		ln.ready, ln.next = entries, next
	}
	take := min(capacity, len(ln.ready))
	for _, e := range ln.ready[:take] {
		ln.inflight[e.ID] = true
		ln.sending++
		w.inflight++
		w.s.wh.workers.Add(1)
		go w.s.attempt(w.pid, ln.key, e, sub.sub, sub.secret)
	}
	ln.ready = ln.ready[take:]
	switch {
	case len(ln.ready) > 0 || (!ln.next.IsZero() && !ln.next.After(now)):
		// More is due: the completions of these attempts pump the lane again.
	case !ln.next.IsZero():
		w.arm(ln.next)
	case len(ln.inflight) == 0:
		delete(w.lanes, ln.key) // empty: forgotten until something is queued
	}
}

// laneReadAhead is how many due entries one scan of a lane's queue reads.
const laneReadAhead = 256

func (w *webhookSup) done(c *actor.Context, m *whDone) {
	ln, ok := w.lanes[m.lane]
	if ok && ln.inflight[m.id] {
		delete(ln.inflight, m.id)
		w.inflight--
		if !m.sent {
			ln.sending--
		}
	}
	if !ok {
		ln = w.lane(m.lane)
		ln.from = m.requeued
	}
	ln.lower(m.requeued)
	now := w.s.whNow()
	if !m.stale && !m.noWrite {
		sub := w.sub(m.lane)
		if m.ok {
			ln.fails, ln.openUntil, ln.cooldown = 0, time.Time{}, 0
			if sub.sub != nil && !sub.health.FailingSince.IsZero() {
				sub.health = storage.WebhookHealth{LastSuccess: now}
				_ = w.s.Store.SetWebhookHealth(m.lane.Tenant, m.lane.Sub, sub.health)
			}
		} else {
			ln.fails++
			switch {
			case !ln.openUntil.IsZero() && now.Before(ln.openUntil):
				// Already open: an attempt started before it opened came back.
			case !ln.openUntil.IsZero():
				// The probe failed: open again, twice as long.
				ln.cooldown = min(ln.cooldown*2, w.s.wh.opts.BreakerMax)
				ln.openUntil = now.Add(ln.cooldown)
			case ln.fails >= w.s.wh.opts.BreakerFailures:
				// Open: no attempts until the cooldown has passed, then one probe.
				ln.cooldown = w.s.wh.opts.BreakerCooldown
				ln.openUntil = now.Add(ln.cooldown)
			}
			if sub.sub != nil && !m.lane.Test {
				w.failed(c, m, sub, now)
			}
		}
	}
	if m.noWrite {
		w.arm(now.Add(time.Second))
	}
	w.pump(ln)
	// Capacity freed: lanes that were starved by the global limit go next.
	for len(w.starved) > 0 && w.inflight < w.s.wh.opts.MaxInflight {
		l := w.starved[0]
		w.starved = w.starved[1:]
		if sl, ok := w.lanes[l]; ok {
			w.pump(sl)
		}
	}
}

// failed tracks since when a subscription fails, and deactivates it after DisableAfter (or at
// once when a Zapier hook answers 410 Gone: Zapier's way of unsubscribing).
func (w *webhookSup) failed(c *actor.Context, m *whDone, sub *whSub, now time.Time) {
	if sub.health.FailingSince.IsZero() {
		sub.health.FailingSince = now
	}
	sub.health.LastFailure = now
	_ = w.s.Store.SetWebhookHealth(m.lane.Tenant, m.lane.Sub, sub.health)
	reason := ""
	switch {
	case sub.sub.Provider == "zapier" && m.status == http.StatusGone:
		reason = "the Zapier hook answered 410 Gone (unsubscribed)"
	case now.Sub(sub.health.FailingSince) >= w.s.wh.opts.DisableAfter:
		reason = fmt.Sprintf("deliveries failed without a success since %s (last: %s)",
			sub.health.FailingSince.UTC().Format(time.RFC3339), m.errMsg)
	}
	if reason != "" && !sub.deactivating {
		sub.deactivating = true
		if ws := w.s.workspace(m.lane.Tenant); ws != nil {
			w.s.tell(ws, &deactivateWebhook{ID: m.lane.Sub, Reason: reason})
		}
	}
}

// arm makes sure the supervisor wakes at or before at.
func (w *webhookSup) arm(at time.Time) {
	if !w.next.IsZero() && !at.Before(w.next) {
		return
	}
	w.next = at
	d := max(at.Sub(w.s.whNow()), 0)
	if w.timer != nil {
		w.timer.Stop()
	}
	pid, s := w.pid, w.s
	w.timer = time.AfterFunc(d, func() { s.tell(pid, whWake{}) })
}

// attempt sends one delivery and records the outcome (a goroutine).
func (s *System) attempt(sup *actor.PID, lane storage.WebhookLane, e storage.QueueEntry, sub *storage.WebhookSubscription, secret []byte) {
	defer s.wh.workers.Done()
	res := &whDone{lane: lane, id: e.ID}
	defer func() { s.tell(sup, res) }()
	d, err := s.Store.WebhookDelivery(lane.Tenant, lane.Sub, e.ID)
	if err != nil || d.Status == storage.DeliverySucceeded || d.Status == storage.DeliveryFailed {
		if err != nil && !errors.Is(err, errs.ErrNotFound) {
			res.noWrite = true
			return
		}
		b := s.Store.NewBatch() // a stale entry: its delivery is finished (or gone)
		b.Dequeue(e.Key)
		if b.Commit() != nil {
			res.noWrite = true
		}
		res.stale = true
		return
	}
	if err := s.Store.FillPayload(lane.Tenant, d); err != nil {
		res.noWrite = true
		return
	}
	start := time.Now()
	status, body, retryAfter, sendErr := s.send(sub, secret, d)
	s.tell(sup, &whSent{lane: lane, id: e.ID}) // the lane may start another attempt
	res.sent = true
	if sendErr != nil && s.wh.ctx.Err() != nil {
		// Stopping cut the attempt short: it is not recorded and is made again after the
		// restart. An answer that did come is recorded (the store closes after the attempts).
		res.noWrite = true
		return
	}
	now := s.whNow()
	d.Attempts++
	res.status = status
	a := storage.WebhookAttempt{Number: d.Attempts, At: now, ResponseStatus: status, DurationMs: time.Since(start).Milliseconds()}
	d.ResponseStatus, d.ResponseBody = status, body
	d.ErrorMessage = ""
	if sendErr != nil {
		d.ErrorMessage = sendErr.Error()
	} else if status < 200 || status > 299 {
		d.ErrorMessage = fmt.Sprintf("the receiver answered %d", status)
	}
	a.ErrorMessage = d.ErrorMessage
	d.History = append(d.History, a)
	if len(d.History) > 20 {
		d.History = d.History[len(d.History)-20:]
	}
	b := s.Store.NewBatch()
	b.Dequeue(e.Key)
	sched := s.wh.opts.Schedule
	switch {
	case d.ErrorMessage == "":
		d.Status, d.DeliveredAt, d.NextAttemptAt = storage.DeliverySucceeded, &now, nil
		res.ok = true
	case d.Attempts >= len(sched) || (sub.Provider == "zapier" && status == http.StatusGone):
		d.Status, d.NextAttemptAt = storage.DeliveryFailed, nil
	default:
		delay := jitter(sched[d.Attempts])
		if retryAfter > delay {
			delay = min(retryAfter, MaxRetryAfter)
		}
		due := now.Add(delay)
		d.Status, d.NextAttemptAt = storage.DeliveryRetrying, &due
		res.requeued = lane.QueueKey(due, d.ID)
		b.Enqueue(res.requeued)
	}
	res.errMsg = d.ErrorMessage
	if err := b.PutWebhookDelivery(lane.Tenant, d); err != nil {
		b.Close()
		res.noWrite = true
		return
	}
	if err := b.Commit(); err != nil {
		s.opts.Logger.Error("webhooks: record attempt", "delivery", d.ID, "err", err)
		res.noWrite = true
		return
	}
	s.whCount(func(st *WebhookStats) {
		st.Attempts++
		if res.ok {
			st.Succeeded++
		} else {
			st.Failed++
		}
	})
}

// jitter spreads a retry delay by ±20%, so deliveries that failed together do not all come
// back at once.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// SignWebhook is the signature of a delivery (spec §6.3): hex HMAC-SHA256 keyed with the
// secret over "<timestamp>.<raw body>".
func SignWebhook(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// send POSTs a delivery's payload and returns the status, the start of the answer's body and
// the Retry-After it asked for.
func (s *System) send(sub *storage.WebhookSubscription, secret []byte, d *storage.WebhookDelivery) (int, string, time.Duration, error) {
	h := http.Header{}
	h.Set("X-Webhook-Id", "whd_"+strconv.FormatInt(d.ID, 10))
	h.Set("X-Webhook-Event-Id", d.EventID)
	h.Set("X-Webhook-Attempt", strconv.Itoa(d.Attempts+1))
	return s.PostWebhook(s.wh.ctx, sub.TargetURL, d.EventType, secret, d.Payload, h)
}

// PostWebhook sends one signed webhook request through the outbound guard (deliveries and the
// sample sends of POST /webhooks): the X-Webhook-* headers, a signature when secret is set, and
// at most MaxWebhookResponseBody bytes of the answer kept.
func (s *System) PostWebhook(ctx context.Context, target, event string, secret, body []byte, extra http.Header) (int, string, time.Duration, error) {
	if s.wh.client == nil {
		return 0, "", 0, errs.ErrStopping
	}
	ctx, cancel := context.WithTimeout(ctx, s.wh.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, "", 0, err
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	ts := strconv.FormatInt(s.whNow().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flipbook-webhooks/1.0")
	req.Header.Set("X-Webhook-Timestamp", ts)
	req.Header.Set("X-Webhook-Event", event)
	if len(secret) > 0 {
		req.Header.Set("X-Webhook-Signature", SignWebhook(secret, ts, body))
	}
	resp, err := s.wh.client.Do(req)
	if err != nil {
		return 0, "", 0, cleanSendError(err, s.wh.opts.Timeout)
	}
	defer resp.Body.Close()
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, MaxWebhookResponseBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	return resp.StatusCode, strings.ToValidUTF8(string(buf), "\uFFFD"), retryAfter(resp), nil
}

// cleanSendError says why a send failed in words for the delivery record.
func cleanSendError(err error, timeout time.Duration) error {
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) && ue.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", timeout)
	}
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "Post ") {
		msg = msg[i+2:]
	}
	return errors.New(msg)
}

// retryAfter reads a Retry-After header (seconds or an HTTP date) of a 429 or 503, at most
// MaxRetryAfter: more seconds than a Duration holds (about 292 years) wrapped to a negative
// wait, and the retry came on the schedule (found by a review).
func retryAfter(resp *http.Response) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange), err == nil && n > uint64(MaxRetryAfter/time.Second):
		return MaxRetryAfter
	case err == nil && n > 0:
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), MaxRetryAfter)
	}
	return 0
}

// failLane fails every unfinished delivery of a deleted subscription (a goroutine).
func (s *System) failLane(sup *actor.PID, lane storage.WebhookLane) {
	defer s.wh.workers.Done()
	defer s.tell(sup, &whFinished{lane: lane})
	for {
		entries, err := s.Store.LaneAll(lane, 512)
		if err != nil || len(entries) == 0 {
			if err != nil {
				s.opts.Logger.Error("webhooks: fail deliveries of a deleted subscription", "err", err)
			}
			return
		}
		b := s.Store.NewBatch()
		for _, e := range entries {
			b.Dequeue(e.Key)
			d, err := s.Store.WebhookDelivery(lane.Tenant, lane.Sub, e.ID)
			if err != nil || d.Status == storage.DeliverySucceeded || d.Status == storage.DeliveryFailed {
				continue
			}
			d.Status, d.NextAttemptAt, d.ErrorMessage = storage.DeliveryFailed, nil, "subscription deleted"
			_ = b.PutWebhookDelivery(lane.Tenant, d)
		}
		if err := b.Commit(); err != nil {
			s.opts.Logger.Error("webhooks: fail deliveries of a deleted subscription", "err", err)
			return
		}
	}
}
