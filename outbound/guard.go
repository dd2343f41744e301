// Package outbound is the one guard of every request the service sends to an address a client
// chose (template images, webhook deliveries, sample sends): an address check on the resolved
// IP of every connection, run by the dialer after DNS and for every redirect hop, and a check of
// a URL when it is configured (CheckURL), so a bad target is refused with 422 up front and again
// at dial time (a DNS name may change what it points to).
//
// Refused: private, loopback, link-local, unspecified, multicast, CGNAT, documentation,
// benchmarking, NAT64 and 6to4 ranges, IPv4-mapped forms of them, and zoned IPv6 addresses.
// Policy.AllowPrivate (the serve flag --allow-private-targets) turns the address check and the
// https requirement off, for local use and tests.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrBlockedAddress is the refusal of a non-public address.
var ErrBlockedAddress = errors.New("the address is not a public internet address")

// Policy is what the guard allows.
type Policy struct {
	// AllowPrivate allows http and private, loopback and link-local addresses (local use, tests).
	AllowPrivate bool
}

// Control is a net.Dialer Control hook refusing non-public addresses: it sees the resolved
// address of every connection attempt.
func Control(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
	}
	if !PublicAddr(ip) {
		return fmt.Errorf("%w: %s", ErrBlockedAddress, ip)
	}
	return nil
}

// Dialer is a dialer under the policy.
func (p Policy) Dialer(timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !p.AllowPrivate {
		d.Control = Control
	}
	return d
}

// TransportOptions size a guarded transport.
type TransportOptions struct {
	Timeout         time.Duration // connect, TLS handshake and response headers
	MaxConnsPerHost int           // 0: unlimited
	MaxIdlePerHost  int
}

// Transport is an http.Transport whose every connection passes the policy's address check. It
// never uses a proxy (the check must see the real target).
func (p Policy) Transport(o TransportOptions) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           p.Dialer(o.Timeout).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   max(o.MaxIdlePerHost, 2),
		MaxConnsPerHost:       o.MaxConnsPerHost,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
	}
}

// URLError is a refused URL: Reason says why, in words for a 422's field details.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return e.Reason }

// CheckURL checks a target URL when it is configured: absolute, https (http too under
// AllowPrivate), a host, no credentials, and every address its host resolves to public. A host
// that does not resolve is refused too (a typo is better caught now than after days of failed
// deliveries).
func (p Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return &URLError{"must be an absolute URL"}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivate:
	default:
		return &URLError{"must be an https URL"}
	}
	if u.User != nil {
		return &URLError{"must not carry credentials"}
	}
	host := u.Hostname()
	if host == "" {
		return &URLError{"must have a host"}
	}
	if p.AllowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !PublicAddr(ip) {
			return &URLError{"must not point to a private, loopback or link-local address"}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return &URLError{"host " + host + " does not resolve"}
	}
	for _, ip := range ips {
		if !PublicAddr(ip) {
			return &URLError{"host " + host + " resolves to a private, loopback or link-local address"}
		}
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

// PublicAddr reports whether ip is a public unicast address the service may connect to.
func PublicAddr(ip netip.Addr) bool {
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
