package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// Webhook delivery statuses (DESIGN §11): pending → succeeded | failed, retrying between
// attempts.
const (
	DeliveryPending   = "pending"
	DeliveryRetrying  = "retrying"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// WebhookFilters narrow which events a subscription receives (spec §6.1). An empty list does
// not narrow; the lists are ANDed, the values within one list ORed.
type WebhookFilters struct {
	BookIDs         []string `json:"book_ids"`         // book random ids
	TrackedLinkIDs  []int64  `json:"tracked_link_ids"` // tracked link ids
	RecipientEmails []string `json:"recipient_emails"` // lower case
}

// WebhookSubscription is an outbound webhook subscription (spec §2.6).
type WebhookSubscription struct {
	ID         int64          `json:"id"`
	Workspace  int64          `json:"workspace_id"`
	Mode       Mode           `json:"mode"`
	Name       string         `json:"name"`
	Provider   string         `json:"provider"`
	TargetURL  string         `json:"target_url"`
	EventTypes []string       `json:"event_types"`
	Filters    WebhookFilters `json:"filters"`
	// Secret is the signing secret sealed with the service's webhook key (AES-GCM); nil when
	// the subscription has none. It is never returned by the API.
	Secret   []byte `json:"secret,omitempty"`
	IsActive bool   `json:"is_active"`
	// ActiveFrom and ActiveUntil bound the events the subscription receives: those the service
	// received while it was active (ActiveUntil nil while it still is).
	ActiveFrom  time.Time  `json:"active_from"`
	ActiveUntil *time.Time `json:"active_until,omitempty"`
	// PastActive are earlier active periods that ended recently (events received then may
	// still be unread when the subscription is active again), newest last.
	PastActive     []ActivePeriod `json:"past_active,omitempty"`
	DisabledReason string         `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time     `json:"disabled_at,omitempty"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
}

// ActivePeriod is a time a subscription was active: From ≤ t < Until.
type ActivePeriod struct {
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
}

// Tenant of the subscription.
func (w *WebhookSubscription) Tenant() Tenant { return Tenant{Workspace: w.Workspace, Mode: w.Mode} }

// WebhookAttempt is one attempt of a delivery.
type WebhookAttempt struct {
	Number         int       `json:"number"`
	At             time.Time `json:"attempted_at"`
	ResponseStatus int       `json:"response_status,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty"`
	DurationMs     int64     `json:"duration_ms"`
}

// WebhookDelivery is one event sent (or to be sent) to one subscription (spec §2.6).
type WebhookDelivery struct {
	ID             int64            `json:"id"`
	SubscriptionID int64            `json:"subscription_id"`
	EventID        string           `json:"event_id"`
	EventType      string           `json:"event_type"`
	Status         string           `json:"status"`
	Attempts       int              `json:"attempts"`
	Payload        json.RawMessage  `json:"payload"`
	ResponseStatus int              `json:"response_status,omitempty"`
	ResponseBody   string           `json:"response_body,omitempty"`
	ErrorMessage   string           `json:"error_message,omitempty"`
	Test           bool             `json:"test,omitempty"`
	CreatedAt      time.Time        `json:"created_at"`
	DeliveredAt    *time.Time       `json:"delivered_at,omitempty"`
	NextAttemptAt  *time.Time       `json:"next_attempt_at,omitempty"`
	History        []WebhookAttempt `json:"history,omitempty"`
}

// Keys (see keys.go):
//
//	t/<tenant>/wh/<id>                       WebhookSubscription
//	t/<tenant>/whd/<sub id><delivery id>     WebhookDelivery (kept after the subscription is deleted)
//	t/<tenant>/whp/<event id>                the payload of an event's deliveries (stored once per event)
//	t/<tenant>/whn/<sub id>                  number of deliveries of a subscription
//	t/<tenant>/whh/<sub id>                  WebhookHealth: since when deliveries fail
//	g/whq/<tenant><sub id><class><due><id>   delivery queue: one entry per delivery not finished
//	p/<partition>/whpos                      the dispatcher's next event-log offset (g/whpos/<partition> before)
func whKey(t Tenant, id int64) []byte { return cat(t.prefix(), []byte("wh/"), u64(uint64(id))) }
func whCountKey(t Tenant, sub int64) []byte {
	return cat(t.prefix(), []byte("whn/"), u64(uint64(sub)))
}
func whHealthKey(t Tenant, sub int64) []byte {
	return cat(t.prefix(), []byte("whh/"), u64(uint64(sub)))
}
func whdPrefix(t Tenant, sub int64) []byte {
	return cat(t.prefix(), []byte("whd/"), u64(uint64(sub)))
}
func whdKey(t Tenant, sub, id int64) []byte { return cat(whdPrefix(t, sub), u64(uint64(id))) }
func whPayloadKey(t Tenant, eventID string) []byte {
	return cat(t.prefix(), []byte("whp/"+eventID))
}

const whQueuePrefix = "g/whq/"

// WebhookLane names a delivery queue: one per subscription and class (test deliveries have
// their own, so they are sent while the subscription is inactive).
type WebhookLane struct {
	Tenant Tenant
	Sub    int64
	Test   bool
}

func (l WebhookLane) prefix() []byte {
	k := make([]byte, 0, len(whQueuePrefix)+tenantLen+8+1+16)
	k = append(k, whQueuePrefix...)
	k = append(k, l.Tenant.bytes()...)
	k = binary.BigEndian.AppendUint64(k, uint64(l.Sub))
	if l.Test {
		return append(k, 't')
	}
	return append(k, 'e')
}

// QueueKey is the queue entry of a delivery due at due.
func (l WebhookLane) QueueKey(due time.Time, id int64) []byte {
	k := l.prefix()
	k = binary.BigEndian.AppendUint64(k, uint64(due.UnixNano()))
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

// QueueEntry is a delivery waiting in a lane.
type QueueEntry struct {
	Key []byte
	Due time.Time
	ID  int64
}

func whPosKey(p int) []byte {
	return []byte{'p', '/', byte(p >> 8), byte(p), '/', 'w', 'h', 'p', 'o', 's'}
}

// oldWHPosKey is where positions were kept before they moved with their partition (cluster
// mode: "p/" keys go to the partition's changelog); read when the new key is missing.
func oldWHPosKey(p int) []byte {
	return []byte{'g', '/', 'w', 'h', 'p', 'o', 's', '/', byte(p >> 8), byte(p)}
}

// PutWebhookSubscription stages a subscription.
func (bt *Batch) PutWebhookSubscription(w *WebhookSubscription) error {
	return bt.setJSON(whKey(w.Tenant(), w.ID), w)
}

// DeleteWebhookSubscription stages the removal of a subscription (its deliveries stay).
func (bt *Batch) DeleteWebhookSubscription(t Tenant, id int64) { bt.del(whKey(t, id)) }

// WebhookSubscription reads a subscription.
func (s *Store) WebhookSubscription(t Tenant, id int64) (*WebhookSubscription, error) {
	var w WebhookSubscription
	if err := s.getJSON(whKey(t, id), &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// WebhookSubscriptions lists a tenant's subscriptions, newest first.
func (s *Store) WebhookSubscriptions(t Tenant) ([]*WebhookSubscription, error) {
	return listJSON[WebhookSubscription](s, cat(t.prefix(), []byte("wh/")), true)
}

// AllWebhookSubscriptions lists every subscription of every tenant (the dispatcher's index,
// loaded at start), those keep returns true for.
func (s *Store) AllWebhookSubscriptions(keep func(*WebhookSubscription) bool) ([]*WebhookSubscription, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte("t/"), UpperBound: []byte("t0")})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*WebhookSubscription
	for it.First(); it.Valid(); {
		k := it.Key()
		if len(k) < 2+tenantLen+1 {
			it.Next()
			continue
		}
		tp := append([]byte(nil), k[:2+tenantLen+1]...)
		p := append(tp, "wh/"...)
		// Visit this tenant's subscriptions, then jump to the next tenant.
		for it.SeekGE(p); it.Valid() && hasPrefix(it.Key(), p); it.Next() {
			var w WebhookSubscription
			if err := codec.Unmarshal(it.Value(), &w); err != nil {
				return nil, err
			}
			if keep(&w) {
				out = append(out, &w)
			}
		}
		it.SeekGE(prefixEnd(tp))
	}
	return out, it.Error()
}

func hasPrefix(k, p []byte) bool { return len(k) >= len(p) && string(k[:len(p)]) == string(p) }

// PutWebhookDelivery stages a delivery record. Its payload is not part of it: every delivery of
// an event shares one payload record (PutWebhookPayload), written once.
func (bt *Batch) PutWebhookDelivery(t Tenant, d *WebhookDelivery) error {
	c := *d
	c.Payload = nil
	return bt.setJSON(whdKey(t, d.SubscriptionID, d.ID), &c)
}

// PutWebhookPayload stages the payload of an event's deliveries.
func (bt *Batch) PutWebhookPayload(t Tenant, eventID string, payload []byte) {
	bt.set(whPayloadKey(t, eventID), payload)
}

// WebhookPayload reads the payload of an event's deliveries.
func (s *Store) WebhookPayload(t Tenant, eventID string) ([]byte, error) {
	return s.get(whPayloadKey(t, eventID))
}

// FillPayload sets a delivery's payload from its event's payload record (records written
// before payloads were shared carry their own).
func (s *Store) FillPayload(t Tenant, d *WebhookDelivery) error {
	if len(d.Payload) > 0 && string(d.Payload) != "null" {
		return nil
	}
	p, err := s.WebhookPayload(t, d.EventID)
	if err != nil {
		return err
	}
	d.Payload = p
	return nil
}

// Enqueue stages a queue entry (WebhookLane.QueueKey).
func (bt *Batch) Enqueue(key []byte) { bt.set(key, nil) }

// Dequeue stages the removal of a queue entry.
func (bt *Batch) Dequeue(key []byte) { bt.del(key) }

// SetWebhookCount stages a subscription's delivery count.
func (bt *Batch) SetWebhookCount(t Tenant, sub int64, n int64) {
	bt.set(whCountKey(t, sub), u64(uint64(n)))
}

// SetWebhookPosition stages the dispatcher's next offset of an event-log partition.
func (bt *Batch) SetWebhookPosition(p int, next uint64) { bt.set(whPosKey(p), u64(next)) }

// WebhookPosition reads the dispatcher's next offset of a partition (ok false: none stored).
func (s *Store) WebhookPosition(p int) (uint64, bool, error) {
	v, err := s.get(whPosKey(p))
	if errors.Is(err, errs.ErrNotFound) {
		v, err = s.get(oldWHPosKey(p))
	}
	if errors.Is(err, errs.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil || len(v) != 8 {
		return 0, false, err
	}
	return beUint64(v), true, nil
}

// WebhookCount is the number of deliveries made for a subscription.
func (s *Store) WebhookCount(t Tenant, sub int64) (int64, error) {
	v, err := s.get(whCountKey(t, sub))
	if errors.Is(err, errs.ErrNotFound) {
		return 0, nil
	}
	if err != nil || len(v) != 8 {
		return 0, err
	}
	return int64(beUint64(v)), nil
}

// WebhookDelivery reads one delivery.
func (s *Store) WebhookDelivery(t Tenant, sub, id int64) (*WebhookDelivery, error) {
	var d WebhookDelivery
	if err := s.getJSON(whdKey(t, sub, id), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// WebhookDeliveries lists a subscription's deliveries newest first, starting below id before
// (0: from the newest), at most limit of them for which keep returns true (nil keeps all). more
// reports whether older matching ones exist.
func (s *Store) WebhookDeliveries(t Tenant, sub, before int64, limit int, keep func(*WebhookDelivery) bool) (out []*WebhookDelivery, more bool, err error) {
	p := whdPrefix(t, sub)
	upper := prefixEnd(p)
	if before > 0 {
		upper = whdKey(t, sub, before)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: upper})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	out = []*WebhookDelivery{}
	for it.Last(); it.Valid(); it.Prev() {
		var d WebhookDelivery
		if err := codec.Unmarshal(it.Value(), &d); err != nil {
			return nil, false, err
		}
		if keep != nil && !keep(&d) {
			continue
		}
		if len(out) == limit {
			return out, true, it.Error()
		}
		out = append(out, &d)
	}
	return out, false, it.Error()
}

// WebhookHealth is since when a subscription's deliveries have failed without a success in
// between (zero: not failing). The delivery supervisor deactivates a subscription failing
// longer than its limit.
type WebhookHealth struct {
	FailingSince time.Time `json:"failing_since"`
	LastFailure  time.Time `json:"last_failure"`
	LastSuccess  time.Time `json:"last_success"`
}

// SetWebhookHealth writes a subscription's health (not synced: it is advisory, and a crash
// loses at most the latest change).
func (s *Store) SetWebhookHealth(t Tenant, sub int64, h WebhookHealth) error {
	data, err := codec.Marshal(h)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(whHealthKey(t, sub), data, nil)
	return s.commit(b, pebble.NoSync)
}

// GetWebhookHealth reads a subscription's health (zero when none is stored).
func (s *Store) GetWebhookHealth(t Tenant, sub int64) (WebhookHealth, error) {
	var h WebhookHealth
	err := s.getJSON(whHealthKey(t, sub), &h)
	if errors.Is(err, errs.ErrNotFound) {
		err = nil
	}
	return h, err
}

// WebhookLanes lists the lanes that have queue entries.
func (s *Store) WebhookLanes() ([]WebhookLane, error) {
	p := []byte(whQueuePrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []WebhookLane
	n := len(p) + tenantLen + 8 + 1
	for it.First(); it.Valid(); {
		k := it.Key()
		if len(k) < n {
			it.Next()
			continue
		}
		t, ok := tenantFromBytes(k[len(p) : len(p)+tenantLen])
		if ok {
			out = append(out, WebhookLane{Tenant: t, Sub: int64(beUint64(k[len(p)+tenantLen:])), Test: k[n-1] == 't'})
		}
		it.SeekGE(prefixEnd(k[:n]))
	}
	return out, it.Error()
}

// LaneEntries returns up to max entries of a lane in due order, starting at key from (nil: the
// lane's first key), skipping those skip returns true for; the due time of the first entry
// after now that was not returned (zero: none seen); and the first key met (skipped or not;
// nil: none). Only entries due at or before now are returned.
//
// A queue in an LSM leaves a deletion tombstone behind every entry it removes, until a
// compaction drops them; a scan from the lane's first key would step over all of them. The
// supervisor therefore starts each scan at the first key the previous one met (no entry below
// it existed then) and lowers that bound when it is told of a new entry below it.
func (s *Store) LaneEntries(l WebhookLane, from []byte, now time.Time, max int, skip func(id int64) bool) ([]QueueEntry, time.Time, []byte, error) {
	p := l.prefix()
	lower := p
	if from != nil && string(from) > string(p) {
		lower = from
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	defer it.Close()
	var out []QueueEntry
	var next time.Time
	var first []byte
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) != len(p)+16 {
			continue
		}
		if first == nil {
			first = append([]byte(nil), k...)
		}
		due := time.Unix(0, int64(beUint64(k[len(p):])))
		id := int64(beUint64(k[len(p)+8:]))
		if due.After(now) {
			next = due
			break
		}
		if skip != nil && skip(id) {
			continue
		}
		if len(out) == max {
			next = due
			break
		}
		out = append(out, QueueEntry{Key: append([]byte(nil), k...), Due: due, ID: id})
	}
	return out, next, first, it.Error()
}

// LaneAll returns up to max entries of a lane (finalising a deleted subscription's lane).
func (s *Store) LaneAll(l WebhookLane, max int) ([]QueueEntry, error) {
	out, _, _, err := s.LaneEntries(l, nil, time.Unix(0, 1<<62), max, nil)
	return out, err
}

// TenantTrackedLinks lists every tracked link of a tenant (webhook filters and options).
func (s *Store) TenantTrackedLinks(t Tenant) ([]*TrackedLink, error) {
	return listJSON[TrackedLink](s, cat(t.prefix(), []byte("tl/")), false)
}
