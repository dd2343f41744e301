package convert

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-text/typesetting/bidi"
	"github.com/go-text/typesetting/di"
	gtfont "github.com/go-text/typesetting/font"
	ot "github.com/go-text/typesetting/font/opentype"
	"github.com/go-text/typesetting/segmenter"
	"github.com/go-text/typesetting/shaping"
	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
	xbidi "golang.org/x/text/unicode/bidi"
)

// Text in scripts the Go fonts lack. The Go fonts cover Latin, Greek and Cyrillic; text they
// cover, written left to right, is drawn with them as before (canvas.text). Any other line is
// shaped with HarfBuzz (go-text/typesetting: Arabic joining, marks, ligatures), in visual order
// by the Unicode bidirectional algorithm (Hebrew and Arabic right to left, with numbers and
// Latin words inside them left to right), each character in the first font that has it: the Go
// font, then the system's fallback fonts (fallbackFontFiles). A character no font has is drawn
// as the Go font's box, as before.

// fallbackFontFiles are the fallback fonts looked for under the font directories, in order of
// preference: the first file found for each entry is used, with its bold when there is one.
// scripts/deps.sh installs the Debian packages named here.
var fallbackFontFiles = []struct {
	regular, bold []string
	emoji         bool // the colour emoji font: first for characters shown as emoji by default
}{
	// fonts-dejavu-core: Hebrew, Arabic, Armenian, Georgian, and many symbols
	{[]string{"DejaVuSans.ttf"}, []string{"DejaVuSans-Bold.ttf"}, false},
	// fonts-noto-core: Thai, Indic scripts, Ethiopic (and Arabic and Hebrew again)
	{[]string{"NotoSansThai-Regular.ttf"}, []string{"NotoSansThai-Bold.ttf"}, false},
	{[]string{"NotoSansDevanagari-Regular.ttf"}, []string{"NotoSansDevanagari-Bold.ttf"}, false},
	{[]string{"NotoSansBengali-Regular.ttf"}, []string{"NotoSansBengali-Bold.ttf"}, false},
	{[]string{"NotoSansTamil-Regular.ttf"}, []string{"NotoSansTamil-Bold.ttf"}, false},
	{[]string{"NotoSansEthiopic-Regular.ttf"}, []string{"NotoSansEthiopic-Bold.ttf"}, false},
	// fonts-droid-fallback: Chinese and Japanese
	{[]string{"DroidSansFallbackFull.ttf", "DroidSansFallback.ttf"}, nil, false},
	// fonts-nanum: Korean (Hangul)
	{[]string{"NanumGothic.ttf"}, []string{"NanumGothicBold.ttf"}, false},
	// fonts-noto-color-emoji: emoji in colour (PNG bitmaps, scaled to the text's size)
	{[]string{"NotoColorEmoji.ttf"}, nil, true},
	// fonts-symbola: the symbols Noto Color Emoji lacks, in outline
	{[]string{"Symbola_hint.ttf", "Symbola.ttf"}, nil, false},
}

// FontDirs are the directories searched for fallbackFontFiles (and their subdirectories).
var FontDirs = []string{"/usr/share/fonts", "/usr/local/share/fonts"}

// shapeFonts are the fonts shaped text is drawn in, parsed once: [0] the Go fonts, then the
// fallback fonts found. A parsed font is safe for concurrent use; faces are not, so each
// canvas makes its own (shaper).
var shapeFonts struct {
	once          sync.Once
	regular, bold []*gtfont.Font
	emoji         int // the colour emoji font's index in both, or 0 when there is none
}

func loadShapeFonts() {
	shapeFonts.once.Do(func() {
		for _, ttf := range [][]byte{goregular.TTF, gobold.TTF} {
			f, err := gtfont.ParseTTF(bytes.NewReader(ttf))
			if err != nil {
				panic(err) // the embedded Go fonts always parse
			}
			if len(shapeFonts.regular) == 0 {
				shapeFonts.regular = append(shapeFonts.regular, f.Font)
			} else {
				shapeFonts.bold = append(shapeFonts.bold, f.Font)
			}
		}
		found := findFontFiles(FontDirs)
		var missing []string
		for _, e := range fallbackFontFiles {
			reg := parseFirstFont(found, e.regular)
			if reg == nil {
				missing = append(missing, e.regular[0])
				continue
			}
			bold := parseFirstFont(found, e.bold)
			if bold == nil {
				bold = reg
			}
			if e.emoji {
				shapeFonts.emoji = len(shapeFonts.regular)
			}
			shapeFonts.regular = append(shapeFonts.regular, reg)
			shapeFonts.bold = append(shapeFonts.bold, bold)
		}
		if len(missing) > 0 {
			slog.Info("template pages: fallback fonts not found; text needing them is drawn as boxes",
				"missing", missing, "dirs", FontDirs)
		}
	})
}

