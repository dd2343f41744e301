package convert

// Hostile and right-to-left text on template pages, found by a review of the shaping (each
// failed before its fix).

import (
	"context"
	"image"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

// A post whose content (29,000 characters, under the field's 50,000) fills the article's text
// box and whose last kept line is made of words of zero-width marks: wrapText measures the whole
// line again for each word it adds, and ellipsize drops one character at a time, shaping the
// whole line each time. One page shapes about 18 million characters (17 s of a core); a
// create-from-template request of 50 such posts draws 50 of them with no deadline.
func TestShapedPageCostIsBounded(t *testing.T) {
	require.NoError(t, loadFonts())
	tpl, _ := TemplateByID(3)
	drawPage := func(content string) *canvas {
		items := []Item{{ID: "1", Title: "T", Content: content}}
		doc := &Document{Template: tpl, Source: "wordpress", SourceType: "posts", Items: items}
		c := newCanvas()
		tpl.layout.draw(c, &pageInfo{doc: doc, number: 2, total: 2}, items)
		return c
	}
	c := drawPage(strings.Repeat("a\n", 100))
	fit := len(c.words) - 1 // lines the content box holds (the title is the other word)
	c.close()
	marks := "ก " + strings.TrimSpace(strings.Repeat(strings.Repeat("\u0E48", 179)+" ", 160))
	needFallbackFonts(t, marks)
	content := strings.Repeat("a\n", fit-1) + marks + "\nmore"
	start := time.Now()
	c = drawPage(content)
	defer c.close()
	t.Logf("%d characters of content: %d characters shaped in %v", len([]rune(content)), c.sh.shaped, time.Since(start))
	require.Less(t, c.sh.shaped, 4_000_000, "characters shaped for one page")
}

// DECISIONS "Pages": a line whose first strong character is right to left starts at the right.
// price() places the struck-through regular price after the sale price's measured width,
// assuming both start at the left: a Hebrew sale price is drawn at the right of the line, and
// the Hebrew regular price at the right of its own box, on top of it (the strike is drawn at the
// left of that box, under nothing).
func TestRightToLeftPricesDoNotOverlap(t *testing.T) {
	needFallbackFonts(t, "מבצע מחיר")
	tpl, _ := TemplateByID(1)
	items := []Item{{ID: "1", Title: "Mug", SalePrice: "מבצע 10", RegularPrice: "מחיר 12"}}
	doc := &Document{Template: tpl, Source: "woocommerce", SourceType: "products", Items: items}
	out, err := renderPage(context.Background(), &pageInfo{doc: doc, number: 2, total: 2}, items, tpl.layout, nil,
		make(chan struct{}, 2), true)
	require.NoError(t, err)
	box := func(w storage.Word) image.Rectangle {
		return image.Rect(int(w.X*PageWidth+0.5), int(w.Y*PageHeight+0.5), int((w.X+w.W)*PageWidth+0.5), int((w.Y+w.H)*PageHeight+0.5))
	}
	var sale, regular []image.Rectangle
	for _, w := range out.Text.Words {
		switch w.Text {
		case "מבצע", "10":
			sale = append(sale, box(w))
		case "מחיר", "12":
			regular = append(regular, box(w))
		}
	}
	require.Len(t, sale, 2)
	require.Len(t, regular, 2)
	for _, s := range sale {
		for _, r := range regular {
			require.False(t, s.Overlaps(r), "the regular price %v is drawn over the sale price %v", r, s)
		}
	}
}

// DECISIONS "Pages": lines are laid out by the Unicode bidirectional algorithm. A right-to-left
// override (RLO … PDF) shows its characters right to left; here they stay left to right.
func TestBidiOverrideIsHonoured(t *testing.T) {
	require.NoError(t, loadFonts())
	got := glyphsOf(t, "x \u202Eabc\u202C y", "abcxy")
	var letters []rune
	for _, r := range got {
		if r != 0 {
			letters = append(letters, r)
		}
	}
	require.Equal(t, "xcbay", string(letters))
}

// DECISIONS "Pages": a word longer than its line is broken "else between grapheme clusters
// (UAX #29: a letter with its marks …)". fitShaped looks at no more than a few characters per
// em of the line; a cluster longer than that (a letter with 200 marks) is cut inside it, and
// the next line starts with marks that lost their letter.
func TestLongClusterIsNotCut(t *testing.T) {
	require.NoError(t, loadFonts())
	c := newCanvas()
	defer c.close()
	face := c.face(false, 30)
	word := "ab" + strings.Repeat("\u0301", 200) + "cd"
	lines := wrapText(face, word, 400, 10)
	for _, l := range lines[1:] {
		require.NotEqual(t, "\u0301", string([]rune(l)[0]), "a line starts with a mark without its letter: %d lines", len(lines))
	}
}
