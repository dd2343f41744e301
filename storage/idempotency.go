package storage

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// IdemTTL is how long a stored idempotent response is replayed (spec §8: 24 hours).
const IdemTTL = 24 * time.Hour

// What one workspace (in one mode) may keep of stored idempotent responses: past either
// bound, its oldest entries are dropped to make room (a retry of a dropped key runs the request
// again). Retries come within minutes; these bounds hold thousands of them while no client can
// grow the store without limit (3,000 keys with 40 KB answers were 222 MB before).
const (
	MaxIdemEntries = 10_000
	MaxIdemBytes   = 32 << 20
)

// idemOverhead is what an entry costs besides its body and key (fingerprint, JSON framing,
// its expiry and age index entries).
const idemOverhead = 160

// idemUsage is one tenant's stored entries (counted from its age index on first use).
type idemUsage struct {
	entries int
	bytes   int64
}

// idemAccount serializes PutIdem's accounting per store.
type idemAccount struct {
	mu  sync.Mutex
	use map[Tenant]*idemUsage
}

// idemAgeKey indexes a tenant's entries by age (value: the entry's size).
func idemAgeKey(t Tenant, created time.Time, key string) []byte {
	return cat(t.prefix(), []byte("idemage/"), u64(uint64(created.UnixNano())), []byte(key))
}

func idemAgePrefix(t Tenant) []byte { return cat(t.prefix(), []byte("idemage/")) }

func idemSize(key string, e *IdemEntry) int64 {
	return int64(len(key)+len(e.Body)+len(e.Fingerprint)+len(e.ContentType)) + idemOverhead
}

// usage is t's accounting, read from its age index on first use; s.idem.mu is held.
func (s *Store) idemUsage(t Tenant) (*idemUsage, error) {
	if u := s.idem.use[t]; u != nil {
		return u, nil
	}
	lo := idemAgePrefix(t)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, err
	}
	u := &idemUsage{}
	for it.First(); it.Valid(); it.Next() {
		u.entries++
		if v := it.Value(); len(v) == 8 {
			u.bytes += int64(beUint64(v))
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	if s.idem.use == nil {
		s.idem.use = map[Tenant]*idemUsage{}
	}
	s.idem.use[t] = u
	return u, nil
}

// evictIdem drops t's oldest entries into b until one of size more fits; s.idem.mu is held.
func (s *Store) evictIdem(b *Batch, t Tenant, u *idemUsage, size int64) error {
	if u.entries+1 <= MaxIdemEntries && u.bytes+size <= MaxIdemBytes {
		return nil
	}
	lo := idemAgePrefix(t)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid() && (u.entries+1 > MaxIdemEntries || u.bytes+size > MaxIdemBytes); it.Next() {
		k := it.Key()[len(lo):]
		if len(k) < 8 {
			continue
		}
		created := time.Unix(0, int64(beUint64(k[:8])))
		key := string(k[8:])
		b.del(idemKey(t, key))
		b.del(idemExpKey(created.Add(IdemTTL), t, key))
		b.del(append([]byte(nil), it.Key()...))
		u.entries--
		if v := it.Value(); len(v) == 8 {
			u.bytes -= int64(beUint64(v))
		}
	}
	return it.Error()
}

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
		return nil, errs.ErrNotFound
	}
	return &e, nil
}

// PutIdem stores a response durably, with its expiry and age entries; the tenant's oldest
// entries go when it is over MaxIdemEntries or MaxIdemBytes.
func (s *Store) PutIdem(t Tenant, key string, e *IdemEntry) error {
	s.idem.mu.Lock()
	defer s.idem.mu.Unlock()
	u, err := s.idemUsage(t)
	if err != nil {
		return err
	}
	size := idemSize(key, e)
	b := s.NewBatch()
	// A key stored before (expired, not yet swept) is replaced: its entries go.
	var old IdemEntry
	if err := s.getJSON(idemKey(t, key), &old); err == nil {
		b.del(idemExpKey(old.CreatedAt.Add(IdemTTL), t, key))
		if ak := idemAgeKey(t, old.CreatedAt, key); func() bool { ok, _ := s.has(ak); return ok }() {
			b.del(ak)
			u.entries--
			u.bytes -= idemSize(key, &old)
		}
	}
	if err := s.evictIdem(b, t, u, size); err != nil {
		b.Close()
		delete(s.idem.use, t) // recounted on next use
		return err
	}
	b.set(idemExpKey(e.CreatedAt.Add(IdemTTL), t, key), nil)
	b.set(idemAgeKey(t, e.CreatedAt, key), u64(uint64(size)))
	if err := b.setJSON(idemKey(t, key), e); err != nil {
		b.Close()
		delete(s.idem.use, t)
		return err
	}
	if err := b.Commit(); err != nil {
		delete(s.idem.use, t)
		return err
	}
	u.entries++
	u.bytes += size
	return nil
}

// ExpireIdem deletes stored responses older than the TTL; it returns how many went.
func (s *Store) ExpireIdem(now time.Time) (int, error) { return s.ExpireIdemOf(now, nil) }

// ExpireIdemOf is ExpireIdem for the workspaces owns says yes to (nil: all). Cluster mode
// sweeps only the partitions the node owns: their entries are its to delete, and a write of
// another node's partition would be refused (and with it the whole sweep).
func (s *Store) ExpireIdemOf(now time.Time, owns func(workspace int64) bool) (int, error) {
	lo := []byte(idemExpPrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	b := s.NewBatch()
	n := 0
	swept := map[Tenant]bool{}
	// The accounting of the tenants swept is recounted on next use (after the commit).
	s.idem.mu.Lock()
	defer s.idem.mu.Unlock()
	defer func() {
		for t := range swept {
			delete(s.idem.use, t)
		}
	}()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[len(lo):]
		if len(k) < 8+tenantLen || time.Unix(0, int64(beUint64(k[:8]))).After(now) {
			break
		}
		t, ok := tenantFromBytes(k[8 : 8+tenantLen])
		if ok && owns != nil && !owns(t.Workspace) {
			continue
		}
		if ok {
			key := string(k[8+tenantLen:])
			// Only delete if the stored entry is the expired one (a key may be reused later).
			var e IdemEntry
			if err := s.getJSON(idemKey(t, key), &e); err == nil && now.Sub(e.CreatedAt) >= IdemTTL {
				b.del(idemKey(t, key))
				b.del(idemAgeKey(t, e.CreatedAt, key))
				swept[t] = true
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