// findFontFiles maps the font files' names under dirs to their paths (the first found).
func findFontFiles(dirs []string) map[string]string {
	found := map[string]string{}
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // an unreadable directory is skipped
			}
			if !d.IsDir() {
				if _, ok := found[d.Name()]; !ok {
					found[d.Name()] = path
				}
			}
			return nil
		})
	}
	return found
}

func parseFirstFont(found map[string]string, names []string) *gtfont.Font {
	for _, name := range names {
		path, ok := found[name]
		if !ok {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		face, err := gtfont.ParseTTF(f)
		_ = f.Close() // ParseTTF reads the tables it keeps
		if err != nil {
			slog.Warn("template pages: a fallback font does not parse", "path", path, "err", err)
			continue
		}
		return face.Font
	}
	return nil
}

// typeface is a Go font face at one size, measuring and drawing through the canvas's shaper the
// lines the Go font cannot draw alone (plain reports which).
type typeface struct {
	font.Face // the Go font at this size (x/image), for metrics and plain text
	bold      bool
	size      float64
	sh        *shaper
}

// plain reports whether s is drawn with the Go font alone: every character is in it, and none
// is written right to left.
func (f *typeface) plain(s string) bool {
	goFont := shapeFonts.regular[0]
	if f.bold {
		goFont = shapeFonts.bold[0]
	}
	for _, r := range s {
		if r < 0x80 {
			continue
		}
		if p, _ := xbidi.LookupRune(r); isRTLClass(p.Class()) {
			return false
		}
		if _, ok := goFont.NominalGlyph(r); !ok {
			return false
		}
	}
	return true
}

func isRTLClass(c xbidi.Class) bool {
	switch c {
	case xbidi.R, xbidi.AL, xbidi.RLE, xbidi.RLO, xbidi.RLI:
		return true
	}
	return false
}

// width is the advance width of s in whole pixels (rounded up).
func (f *typeface) width(s string) int {
	if f.plain(s) {
		return font.MeasureString(f.Face, s).Ceil()
	}
	runs, _ := f.sh.shapeLine(s, f.bold, f.size)
	return runsWidth(runs).Ceil()
}

// rtl reports whether the line s reads right to left: its first strong character does
// (the bidirectional algorithm's rule for a paragraph's direction).
func rtl(s string) bool {
	for _, r := range s {
		p, _ := xbidi.LookupRune(r)
		switch c := p.Class(); {
		case c == xbidi.L:
			return false
		case c == xbidi.R || c == xbidi.AL:
			return true
		}
	}
	return false
}

// drawLine draws the line s with its baseline's left end at (x, y) in dst.
func (f *typeface) drawLine(dst *image.RGBA, x, y int, s string, col color.RGBA) {
	if f.plain(s) {
		d := font.Drawer{Dst: dst, Src: image.NewUniform(col), Face: f.Face, Dot: fixed.P(x, y)}
		d.DrawString(s)
		return
	}
	runs, _ := f.sh.shapeLine(s, f.bold, f.size)
	f.sh.draw(dst, fixed.I(x), fixed.I(y), runs, col)
}

// shaper shapes and draws the lines of one canvas (HarfBuzz buffers and font faces are not safe
// for concurrent use).
type shaper struct {
	hb     shaping.HarfbuzzShaper
	seg    shaping.Segmenter
	para   bidi.Paragraph
	maps   [2]fontmap // regular, bold
	src    *image.Uniform
	raster vector.Rasterizer
	mask   image.Alpha // a glyph's coverage, reused
	shaped int         // characters shaped so far (the tests' measure of the work)
	parts  []shaping.Input
	// bitmaps are the colour glyphs decoded (emoji), by face and glyph; nil for one that
	// does not decode.
	bitmaps map[bitmapKey]image.Image
}

type bitmapKey struct {
	face *gtfont.Face
	gid  gtfont.GID
}

func newShaper() *shaper {
	loadShapeFonts()
	return &shaper{src: image.NewUniform(color.Black)}
}

// fontmap is the faces of the regular or bold fonts, made at the first line shaped: a face
// holds a cache as large as its font's glyph count (3.8 MB and 0.9 ms for all of them), which a
// page of Latin text does not need.
func (sh *shaper) fontmap(bold bool) fontmap {
	if sh.maps[0].faces == nil {
		faces := map[*gtfont.Font]*gtfont.Face{} // a font without a bold serves both
		for i, fonts := range [][]*gtfont.Font{shapeFonts.regular, shapeFonts.bold} {
			for _, f := range fonts {
				if faces[f] == nil {
					faces[f] = gtfont.NewFace(f)
				}
				sh.maps[i].faces = append(sh.maps[i].faces, faces[f])
			}
			if shapeFonts.emoji > 0 {
				sh.maps[i].emoji = sh.maps[i].faces[shapeFonts.emoji]
			}
		}
	}
	if bold {
		return sh.maps[1]
	}
	return sh.maps[0]
}

// fontmap picks for each character the first face that has it (the Go font's when none does,
// which draws its box); a character shown as an emoji by default takes the colour emoji font
// first (DejaVu Sans has monochrome 😀 and ☕).
type fontmap struct {
	faces []*gtfont.Face
	emoji *gtfont.Face // nil without the colour emoji font
}

func (m fontmap) ResolveFace(r rune) *gtfont.Face {
	if m.emoji != nil && emojiPresentation(r) {
		if _, ok := m.emoji.NominalGlyph(r); ok {
			return m.emoji
		}
	}
	for _, f := range m.faces {
		if _, ok := f.NominalGlyph(r); ok {
			return f
		}
	}
	return m.faces[0]
}

// emojiPresentation reports whether r is shown as an emoji by default (Unicode's
// Emoji_Presentation property: the pictographs from U+1F000, and these in the BMP).
func emojiPresentation(r rune) bool {
	if r >= 0x1F000 {
		return r <= 0x1FAFF
	}
	for _, rg := range [...][2]rune{{0x231A, 0x231B}, {0x23E9, 0x23EC}, {0x23F0, 0x23F0}, {0x23F3, 0x23F3},
		{0x25FD, 0x25FE}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267F, 0x267F}, {0x2693, 0x2693},
		{0x26A1, 0x26A1}, {0x26AA, 0x26AB}, {0x26BD, 0x26BE}, {0x26C4, 0x26C5}, {0x26CE, 0x26CE},
		{0x26D4, 0x26D4}, {0x26EA, 0x26EA}, {0x26F2, 0x26F3}, {0x26F5, 0x26F5}, {0x26FA, 0x26FA},
		{0x26FD, 0x26FD}, {0x2705, 0x2705}, {0x270A, 0x270B}, {0x2728, 0x2728}, {0x274C, 0x274C},
		{0x274E, 0x274E}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797}, {0x27B0, 0x27B0},
		{0x27BF, 0x27BF}, {0x2B1B, 0x2B1C}, {0x2B50, 0x2B50}, {0x2B55, 0x2B55}} {
		if r >= rg[0] && r <= rg[1] {
			return true
		}
	}
	return false
}

