package httpapi

import (
	"strings"
	"time"
	"unicode/utf8"

	"flipbook/api"
	"flipbook/ingest"
)

// The collector's fast path: a collector batch is the body this service sees most (every
// viewer posts one every few seconds), and decoding it into generic maps and validating
// those (parseRequest) was 10% of the service's CPU in the ingest benchmark. fastCollect
// reads the common shape straight into collectEvents: an object with the collector's keys,
// strings without escapes, integers without fraction or exponent, no null, no unknown or
// repeated key, no lead form, every value within the limits of collectParams. Anything else,
// valid or not, returns ok=false and the request takes the generic path, which accepts and
// rejects exactly as before and reports every error; so the fast path only ever accepts
// what the generic path accepts, with the same values (TestCollectFastPathAgrees).

// collectEvent is one validated event of a collector batch, from either path.
type collectEvent struct {
	typ         string
	page        int64 // 0: not given
	activeMs    int64
	hasActiveMs bool
	at          time.Time
	hasAt       bool // occurred_at was given (a zero time given is out of range, not absent)
	url, exit   string
	form        map[string]any
	// x, y and zoom: where a page_clicked event's click was (the generic path only).
	x, y, zoom float64
	hasXY      bool
}

// collectEventOf reads an event validated by the generic path (checkValue's typed map).
func collectEventOf(m map[string]any) collectEvent {
	var e collectEvent
	e.typ, _ = m["type"].(string)
	e.page, _ = m["page_number"].(int64)
	var ms any
	ms, e.hasActiveMs = m["active_ms"]
	e.activeMs, _ = ms.(int64)
	e.at, e.hasAt = m["occurred_at"].(time.Time)
	e.url, _ = m["url"].(string)
	e.exit, _ = m["exit_reason"].(string)
	e.form, _ = m["form"].(map[string]any)
	x, okX := m["x"].(float64)
	y, okY := m["y"].(float64)
	e.x, e.y, e.hasXY = x, y, okX && okY
	e.zoom, _ = m["zoom"].(float64)
	return e
}

// collectEvents returns the events of a collector request from either path.
func collectEvents(r *api.Request) []collectEvent {
	switch evs := r.Params["events"].(type) {
	case []collectEvent:
		return evs
	case []any:
		out := make([]collectEvent, len(evs))
		for i, item := range evs {
			out[i] = collectEventOf(item.(map[string]any))
		}
		return out
	}
	return nil
}

// fastCollect decodes and validates a collector body of the common shape (see above).
func fastCollect(body []byte) (map[string]any, bool) {
	p := jsonScan{b: body}
	params := make(map[string]any, 4)
	var seen uint8
	if !p.next('{') {
		return nil, false
	}
	if p.peek() == '}' {
		return nil, false
	}
	for {
		key, ok := p.str()
		if !ok || !p.next(':') {
			return nil, false
		}
		var bit uint8
		var max int
		var name string
		switch string(key) {
		case "book_id":
			bit, max, name = 1, maxCollectBookID, "book_id"
		case "session_id":
			bit, max, name = 2, maxCollectSessionID, "session_id"
		case "reader_token":
			bit, max, name = 4, maxCollectReaderToken, "reader_token"
		case "tracked_link":
			bit, max, name = 8, maxCollectLinkSlug, "tracked_link"
		case "source_host":
			bit, max, name = 16, maxCollectSourceHost, "source_host"
		case "events":
			bit = 32
		default:
			return nil, false
		}
		if seen&bit != 0 {
			return nil, false
		}
		seen |= bit
		if bit == 32 {
			evs, ok := p.events()
			if !ok {
				return nil, false
			}
			params["events"] = evs
		} else {
			v, ok := p.str()
			if !ok || !fastString(v, max) {
				return nil, false
			}
			s := string(v)
			if (bit == 1 || bit == 2) && strings.TrimSpace(s) == "" { // required
				return nil, false
			}
			params[name] = s
		}
		if p.next(',') {
			continue
		}
		if !p.next('}') {
			return nil, false
		}
		break
	}
	p.ws()
	if p.i != len(p.b) || seen&(1|2|32) != 1|2|32 {
		return nil, false
	}
	return params, true
}

// fastString reports whether a JSON string's content (no escapes) is a valid string of at
// most max characters.
func fastString(v []byte, max int) bool {
	if !utf8.Valid(v) || !api.LineOK(v) {
		return false
	}
	return len(v) <= max || utf8.RuneCount(v) <= max
}

// events reads the events array.
func (p *jsonScan) events() ([]collectEvent, bool) {
	if !p.next('[') {
		return nil, false
	}
	evs := make([]collectEvent, 0, 64)
	if p.peek() == ']' {
		return nil, false // at least one event
	}
	for {
		e, ok := p.event()
		if !ok || len(evs) == MaxCollectEvents {
			return nil, false
		}
		evs = append(evs, e)
		if p.next(',') {
			continue
		}
		if !p.next(']') {
			return nil, false
		}
		return evs, true
	}
}

// event reads one event object.
func (p *jsonScan) event() (collectEvent, bool) {
	var e collectEvent
	if !p.next('{') || p.peek() == '}' {
		return e, false
	}
	var seen uint8
	for {
		key, ok := p.str()
		if !ok || !p.next(':') {
			return e, false
		}
		var bit uint8
		switch string(key) {
		case "type":
			bit = 1
			v, ok := p.str()
			if !ok {
				return e, false
			}
			for _, t := range ingest.InteractionTypes {
				if string(v) == t {
					e.typ = t
					break
				}
			}
			if e.typ == "" {
				return e, false
			}
		case "page_number":
			bit = 2
			n, ok := p.int()
			if !ok || n < 1 || n > maxCollectPage {
				return e, false
			}
			e.page = n
		case "active_ms":
			bit = 4
			n, ok := p.int()
			if !ok || n < 0 || n > MaxActiveMs {
				return e, false
			}
			e.activeMs, e.hasActiveMs = n, true
		case "occurred_at":
			bit = 8
			v, ok := p.str()
			if !ok {
				return e, false
			}
			t, err := time.Parse(time.RFC3339Nano, string(v))
			if err != nil {
				return e, false
			}
			e.at, e.hasAt = t.UTC(), true
		case "url":
			bit = 16
			v, ok := p.str()
			if !ok || !fastString(v, maxCollectURL) {
				return e, false
			}
			e.url = string(v)
		case "exit_reason":
			bit = 32
			v, ok := p.str()
			if !ok || !fastString(v, maxCollectExitReason) {
				return e, false
			}
			e.exit = string(v)
		default: // form (a lead form) and unknown keys: the generic path
			return e, false
		}
		if seen&bit != 0 {
			return e, false
		}
		seen |= bit
		if p.next(',') {
			continue
		}
		if !p.next('}') || seen&1 == 0 {
			return e, false
		}
		return e, true
	}
}

// jsonScan reads the strict subset of JSON the fast path takes.
type jsonScan struct {
	b []byte
	i int
}

func (p *jsonScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace (0 at the end).
func (p *jsonScan) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// next consumes c (after whitespace) if it comes next.
func (p *jsonScan) next(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// str reads a string without escapes and returns its content (a slice of the body).
func (p *jsonScan) str() ([]byte, bool) {
	if !p.next('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// int reads an integer written without fraction or exponent, of at most 15 digits.
func (p *jsonScan) int() (int64, bool) {
	p.ws()
	neg := false
	if p.i < len(p.b) && p.b[p.i] == '-' {
		neg = true
		p.i++
	}
	start := p.i
	var n int64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		n = n*10 + int64(p.b[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || digits > 15 || (digits > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, true
}
