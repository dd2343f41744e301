package api

import (
	"net"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Domains of access lists, embed allowlists and email addresses (issue 25, docs/DECISIONS.md
// "Input hygiene").
//
// An entry must name one registrant's domain: at least the registrable domain (eTLD+1 of the
// Public Suffix List, private suffixes such as github.io included) or a name below it. So a
// public suffix (com, co.uk, github.io), a bare name (localhost, intranet), a name under
// localhost, a numeric top label and an IP address ([::1], 1.2.3.4) are refused: an entry for
// co.uk would let every .co.uk address through an email gate, and an embed entry com would put
// "com *.com" in frame-ancestors. The domain of an email address is held to the same rule
// (a@b and x@com are refused).
//
// One matching rule serves the email gate, the embed allowlist and frame-ancestors
// (DomainCovers): an entry covers a host equal to it or below it (a subdomain). An entry
// stored before this rule that breaks it covers nothing.

// DomainProblem is why h (a host in lower case, without port or trailing dot) may not be a
// domain entry or an address's domain, "" when it may.
func DomainProblem(h string) string {
	if h == "" {
		return "must be a domain name such as example.com"
	}
	if net.ParseIP(strings.Trim(h, "[]")) != nil {
		return "must be a domain name such as example.com, not an IP address"
	}
	if !LDHHost(h) {
		return "must be a domain name such as example.com (letters, digits and hyphens)"
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.Trim(last, "0123456789") == "" {
		return "must be a registrable domain such as example.com, not a local name or an address"
	}
	if _, err := publicsuffix.EffectiveTLDPlusOne(h); err != nil {
		return "must be a registrable domain such as example.com, not a public suffix (com, co.uk) or a bare name"
	}
	return ""
}

// RegistrableDomain reports whether h passes DomainProblem.
func RegistrableDomain(h string) bool { return DomainProblem(h) == "" }

// DomainCovers reports whether a domain entry covers host: host is the entry or a subdomain of
// it, and the entry is a registrable domain (or below one). Both are lower case.
func DomainCovers(entry, host string) bool {
	if host != entry && !strings.HasSuffix(host, "."+entry) {
		return false
	}
	return RegistrableDomain(entry)
}

// CoveringDomains lists the domain entries that would cover host, from host itself up to its
// registrable domain (mail.eu.acme.co.uk → mail.eu.acme.co.uk, eu.acme.co.uk, acme.co.uk); none
// when host is not under a registrable domain. The email gate looks these up. An
// internationalised host is listed in its ASCII form, the form domain entries are stored in
// (ASCIIHost: ada@bücher.example is covered by the entry bücher.example, stored as
// xn--bcher-kva.example; found by FuzzDomainRules).
func CoveringDomains(host string) []string {
	host, ok := ASCIIHost(host)
	if !ok {
		return nil
	}
	top, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil || !RegistrableDomain(top) {
		return nil
	}
	var out []string
	for d := host; ; d = d[strings.IndexByte(d, '.')+1:] {
		out = append(out, d)
		if d == top || !strings.Contains(d, ".") {
			return out
		}
	}
}

// ASCIIHost is host in lower case with an internationalised name in its ASCII (punycode) form,
// as browsers send it (bücher.example → xn--bcher-kva.example); ok is false when it is not a
// valid name.
func ASCIIHost(host string) (string, bool) {
	h := strings.ToLower(host)
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			a, err := idna.Lookup.ToASCII(h)
			if err != nil {
				return "", false
			}
			return a, true
		}
	}
	return h, true
}

// EmailProblem is why an address's domain part is not acceptable ("" when it is): the domain
// of name@domain must pass DomainProblem.
func EmailProblem(addr string) string {
	i := strings.LastIndexByte(addr, '@')
	if i <= 0 {
		return "must be a valid email address"
	}
	h, ok := ASCIIHost(addr[i+1:])
	if !ok || DomainProblem(h) != "" {
		return "must be a valid email address at a registrable domain, such as name@example.com"
	}
	return ""
}

// LDHHost accepts DNS names of letter-digit-hyphen labels (lower case), at most 253 bytes.
func LDHHost(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
