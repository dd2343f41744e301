package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"syscall"
	"time"
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

// Fetch errors.
var (
	ErrBlockedAddress = errors.New("the address is not a public internet address")
	errFetchScheme    = errors.New("only http and https URLs are fetched")
	errFetchTooLarge  = errors.New("the response is larger than the size cap")
	errTooManyRedirs  = errors.New("too many redirects")
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
		dialer.Control = refusePrivate
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

// refusePrivate is the dialer's Control hook: it runs for every connection attempt with the
// resolved address, after DNS and for every redirect hop.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
	}
	if !publicAddr(ip) {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, ip)
	}
	return nil
}

// nonPublic are ranges that are not reachable public unicast addresses, beyond what netip's
// predicates cover (private, loopback, link-local, multicast, unspecified).
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // carrier-grade NAT (RFC 6598)
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // reserved, and 255.255.255.255
		"::/96",           // IPv4-compatible (deprecated)
		"64:ff9b::/96",    // NAT64: could reach any IPv4 address, private ones included
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard
		"2001::/32",       // Teredo
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4: embeds an IPv4 address
		"fc00::/7",        // unique local
		"fec0::/10",       // site-local (deprecated)
		"ff00::/8",        // multicast
		"::ffff:0:0/96",   // IPv4-mapped (unmapped before the check; kept as a guard)
		"2001:10::/28",    // ORCHID
		"2001:20::/28",    // ORCHIDv2
		"2001:2::/48",     // benchmarking
		"fe80::/10",       // link-local
		"169.254.0.0/16",  // link-local
		"127.0.0.0/8",     // loopback
		"10.0.0.0/8",      // private
		"172.16.0.0/12",   // private
		"192.168.0.0/16",  // private
		"224.0.0.0/4",     // multicast
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"::1/128",         // loopback
		"::/128",          // unspecified
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// publicAddr reports whether ip is a public unicast address the service may connect to.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() {
		return false
	}
	if ip.Zone() != "" {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
