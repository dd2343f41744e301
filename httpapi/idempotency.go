package httpapi

import (
	"crypto/sha256"
	"sync"

	"flipbook/storage"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

// inflight tracks idempotency keys whose first request is still running (409 for a second).
type inflight struct {
	mu sync.Mutex
	m  map[idemRef]struct{}
}

type idemRef struct {
	t   storage.Tenant
	key string
}

func (f *inflight) begin(r idemRef) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[idemRef]struct{}{}
	}
	if _, busy := f.m[r]; busy {
		return false
	}
	f.m[r] = struct{}{}
	return true
}

func (f *inflight) end(r idemRef) {
	f.mu.Lock()
	delete(f.m, r)
	f.mu.Unlock()
}

// fingerprint identifies "the same request": operation, path and body.
func fingerprint(opID string, path, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(opID))
	h.Write([]byte{0})
	h.Write(path)
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}
