package search

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Limits of a query.
const (
	MaxQueryBytes = 200 // the longest q accepted
	MaxQueryTerms = 8   // the most terms of a query (the rest are refused, not ignored)
)

// Query errors (the handlers answer them as 422 on q).
var (
	ErrEmptyQuery   = errors.New("has no words to search for")
	ErrLongQuery    = errors.New("is longer than 200 bytes")
	ErrQueryTooMany = errors.New("has more than 8 words")
)

// Query is a parsed search: its distinct folded terms. A page matches when every term matches
// one of its words; a term matches the words it begins ("photo" finds "Photographs"), except a
// term of a single letter or digit, which matches only the word itself (so "a" does not read
// half a workspace's index).
type Query struct {
	Terms []string
}

// Parse reads a query string.
func Parse(q string) (Query, error) {
	if len(q) > MaxQueryBytes {
		return Query{}, ErrLongQuery
	}
	var out Query
	seen := map[string]bool{}
	for _, t := range Terms(q) {
		if seen[t] {
			continue
		}
		seen[t] = true
		out.Terms = append(out.Terms, t)
	}
	switch {
	case len(out.Terms) == 0:
		return Query{}, ErrEmptyQuery
	case len(out.Terms) > MaxQueryTerms:
		return Query{}, ErrQueryTooMany
	}
	return out, nil
}

// Prefix reports whether term t of a query matches as a prefix (every term longer than one
// character; an ideograph is a word of its own).
func Prefix(t string) bool {
	return utf8.RuneCountInString(t) > 1
}

// Matches reports whether the query term q matches the folded term w.
func Matches(q, w string) bool {
	if Prefix(q) {
		return strings.HasPrefix(w, q)
	}
	return w == q
}

// Match returns which of the query's terms the word (as printed on the page: it may carry
// punctuation, "e-mail,") matches, as a bit set (bit i: term i); 0 when none.
func (q Query) Match(word string) uint {
	var m uint
	Each(word, func(w string) bool {
		for i, t := range q.Terms {
			if Matches(t, w) {
				m |= 1 << i
			}
		}
		return true
	})
	return m
}

// All is the bit set of every term of the query.
func (q Query) All() uint { return 1<<len(q.Terms) - 1 }

// Snippet is the words around a page's first match: up to radius words either side of it,
// with "…" where words were left out, and which of the snippet's words matched.
type Snippet struct {
	Text  string
	First int   // index in words of the first match (-1 when none)
	Hits  []int // indexes in words of every matching word of the page
}

// Find looks for the query in a page's words: every matching word, and the snippet around
// the first. Matched is the bit set of the terms found on the page (q.All() when the page
// matches the query).
func (q Query) Find(words []string, radius int) (s Snippet, matched uint) {
	s.First = -1
	for i, w := range words {
		if m := q.Match(w); m != 0 {
			matched |= m
			s.Hits = append(s.Hits, i)
			if s.First < 0 {
				s.First = i
			}
		}
	}
	if s.First < 0 {
		return s, 0
	}
	lo, hi := max(s.First-radius, 0), min(s.First+radius+1, len(words))
	var b strings.Builder
	if lo > 0 {
		b.WriteString("… ")
	}
	b.WriteString(strings.Join(words[lo:hi], " "))
	if hi < len(words) {
		b.WriteString(" …")
	}
	s.Text = b.String()
	return s, matched
}