// spacesInBase splits the parts of a line in a fallback font at its spaces, which are shaped in
// the base (Go) font: the segmenter keeps a space in the font before it, and Noto Color Emoji's
// space is as wide as an emoji.
func spacesInBase(parts []shaping.Input, base *gtfont.Face, out []shaping.Input) []shaping.Input {
	for _, p := range parts {
		if p.Face == base {
			out = append(out, p)
			continue
		}
		start := p.RunStart
		for i := p.RunStart; i <= p.RunEnd; i++ {
			if i < p.RunEnd && (p.Text[i] == ' ') == (p.Text[start] == ' ') {
				continue
			}
			q := p
			q.RunStart, q.RunEnd = start, i
			if p.Text[start] == ' ' {
				q.Face = base
			}
			out = append(out, q)
			start = i
		}
	}
	return out
}

// shapedRun is a shaped piece of a line with its bidirectional embedding level.
type shapedRun struct {
	out   shaping.Output
	level bidi.Level
}

// shapeLine shapes s as one line: split into runs of one direction (the bidirectional
// algorithm, the line's direction taken from its first strong character), then of one script
// and font; the runs are returned in visual order, left to right, and whether the line reads
// right to left.
func (sh *shaper) shapeLine(s string, bold bool, size float64) ([]shapedRun, bool) {
	text := []rune(s)
	sh.shaped += len(text)
	isRTL := rtl(s)
	def := bidi.LeftToRight
	if isRTL {
		def = bidi.RightToLeft
	}
	fm := sh.fontmap(bold)
	levels := sh.para.Segment(text, def)
	var runs []shapedRun
	for i := 0; i < levels.NumRuns(); i++ {
		br := levels.Run(i)
		in := shaping.Input{Text: text, RunStart: br.Start, RunEnd: br.End, Direction: di.DirectionLTR,
			Size: fixed.Int26_6(math.Round(size * 64))}
		if !br.IsLeftToRight() {
			in.Direction = di.DirectionRTL
		}
		sh.parts = spacesInBase(sh.seg.Split(in, fm), fm.faces[0], sh.parts[:0])
		for _, part := range sh.parts {
			// The line's bidi run decides the direction: the segmenter runs the algorithm
			// again on the run alone, without the overrides (RLO) around it (found by a review).
			part.Direction = in.Direction
			runs = append(runs, shapedRun{out: sh.hb.Shape(part), level: br.Level})
		}
	}
	reorderRuns(runs)
	return runs, isRTL
}

