package actors

import (
	"crypto/rand"
	"strings"
	"unicode"
)

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// RandomString returns n characters of [0-9A-Za-z] from crypto/rand (5.95 bits each).
func RandomString(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			panic(err) // crypto/rand never fails on supported platforms
		}
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62: reject to keep the distribution uniform
				continue
			}
			out = append(out, alphabet[b%62])
			if len(out) == n {
				break
			}
		}
	}
	return string(out)
}

// RandomIDLen is the length of a book's random_id: 20 base-62 characters, about 119 bits.
const RandomIDLen = 20

// NewRandomID returns a fresh, unguessable book handle.
func NewRandomID() string { return RandomString(RandomIDLen) }

// slugify makes a URL slug of a name.
func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimSuffix(b.String(), "-")
	if len(s) > 60 {
		s = strings.TrimSuffix(s[:60], "-")
	}
	if s == "" {
		s = "workspace"
	}
	return s
}
