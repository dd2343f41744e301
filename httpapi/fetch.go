package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"flipbook/outbound"
)

// Outbound fetches of URLs given by clients (template item images). The rules, all enforced here:
// http and https only; a timeout per request and a bound on all the fetches of one operation; a
// size cap; at most MaxRedirects redirects; and no private, loopback, link-local, unspecified,
// multicast, CGNAT or otherwise non-public address, checked on the resolved IP when the
// connection is dialled (so neither a redirect nor a DNS name pointing inside can get around it)
// unless Config.AllowPrivateTargets is set.

// FetchLimits bounds outbound fetches.
type FetchLimits struct {
	Timeout      time.Duration // one request: connect, headers and body
	Overall      time.Duration // all the fetches of one operation
	MaxBytes     int64         // largest body accepted; a larger one is a failure
	MaxRedirects int
}

// DefaultFetchLimits are the limits in force unless changed (tests shorten them).
var DefaultFetchLimits = FetchLimits{Timeout: 10 * time.Second, Overall: 60 * time.Second, MaxBytes: 15 << 20, MaxRedirects: 3}

var fetchLimits atomic.Pointer[FetchLimits]

func currentFetchLimits() FetchLimits {
	if l := fetchLimits.Load(); l != nil {
		return *l
	}
	return DefaultFetchLimits
}

// SetFetchLimits replaces the fetch limits (process-wide) and returns a function restoring the
// previous ones. For tests and benchmarks.
func SetFetchLimits(l FetchLimits) (restore func()) {
	prev := fetchLimits.Swap(&l)
	return func() { fetchLimits.Store(prev) }
}

// ErrBlockedAddress is the guard's refusal (package outbound).
var ErrBlockedAddress = outbound.ErrBlockedAddress

// Fetch errors.
var (
	errFetchScheme   = errors.New("only http and https URLs are fetched")
	errFetchTooLarge = errors.New("the response is larger than the size cap")
	errTooManyRedirs = errors.New("too many redirects")
)

// fetcher fetches URLs under FetchLimits. One is made per operation; close releases its
// connections.
type fetcher struct {
	client *http.Client
	limits FetchLimits
}

func newFetcher(allowPrivate bool) *fetcher {
	l := currentFetchLimits()
	dialer := &net.Dialer{Timeout: l.Timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = outbound.Control
	}
	tr := &http.Transport{
		Proxy:                 nil, // never through a proxy: the address check must see the real target
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   l.Timeout,
		ResponseHeaderTimeout: l.Timeout,
	}
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > l.MaxRedirects {
				return errTooManyRedirs
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return errFetchScheme
			}
			return nil
		},
	}
	return &fetcher{client: client, limits: l}
}

func (f *fetcher) close() { f.client.CloseIdleConnections() }

// fetch GETs u and returns the body of a 200 answer of at most MaxBytes.
func (f *fetcher) fetch(ctx context.Context, u string) ([]byte, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	if pu.Scheme != "http" && pu.Scheme != "https" || pu.Host == "" {
		return nil, errFetchScheme
	}
	ctx, cancel := context.WithTimeout(ctx, f.limits.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pu.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "flipbook/"+Version+" (template images)")
	req.Header.Set("Accept", "image/avif,image/webp,image/png,image/jpeg,image/gif,image/*;q=0.8")
	res, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %d", res.StatusCode)
	}
	if res.ContentLength > f.limits.MaxBytes {
		return nil, errFetchTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, f.limits.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > f.limits.MaxBytes {
		return nil, errFetchTooLarge
	}
	return data, nil
}
