package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"flipbook/api"
)

// Fuzzing of the public reader routes of a real service (issue 27): the collector (POST
// /collect: the fast path of collectfast.go and the generic path of readArgs, Validate and
// collect) and the email gate (POST /view/{book}/access), whose bodies come from any browser.
// FuzzCollectFastPath (collectfast_test.go) checks that the two collector paths agree; this
// checks what the service answers.

// readerContentTypes are the media types a reader's body is sent with (sendBeacon sends
// text/plain), and some it should not be.
var readerContentTypes = []string{"application/json", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
	"multipart/form-data; boundary=x", ""}

// checkEnvelope fails unless r is a 4xx in the spec's error envelope (§7): error.message and
// error.type, and for a 422 field details whose roots are among fields (when given).
func checkEnvelope(t *testing.T, what string, r *resp, fields ...string) {
	t.Helper()
	if r.Status < 400 || r.Status >= 500 {
		t.Fatalf("%s: status %d: %s", what, r.Status, r.Body)
	}
	e, _ := r.JSON["error"].(map[string]any)
	msg, _ := e["message"].(string)
	typ, _ := e["type"].(string)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || msg == "" || typ == "" {
		t.Fatalf("%s: %d without the error envelope (Content-Type %q): %s", what, r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if r.Status == 422 {
		d := r.details()
		if typ != api.TypeValidation || len(d) == 0 {
			t.Fatalf("%s: 422 without field details: %s", what, r.Body)
		}
		for field := range d {
			root, _, _ := strings.Cut(field, ".")
			if len(fields) > 0 && !api.Contains(fields, root) {
				t.Fatalf("%s: 422 names %q, not a field of the request: %s", what, field, r.Body)
			}
		}
	}
}

// FuzzCollector posts fuzzed bodies to the collector and the email gate. Property: the
// collector answers 202 with the number of events sent, the gate 200 with a reader token, or
// either answers a 4xx in the error envelope whose details name fields of the body; never a
// 5xx.
func FuzzCollector(f *testing.F) {
	h := newHarness(f, nil)
	key := h.workspace(f, "company", "live")
	open := h.konva(f, key, "open book", "publish")
	gated := h.konva(f, key, "gated book", "publish")
	embedded := h.konva(f, key, "embedded book", "publish")
	if r := h.do(f, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": gated, "email": "ann@example.com"}); r.Status != 201 {
		f.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	if r := h.do(f, "POST", "/api/v1/books/"+embedded+"/embed-domains", key, map[string]any{"domain": "blog.example.org"}); r.Status != 200 && r.Status != 201 {
		f.Fatalf("embed domain: %d %s", r.Status, r.Body)
	}
	g := h.do(f, "POST", "/view/"+gated+"/access", "", map[string]any{"email": "ann@example.com", "session_id": "s1"})
	token, _ := g.data()["reader_token"].(string)
	if g.Status != 200 || token == "" {
		f.Fatalf("email gate: %d %s", g.Status, g.Body)
	}
	at := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339Nano)
	for _, s := range []string{
		`{"book_id":"` + open + `","session_id":"s","events":[{"type":"session_started","page_number":1}]}`,
		`{"book_id":"` + open + `","session_id":"s","events":[{"type":"page_segment_completed","page_number":2,"active_ms":5200,"occurred_at":"` + at + `"},` +
			`{"type":"link_clicked","page_number":2,"url":"https://ex.com/p?x=1"},{"type":"session_ended","exit_reason":"closed"}]}`,
		// Shapes the fast path leaves to the generic path: unknown keys, numbers as strings, null.
		`{"book_id":"` + open + `","session_id":"s","unknown":true,"events":[{"type":"session_started","extra":1}]}`,
		`{"events":[{"type":"page_segment_completed","page_number":"3","active_ms":2.0,"occurred_at":null}],"session_id":"s","book_id":"` + open + `"}`,
		`{"book_id":"` + open + `","session_id":"s","events":[{"type":"lead_form_submitted","form":{"name":"Ada","email":"ada@example.com"}}]}`,
		`{"book_id":"` + gated + `","session_id":"s","reader_token":"` + token + `","events":[{"type":"session_started"}]}`,
		`{"book_id":"` + gated + `","session_id":"s","events":[{"type":"session_started"}]}`,
		`{"book_id":"` + embedded + `","session_id":"s","source_host":"Blog.Example.org","tracked_link":"nl","events":[{"type":"session_started"}]}`,
		`{"book_id":"` + embedded + `","session_id":"s","source_host":"evil.example","events":[{"type":"session_started"}]}`,
		`{"book_id":"` + open + `","session_id":"s","events":[{"type":"page_segment_completed","page_number":100000,"active_ms":86400001}]}`,
		`{"book_id":"` + open + `","session_id":"s","events":[{"type":"session_started","occurred_at":"2001-01-01T00:00:00Z"}]}`,
		`{"book_id":"nope","session_id":"s","events":[{"type":"session_started"}]}`,
		`{"book_id":"` + open + `","session_id":"s","events":[]}`,
		`[{"book_id":"` + open + `"}]`,
		`{"book_id":"` + open + `",`,
		``,
	} {
		for ct := range readerContentTypes[:2] {
			f.Add(uint8(ct<<1), []byte(s))
		}
	}
	for _, s := range []string{
		`{"email":"ann@example.com","session_id":"s1"}`, `{"email":"Ann@Example.com "}`, `{"email":"bob@example.com"}`,
		`{"email":"not an address"}`, `{"email":"a@b"}`, `{"email":null}`, `{}`, `[]`,
	} {
		f.Add(uint8(1), []byte(s))
	}
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		ct := readerContentTypes[int(sel>>1)%len(readerContentTypes)]
		if sel&1 == 1 { // the email gate of the gated book
			r := h.do(t, "POST", "/view/"+gated+"/access", "", body, "Content-Type", ct)
			if r.Status == 200 {
				if tok, _ := r.data()["reader_token"].(string); tok == "" {
					t.Fatalf("access granted without a reader token: %s\nbody: %q", r.Body, body)
				}
				return
			}
			checkEnvelope(t, "access "+strings.ReplaceAll(string(body), "\n", " "), r, "book", "email", "session_id")
			return
		}
		r := h.do(t, "POST", "/collect", "", body, "Content-Type", ct)
		if r.Status == 202 {
			var sent struct {
				Events []json.RawMessage `json:"events"`
			}
			accepted, ok := r.data()["accepted"].(float64)
			if !ok {
				t.Fatalf("202 without data.accepted: %s\nbody: %q", r.Body, body)
			}
			if json.Unmarshal(body, &sent) == nil && int(accepted) != len(sent.Events) {
				t.Fatalf("202 accepting %v events of the %d sent\nbody: %q", accepted, len(sent.Events), body)
			}
			return
		}
		checkEnvelope(t, "collect "+strings.ReplaceAll(string(body), "\n", " "), r,
			"book_id", "session_id", "reader_token", "tracked_link", "source_host", "events")
	})
}
