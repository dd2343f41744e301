package storage

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Shopify integration records (spec §4.10; docs/DECISIONS.md, "Shopify integration").
//
//	t/<tenant>/shopr/<shop domain> 0 <sha256 of the request>   ShopifyAnswer: the first answer to a GDPR webhook
//	t/<tenant>/shopg/<shop domain> 0 <id>                      ShopifyGDPRRecord: the audit log of GDPR webhooks
//
// Both are keyed by the shop domain first, so a shop's records are one key range (shop/redact
// removes them). Neither holds an email address: the audit log keeps its SHA-256.

// ShopifyAnswer is the stored answer to a GDPR webhook, returned again (replayed) when Shopify
// sends the same request a second time.
type ShopifyAnswer struct {
	Action    string           `json:"action"`
	Counts    map[string]int64 `json:"counts"`
	Status    string           `json:"status"`
	CreatedAt time.Time        `json:"created_at"`
}

// ShopifyGDPRRecord is one GDPR webhook processed (the audit log).
type ShopifyGDPRRecord struct {
	ID            int64            `json:"id"`
	Topic         string           `json:"topic"`
	ShopDomain    string           `json:"shop_domain"`
	ShopID        int64            `json:"shop_id"`
	CustomerID    *int64           `json:"customer_id,omitempty"`
	EmailSHA256   string           `json:"email_sha256,omitempty"` // hex SHA-256 of the lower-cased address
	DataRequestID *int64           `json:"data_request_id,omitempty"`
	RequestSHA256 string           `json:"request_sha256"` // the replay key (hex)
	Action        string           `json:"action"`
	Status        string           `json:"status"`
	Counts        map[string]int64 `json:"counts"`
	ReceivedAt    time.Time        `json:"received_at"`
	CompletedAt   time.Time        `json:"completed_at"`
}

func shopPrefix(t Tenant, kind, shop string) []byte {
	return cat(t.prefix(), []byte(kind+"/"+shop), []byte{0})
}

func shopAnswerKey(t Tenant, shop string, req []byte) []byte {
	return cat(shopPrefix(t, "shopr", shop), req)
}

func shopGDPRKey(t Tenant, shop string, id int64) []byte {
	return cat(shopPrefix(t, "shopg", shop), u64(uint64(id)))
}

// ShopifyAnswer reads the stored answer to a request (req: its SHA-256).
func (s *Store) ShopifyAnswer(t Tenant, shop string, req []byte) (*ShopifyAnswer, error) {
	var a ShopifyAnswer
	if err := s.getJSON(shopAnswerKey(t, shop, req), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// PutShopifyAnswer stages the answer to a request.
func (b *Batch) PutShopifyAnswer(t Tenant, shop string, req []byte, a *ShopifyAnswer) error {
	return b.setJSON(shopAnswerKey(t, shop, req), a)
}

// PutShopifyGDPR stages an audit record.
func (b *Batch) PutShopifyGDPR(t Tenant, r *ShopifyGDPRRecord) error {
	return b.setJSON(shopGDPRKey(t, r.ShopDomain, r.ID), r)
}

// ShopifyGDPRRecords lists a shop's audit records, oldest first.
func (s *Store) ShopifyGDPRRecords(t Tenant, shop string) ([]*ShopifyGDPRRecord, error) {
	return listJSON[ShopifyGDPRRecord](s, shopPrefix(t, "shopg", shop), false)
}

// DeleteShopifyRecords stages the removal of every stored record of a shop (answers and audit
// records) and returns how many there are.
func (s *Store) DeleteShopifyRecords(b *Batch, t Tenant, shop string) (int, error) {
	n := 0
	for _, kind := range []string{"shopr", "shopg"} {
		p := shopPrefix(t, kind, shop)
		c, err := s.countPrefix(p, 0)
		if err != nil {
			return 0, err
		}
		n += c
		_ = b.b.DeleteRange(p, prefixEnd(p), nil)
	}
	return n, nil
}

// DeleteViewer stages the removal of a viewer (both its entries).
func (b *Batch) DeleteViewer(t Tenant, id int64, email string) {
	b.del(viewerKey(t, email))
	b.del(viewerIDKey(t, id))
}

// WebhookPayloadsMatching returns the event ids of a tenant's stored delivery payloads for
// which match returns true.
func (s *Store) WebhookPayloadsMatching(t Tenant, match func(payload []byte) bool) ([]string, error) {
	p := cat(t.prefix(), []byte("whp/"))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		if match(it.Value()) {
			out = append(out, string(it.Key()[len(p):]))
		}
	}
	return out, it.Error()
}

// TenantWebhookDeliveries calls fn with each of a tenant's delivery records (every
// subscription's, deleted ones included), in key order, as stored (Payload is set only on
// records written before payloads were shared).
func (s *Store) TenantWebhookDeliveries(t Tenant, fn func(*WebhookDelivery) error) error {
	p := cat(t.prefix(), []byte("whd/"))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var d WebhookDelivery
		if err := codec.Unmarshal(it.Value(), &d); err != nil {
			return err
		}
		if err := fn(&d); err != nil {
			return err
		}
	}
	return it.Error()
}
