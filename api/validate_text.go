package api

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Text hygiene (issue 25, docs/DECISIONS.md "Input hygiene"): what a string parameter may hold
// besides being valid UTF-8 within its length.
//
// Every string is one of two kinds:
//
//   - a line (the default: titles, names, slugs, secrets, URLs, ids, filters): no control
//     character at all (C0 U+0000–U+001F including tab and line breaks, DEL U+007F, C1
//     U+0080–U+009F, the line and paragraph separators U+2028/U+2029), no bidirectional
//     embedding, override or isolate (U+202A–U+202E, U+2066–U+2069: they make a name read
//     differently from what it is, "Trojan source"), and no U+FFFD;
//   - free text (Param.Multiline: descriptions, contents, excerpts, about_brand, magic-link
//     messages): tab, line feed and carriage return, and the bidirectional controls (right-to-left
//     authoring uses them), are allowed; the other control characters and U+FFFD are not.
//
// U+FFFD is refused everywhere because it is what a JSON decoder makes of an unpaired surrogate
// escape ("\ud800"): the value the client sent is not text, and storing the replacement would
// store something else than what was sent. The bidi marks U+200E, U+200F and U+061C stay allowed.
//
// Free-form values (metadata, product payloads, webhook sample payloads: KAny and objects without
// declared properties) are data, not text: they are stored as given and escaped where shown.

// Lines marks a string parameter as free text (tab, line breaks and bidi controls allowed).
func (p Param) Lines() Param { p.Multiline = true; return p }

// textProblem is why s is not acceptable text of its kind, "" when it is.
func textProblem(s string, multiline bool) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if msg := runeProblem(r, multiline); msg != "" {
			return msg
		}
		i += n
	}
	return ""
}

// LineOK reports whether b (valid UTF-8) is acceptable as a line: the collector's fast path
// (httpapi/collectfast.go) holds its strings to the same rule as Validate.
func LineOK(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if runeProblem(r, false) != "" {
			return false
		}
		i += n
	}
	return true
}

// runeProblem is why r may not appear in text of its kind, "" when it may.
func runeProblem(r rune, multiline bool) string {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		if multiline {
			return ""
		}
		return fmt.Sprintf("must be a single line: no tabs or line breaks (found U+%04X)", r)
	case r < 0x20 || r >= 0x7f && r <= 0x9f:
		return fmt.Sprintf("must not contain control characters (found U+%04X)", r)
	case r == 0x2028 || r == 0x2029:
		if multiline {
			return ""
		}
		return fmt.Sprintf("must be a single line: no tabs or line breaks (found U+%04X)", r)
	case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
		if multiline {
			return ""
		}
		return fmt.Sprintf("must not contain bidirectional override or isolate characters (found U+%04X)", r)
	case r == utf8.RuneError:
		return `must not contain U+FFFD or unpaired surrogate escapes (\ud800-\udfff)`
	}
	return ""
}

// Background is the syntax of a book's background setting (Format "background"): a CSS colour
// (#rgb, #rgba, #rrggbb, #rrggbbaa; rgb(), rgba(), hsl(), hsla() of numbers; a CSS named colour)
// or an absolute http or https URL of an image that can stand in CSS url() unquoted (no spaces,
// quotes, parentheses or backslashes). Anything else is a 422.
func backgroundProblem(s string) string {
	if cssColor(s) || backgroundURL(s) {
		return ""
	}
	return "must be a CSS colour (#1a2b3c, rgb(10, 20, 30), a colour name) or an http or https image URL"
}

// cssColor reports whether s is a colour in one of the forms backgroundProblem names.
func cssColor(s string) bool {
	if h, ok := strings.CutPrefix(s, "#"); ok {
		switch len(h) {
		case 3, 4, 6, 8:
		default:
			return false
		}
		for i := 0; i < len(h); i++ {
			c := h[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	l := strings.ToLower(s)
	for _, fn := range []string{"rgb(", "rgba(", "hsl(", "hsla("} {
		if args, ok := strings.CutPrefix(l, fn); ok {
			args, ok = strings.CutSuffix(args, ")")
			if !ok || len(args) > 64 || strings.TrimSpace(args) == "" {
				return false
			}
			for i := 0; i < len(args); i++ {
				c := args[i]
				if !(c >= '0' && c <= '9' || c == '.' || c == ',' || c == ' ' || c == '%' || c == '/' || c == '-' ||
					c == 'd' || c == 'e' || c == 'g') { // deg
					return false
				}
			}
			return true
		}
	}
	return cssNamedColors[l]
}

// backgroundURL reports whether s is an absolute http(s) URL safe inside CSS url().
func backgroundURL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f || strings.IndexByte("\"'()\\<>`", c) >= 0 {
			return false
		}
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// cssNamedColors are CSS Color 4's named colours plus transparent.
var cssNamedColors = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`transparent aliceblue antiquewhite aqua aquamarine azure beige
	bisque black blanchedalmond blue blueviolet brown burlywood cadetblue chartreuse chocolate coral
	cornflowerblue cornsilk crimson cyan darkblue darkcyan darkgoldenrod darkgray darkgreen darkgrey
	darkkhaki darkmagenta darkolivegreen darkorange darkorchid darkred darksalmon darkseagreen
	darkslateblue darkslategray darkslategrey darkturquoise darkviolet deeppink deepskyblue dimgray
	dimgrey dodgerblue firebrick floralwhite forestgreen fuchsia gainsboro ghostwhite gold goldenrod
	gray green greenyellow grey honeydew hotpink indianred indigo ivory khaki lavender lavenderblush
	lawngreen lemonchiffon lightblue lightcoral lightcyan lightgoldenrodyellow lightgray lightgreen
	lightgrey lightpink lightsalmon lightseagreen lightskyblue lightslategray lightslategrey
	lightsteelblue lightyellow lime limegreen linen magenta maroon mediumaquamarine mediumblue
	mediumorchid mediumpurple mediumseagreen mediumslateblue mediumspringgreen mediumturquoise
	mediumvioletred midnightblue mintcream mistyrose moccasin navajowhite navy oldlace olive
	olivedrab orange orangered orchid palegoldenrod palegreen paleturquoise palevioletred papayawhip
	peachpuff peru pink plum powderblue purple rebeccapurple red rosybrown royalblue saddlebrown
	salmon sandybrown seagreen seashell sienna silver skyblue slateblue slategray slategrey snow
	springgreen steelblue tan teal thistle tomato turquoise violet wheat white whitesmoke yellow
	yellowgreen`) {
		m[n] = true
	}
	return m
}()
