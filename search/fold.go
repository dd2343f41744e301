// Package search is how the text of pages is matched (issue 28): words are folded (case and
// accents removed) into terms, and a query's terms match words they begin. The index of a
// workspace's pages is kept by storage (storage/searchindex.go) with these terms; the viewer's
// search and a book's search match page texts with the same functions, so every search of the
// service finds the same words.
package search

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxTermBytes is the longest term kept (bytes, folded): a longer word is cut to it, so a
// hostile page of one giant "word" costs one bounded key.
const MaxTermBytes = 48

// Fold returns s in lower case without accents: NFD, combining marks dropped, and the letters
// that do not decompose spelled out (ß → ss, æ → ae, ø → o, ł → l, ...), so "Éléphant",
// "ELEPHANT" and "éléphant" fold alike.
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	appendFolded(&b, s)
	return b.String()
}

// appendFolded writes s folded to b.
func appendFolded(b *strings.Builder, s string) {
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if sp, ok := special[r]; ok {
			b.WriteString(sp)
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
}

// special spells out letters that NFD leaves whole.
var special = map[rune]string{
	'ß': "ss", 'ẞ': "ss", 'æ': "ae", 'Æ': "ae", 'œ': "oe", 'Œ': "oe", 'ø': "o", 'Ø': "o",
	'ł': "l", 'Ł': "l", 'đ': "d", 'Đ': "d", 'ð': "d", 'Ð': "d", 'þ': "th", 'Þ': "th", 'ı': "i",
	'ſ': "s", 'ĸ': "k",
}

// ideographic reports whether r is written without spaces between words (Han, kana, Hangul
// syllables are not: they are words of their own here, so each character is a term).
func ideographic(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// Terms splits text into its folded terms, in order: runs of letters and digits, each
// ideographic character a term of its own, cut to MaxTermBytes. Punctuation, spaces and
// symbols separate terms ("e-mail" is "e" and "mail"; "l'été" is "l" and "ete").
func Terms(text string) []string {
	var out []string
	Each(text, func(term string) bool {
		out = append(out, term)
		return true
	})
	return out
}

// Each calls f with each folded term of text, in order, as Terms splits it, until f returns
// false.
func Each(text string, f func(term string) bool) {
	start := -1
	flush := func(end int) bool {
		if start < 0 {
			return true
		}
		t := Fold(text[start:end])
		start = -1
		return t == "" || f(cut(t))
	}
	for i, r := range text {
		switch {
		case ideographic(r):
			if !flush(i) || !f(Fold(string(r))) {
				return
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			if start < 0 {
				start = i
			}
		default:
			if !flush(i) {
				return
			}
		}
	}
	flush(len(text))
}

// cut shortens a term to MaxTermBytes on a rune boundary.
func cut(t string) string {
	if len(t) <= MaxTermBytes {
		return t
	}
	i := MaxTermBytes
	for i > 0 && !utf8.RuneStart(t[i]) {
		i--
	}
	return t[:i]
}
