package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/internal/testutil"
)

// Fuzzing of the opaque list cursors (issue 27): the codec (cursor.go) and the payloads of the
// readers and keyset cursors as pure functions, and the cursor parameter of the list
// operations through a real service.

// FuzzCursorCodec: a cursor decodes, with its binding, to the payload it was made of; with any
// other binding, or with any byte of it changed, it is refused; whatever string is decoded
// instead, decode either refuses it or it is exactly a cursor encode makes.
func FuzzCursorCodec(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef"), "books|1|l|-created_at||", []byte("\x00\x00\x00\x01"), "books|1|l|name||", uint16(3), "AQID")
	f.Add([]byte("k"), "cat/1live", []byte{0, 0, 0, 0, 0, 0, 0, 9}, "cat/2live", uint16(0), "")
	f.Add([]byte{}, "", []byte{}, "x", uint16(0xffff), "AZZZZZZZZZZZZZZZZZZZZZZZ")
	f.Add([]byte("secret"), "readers|recent|false", readersCursor(42, analytics.ReaderPosition{Value: -7, Key: "v:ada@example.com"}),
		"readers|engagement|false", uint16(17), "AQAAAAAAAAAqAAAAAAAAAAE")
	f.Fuzz(func(t *testing.T, key []byte, binding string, payload []byte, other string, flip uint16, random string) {
		c := &cursors{key: key}
		s := c.encode(binding, payload)
		got, err := c.decode(binding, s)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("decode(encode(%q)) = %q, %v", payload, got, err)
		}
		if other != binding {
			if _, err := c.decode(other, s); err == nil {
				t.Fatalf("a cursor of %q is accepted for %q", binding, other)
			}
		}
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("encode made %q, not base64url: %v", s, err)
		}
		raw[int(flip)%len(raw)] ^= byte(flip>>8) | 1
		tampered := base64.RawURLEncoding.EncodeToString(raw)
		if p, err := c.decode(binding, tampered); err == nil {
			t.Fatalf("a tampered cursor %q (of %q) is accepted: payload %q", tampered, s, p)
		}
		if p, err := c.decode(binding, random); err == nil {
			b, _ := base64.RawURLEncoding.DecodeString(random)
			again, _ := base64.RawURLEncoding.DecodeString(c.encode(binding, p))
			if !bytes.Equal(b, again) {
				t.Fatalf("decode accepts %q, which is not a cursor encode makes (payload %q)", random, p)
			}
		}
	})
}

// FuzzCursorPayloads: the readers cursor's and the keyset's payloads round-trip, and their
// decoders accept exactly the byte strings their encoders make.
func FuzzCursorPayloads(f *testing.F) {
	f.Add(int64(42), int64(-7), "v:ada@example.com", []byte("\x00\x00\x00\x00\x00\x00\x00\x2a\xff\xff\xff\xff\xff\xff\xff\xf9v:1"))
	f.Add(int64(-1), int64(1<<62), "", []byte{})
	f.Add(int64(time.Now().UnixMicro()), int64(9), "s:sess-1", make([]byte, 16))
	f.Fuzz(func(t *testing.T, snapshot, value int64, key string, raw []byte) {
		pos := analytics.ReaderPosition{Value: value, Key: key}
		snap2, pos2, ok := readersCursorFrom(readersCursor(snapshot, pos))
		if key != "" && (!ok || snap2 != snapshot || pos2 != pos) {
			t.Fatalf("readers cursor (%d, %+v) reads back as (%d, %+v, %v)", snapshot, pos, snap2, pos2, ok)
		}
		if s, p, ok := readersCursorFrom(raw); ok && !bytes.Equal(readersCursor(s, p), raw) {
			t.Fatalf("readersCursorFrom(%x) = (%d, %+v), which encodes as %x", raw, s, p, readersCursor(s, p))
		}
		k := keyset{at: time.UnixMicro(value).UTC(), id: snapshot}
		k2, ok := keysetFrom(k.bytes())
		if !ok || !k2.at.Equal(k.at) || k2.id != k.id {
			t.Fatalf("keyset (%s, %d) reads back as (%s, %d, %v)", k.at, k.id, k2.at, k2.id, ok)
		}
		if k, ok := keysetFrom(raw); ok != (len(raw) == 16) || ok && !bytes.Equal(k.bytes(), raw) {
			t.Fatalf("keysetFrom(%x) = (%s, %d, %v)", raw, k.at, k.id, ok)
		}
	})
}

// cursorList is a list operation whose cursor is fuzzed: the path with its other query values
// (limit=1, so that every list of the setup has a second page).
type cursorList struct {
	name, path string
	valid      []string // cursors the service issued for this query (page 2, page 3)
	pages      []string // the id of the first row of the page each valid cursor opens (JSON)
}

