package bench

import (
	"math/rand/v2"
	"strconv"
	"time"

	"flipbook/ingest"
)

// The reader sessions of the ingest scenario: one generator feeds both the HTTP load (JSON
// bodies for POST /collect, as the viewer sends them) and the raw DuckDB baseline (the events
// the collector would make of them), so both sides store the same kind of rows.

// ingestBook is a published book readers post events for.
type ingestBook struct {
	ws    int64
	rid   string
	pages int
}

// genEvent is one event as a viewer reports it.
type genEvent struct {
	typ  string
	page int32
	ms   int64
	url  string
	exit string
	at   time.Time
}

// readerSession is one virtual reader: a session id on a book, turning pages. Every batch is
// 20-100 events, mostly page_segment_completed; the first of a session starts with
// session_started, the last ends with session_ended, and a new session follows.
type readerSession struct {
	book    *ingestBook
	id      string
	page    int
	batches int // batches sent in this session
	last    int // batches this session lasts
	rng     *rand.Rand
	serial  int
	prefix  string
}

func newReaderSession(book *ingestBook, seed uint64) *readerSession {
	s := &readerSession{book: book, rng: rand.New(rand.NewPCG(seed, seed*7919+1)),
		prefix: "bench-" + strconv.FormatUint(seed, 36) + "-"}
	s.restart()
	return s
}

func (s *readerSession) restart() {
	s.serial++
	s.id = s.prefix + strconv.Itoa(s.serial)
	s.page, s.batches, s.last = 1, 0, 5+s.rng.IntN(11)
}

// next appends the session's next batch to evs (reset first) and returns it with the session
// id it belongs to. Times are spread over the seconds before now, in order.
func (s *readerSession) next(evs []genEvent, now time.Time) ([]genEvent, string) {
	evs = evs[:0]
	n := 20 + s.rng.IntN(81)
	id := s.id
	at := now.Add(-time.Duration(n) * 40 * time.Millisecond).Truncate(time.Millisecond)
	step := func() time.Time { at = at.Add(40 * time.Millisecond); return at }
	if s.batches == 0 {
		evs = append(evs, genEvent{typ: ingest.SessionStarted, page: 1, at: step()})
	}
	end := s.batches+1 >= s.last
	for len(evs) < n-boolInt(end) {
		r := s.rng.IntN(1000)
		switch {
		case r < 20:
			evs = append(evs, genEvent{typ: ingest.LinkClicked, page: int32(s.page),
				url: "https://shop.example.com/products/" + strconv.Itoa(s.rng.IntN(500)), at: step()})
		case r < 25:
			evs = append(evs, genEvent{typ: ingest.DocumentDownloaded, at: step()})
		default:
			evs = append(evs, genEvent{typ: ingest.PageSegmentCompleted, page: int32(s.page),
				ms: 300 + s.rng.Int64N(30000), at: step()})
			if s.rng.IntN(4) == 0 {
				s.page = 1 + s.rng.IntN(s.book.pages)
			} else {
				s.page = s.page%s.book.pages + 1
			}
		}
	}
	if end {
		evs = append(evs, genEvent{typ: ingest.SessionEnded, exit: "closed", at: step()})
		s.restart()
	} else {
		s.batches++
	}
	return evs, id
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendCollectBody appends the JSON body of POST /collect for one batch, as the viewer
// writes it (occurred_at like JavaScript's toISOString).
func appendCollectBody(b []byte, book *ingestBook, session string, evs []genEvent) []byte {
	b = append(b, `{"book_id":"`...)
	b = append(b, book.rid...)
	b = append(b, `","session_id":"`...)
	b = append(b, session...)
	b = append(b, `","events":[`...)
	for i := range evs {
		e := &evs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"`...)
		b = append(b, e.typ...)
		b = append(b, '"')
		if e.page != 0 {
			b = append(b, `,"page_number":`...)
			b = strconv.AppendInt(b, int64(e.page), 10)
		}
		if e.ms != 0 {
			b = append(b, `,"active_ms":`...)
			b = strconv.AppendInt(b, e.ms, 10)
		}
		if e.url != "" {
			b = append(b, `,"url":"`...)
			b = append(b, e.url...)
			b = append(b, '"')
		}
		if e.exit != "" {
			b = append(b, `,"exit_reason":"`...)
			b = append(b, e.exit...)
			b = append(b, '"')
		}
		b = append(b, `,"occurred_at":"`...)
		b = e.at.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, `"}`...)
	}
	return append(b, "]}"...)
}

// collectedEvent is the event the collector makes of e (an anonymous reader, no embedding, no
// tracked link), received at now.
func collectedEvent(book *ingestBook, session string, e *genEvent, now time.Time) ingest.Event {
	return ingest.Event{Workspace: book.ws, Mode: 'l', BookID: book.rid, SessionID: session, Type: e.typ,
		SourceType: "direct", PageNumber: e.page, ActiveMs: e.ms, URL: e.url, ExitReason: e.exit,
		OccurredAt: e.at.UTC(), ReceivedAt: now}
}