// reorderRuns puts runs in logical order into visual order (rule L2 of the bidirectional
// algorithm): from the highest level down to the lowest odd one, every sequence of runs at that
// level or above is reversed. Each run's glyphs are already in visual order (HarfBuzz).
func reorderRuns(runs []shapedRun) {
	var highest, lowestOdd bidi.Level = 0, math.MaxInt8
	for _, r := range runs {
		highest = max(highest, r.level)
		if r.level%2 == 1 {
			lowestOdd = min(lowestOdd, r.level)
		}
	}
	for level := highest; level >= lowestOdd && level > 0; level-- {
		for i := 0; i < len(runs); {
			if runs[i].level < level {
				i++
				continue
			}
			j := i
			for j < len(runs) && runs[j].level >= level {
				j++
			}
			for a, b := i, j-1; a < b; a, b = a+1, b-1 {
				runs[a], runs[b] = runs[b], runs[a]
			}
			i = j
		}
	}
}

func runsWidth(runs []shapedRun) fixed.Int26_6 {
	var w fixed.Int26_6
	for i := range runs {
		w += runs[i].out.Advance
	}
	return w
}

// draw draws runs (in visual order) from the pen at (x, y), the baseline.
func (sh *shaper) draw(dst *image.RGBA, x, y fixed.Int26_6, runs []shapedRun, col color.RGBA) {
	sh.src.C = col
	for i := range runs {
		o := &runs[i].out
		for _, g := range o.Glyphs {
			if !sh.drawBitmap(dst, o.Face, g, x+g.XOffset, y-g.YOffset) {
				sh.drawGlyph(dst, o.Face, g.GlyphID, o.Size, x+g.XOffset, y-g.YOffset)
			}
			x += g.Advance
		}
	}
}

