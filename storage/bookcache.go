package storage

import (
	"hash/maphash"
	"sync"
)

// bookCache holds decoded book records, so a read is a map lookup instead of a Pebble get and a
// JSON decode. Cached records are shared and must be treated as read-only.
//
// Correctness: a write marks its books pending before the Pebble commit and clears the mark
// (bumping the shard's epoch) after it. A pending book is neither served from nor inserted
// into the cache. A reader that missed notes its shard's epoch before reading Pebble and inserts
// only if the epoch is unchanged and the book is not pending, so no read that overlapped a write
// can fill the cache: readers never see a version older than one already returned.
type bookCache struct {
	seed   maphash.Seed
	shards [64]bookShard
}

type bookShard struct {
	mu      sync.Mutex
	epoch   uint64
	m       map[string]*Book
	pending map[string]int // keys with a write being committed: not served, not filled
	// overlapped marks pending keys that another write began on before the first ended: which
	// of them committed last is not known, so neither fills the cache when it ends.
	overlapped map[string]bool
}

// bookCacheShardMax bounds each shard (64 shards: about 128k books in all).
const bookCacheShardMax = 2048

func newBookCache() *bookCache {
	c := &bookCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = map[string]*Book{}
	}
	return c
}

func (c *bookCache) shard(rid string) *bookShard {
	return &c.shards[maphash.String(c.seed, rid)%uint64(len(c.shards))]
}

func (c *bookCache) get(k string) (*Book, uint64) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.pending) > 0 && sh.pending[k] > 0 {
		return nil, sh.epoch
	}
	return sh.m[k], sh.epoch
}

// getBytes is get of the key k as bytes (without making a string of it).
func (c *bookCache) getBytes(k []byte) (*Book, uint64) {
	sh := &c.shards[maphash.Bytes(c.seed, k)%uint64(len(c.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.pending) > 0 && sh.pending[string(k)] > 0 {
		return nil, sh.epoch
	}
	return sh.m[string(k)], sh.epoch
}

func (c *bookCache) put(k string, b *Book, epoch uint64) {
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.epoch != epoch || sh.pending[k] > 0 {
		return
	}
	sh.insert(k, b)
}

// insert adds b under k, dropping an arbitrary entry when the shard is full (sh.mu held).
func (sh *bookShard) insert(k string, b *Book) {
	if _, ok := sh.m[k]; !ok && len(sh.m) >= bookCacheShardMax {
		for old := range sh.m {
			delete(sh.m, old)
			break
		}
	}
	sh.m[k] = b
}

// begin marks k as being written (before the commit).
func (c *bookCache) begin(k string) {
	sh := c.shard(k)
	sh.mu.Lock()
	if sh.pending == nil {
		sh.pending, sh.overlapped = map[string]int{}, map[string]bool{}
	}
	if sh.pending[k] > 0 {
		sh.overlapped[k] = true
	}
	sh.pending[k]++
	delete(sh.m, k)
	sh.epoch++
	sh.mu.Unlock()
}

// end clears the mark of begin (after the commit, whether it succeeded or not). fill, when
// not nil, is the record the commit wrote under k, decoded from what was written: it is
// cached when no other write of k overlapped this one (write-through: a book is read right
// after it is written, by the API's answer and by readers of what was just published).
func (c *bookCache) end(k string, fill *Book) {
	sh := c.shard(k)
	sh.mu.Lock()
	delete(sh.m, k)
	if sh.pending[k]--; sh.pending[k] <= 0 {
		if fill != nil && !sh.overlapped[k] {
			sh.insert(k, fill)
		}
		delete(sh.pending, k)
		delete(sh.overlapped, k)
	}
	sh.epoch++
	sh.mu.Unlock()
}

// reset empties the cache (state written under it: a restore from the changelog); a reader
// that missed before sees the epoch moved and does not fill.
func (c *bookCache) reset() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.epoch++
		sh.mu.Unlock()
	}
}

// Memo carries a rendering of a record version, computed once by whoever needs it (the HTTP
// layer's wire JSON). A record read from the store is immutable, so its Memo stays valid.
type Memo struct {
	once sync.Once
	v    any
}

// Get returns the memoized value, computing it on first use.
func (m *Memo) Get(compute func() any) any {
	m.once.Do(func() { m.v = compute() })
	return m.v
}
