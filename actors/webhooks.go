package actors

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"slices"
	"sync"
	"time"

	"flipbook/storage"
)

// Webhook subscriptions (spec §2.6, §4.7) belong to the workspace actor of their tenant, which
// writes them; the delivery supervisor (webhook_sup.go) and the event-log reader
// (webhook_reader.go) learn of every change through System.webhookChanged.

// Messages of the workspace actor about webhook subscriptions.
type (
	// CreateWebhook → *storage.WebhookSubscription: Sub carries the fields; the actor assigns
	// id and times.
	CreateWebhook struct{ Sub *storage.WebhookSubscription }
	// UpdateWebhook → *storage.WebhookSubscription; errs.ErrNotFound.
	UpdateWebhook struct {
		ID    int64
		Patch *WebhookPatch
	}
	// DeleteWebhook → *storage.WebhookSubscription (the removed record); errs.ErrNotFound.
	DeleteWebhook struct{ ID int64 }
	// deactivateWebhook turns a failing subscription off (sent by the delivery supervisor).
	deactivateWebhook struct {
		ID     int64
		Reason string
	}
)

// WebhookPatch changes the fields that are set (nil: unchanged). Filters replaces the whole
// filter set.
type WebhookPatch struct {
	Name       *string
	Provider   *string
	TargetURL  *string
	EventTypes []string
	Filters    *storage.WebhookFilters
	// Secret is the new sealed secret; SetSecret says it was given (nil Secret clears it).
	Secret    []byte
	SetSecret bool
	IsActive  *bool
}

func (w *workspace) createWebhook(m *CreateWebhook) (*storage.WebhookSubscription, error) {
	id, err := w.s.Store.NextIDFor(w.t.Workspace, "webhook")
	if err != nil {
		return nil, err
	}
	now := w.s.now()
	sub := m.Sub
	sub.ID, sub.Workspace, sub.Mode, sub.CreatedAt, sub.UpdatedAt = id, w.t.Workspace, w.t.Mode, now, now
	sub.ActiveFrom = now
	if !sub.IsActive {
		sub.ActiveUntil = &now
	}
	if err := w.putWebhook(sub); err != nil {
		return nil, err
	}
	w.s.webhookChanged(w.t, sub.ID, false)
	return sub, nil
}

func (w *workspace) updateWebhook(m *UpdateWebhook) (*storage.WebhookSubscription, error) {
	sub, err := w.s.Store.WebhookSubscription(w.t, m.ID)
	if err != nil {
		return nil, notFound(err)
	}
	p := m.Patch
	wasActive := sub.IsActive
	if p.Name != nil {
		sub.Name = *p.Name
	}
	if p.Provider != nil {
		sub.Provider = *p.Provider
	}
	if p.TargetURL != nil {
		sub.TargetURL = *p.TargetURL
	}
	if p.EventTypes != nil {
		sub.EventTypes = p.EventTypes
	}
	if p.Filters != nil {
		sub.Filters = *p.Filters
	}
	if p.SetSecret {
		sub.Secret = p.Secret
	}
	if p.IsActive != nil {
		sub.IsActive = *p.IsActive
	}
	now := w.s.now()
	switch {
	case sub.IsActive && !wasActive:
		sub.DisabledReason, sub.DisabledAt = "", nil
		if sub.ActiveUntil != nil {
			// Events of the period that ended may still be unread: keep it while it is recent.
			sub.PastActive = append(sub.PastActive, storage.ActivePeriod{From: sub.ActiveFrom, Until: *sub.ActiveUntil})
			sub.PastActive = slices.DeleteFunc(sub.PastActive, func(p storage.ActivePeriod) bool {
				return now.Sub(p.Until) >= IndexedAfterDeactivation
			})
			if n := len(sub.PastActive); n > maxPastActive {
				sub.PastActive = sub.PastActive[n-maxPastActive:]
			}
		}
		sub.ActiveFrom, sub.ActiveUntil = now, nil
	case !sub.IsActive && wasActive:
		sub.ActiveUntil = &now
	}
	sub.UpdatedAt = now
	if err := w.putWebhook(sub); err != nil {
		return nil, err
	}
	w.s.webhookChanged(w.t, sub.ID, sub.IsActive && !wasActive)
	return sub, nil
}

func (w *workspace) deleteWebhook(m *DeleteWebhook) (*storage.WebhookSubscription, error) {
	sub, err := w.s.Store.WebhookSubscription(w.t, m.ID)
	if err != nil {
		return nil, notFound(err)
	}
	b := w.s.Store.NewBatch()
	b.DeleteWebhookSubscription(w.t, m.ID)
	if err := b.Commit(); err != nil {
		return nil, err
	}
	w.s.webhookChanged(w.t, sub.ID, false)
	return sub, nil
}

func (w *workspace) deactivateWebhook(m *deactivateWebhook) {
	sub, err := w.s.Store.WebhookSubscription(w.t, m.ID)
	if err != nil || !sub.IsActive {
		return
	}
	now := w.s.now()
	sub.IsActive, sub.DisabledReason, sub.DisabledAt, sub.UpdatedAt, sub.ActiveUntil = false, m.Reason, &now, now, &now
	if err := w.putWebhook(sub); err != nil {
		w.s.opts.Logger.Error("webhooks: deactivate subscription", "subscription", m.ID, "err", err)
		return
	}
	w.s.opts.Logger.Warn("webhooks: subscription deactivated", "workspace", w.t.Workspace, "subscription", m.ID, "reason", m.Reason)
	w.s.webhookChanged(w.t, sub.ID, false)
}