// drawGlyph fills the outline of glyph gid of face at size (pixels per em) with its origin at
// (x, y). Glyphs without an outline (bitmaps, colour layers) are left out.
func (sh *shaper) drawGlyph(dst *image.RGBA, face *gtfont.Face, gid gtfont.GID, size, x, y fixed.Int26_6) {
	outline, ok := face.GlyphData(gid).(gtfont.GlyphOutline)
	if !ok || len(outline.Segments) == 0 {
		return
	}
	scale := float32(size) / 64 / float32(face.Upem())
	ox, oy := float32(x)/64, float32(y)/64
	minX, minY := float32(math.Inf(1)), float32(math.Inf(1))
	maxX, maxY := float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, s := range outline.Segments {
		for _, p := range s.ArgsSlice() {
			px, py := ox+p.X*scale, oy-p.Y*scale
			minX, maxX = min(minX, px), max(maxX, px)
			minY, maxY = min(minY, py), max(maxY, py)
		}
	}
	box := image.Rect(int(math.Floor(float64(minX))), int(math.Floor(float64(minY))),
		int(math.Ceil(float64(maxX))), int(math.Ceil(float64(maxY))))
	// A glyph is at most a few em across; a box far larger is a broken font's, left out.
	if box.Empty() || box.Dx() > 16*int(size>>6)+64 || box.Dy() > 16*int(size>>6)+64 ||
		!box.Overlaps(dst.Bounds()) {
		return
	}
	z := &sh.raster
	z.Reset(box.Dx(), box.Dy())
	bx, by := float32(box.Min.X), float32(box.Min.Y)
	pt := func(p gtfont.SegmentPoint) (float32, float32) { return ox + p.X*scale - bx, oy - p.Y*scale - by }
	for _, s := range outline.Segments {
		a := s.Args
		switch s.Op {
		case ot.SegmentOpMoveTo:
			z.MoveTo(pt(a[0]))
		case ot.SegmentOpLineTo:
			z.LineTo(pt(a[0]))
		case ot.SegmentOpQuadTo:
			x1, y1 := pt(a[0])
			x2, y2 := pt(a[1])
			z.QuadTo(x1, y1, x2, y2)
		case ot.SegmentOpCubeTo:
			x1, y1 := pt(a[0])
			x2, y2 := pt(a[1])
			x3, y3 := pt(a[2])
			z.CubeTo(x1, y1, x2, y2, x3, y3)
		}
	}
	z.ClosePath()
	// The rasterizer draws into an alpha mask, which draw.DrawMask clips to dst: the
	// rasterizer's own Draw does not clip, and dst is a text box's sub-image of the page.
	n := box.Dx() * box.Dy()
	if cap(sh.mask.Pix) < n {
		sh.mask.Pix = make([]uint8, n)
	}
	sh.mask.Pix, sh.mask.Stride, sh.mask.Rect = sh.mask.Pix[:n], box.Dx(), image.Rect(0, 0, box.Dx(), box.Dy())
	clear(sh.mask.Pix)
	z.Draw(&sh.mask, sh.mask.Rect, image.Opaque, image.Point{})
	draw.DrawMask(dst, box, sh.src, image.Point{}, &sh.mask, image.Point{}, draw.Over)
}

// fitShaped is fitPrefix for a shaped line (found by bisection: each try shapes a prefix). It
// ends the line at the last line-break opportunity that fits (Unicode line breaking, UAX #14:
// in Chinese and Japanese between characters, but not before "。" or "、", nor after "「"); when
// none fits, at the last whole character (a grapheme cluster, UAX #29: a letter with its marks,
// an emoji sequence), at least one, so that wrapping always makes progress.
func (f *typeface) fitShaped(s string, width int) int {
	// A line holds at most a few characters per em of its width (counting marks, which take no
	// room): a longer prefix is not looked at, so a 10,000-character word costs what a line does.
	limit := 4*width/max(1, int(f.size)) + 32
	starts := make([]int, 0, min(len(s), limit)+1) // byte offset of each character
	for i := range s {
		if len(starts) > limit {
			break
		}
		starts = append(starts, i)
	}
	whole := len(starts) <= limit // s itself, not a prefix, is segmented
	end := len(s)
	if !whole {
		end = starts[limit]
		starts = starts[:limit]
	}
	starts = append(starts, end)
	text := []rune(s[:end])
	var seg segmenter.Segmenter
	seg.Init(text)
	var breaks, clusters []int // byte offsets where the line may end
	for it := seg.LineIterator(); it.Next(); {
		if l := it.Line(); whole || l.Offset+len(l.Text) < len(text) {
			breaks = append(breaks, starts[l.Offset+len(l.Text)])
		}
	}
	for it := seg.GraphemeIterator(); it.Next(); {
		if g := it.Grapheme(); whole || g.Offset+len(g.Text) < len(text) {
			clusters = append(clusters, starts[g.Offset+len(g.Text)])
		}
	}
	if n := f.lastFitting(s, breaks, width); n > 0 {
		return n
	}
	if n := f.lastFitting(s, clusters, width); n > 0 {
		return n
	}
	if len(clusters) > 0 {
		return clusters[0]
	}
	// One character longer than a line can hold (a letter with hundreds of marks, a long emoji
	// sequence): it is not cut inside (found by a review), whatever it costs.
	seg.Init([]rune(s))
	if it := seg.GraphemeIterator(); it.Next() {
		return it.Grapheme().LengthInBytes
	}
	return end
}

// clusterEnds are the byte offsets where the grapheme clusters of s end (the last is len(s)).
func clusterEnds(s string) []int {
	var seg segmenter.Segmenter
	if err := seg.InitWithString(s); err != nil { // invalid UTF-8: rune by rune
		var ends []int
		for i := range s {
			if i > 0 {
				ends = append(ends, i)
			}
		}
		return append(ends, len(s))
	}
	var ends []int
	for it := seg.GraphemeIterator(); it.Next(); {
		g := it.Grapheme()
		ends = append(ends, g.OffsetInBytes+g.LengthInBytes)
	}
	return ends
}

