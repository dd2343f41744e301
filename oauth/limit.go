package oauth

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"flipbook/api"
)

// limiter is the per-IP limit of what anyone can ask of the authorization server without
// credentials (Options.RateLimit): registrations, authorization requests, and fetches of
// client metadata documents. It is the API's limiter (api.Limiter, GCRA), one bucket per
// purpose and address, swept of idle addresses once a minute as requests come.
type limiter struct {
	l     *api.Limiter
	swept atomic.Int64 // unix nanoseconds of the last sweep
}

// newLimiter returns nil (no limit) when perMinute is 0.
func newLimiter(perMinute int) *limiter {
	l := api.NewLimiter(perMinute)
	if l == nil {
		return nil
	}
	lim := &limiter{l: l}
	lim.swept.Store(time.Now().UnixNano())
	return lim
}

// allow counts one request of purpose from ip; without a limit or an address, every request is
// allowed.
func (l *limiter) allow(purpose, ip string, now time.Time) api.Decision {
	if l == nil || ip == "" {
		return api.Decision{Allowed: true}
	}
	if last := l.swept.Load(); now.UnixNano()-last > int64(time.Minute) && l.swept.CompareAndSwap(last, now.UnixNano()) {
		l.l.Sweep(now)
	}
	return l.l.Allow(purpose+"|"+ip, now)
}

// rateLimited is a request refused by the limiter (wrapped in the fosite error of a client
// lookup, so the endpoint answers 429).
type rateLimited struct{ d api.Decision }

func (e *rateLimited) Error() string {
	return fmt.Sprintf("rate limit of %d per minute for this address exceeded", e.d.Limit)
}

func retryAfter(d api.Decision) int { return max(1, int(math.Ceil(d.RetryAfter.Seconds()))) }

// tooMany answers 429 with the rate-limit headers the API sends (RateLimit-*, Retry-After).
func tooMany(w http.ResponseWriter, d api.Decision, msg string) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(retryAfter(d)))
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(d.Reset.Seconds()))))
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "too_many_requests", "error_description": msg})
}

// limit counts a request of purpose from r's address: false (and a 429 written) when the
// address is over the limit.
func (s *Server) limit(w http.ResponseWriter, r *http.Request, purpose, what string) bool {
	d := s.lim.allow(purpose, clientIP(r), time.Now())
	if !d.Allowed {
		tooMany(w, d, fmt.Sprintf("too many %s from this address (limit %d per minute): try again in %d s", what, d.Limit, retryAfter(d)))
	}
	return d.Allowed
}

// clientIP is the address a request came from (the TCP peer, as the API's limits use).
func clientIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

type ipKey struct{}

// withIP records the requester's address in a handler's context: client lookups made for the
// request (fosite passes the context on) charge document fetches to it.
func withIP(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, ipKey{}, ip)
}

func ipFrom(ctx context.Context) string {
	ip, _ := ctx.Value(ipKey{}).(string)
	return ip
}