func (w *workspace) putWebhook(sub *storage.WebhookSubscription) error {
	b := w.s.Store.NewBatch()
	if err := b.PutWebhookSubscription(sub); err != nil {
		b.Close()
		return err
	}
	return b.Commit()
}

// CreateWebhook creates a subscription.
func (s *System) CreateWebhook(t storage.Tenant, sub *storage.WebhookSubscription) (*storage.WebhookSubscription, error) {
	return askT[*storage.WebhookSubscription](s, s.workspace(t), &CreateWebhook{Sub: sub})
}

// UpdateWebhook changes a subscription.
func (s *System) UpdateWebhook(t storage.Tenant, id int64, p *WebhookPatch) (*storage.WebhookSubscription, error) {
	return askT[*storage.WebhookSubscription](s, s.workspace(t), &UpdateWebhook{ID: id, Patch: p})
}

// DeleteWebhook removes a subscription; its deliveries stay, and those not finished fail with
// "subscription deleted".
func (s *System) DeleteWebhook(t storage.Tenant, id int64) (*storage.WebhookSubscription, error) {
	return askT[*storage.WebhookSubscription](s, s.workspace(t), &DeleteWebhook{ID: id})
}

// Signing secrets are sealed with AES-256-GCM under a key of the service (g/meta/webhook_key),
// since deliveries need the secret itself to sign; the API never returns them.

// SealSecret encrypts a signing secret for storage.
func (s *System) SealSecret(secret string) ([]byte, error) {
	aead, err := s.secretAEAD()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, []byte(secret), []byte("webhook-secret")), nil
}

// openSecret decrypts a sealed signing secret (nil for none).
func (s *System) openSecret(sealed []byte) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, nil
	}
	aead, err := s.secretAEAD()
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("webhooks: sealed secret too short")
	}
	return aead.Open(nil, sealed[:n], sealed[n:], []byte("webhook-secret"))
}

func (s *System) secretAEAD() (cipher.AEAD, error) {
	s.wh.keyOnce.Do(func() {
		key, err := s.Store.Secret("webhook_key")
		if err != nil {
			s.wh.keyErr = err
			return
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			s.wh.keyErr = err
			return
		}
		s.wh.aead, s.wh.keyErr = cipher.NewGCM(block)
	})
	return s.wh.aead, s.wh.keyErr
}

// whIndex is the dispatcher's view of the subscriptions that may receive events (active, or
// deactivated recently enough that events of their active time may still be unread: see
// indexed), by tenant. Every change bumps gen, so the reader can tell whether a subscription
// appeared while it looked at the log.
type whIndex struct {
	mu       sync.Mutex
	gen      uint64
	byTenant map[storage.Tenant][]*storage.WebhookSubscription
}

type whSnapshot struct {
	gen      uint64
	byTenant map[storage.Tenant][]*storage.WebhookSubscription
}

func (x *whIndex) snapshot() whSnapshot {
	x.mu.Lock()
	defer x.mu.Unlock()
	return whSnapshot{gen: x.gen, byTenant: x.byTenant}
}

func (x *whIndex) generation() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.gen
}

// set replaces a tenant's active subscriptions (copy on write: snapshots are never changed).
func (x *whIndex) set(t storage.Tenant, subs []*storage.WebhookSubscription) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := make(map[storage.Tenant][]*storage.WebhookSubscription, len(x.byTenant)+1)
	for k, v := range x.byTenant {
		m[k] = v
	}
	if len(subs) == 0 {
		delete(m, t)
	} else {
		m[t] = subs
	}
	x.byTenant = m
	x.gen++
}

// webhookChanged is called by the workspace actor after it committed a change to a
// subscription: the index is reloaded for the tenant and the supervisor told.
func (s *System) webhookChanged(t storage.Tenant, id int64, reactivated bool) {
	all, err := s.Store.WebhookSubscriptions(t)
	if err != nil {
		s.opts.Logger.Error("webhooks: reload subscriptions", "err", err)
	} else {
		now := s.now()
		s.wh.index.set(t, slices.DeleteFunc(all, func(w *storage.WebhookSubscription) bool { return !indexed(w, now) }))
	}
	if s.wh.sup != nil {
		s.tell(s.wh.sup, &whSubChanged{t: t, id: id, reactivated: reactivated})
	}
}

// loadWebhookIndex fills the index from Pebble at start.
func (s *System) loadWebhookIndex() error {
	now := s.now()
	all, err := s.Store.AllWebhookSubscriptions(func(w *storage.WebhookSubscription) bool { return indexed(w, now) })
	if err != nil {
		return err
	}
	by := map[storage.Tenant][]*storage.WebhookSubscription{}
	for _, w := range all {
		by[w.Tenant()] = append(by[w.Tenant()], w)
	}
	for _, subs := range by {
		slices.SortFunc(subs, func(a, b *storage.WebhookSubscription) int { return int(b.ID - a.ID) })
	}
	s.wh.index.mu.Lock()
	s.wh.index.byTenant = by
	s.wh.index.gen++
	s.wh.index.mu.Unlock()
	return nil
}

// maxPastActive bounds the earlier active periods a subscription remembers.
const maxPastActive = 16

// IndexedAfterDeactivation is how long a deactivated subscription stays in the dispatcher's
// index, so events received before the deactivation but read after it still reach it.
const IndexedAfterDeactivation = time.Hour

func indexed(w *storage.WebhookSubscription, now time.Time) bool {
	return w.IsActive || (w.ActiveUntil != nil && now.Sub(*w.ActiveUntil) < IndexedAfterDeactivation)
}

// whNow is the webhook clock.
func (s *System) whNow() time.Time { return s.now() }
