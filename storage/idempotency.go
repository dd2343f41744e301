package storage

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// IdemTTL is how long a stored idempotent response is replayed (spec §8: 24 hours).
const IdemTTL = 24 * time.Hour

// IdemEntry is a stored first 2xx response to a write with an Idempotency-Key.
type IdemEntry struct {
	Fingerprint []byte    `json:"fingerprint"` // hash of method, route and body
	Status      int       `json:"status"`
	ContentType string    `json:"content_type"`
	Body        []byte    `json:"body"`
	CreatedAt   time.Time `json:"created_at"`
}

const idemExpPrefix = "g/idemexp/"

func idemExpKey(at time.Time, t Tenant, key string) []byte {
	return cat([]byte(idemExpPrefix), u64(uint64(at.UnixNano())), t.bytes(), []byte(key))
}

// Idem reads a live stored response (expired entries read as not found).
func (s *Store) Idem(t Tenant, key string, now time.Time) (*IdemEntry, error) {
	var e IdemEntry
	if err := s.getJSON(idemKey(t, key), &e); err != nil {
		return nil, err
	}
	if now.Sub(e.CreatedAt) >= IdemTTL {
		return nil, ErrNotFound
	}
	return &e, nil
}

// PutIdem stores a response durably, with its expiry entry.
func (s *Store) PutIdem(t Tenant, key string, e *IdemEntry) error {
	b := s.NewBatch()
	b.set(idemExpKey(e.CreatedAt.Add(IdemTTL), t, key), nil)
	if err := b.setJSON(idemKey(t, key), e); err != nil {
		b.Close()
		return err
	}
	return b.Commit()
}

// ExpireIdem deletes stored responses older than the TTL; it returns how many went.
func (s *Store) ExpireIdem(now time.Time) (int, error) {
	lo := []byte(idemExpPrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	b := s.NewBatch()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[len(lo):]
		if len(k) < 8+tenantLen || time.Unix(0, int64(beUint64(k[:8]))).After(now) {
			break
		}
		t, ok := tenantFromBytes(k[8 : 8+tenantLen])
		if ok {
			key := string(k[8+tenantLen:])
			// Only delete if the stored entry is the expired one (a key may be reused later).
			var e IdemEntry
			if err := s.getJSON(idemKey(t, key), &e); err == nil && now.Sub(e.CreatedAt) >= IdemTTL {
				b.del(idemKey(t, key))
			}
		}
		b.del(append([]byte(nil), it.Key()...))
		n++
	}
	if n == 0 {
		b.Close()
		return 0, it.Error()
	}
	return n, b.Commit()
}
