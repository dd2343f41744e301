package convert

import (
	"bytes"
	"encoding/xml"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"flipbook/storage"
)

// The plain form of pdftotext -bbox-layout output, read without encoding/xml: that decoder
// took 0.25-0.3 s for a 200-page brochure's 10 MB (96,000 words), longer than pdftotext
// itself, and most of what keeping the text cost a conversion. parseBBoxFast reads the form
// pdftotext prints (tags one after another, numeric attributes, words of text and the five
// entities); on anything else it gives up with errSlowPath and the whole output goes to
// parseBBoxLayout, so errors and odd documents are read exactly as before.

// errSlowPath: the output is not in the plain form parseBBoxFast reads.
var errSlowPath = errors.New("convert: not the plain bbox-layout form")

// parseBBoxFast is parseBBoxLayout for the plain form, reading out as pdftotext printed it
// (xmlSafe is applied to word texts that need it).
func parseBBoxFast(out []byte, boxes []PageBox) ([]storage.PageText, error) {
	p := &bboxParser{boxes: boxes, pages: make([]storage.PageText, len(boxes)), open: -1}
	for i := range p.pages {
		p.pages[i] = storage.PageText{Page: i + 1, Source: storage.TextFromPDF, Words: []storage.Word{}}
	}
	for i := 0; ; {
		j := bytes.IndexByte(out[i:], '<')
		if j < 0 {
			break
		}
		i += j
		end := bboxTagEnd(out, i)
		if end < 0 {
			return nil, errSlowPath
		}
		tag := out[i+1 : end]
		i = end + 1
		if len(tag) == 0 {
			return nil, errSlowPath
		}
		var err error
		switch tag[0] {
		case '!', '?': // the doctype
		case '/':
			if string(tag[1:]) == "page" && p.open >= 0 {
				p.pages[p.open].Text = p.text.b.String()
				p.open = -1
			}
		default:
			i, err = p.fastStart(out, i, tag)
		}
		if err != nil {
			return nil, err
		}
	}
	if p.open >= 0 {
		return nil, errSlowPath
	}
	return p.pages, nil
}

// fastStart handles a start tag ending at i (reading a word's text and end tag) and returns
// where reading goes on.
func (p *bboxParser) fastStart(out []byte, i int, tag []byte) (int, error) {
	name, attrs, _ := bytes.Cut(tag, []byte{' '})
	switch string(name) {
	case "page":
		t := xml.StartElement{Name: xml.Name{Local: "page"}}
		if !fastAttrs(attrs, func(k, v string) { t.Attr = append(t.Attr, xml.Attr{Name: xml.Name{Local: k}, Value: v}) }) {
			return 0, errSlowPath
		}
		if p.open >= 0 || p.seen >= len(p.pages) {
			return 0, errSlowPath
		}
		if _, _, err := pageSize(t, p.boxes[p.seen]); err != nil {
			return 0, errSlowPath
		}
		return i, p.start(nil, t)
	case "flow", "block", "line":
		return i, p.start(nil, xml.StartElement{Name: xml.Name{Local: string(name)}})
	case "word":
	default:
		return i, nil // html, head, title, meta, body, doc
	}
	k := bytes.Index(out[i:], []byte("</word>"))
	if p.open < 0 || k < 0 || bytes.HasSuffix(tag, []byte{'/'}) {
		return 0, errSlowPath
	}
	raw := out[i : i+k]
	text, ok := wordText(raw)
	var c [4]float64
	n := 0
	ok = ok && fastAttrs(attrs, func(key, v string) {
		if x := coordIndex(key); x >= 0 {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				c[x] = f
				n++
			}
		}
	})
	if !ok || n != 4 {
		return 0, errSlowPath
	}
	p.addWord(wordAt(text, c, p.w, p.h))
	return i + k + len("</word>"), nil
}

// coordIndex is the index of a word's coordinate attribute in [xMin yMin xMax yMax], or -1.
func coordIndex(name string) int {
	switch name {
	case "xMin":
		return 0
	case "yMin":
		return 1
	case "xMax":
		return 2
	case "yMax":
		return 3
	}
	return -1
}

// entities are the five XML predefined entities.
var entities = [...]struct{ name, text string }{
	{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", `"`}, {"&apos;", "'"},
}

// addWord adds a word to the open page (at most MaxPageWords).
func (p *bboxParser) addWord(word storage.Word) {
	pg := &p.pages[p.open]
	switch {
	case word.Text == "":
	case len(pg.Words) >= MaxPageWords:
		pg.Problem = tooManyWords
	default:
		pg.Words = append(pg.Words, word)
		p.text.word(word.Text)
	}
}

// wordAt is the word text with its box c (xMin, yMin, xMax, yMax in points) on a page of w×h.
func wordAt(text string, c [4]float64, w, h float64) storage.Word {
	x0, x1 := fraction(math.Min(c[0], c[2]), w), fraction(math.Max(c[0], c[2]), w)
	y0, y1 := fraction(math.Min(c[1], c[3]), h), fraction(math.Max(c[1], c[3]), h)
	return storage.Word{Text: strings.TrimSpace(text), X: x0, Y: y0, W: round4(x1 - x0), H: round4(y1 - y0)}
}

// bboxTagEnd is the index of the '>' closing the tag that starts at out[i] ('<'), outside quoted
// attribute values; -1 when there is none.
func bboxTagEnd(out []byte, i int) int {
	var quote byte
	for j := i + 1; j < len(out); j++ {
		switch c := out[j]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '<':
			return -1
		case c == '>':
			return j
		}
	}
	return -1
}

// fastAttrs calls f with each name="value" of a start tag's attributes; false when they are
// not in that plain form (or a value has an entity).
func fastAttrs(attrs []byte, f func(name, value string)) bool {
	s := strings.TrimSpace(strings.TrimSuffix(string(attrs), "/"))
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return false
		}
		end := strings.IndexByte(s[eq+2:], '"')
		if end < 0 {
			return false
		}
		v := s[eq+2 : eq+2+end]
		if strings.ContainsRune(v, '&') {
			return false
		}
		f(strings.TrimSpace(s[:eq]), v)
		s = strings.TrimSpace(s[eq+2+end+1:])
	}
	return true
}

// wordText decodes a word's text: the five predefined entities, what xmlSafe replaces; false
// for anything else (a numeric entity, a tag inside).
func wordText(raw []byte) (string, bool) {
	plain := true
	for _, c := range raw {
		if c == '&' || c == '<' || c < 0x20 || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(raw), true
	}
	if bytes.IndexByte(raw, '<') >= 0 {
		return "", false
	}
	s := string(xmlSafe(raw))
	if !strings.Contains(s, "&") {
		return s, true
	}
	var b strings.Builder
	for s != "" {
		amp := strings.IndexByte(s, '&')
		if amp < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:amp])
		s = s[amp:]
		ent, ok := "", false
		for _, e := range entities {
			if strings.HasPrefix(s, e.name) {
				ent, ok = e.name, true
				b.WriteString(e.text)
				break
			}
		}
		if !ok {
			return "", false
		}
		s = s[len(ent):]
	}
	return b.String(), true
}
