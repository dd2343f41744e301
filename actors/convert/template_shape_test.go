package convert

import (
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

// needFallbackFonts skips when a fallback font the test draws with is not installed.
func needFallbackFonts(t *testing.T, samples ...string) {
	t.Helper()
	loadShapeFonts()
	for _, s := range samples {
		for _, r := range s {
			if unicode.IsSpace(r) || r < 0x80 {
				continue
			}
			covered := false
			for _, f := range shapeFonts.regular {
				if _, ok := f.NominalGlyph(r); ok {
					covered = true
					break
				}
			}
			if !covered {
				t.Skipf("no font for %q (%U) under %v; scripts/deps.sh installs them", r, r, FontDirs)
			}
		}
	}
}

// inked is the set of columns of img with a dark pixel.
func inked(img *image.RGBA, r image.Rectangle) (minX, maxX, n int) {
	minX, maxX = r.Max.X, r.Min.X-1
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if c := img.RGBAAt(x, y); c.R < 160 && c.G < 160 && c.B < 160 {
				minX, maxX = min(minX, x), max(maxX, x)
				n++
			}
		}
	}
	return minX, maxX, n
}

// drawn draws s on a blank canvas at size 40 and returns the page.
func drawn(t *testing.T, s string) *image.RGBA {
	t.Helper()
	require.NoError(t, loadFonts())
	c := newCanvas()
	defer c.close()
	c.text(image.Rect(100, 100, 1000, 200), s, textStyle{size: 40, color: colText, maxLines: 1})
	return c.img
}

// Text in scripts the Go fonts lack is drawn in a fallback font, not as the Go font's boxes: a
// review found Japanese, Hebrew, Arabic and emoji drawn as boxes on catalog pages.
func TestScriptsAreDrawnNotAsBoxes(t *testing.T) {
	t.Parallel()
	samples := map[string]string{"Japanese": "日本語", "Chinese": "中文书", "Korean": "한국어", "Hebrew": "שלום",
		"Arabic": "مرحبا", "Thai": "สวัสดี", "Devanagari": "नमस्ते", "emoji": "☕😀🎉"}
	for name, s := range samples {
		t.Run(name, func(t *testing.T) {
			needFallbackFonts(t, s)
			// U+0378 is unassigned: every font draws it as its box.
			boxes := drawn(t, strings.Repeat("\u0378", len([]rune(s))))
			img := drawn(t, s)
			_, _, n := inked(img, img.Bounds())
			require.Greater(t, n, 50, "%s: nothing drawn", name)
			require.NotEqual(t, boxes.Pix, img.Pix, "%s drawn as boxes", name)
			fm := newCanvas().face(false, 40).sh.fontmap(false)
			for _, r := range s {
				require.NotEqual(t, fm.faces[0], fm.ResolveFace(r), "%U is not the Go font's", r)
			}
		})
	}
}

// glyphsOf are the glyphs of s's line in visual order, each as the character it is the
// nominal glyph of in its face (0 for a glyph that is no character's nominal one: a joined form).
func glyphsOf(t *testing.T, s string, candidates string) []rune {
	t.Helper()
	face := newCanvas().face(false, 30)
	runs, _ := face.sh.shapeLine(s, false, 30)
	var out []rune
	for _, r := range runs {
		for _, g := range r.out.Glyphs {
			var ch rune
			for _, c := range candidates {
				if gid, ok := r.out.Face.NominalGlyph(c); ok && gid == g.GlyphID {
					ch = c
					break
				}
			}
			out = append(out, ch)
		}
	}
	return out
}

// A right-to-left line is laid out by the bidirectional algorithm: Hebrew right to left, the
// number and the Latin word inside it left to right.
func TestHebrewLineInVisualOrder(t *testing.T) {
	t.Parallel()
	needFallbackFonts(t, "שלום")
	got := glyphsOf(t, "שלום 123 abc", "שלוםabc123 ")
	require.Equal(t, []rune("abc 123 םולש"), got)
	// In a left-to-right line a number after Hebrew goes with it (rules W7 and N1), as a
	// browser shows it.
	ltr := glyphsOf(t, "abc שלום 12", "שלוםabc12 ")
	require.Equal(t, []rune("abc 12 םולש"), ltr)
}

