package api

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/publicsuffix"
)

// Fuzzing of the text and domain rules every string parameter passes (issue 27). The
// operations' parameter decoding as a whole is fuzzed through the REST adapter
// (httpapi/rest_fuzz_test.go, FuzzRESTValidation).

// textOracle is the text rule of validate_text.go written independently, rune by rune: whether
// s is acceptable as a line (multiline false) or as free text.
func textOracle(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == '\t', r == '\n', r == '\r':
			if !multiline {
				return false
			}
		case r < 0x20, r >= 0x7f && r <= 0x9f, r == utf8.RuneError:
			return false
		case r == 0x2028, r == 0x2029, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			if !multiline {
				return false
			}
		}
	}
	return true
}

// FuzzTextRules: textProblem and LineOK (the collector's fast path) agree with each other and
// with the rule as documented; a line is always acceptable free text; a string parameter's
// validation accepts exactly what the rule accepts.
func FuzzTextRules(f *testing.F) {
	for _, s := range []string{"Spring catalogue", "line one\nline two", "tab\there", "a\u2028b", "\u202eevil", "\u200eok\u061c",
		"bad \ufffd", "\x00", "\x7f", "\u0085", "\xff\xfe", "é ü ß 日本", "", "\r\n", "\u2066x\u2069"} {
		f.Add(s)
	}
	line := Str("title", InBody, 0)
	free := Str("description", InBody, 0).Lines()
	f.Fuzz(func(t *testing.T, s string) {
		lineOK, freeOK := textProblem(s, false) == "", textProblem(s, true) == ""
		if utf8.ValidString(s) {
			if want := textOracle(s, false); lineOK != want {
				t.Fatalf("textProblem(%q, line) accepts=%v, the rule says %v (%q)", s, lineOK, want, textProblem(s, false))
			}
			if want := textOracle(s, true); freeOK != want {
				t.Fatalf("textProblem(%q, free text) accepts=%v, the rule says %v (%q)", s, freeOK, want, textProblem(s, true))
			}
		}
		if LineOK([]byte(s)) != (utf8.ValidString(s) && lineOK) {
			t.Fatalf("LineOK(%q)=%v but textProblem says %q", s, LineOK([]byte(s)), textProblem(s, false))
		}
		if lineOK && !freeOK {
			t.Fatalf("%q is a valid line but not valid free text", s)
		}
		for _, c := range []struct {
			p  Param
			ok bool
		}{{line, lineOK}, {free, freeOK}} {
			_, err := Validate([]Param{c.p}, &Args{Body: map[string]any{c.p.Name: s}})
			if want := c.ok && utf8.ValidString(s); (err == nil) != want {
				t.Fatalf("Validate(%s=%q) error %v, want accepted=%v", c.p.Name, s, err, want)
			}
			if err != nil {
				e := err.(*Error)
				if e.Status != 422 || len(e.Details[c.p.Name]) == 0 {
					t.Fatalf("Validate(%s=%q): %+v", c.p.Name, s, e)
				}
			}
		}
	})
}

// emailAccepted reports whether addr passes the email format of a string parameter.
func emailAccepted(addr string) bool {
	_, err := Validate([]Param{Str("email", InBody, 255).WithFormat("email")}, &Args{Body: map[string]any{"email": addr}})
	return err == nil
}

// FuzzDomainRules: host normalisation is idempotent; an accepted domain entry is an LDH name
// under a registrable domain that covers itself and its subdomains and nothing else; the
// entries CoveringDomains lists for a host all cover it, and for the domain of a valid address
// they include the entry that domain is stored as; an entry covers only itself and names below
// it.
func FuzzDomainRules(f *testing.F) {
	for _, s := range [][2]string{{"example.com", "www.example.com"}, {"Bücher.example", "xn--bcher-kva.example"},
		{"co.uk", "acme.co.uk"}, {"acme.co.uk", "mail.eu.acme.co.uk"}, {"github.io", "me.github.io"}, {"localhost", "a.localhost"},
		{"1.2.3.4", "[::1]"}, {"example.com.", "evilexample.com"}, {"EXAMPLE.COM", "example.com"}, {"-a.com", "a-.com"},
		{"xn--", "xn--zz.com"}, {strings.Repeat("a", 64) + ".com", "b.com"}, {"a..com", ""}, {"intranet", "x.intranet"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, entry, host string) {
		for _, s := range []string{entry, host} {
			h, ok := ASCIIHost(s)
			if !ok {
				continue
			}
			if h2, ok2 := ASCIIHost(h); !ok2 || h2 != h {
				t.Fatalf("ASCIIHost(%q)=%q, and again %q (ok %v): not idempotent", s, h, h2, ok2)
			}
			if DomainProblem(h) != "" {
				continue
			}
			if !LDHHost(h) || h != strings.ToLower(h) {
				t.Fatalf("%q is accepted but is not a lower-case LDH name", h)
			}
			if _, err := publicsuffix.EffectiveTLDPlusOne(h); err != nil {
				t.Fatalf("%q is accepted but is not under a registrable domain: %v", h, err)
			}
			if !DomainCovers(h, h) {
				t.Fatalf("accepted %q does not cover itself", h)
			}
			if sub := "www." + h; LDHHost(sub) && !DomainCovers(h, sub) {
				t.Fatalf("accepted %q does not cover %q", h, sub)
			}
			if DomainCovers(h, "evil"+h) {
				t.Fatalf("%q covers evil%s", h, h)
			}
			if msg := EmailProblem("ada@" + h); msg != "" {
				t.Fatalf("ada@%s refused (%s) though %q is an accepted domain", h, msg, h)
			}
			cov := CoveringDomains(h)
			if len(cov) == 0 || cov[0] != h {
				t.Fatalf("CoveringDomains(%q)=%q: should start with the host", h, cov)
			}
		}
		if DomainCovers(entry, host) {
			if host != entry && !strings.HasSuffix(host, "."+entry) {
				t.Fatalf("%q covers %q, which is neither it nor below it", entry, host)
			}
			if !RegistrableDomain(entry) {
				t.Fatalf("%q covers %q but is not an acceptable entry", entry, host)
			}
		}
		// The email gate looks up the entries CoveringDomains lists for the domain of an address
		// the email format accepted (in lower case, httpapi accessMatch); entries are stored as
		// ASCIIHost makes them. So a domain entry equal to that domain must be among them.
		for _, s := range []string{entry, host} {
			if addr := "ada@" + s; emailAccepted(addr) {
				domain := strings.ToLower(s)
				stored, _ := ASCIIHost(domain)
				if cov := CoveringDomains(domain); !slices.Contains(cov, stored) {
					t.Fatalf("the address %q is valid, but CoveringDomains(%q) = %q does not list the entry %q its domain is stored as",
						addr, domain, cov, stored)
				}
			}
		}
		// CoveringDomains takes the domain of a validated address, in lower case (an LDH name).
		lower := strings.ToLower(host)
		if !LDHHost(lower) {
			return
		}
		for _, c := range CoveringDomains(lower) {
			if !DomainCovers(c, lower) {
				t.Fatalf("CoveringDomains(%q) lists %q, which does not cover it", lower, c)
			}
		}
	})
}
