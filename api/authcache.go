package api

import "sync"

// authCache maps presented credentials to their principal, so a request does not hash the key
// and read two records. Every change to keys or workspaces calls invalidate before it answers,
// which is what makes a revoked or rotated key fail at once. A lookup that read the store
// before an invalidation cannot repopulate the cache afterwards: it inserts only if the epoch
// it started with is still current.
type authCache struct {
	mu    sync.RWMutex
	epoch uint64
	m     map[string]*Principal
}

// authCacheMax bounds the entries; when full the cache starts over (keys are few in practice).
const authCacheMax = 100_000

func (c *authCache) get(token string) (*Principal, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[token], c.epoch
}

func (c *authCache) put(token string, p *Principal, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return
	}
	if c.m == nil || len(c.m) >= authCacheMax {
		c.m = make(map[string]*Principal)
	}
	c.m[token] = p
}

func (c *authCache) invalidate() {
	c.mu.Lock()
	c.epoch++
	c.m = nil
	c.mu.Unlock()
}