// lastFitting is the last of ends (increasing byte offsets) where s's prefix is no wider than
// width, or 0 when none is.
func (f *typeface) lastFitting(s string, ends []int, width int) int {
	lo, hi := 0, len(ends) // ends[:lo] fit, ends[hi:] do not
	for lo < hi {
		mid := (lo + hi) / 2
		if f.width(s[:ends[mid]]) <= width {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return 0
	}
	return ends[lo-1]
}

// wordBox is a word of a line and where it is drawn: [x0, x1) from the line's left end.
type wordBox struct {
	text   string
	x0, x1 int
}

// wordBoxes are the words of the line s (separated by spaces), in reading order, with where
// each is drawn.
func (f *typeface) wordBoxes(s string) []wordBox {
	type span struct{ start, end int } // byte offsets
	var spans []span
	start := -1
	for i, r := range s {
		switch {
		case isSpace(r) && start >= 0:
			spans = append(spans, span{start, i})
			start = -1
		case !isSpace(r) && start < 0:
			start = i
		}
	}
	if start >= 0 {
		spans = append(spans, span{start, len(s)})
	}
	out := make([]wordBox, len(spans))
	if f.plain(s) {
		for i, sp := range spans {
			out[i] = wordBox{text: s[sp.start:sp.end], x0: font.MeasureString(f.Face, s[:sp.start]).Round(),
				x1: font.MeasureString(f.Face, s[:sp.end]).Ceil()}
		}
		return out
	}
	// A shaped line: each glyph's cluster is the index of its first character, which places
	// it in a word; a word spans its glyphs, wherever the bidirectional order put them.
	word := make([]int, 0, len(s)) // by character index: the word's index, or -1
	for i := range s {
		w := -1
		for j, sp := range spans {
			if i >= sp.start && i < sp.end {
				w = j
				break
			}
		}
		word = append(word, w)
	}
	lo, hi := make([]fixed.Int26_6, len(spans)), make([]fixed.Int26_6, len(spans))
	seen := make([]bool, len(spans))
	runs, _ := f.sh.shapeLine(s, f.bold, f.size)
	var x fixed.Int26_6
	for i := range runs {
		for _, g := range runs[i].out.Glyphs {
			if c := g.TextIndex(); c >= 0 && c < len(word) && word[c] >= 0 {
				w := word[c]
				if !seen[w] || x < lo[w] {
					lo[w] = x
				}
				if !seen[w] || x+g.Advance > hi[w] {
					hi[w] = x + g.Advance
				}
				seen[w] = true
			}
			x += g.Advance
		}
	}
	for i, sp := range spans {
		out[i] = wordBox{text: s[sp.start:sp.end], x0: lo[i].Round(), x1: hi[i].Ceil()}
	}
	return out
}

// drawBitmap draws a colour glyph (a PNG of Noto Color Emoji) scaled into the glyph's box at
// the pen (x, y), and reports whether g was one. The PNG is decoded once a canvas; fonts are the
// system's, and a strike is at most a few hundred pixels square.
func (sh *shaper) drawBitmap(dst *image.RGBA, face *gtfont.Face, g shaping.Glyph, x, y fixed.Int26_6) bool {
	bm, ok := face.GlyphData(g.GlyphID).(gtfont.GlyphBitmap)
	if !ok || bm.Format != gtfont.PNG {
		return false
	}
	k := bitmapKey{face, g.GlyphID}
	img, seen := sh.bitmaps[k]
	if !seen {
		if bm.Width <= 0 || bm.Height <= 0 || bm.Width*bm.Height > 1024*1024 {
			return true // not drawn: no font has emoji this large
		}
		img, _ = png.Decode(bytes.NewReader(bm.Data))
		if sh.bitmaps == nil {
			sh.bitmaps = map[bitmapKey]image.Image{}
		}
		sh.bitmaps[k] = img
	}
	if img == nil {
		return true
	}
	box := image.Rect((x + g.XBearing).Round(), (y - g.YBearing).Round(),
		(x + g.XBearing + g.Width).Round(), (y - g.YBearing - g.Height).Round()).Canon()
	if box.Empty() || !box.Overlaps(dst.Bounds()) {
		return true
	}
	xdraw.BiLinear.Scale(dst, box, img, img.Bounds(), xdraw.Over, nil)
	return true
}
