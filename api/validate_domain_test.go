package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDomainRules(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"example.com", "acme.co.uk", "shop.acme.co.uk", "team.github.io", "shop.example", "xn--bcher-kva.example"} {
		require.Empty(t, DomainProblem(h), h)
	}
	for _, h := range []string{"", "com", "co.uk", "github.io", "localhost", "a.localhost", "intranet", "1.2.3.4",
		"::1", "[::1]", "1.2.3.4.5", "a..b.com", "-a.com", "a_b.com", "A.com"} {
		require.NotEmpty(t, DomainProblem(h), h)
	}
	require.True(t, DomainCovers("acme.co.uk", "acme.co.uk"))
	require.True(t, DomainCovers("acme.co.uk", "eu.acme.co.uk"))
	require.False(t, DomainCovers("acme.co.uk", "notacme.co.uk"))
	require.False(t, DomainCovers("co.uk", "acme.co.uk"), "a public suffix covers nothing")
	require.False(t, DomainCovers("com", "evil.com"))
	require.Equal(t, []string{"a.b.acme.co.uk", "b.acme.co.uk", "acme.co.uk"}, CoveringDomains("a.b.acme.co.uk"))
	require.Equal(t, []string{"acme.com"}, CoveringDomains("acme.com"))
	require.Nil(t, CoveringDomains("co.uk"))
	require.Nil(t, CoveringDomains("b"))
	h, ok := ASCIIHost("Bücher.Example")
	require.True(t, ok)
	require.Equal(t, "xn--bcher-kva.example", h)
	require.Empty(t, EmailProblem("ann@acme.co.uk"))
	for _, a := range []string{"a@b", "x@com", "x@co.uk", "x@localhost", "x@[1.2.3.4]", "nobody"} {
		require.NotEmpty(t, EmailProblem(a), a)
	}
}

func TestTextRules(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", "Spring 🌸", "שלום\u200f", "a\u061cb"} {
		require.Empty(t, textProblem(s, false), "%q", s)
		require.True(t, LineOK([]byte(s)), "%q", s)
	}
	for _, s := range []string{"a\x00", "a\tb", "a\nb", "a\rb", "a\x7f", "a\u0085", "a\u2028", "a\u202e", "a\u2066", "a\ufffd"} {
		require.NotEmpty(t, textProblem(s, false), "%q", s)
		require.False(t, LineOK([]byte(s)), "%q", s)
	}
	for _, s := range []string{"a\tb\r\nc", "a\u202bb\u202c", "a\u2028b"} {
		require.Empty(t, textProblem(s, true), "%q", s)
	}
	for _, s := range []string{"a\x00", "a\x1b", "a\x7f", "a\u009b", "a\ufffd"} {
		require.NotEmpty(t, textProblem(s, true), "%q", s)
	}
	for _, s := range []string{"#fff", "#FFFA", "#102030", "#10203040", "rgb(1, 2, 3)", "rgba(1,2,3,0.5)",
		"hsl(120deg 50% 50%)", "transparent", "RebeccaPurple", "https://cdn.example/a.png", "http://x.example/b?c=d&e=f"} {
		require.Empty(t, backgroundProblem(s), s)
	}
	for _, s := range []string{"", "#ff", "#fffff", "#ggg", "red;", "rgb(1,2,3);x", "rgb()", "url(x)", "expression(x)",
		"javascript:alert(1)", "data:image/png;base64,AAAA", "https://a.example/x y", "https://a.example/x)", "//a.example/x",
		"https://user@a.example/x", "notacolour"} {
		require.NotEmpty(t, backgroundProblem(s), s)
	}
}

// An internationalised address domain is covered by its domain entry, which is stored in
// ASCII (found by FuzzDomainRules).
func TestCoveringDomainsInternational(t *testing.T) {
	t.Parallel()
	stored, ok := ASCIIHost("Bücher.example")
	require.True(t, ok)
	require.Equal(t, "xn--bcher-kva.example", stored)
	require.Equal(t, []string{"mail.xn--bcher-kva.example", "xn--bcher-kva.example"}, CoveringDomains("mail.bücher.example"))
	require.Equal(t, []string{"xn--bcher-kva.example"}, CoveringDomains("xn--bcher-kva.example"))
}