// Arabic letters take their joined forms (HarfBuzz shaping), not their isolated ones.
func TestArabicIsJoined(t *testing.T) {
	t.Parallel()
	needFallbackFonts(t, "بيت")
	got := glyphsOf(t, "بيت", "بيت")
	require.Len(t, got, 3)
	require.Equal(t, rune(0), got[2], "the first letter (drawn rightmost) is in its initial form: %q", got)
}

// A line that reads right to left starts at the right of its box; one that reads left to right
// at the left.
func TestRightToLeftLineStartsAtTheRight(t *testing.T) {
	t.Parallel()
	needFallbackFonts(t, "שלום")
	box := image.Rect(100, 100, 1000, 200)
	minX, maxX, _ := inked(drawn(t, "שלום עולם"), box)
	require.Greater(t, minX, 700, "Hebrew from the right")
	require.Greater(t, maxX, 980)
	minX, maxX, _ = inked(drawn(t, "Hello world"), box)
	require.Less(t, minX, 110, "Latin from the left")
	require.Less(t, maxX, 400)
}

// Text without spaces (Japanese, Thai) wraps inside its box, never separating a mark from its
// letter, and ends with an ellipsis when it does not fit.
func TestUnspacedTextWraps(t *testing.T) {
	t.Parallel()
	ja, th := strings.Repeat("日本語の文章は空白なしで続きます。", 20), strings.Repeat("สินค้าคุณภาพดี", 30)
	needFallbackFonts(t, ja, th)
	require.NoError(t, loadFonts())
	c := newCanvas()
	defer c.close()
	for _, s := range []string{ja, th} {
		face := c.face(false, 30)
		lines := wrapText(face, s, 400, 4)
		require.Len(t, lines, 4)
		for _, l := range lines {
			require.LessOrEqual(t, measure(face, l), 400, "%q", l)
			first := []rune(l)[0]
			require.False(t, joinsPrevious(first), "line starts with a mark: %q", l)
		}
		require.True(t, strings.HasSuffix(lines[3], "…"))
	}
}

// A catalog render keeps the text its pages were drawn with, in every script, with each word's
// box over its ink (no OCR: it read only the languages installed for it, and none of these).
func TestCatalogPagesKeepTheirDrawnText(t *testing.T) {
	t.Parallel()
	const ja, he, ar = "コーヒー豆", "שלום עולם", "قهوة عربية"
	needFallbackFonts(t, ja, he, ar)
	doc := CatalogDoc{TemplateID: 1, Title: "Garden catalog", Currency: "EUR",
		Cover: Cover{Title: "Spring Garden Collection", Description: "Tools for patient gardeners."},
		Items: []Item{{ID: "1", Title: "Ceramic Watering Can " + ja, Price: "24.00",
			ShortDescription: he + "\n" + ar}}}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	src := filepath.Join(t.TempDir(), "catalog.json")
	require.NoError(t, os.WriteFile(src, data, 0o600))
	res, err := Convert(context.Background(), src, KindCatalog, filepath.Join(t.TempDir(), "w"), Options{})
	require.NoError(t, err)
	require.Len(t, res.Text, len(res.Pages))
	require.Len(t, res.Pages, 2)
	for i, pt := range res.Text {
		require.Equal(t, i+1, pt.Page)
		require.Equal(t, storage.TextFromRender, pt.Source)
	}
	requireFractions(t, res.Text)
	require.Contains(t, res.Text[0].Text, "Spring Garden Collection", "the cover")
	two := res.Text[1]
	require.Contains(t, two.Text, "Ceramic Watering Can "+ja)
	require.Contains(t, two.Text, he+"\n"+ar)
	require.Contains(t, two.Text, "Garden catalog", "the footer")

	f, err := os.Open(res.Pages[1].Path)
	require.NoError(t, err)
	defer f.Close()
	page, err := jpeg.Decode(f)
	require.NoError(t, err)
	rgba := image.NewRGBA(page.Bounds())
	for y := 0; y < PageHeight; y++ {
		for x := 0; x < PageWidth; x++ {
			r, g, b, _ := page.At(x, y).RGBA()
			rgba.SetRGBA(x, y, color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255})
		}
	}
	boxes := map[string]image.Rectangle{}
	for _, w := range two.Words {
		r := image.Rect(int(w.X*PageWidth), int(w.Y*PageHeight), int((w.X+w.W)*PageWidth+0.5), int((w.Y+w.H)*PageHeight+0.5))
		_, _, n := inked(rgba, r)
		require.Greater(t, n, 0, "no ink under %q at %v", w.Text, r)
		boxes[w.Text] = r
	}
	require.Greater(t, boxes["שלום"].Min.X, boxes["עולם"].Max.X-2, "the first Hebrew word is on the right")
	require.Greater(t, boxes["Watering"].Min.X, boxes["Ceramic"].Max.X-2)
}

