package api

import (
	"hash/maphash"
	"sync"
	"time"
)

// Limiter is a GCRA rate Limiter (a token bucket of `limit` tokens refilled over `period`),
// keyed by string and sharded to keep lock contention low.
type Limiter struct {
	limit    int
	period   time.Duration
	interval time.Duration // period / limit: the cost of one request
	seed     maphash.Seed
	shards   [32]limShard
}

type limShard struct {
	mu  sync.Mutex
	tat map[string]time.Time // theoretical arrival time per key
}

// NewLimiter returns nil (no limit) when perMinute is 0.
func NewLimiter(perMinute int) *Limiter {
	if perMinute <= 0 {
		return nil
	}
	l := &Limiter{limit: perMinute, period: time.Minute, seed: maphash.MakeSeed()}
	l.interval = l.period / time.Duration(perMinute)
	for i := range l.shards {
		l.shards[i].tat = map[string]time.Time{}
	}
	return l
}

// Decision is the outcome of one check, with what the RateLimit headers report.
type Decision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	Reset      time.Duration // until the bucket is full again
	RetryAfter time.Duration // when denied: until one request is allowed
}

func (l *Limiter) Allow(key string, now time.Time) Decision {
	sh := &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	tat, ok := sh.tat[key]
	if !ok || tat.Before(now) {
		tat = now
	}
	next := tat.Add(l.interval)
	d := Decision{Limit: l.limit}
	if over := next.Sub(now) - l.period; over > 0 {
		d.RetryAfter = over
		d.Reset = tat.Sub(now)
		return d
	}
	sh.tat[key] = next
	d.Allowed = true
	d.Reset = next.Sub(now)
	d.Remaining = int((l.period - next.Sub(now)) / l.interval)
	return d
}

// sweep drops keys whose bucket is full again (they carry no state worth keeping).
func (l *Limiter) Sweep(now time.Time) {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for k, tat := range sh.tat {
			if tat.Before(now) {
				delete(sh.tat, k)
			}
		}
		sh.mu.Unlock()
	}
}