// FuzzListCursor: the cursor parameter of six list operations of a real service. A cursor the
// service issued for the query opens the page it was issued for; any other string (another
// list's cursor, a changed one, garbage, an over-long one) is a 422 naming cursor in the
// spec's envelope; no cursor is the first page. Never a 5xx.
func FuzzListCursor(f *testing.F) {
	h := newHarness(f, func(c *Config) { c.AllowPrivateTargets = true })
	key := h.workspace(f, "company", "live")
	rid := h.konva(f, key, "first", "publish")
	h.konva(f, key, "second", "draft")
	h.konva(f, key, "third", "draft")
	var catID int64
	for i := 0; i < 3; i++ {
		r := h.do(f, "POST", "/api/v1/catalogs", key, map[string]any{"name": "Shop " + itoa(int64(i)),
			"items": []any{fzProduct("p1", "Mug"), fzProduct("p2", "Cap"), fzProduct("p3", "Shirt")}})
		if r.Status != 202 {
			f.Fatalf("catalog: %d %s", r.Status, r.Body)
		}
		catID = fzNum(r.data()["catalog"].(map[string]any)["id"])
	}
	w := h.do(f, "POST", "/api/v1/webhook-subscriptions", key, map[string]any{"name": "crm", "provider": "generic",
		"target_url": "http://127.0.0.1:9/hook", "event_types": []string{"flipbook_opened"}})
	if w.Status != 201 {
		f.Fatalf("webhook: %d %s", w.Status, w.Body)
	}
	sub := fzNum(w.data()["id"])
	for i := 0; i < 3; i++ {
		if r := h.do(f, "POST", "/api/v1/webhook-subscriptions/"+itoa(sub)+"/test", key, map[string]any{}); r.Status != 202 {
			f.Fatalf("test delivery: %d %s", r.Status, r.Body)
		}
	}
	for i, s := range []string{"sess-a", "sess-b", "sess-c"} {
		body := map[string]any{"book_id": rid, "session_id": s, "events": []any{
			map[string]any{"type": "session_started", "page_number": 1},
			map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 1000 * (i + 1)}}}
		if r := h.do(f, "POST", "/collect", "", body); r.Status != 202 {
			f.Fatalf("collect: %d %s", r.Status, r.Body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.svc.consumer.WaitCaughtUp(ctx); err != nil {
		f.Fatal(err)
	}
	lists := []*cursorList{
		{name: "books", path: "/api/v1/books?limit=1"},
		{name: "catalogs", path: "/api/v1/catalogs?limit=1"},
		{name: "catalog items", path: "/api/v1/catalogs/" + itoa(catID) + "/items?limit=1"},
		{name: "deliveries", path: "/api/v1/webhook-subscriptions/" + itoa(sub) + "/deliveries?limit=1"},
		{name: "readers", path: "/api/v1/analytics/readers?book_id=" + rid + "&include_anonymous=true&limit=1"},
		{name: "view events", path: "/api/v1/analytics/book-view-events?book_id=" + rid + "&limit=1"},
	}
	// firstRow names the first row of a page by its id (a delivery's other fields change as
	// it is retried).
	firstRow := func(tb testing.TB, r *resp) string {
		if len(r.list()) == 0 {
			tb.Fatalf("an empty page: %s", r.Body)
		}
		row, _ := r.list()[0].(map[string]any)
		b, _ := json.Marshal(row["id"])
		return string(b)
	}
	for _, l := range lists {
		var r *resp
		testutil.Eventually(f, 20*time.Second, 20*time.Millisecond, func() error {
			r = h.do(f, "GET", l.path, key, nil)
			if r.Status != 200 || r.meta()["next_cursor"] == nil {
				return fmt.Errorf("%s has no second page: %d %s", l.name, r.Status, r.Body)
			}
			return nil
		})
		for page := 0; page < 2; page++ {
			c, _ := r.meta()["next_cursor"].(string)
			if c == "" {
				break
			}
			r = h.do(f, "GET", l.path+"&cursor="+url.QueryEscape(c), key, nil)
			if r.Status != 200 {
				f.Fatalf("%s: its own cursor: %d %s", l.name, r.Status, r.Body)
			}
			l.valid, l.pages = append(l.valid, c), append(l.pages, firstRow(f, r))
		}
	}
	for i, l := range lists {
		for _, c := range l.valid {
			f.Add(uint8(i), c)
			f.Add(uint8(i+1), c) // another list's cursor
			f.Add(uint8(i), c[:len(c)-1])
			f.Add(uint8(i), c+"A")
		}
	}
	f.Add(uint8(0), "")
	f.Add(uint8(1), "not a cursor")
	f.Add(uint8(4), "AQAAAAAAAAAqAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add(uint8(5), "%%%")
	f.Fuzz(func(t *testing.T, sel uint8, cursor string) {
		l := lists[int(sel)%len(lists)]
		r := h.do(t, "GET", l.path+"&cursor="+url.QueryEscape(cursor), key, nil)
		if r.Status >= 500 {
			t.Fatalf("%s: cursor %q: %d %s", l.name, cursor, r.Status, r.Body)
		}
		want := -1 // the valid cursor this one is (the same bytes, as base64url decodes them)
		if b, err := base64.RawURLEncoding.DecodeString(cursor); err == nil {
			for i, c := range l.valid {
				if vb, _ := base64.RawURLEncoding.DecodeString(c); bytes.Equal(b, vb) {
					want = i
				}
			}
		}
		switch {
		case cursor == "":
			if r.Status != 200 {
				t.Fatalf("%s: without a cursor: %d %s", l.name, r.Status, r.Body)
			}
		case want >= 0:
			if r.Status != 200 {
				t.Fatalf("%s: a cursor the service issued (%q) is refused: %d %s", l.name, cursor, r.Status, r.Body)
			}
			if got := firstRow(t, r); got != l.pages[want] {
				t.Fatalf("%s: cursor %q opens a page starting with row %s, not the page it was issued for (row %s)", l.name, cursor, got, l.pages[want])
			}
		default:
			if msgs, _ := r.details()["cursor"].([]any); r.Status != 422 || r.errType() != api.TypeValidation || len(msgs) == 0 {
				t.Fatalf("%s: cursor %q: %d %s, want a 422 naming cursor", l.name, cursor, r.Status, r.Body)
			}
		}
	})
}

// fzProduct is a catalog product entry.
func fzProduct(id, title string) map[string]any {
	return map[string]any{"external_product_id": id, "title": title, "price": "10.00", "currency": "EUR"}
}

// fzNum is a JSON number of a decoded answer as an integer.
func fzNum(v any) int64 { f, _ := v.(float64); return int64(f) }
