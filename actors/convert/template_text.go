package convert

import (
	"html"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/image/math/fixed"
)

// Text helpers of the template renderer: HTML to plain text, word wrapping, ellipsis.

// blockTags end a line of text (or start a list item).
var blockTags = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true, "dd": true,
	"div": true, "dl": true, "dt": true, "figcaption": true, "figure": true, "footer": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "header": true,
	"hr": true, "li": true, "main": true, "nav": true, "ol": true, "p": true, "pre": true,
	"section": true, "table": true, "tbody": true, "td": true, "th": true, "thead": true,
	"tr": true, "ul": true,
}

// paragraphTags are separated from what follows by an empty line.
var paragraphTags = map[string]bool{
	"p": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"blockquote": true, "ul": true, "ol": true, "table": true, "pre": true, "figure": true,
}

// skipTags have content that is not text: it is dropped with the tag.
var skipTags = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "svg": true,
	"iframe": true, "object": true, "head": true, "title": true, "math": true,
}

// PlainText turns an HTML fragment (WordPress post content, WooCommerce descriptions) into plain
// text: comments (including block-editor markers), tags and the content of script/style-like
// elements are removed, block elements become line breaks (paragraphs an empty line, list items
// a bullet), entities are unescaped and whitespace is collapsed. Plain text passes through with
// entities unescaped and whitespace collapsed.
func PlainText(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '<' {
			j := strings.IndexByte(s[i:], '<')
			if j < 0 {
				j = len(s) - i
			}
			b.WriteString(s[i : i+j])
			i += j
			continue
		}
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "<!--"):
			end := strings.Index(rest[4:], "-->")
			if end < 0 {
				i = len(s)
			} else {
				i += 4 + end + 3
			}
			continue
		case strings.HasPrefix(rest, "<!") || strings.HasPrefix(rest, "<?"):
			end := strings.IndexByte(rest, '>')
			if end < 0 {
				i = len(s)
			} else {
				i += end + 1
			}
			continue
		}
		name, closing, ok := tagName(rest)
		if !ok { // a '<' that opens no tag ("a < b") is text
			b.WriteByte('<')
			i++
			continue
		}
		end := tagEnd(rest)
		if end < 0 { // an unterminated tag: drop the rest
			break
		}
		i += end
		switch {
		case skipTags[name] && !closing && !strings.HasSuffix(rest[:end], "/>"):
			// drop everything up to the closing tag (case-insensitive)
			j := indexFold(s[i:], "</"+name)
			if j < 0 {
				i = len(s)
				continue
			}
			i += j
			if k := strings.IndexByte(s[i:], '>'); k >= 0 {
				i += k + 1
			} else {
				i = len(s)
			}
		case name == "li":
			if !closing {
				b.WriteString("\n• ")
			}
		case paragraphTags[name]:
			b.WriteString("\n\n")
		case blockTags[name]:
			b.WriteByte('\n')
		case name == "img" || name == "input":
			// no text
		default:
			// inline elements (a, strong, em, span, ...) vanish; their text stays
		}
	}
	return normalizeSpace(html.UnescapeString(b.String()))
}

// tagName parses the element name after '<' (or "</"). ok is false when s does not start a tag.
func tagName(s string) (name string, closing bool, ok bool) {
	i := 1
	if i < len(s) && s[i] == '/' {
		closing = true
		i++
	}
	start := i
	for i < len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (i > start && (c >= '0' && c <= '9' || c == '-' || c == ':')) {
			i++
			continue
		}
		break
	}
	if i == start {
		return "", false, false
	}
	return strings.ToLower(s[start:i]), closing, true
}

// tagEnd is the index just past the '>' ending the tag s starts with, honouring quoted
// attribute values; -1 when there is none.
func tagEnd(s string) int {
	var quote byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return i + 1
		}
	}
	return -1
}

func indexFold(s, sub string) int {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return i
		}
	}
	return -1
}

// normalizeSpace collapses runs of blanks within lines, trims lines, keeps at most one empty line
// in a row and trims the whole.
func normalizeSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	blank := 0 // newlines pending
	wrote := false
	for _, line := range strings.Split(s, "\n") {
		f := strings.FieldsFunc(line, isSpace)
		if len(f) == 0 {
			if wrote {
				blank++
			}
			continue
		}
		if wrote {
			if blank > 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte('\n')
			}
		}
		blank = 0
		for i, w := range f {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		wrote = true
	}
	return b.String()
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\r', '\f', '\v', 0xA0, 0x2007, 0x202F, 0x200B, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// oneLine is PlainText on a single line (titles, names, labels).
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(PlainText(s), func(r rune) bool { return r == '\n' || isSpace(r) }), " ")
}

