package search

import (
	"reflect"
	"strings"
	"testing"
)

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"Éléphant": "elephant", "ELEPHANT": "elephant", "Straße": "strasse", "Œuvre": "oeuvre",
		"Łódź": "lodz", "plain": "plain", "ÅNGSTRÖM": "angstrom", "İstanbul": "istanbul",
	} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTerms(t *testing.T) {
	got := Terms("L'été, e-mail: Café-Crème 2024! 東京へ")
	want := []string{"l", "ete", "e", "mail", "cafe", "creme", "2024", "東", "京", "へ"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Terms = %q, want %q", got, want)
	}
	long := strings.Repeat("é", 100)
	if ts := Terms(long); len(ts) != 1 || len(ts[0]) > MaxTermBytes {
		t.Fatalf("a long word gives %q", ts)
	}
}

func TestParse(t *testing.T) {
	q, err := Parse("  Photo PHOTO crème ")
	if err != nil || !reflect.DeepEqual(q.Terms, []string{"photo", "creme"}) {
		t.Fatalf("Parse = %v, %v", q, err)
	}
	for _, bad := range []string{"", " ,;! ", strings.Repeat("a ", 101), "a b c d e f g h i"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestFind(t *testing.T) {
	q, _ := Parse("photo A")
	words := strings.Fields("Our Photographs of a garden, in a book about photos and more words here")
	s, m := q.Find(words, 2)
	if m != q.All() {
		t.Fatalf("matched %b, want %b", m, q.All())
	}
	if s.First != 1 || !reflect.DeepEqual(s.Hits, []int{1, 3, 6, 9}) {
		t.Fatalf("hits %d %v", s.First, s.Hits)
	}
	if s.Text != "Our Photographs of a …" {
		t.Fatalf("snippet %q", s.Text)
	}
	// "a" matches only the word a, not "and" or "about".
	if q.Match("about") != 0 || q.Match("a") == 0 {
		t.Fatal("a single letter matched as a prefix")
	}
	if _, m := q.Find(strings.Fields("photo only"), 3); m == q.All() {
		t.Fatal("a page with one of two terms matched the query")
	}
}