// A word of 20,000 characters in a script that is shaped wraps at the cost of its lines: each
// try shapes a prefix no longer than a line can hold, not the whole word.
func TestHugeShapedWordWrapsQuickly(t *testing.T) {
	t.Parallel()
	word := strings.Repeat("مرحبا", 4000)
	needFallbackFonts(t, word[:20])
	require.NoError(t, loadFonts())
	c := newCanvas()
	defer c.close()
	face := c.face(false, 22)
	lines := wrapText(face, word, 900, 40)
	require.Len(t, lines, 40)
	for _, l := range lines {
		require.LessOrEqual(t, measure(face, l), 900)
	}
	// About 8 tries a line of at most 4*900/22+32 = 195 characters, and the ellipsis: 40 lines
	// of 20,000 characters each would be 16 million.
	require.Less(t, face.sh.shaped, 40*10*200, "characters shaped")
}

// A page of Latin text makes no shaping faces (each holds a cache the size of its font).
func TestLatinPageMakesNoShapingFaces(t *testing.T) {
	t.Parallel()
	require.NoError(t, loadFonts())
	c := newCanvas()
	defer c.close()
	c.text(image.Rect(100, 100, 1000, 400), "Plain Latin text, Ελληνικά and Кириллица", textStyle{size: 30, color: colText})
	require.NotEmpty(t, c.words)
	require.Nil(t, c.sh.maps[0].faces)
}

// joinsPrevious reports whether r belongs with the character before it: a combining mark, a
// zero-width joiner or a variation selector.
func joinsPrevious(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me) || r == 0x200D || (r >= 0xFE00 && r <= 0xFE0F)
}

// Japanese wraps by the Unicode line-breaking rules: at no width does a line start with "。" or
// "、", or end with "「".
func TestJapaneseLineBreakingRules(t *testing.T) {
	t.Parallel()
	ja := strings.Repeat("これは「商品」の説明です。色は赤、青、緑があります。", 12)
	needFallbackFonts(t, ja)
	require.NoError(t, loadFonts())
	c := newCanvas()
	defer c.close()
	face := c.face(false, 24)
	for width := 150; width <= 400; width += 5 {
		lines := wrapText(face, ja, width, 100)
		require.Equal(t, ja, strings.Join(lines, ""), "width %d: the text is kept whole", width)
		for i, l := range lines {
			require.LessOrEqual(t, measure(face, l), width, "width %d: %q", width, l)
			require.False(t, strings.HasPrefix(l, "。") || strings.HasPrefix(l, "、"), "width %d, line %d starts with punctuation: %q", width, i, l)
			require.False(t, strings.HasSuffix(l, "「"), "width %d, line %d ends with an opening bracket: %q", width, i, l)
		}
	}
}

// Emoji are drawn in colour (Noto Color Emoji's bitmaps, scaled), and the space after one is the
// text's, not the emoji font's (as wide as an emoji).
func TestEmojiInColour(t *testing.T) {
	t.Parallel()
	needFallbackFonts(t, "😀")
	loadShapeFonts()
	if shapeFonts.emoji == 0 {
		t.Skip("no colour emoji font (fonts-noto-color-emoji); scripts/deps.sh installs it")
	}
	img := drawn(t, "😀 ☕ smile")
	yellow := 0
	for y := 100; y < 200; y++ {
		for x := 100; x < 1000; x++ {
			if c := img.RGBAAt(x, y); c.R > 200 && c.G > 150 && c.B < 100 {
				yellow++
			}
		}
	}
	require.Greater(t, yellow, 100, "a yellow face")
	face := newCanvas().face(false, 40)
	gap := measure(face, "😀 a") - measure(face, "😀a")
	require.InDelta(t, measure(face, " "), gap, 1, "the space after an emoji is the text font's")
}