// measure is the advance width of s in whole pixels (rounded up).
func measure(face *typeface, s string) int { return face.width(s) }

// fitPrefix is the byte length of the longest prefix of s no wider than width, at least one rune
// (so that wrapping always makes progress).
func fitPrefix(face *typeface, s string, width int) int {
	if !face.plain(s) {
		return face.fitShaped(s, width)
	}
	limit := fixed.I(width)
	var adv fixed.Int26_6
	prev := rune(-1)
	for i, r := range s {
		if prev >= 0 {
			adv += face.Kern(prev, r)
		}
		a, ok := face.GlyphAdvance(r)
		if !ok {
			a, _ = face.GlyphAdvance('\ufffd')
		}
		adv += a
		if adv > limit {
			if i == 0 {
				_, n := utf8.DecodeRuneInString(s)
				return n
			}
			return i
		}
		prev = r
	}
	return len(s)
}

// wrapText breaks s into at most maxLines lines no wider than width. Line breaks in s are kept,
// an empty line separates paragraphs, words longer than a line are broken. When s does not fit,
// the last line ends with an ellipsis.
func wrapText(face *typeface, s string, width, maxLines int) []string {
	if maxLines <= 0 || width <= 0 {
		return nil
	}
	var lines []string
	pendingBlank := false
	full := func() bool { return len(lines) > maxLines }
	add := func(l string) {
		if pendingBlank && len(lines) > 0 {
			lines = append(lines, "")
		}
		pendingBlank = false
		lines = append(lines, l)
	}
paragraphs:
	for _, p := range strings.Split(s, "\n") {
		words := strings.FieldsFunc(p, isSpace)
		if len(words) == 0 {
			pendingBlank = true
			continue
		}
		line := ""
		for _, w := range words {
			if line != "" {
				// A line holds at most a few characters per em of its width (marks take no
				// room): each word added measures (shapes) the whole line again (a review's
				// line of 24,000 marks).
				if cand := line + " " + w; utf8.RuneCountInString(cand) <= maxLineRunes(face, width) && measure(face, cand) <= width {
					line = cand
					continue
				}
				add(line)
				line = ""
				if full() {
					break paragraphs
				}
			}
			for {
				n := fitPrefix(face, w, width)
				if n == len(w) {
					break
				}
				add(w[:n])
				w = w[n:]
				if full() {
					break paragraphs
				}
			}
			line = w
		}
		add(line)
		if full() {
			break
		}
	}
	if len(lines) <= maxLines {
		return lines
	}
	lines = lines[:maxLines]
	for len(lines) > 1 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	lines[len(lines)-1] = ellipsize(face, lines[len(lines)-1], width)
	return lines
}

// ellipsize appends "…" to s, dropping characters from its end until it fits width.
func ellipsize(face *typeface, s string, width int) string {
	const ell = "…"
	const trim = " .,;:…"
	s = strings.TrimRight(s, trim)
	if measure(face, s+ell) <= width {
		return s + ell
	}
	// The longest prefix of whole characters that fits with the ellipsis, by bisection: one
	// character at a time measured (shaped) the line once a character (found by a review).
	ends := clusterEnds(s)
	fits := func(i int) bool { return measure(face, strings.TrimRight(s[:ends[i]], trim)+ell) <= width }
	lo, hi := 0, len(ends)-1 // ends[:lo] fit; ends[hi] (all of s) does not
	for lo < hi {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return ell
	}
	return strings.TrimRight(s[:ends[lo-1]], trim) + ell
}

// displayDate formats an ISO date (WordPress sends 2024-05-01T10:00:00) as "May 1, 2024"; any
// other text is shown as given.
func displayDate(s string) string {
	s = oneLine(s)
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format("January 2, 2006")
		}
	}
	return s
}

// maxLineRunes is the most characters a line of width may hold: 6 an em (the narrowest Latin
// letters are a quarter of an em wide), and 32 more.
func maxLineRunes(face *typeface, width int) int { return 6*width/max(1, int(face.size)) + 32 }
