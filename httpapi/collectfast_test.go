package httpapi

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"flipbook/api"
)

// genericCollect is what the generic path makes of a collector body: ok when it accepts it.
func genericCollect(body []byte) (map[string]any, bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, false
	}
	var v any
	if err := reqJSON.Unmarshal(body, &v); err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	params, err := api.Validate(collectParams(), &api.Args{Body: m})
	return params, err == nil
}

// checkAgrees fails when the fast path accepts a body the generic path refuses or reads
// differently.
func checkAgrees(t *testing.T, body []byte) (fast bool) {
	t.Helper()
	fp, ok := fastCollect(body)
	if !ok {
		return false
	}
	gp, gok := genericCollect(body)
	if !gok {
		t.Fatalf("the fast path accepts what the generic path refuses: %s", body)
	}
	fe := collectEvents(&api.Request{Params: fp})
	ge := collectEvents(&api.Request{Params: gp})
	if !reflect.DeepEqual(fe, ge) {
		t.Fatalf("events differ for %s:\nfast    %+v\ngeneric %+v", body, fe, ge)
	}
	delete(fp, "events")
	delete(gp, "events")
	if !reflect.DeepEqual(fp, gp) {
		t.Fatalf("params differ for %s:\nfast    %v\ngeneric %v", body, fp, gp)
	}
	return true
}

var collectSeeds = []string{
	string(collectBenchBody("abcdefghijkl", 3)),
	string(collectBenchBody("abcdefghijkl", 60)),
	`{"book_id":"b1","session_id":"s","events":[{"type":"session_started"}]}`,
	` { "events" : [ { "type" : "session_ended" , "exit_reason" : "closed" } ] , "session_id" : "s" , "book_id" : "b" } `,
	`{"book_id":"b","session_id":"s","reader_token":"tok","tracked_link":"sl","source_host":"blog.example.org",` +
		`"events":[{"type":"page_segment_completed","page_number":100000,"active_ms":86400000,"occurred_at":"2026-11-22T10:00:00.123+02:00"}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"page_segment_completed","page_number":1,"active_ms":0}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"link_clicked","url":"https://ex.com/ä?x=1"}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"lead_form_submitted","form":{"name":"Ada"}}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"page_segment_completed","page_number":"3","active_ms":2.0}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started","occurred_at":null}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started","extra":1}]}`,
	`{"book_id":"b","book_id":"c","session_id":"s","events":[{"type":"session_started"}]}`,
	`{"book_id":"b\u00e9","session_id":"s","events":[{"type":"session_started"}]}`,
	`{"book_id":" ","session_id":"s","events":[{"type":"session_started"}]}`,
	`{"book_id":"b","session_id":"s","events":[]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started","page_number":0}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started","active_ms":-1}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started","active_ms":-0}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started","page_number":007}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started","page_number":1e2}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"Session_Started"}]}`,
	`{"Book_ID":"b","session_id":"s","events":[{"type":"session_started"}]}`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started"}]} trailing`,
	`{"book_id":"b","session_id":"s","events":[{"type":"session_started"}],}`,
}

// TestCollectFastPathAgrees: whatever body the fast path accepts, the generic path accepts
// with the same values: the seeds (common shapes, edge values, shapes the fast path leaves to
// the generic path) and many random mutations of them.
func TestCollectFastPathAgrees(t *testing.T) {
	t.Parallel()
	long := `{"book_id":"b","session_id":"` + strings.Repeat("é", 255) + `","events":[{"type":"link_clicked","url":"` +
		strings.Repeat("ü", 2048) + `"}]}`
	tooLong := `{"book_id":"b","session_id":"` + strings.Repeat("é", 256) + `","events":[{"type":"session_started"}]}`
	many := `{"book_id":"b","session_id":"s","events":[` + strings.Repeat(`{"type":"session_started"},`, 499) + `{"type":"session_started"}]}`
	tooMany := `{"book_id":"b","session_id":"s","events":[` + strings.Repeat(`{"type":"session_started"},`, 500) + `{"type":"session_started"}]}`
	seeds := append(append([]string(nil), collectSeeds...), long, tooLong, many, tooMany)
	fast := 0
	for _, s := range seeds {
		if checkAgrees(t, []byte(s)) {
			fast++
		}
	}
	for _, s := range []string{collectSeeds[0], collectSeeds[1], collectSeeds[3], collectSeeds[4], long, many} {
		if _, ok := fastCollect([]byte(s)); !ok {
			t.Errorf("the fast path refuses a common body: %.200s", s)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "{}[]\":, \n\\0123456789-+.eE_abcdnlrstuétypagenumbrcivmsoxh\x00\xff"
	mutated := 0
	for i := 0; i < 40000; i++ {
		b := []byte(seeds[rng.IntN(len(seeds))])
		for k := 1 + rng.IntN(3); k > 0 && len(b) > 0; k-- {
			j := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b[j] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = append(b[:j], b[j+1:]...)
			default:
				b = append(b[:j], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[j:]...)...)
			}
		}
		if checkAgrees(t, b) {
			mutated++
		}
	}
	t.Logf("fast path took %d of %d seeds and %d of 40000 mutations", fast, len(seeds), mutated)
}

// FuzzCollectFastPath is TestCollectFastPathAgrees for go test -fuzz.
func FuzzCollectFastPath(f *testing.F) {
	for _, s := range collectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkAgrees(t, body) })
}

// TestCollectorFastPathStoresTheSame: a batch through the fast path and the same batch with
// a shape the fast path leaves to the generic path (an unknown key) store the same events.
func TestCollectorFastPathStoresTheSame(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "read me", "publish")
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond).Format(time.RFC3339Nano)
	body := `{"book_id":"` + rid + `","session_id":"s1","events":[{"type":"session_started","page_number":1,"occurred_at":"` + at + `"},` +
		`{"type":"page_segment_completed","page_number":2,"active_ms":5200},{"type":"link_clicked","page_number":2,"url":"https://ex.com/p"},` +
		`{"type":"session_ended","exit_reason":"closed"}]}`
	_, ok := fastCollect([]byte(body))
	require := func(c bool, f string, a ...any) {
		t.Helper()
		if !c {
			t.Fatalf(f, a...)
		}
	}
	require(ok, "the fast path takes %s", body)
	slow := strings.Replace(body, `"session_id":"s1"`, `"session_id":"s2","unknown":true`, 1)
	_, ok = fastCollect([]byte(slow))
	require(!ok, "the fast path leaves unknown keys to the generic path")
	for _, b := range []string{body, slow} {
		r := h.do(t, "POST", "/collect", "", b)
		require(r.Status == 202, "status %d: %s", r.Status, r.Body)
	}
	evs := h.logged(t)
	require(len(evs) == 8, "%d events stored", len(evs))
	for i := 0; i < 4; i++ {
		a, b := evs[i], evs[i+4]
		require(a.SessionID == "s1" && b.SessionID == "s2", "sessions %q %q", a.SessionID, b.SessionID)
		a.SessionID, b.SessionID = "", ""
		a.ReceivedAt, b.ReceivedAt = time.Time{}, time.Time{} // two requests, two server times
		require(reflect.DeepEqual(a, b), "event %d differs:\nfast    %+v\ngeneric %+v", i, a, b)
	}
}
