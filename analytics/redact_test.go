package analytics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"flipbook/ingest"
	"flipbook/internal/testutil"
)

// expectedRedaction computes, from the log itself and independently of the SQL, the ids of a
// reader's events (the rows naming the reader and the other rows of their sessions) and the
// counts RedactReader reports.
func expectedRedaction(l *memLog, m ReaderMatch) (ids map[int64]bool, want ReaderCounts) {
	l.mu.Lock()
	defer l.mu.Unlock()
	type rec struct {
		id int64
		e  ingest.Event
	}
	var all []rec
	for p := range l.parts {
		for o, e := range l.parts[p] {
			all = append(all, rec{ingest.Record{Partition: p, Offset: uint64(o)}.ID(), e})
		}
	}
	tenant := func(e *ingest.Event) bool { return e.Workspace == m.Workspace && modeString(e.Mode) == m.Mode }
	named := func(e *ingest.Event) bool {
		return tenant(e) && (strings.EqualFold(e.ViewerEmail, m.Email) || (m.ViewerID > 0 && e.ViewerID == m.ViewerID) ||
			strings.Contains(strings.ToLower(e.Metadata), `"`+m.Email+`"`))
	}
	sessions := map[string]bool{}
	for i := range all {
		if e := &all[i].e; named(e) && e.SessionID != "" {
			sessions[e.BookID+"\x00"+e.SessionID] = true
		}
	}
	ids = map[int64]bool{}
	for i := range all {
		e := &all[i].e
		if named(e) || (tenant(e) && e.SessionID != "" && sessions[e.BookID+"\x00"+e.SessionID]) {
			ids[all[i].id] = true
			want.Events++
			if e.Type == ingest.LeadFormSubmitted {
				want.Leads++
			}
		}
	}
	for _, e := range all {
		if ids[e.id] && e.e.SessionID != "" {
			sessions[e.e.BookID+"\x00"+e.e.SessionID] = true
		}
	}
	want.Sessions = int64(len(sessions))
	return ids, want
}

// readerEvents are a reader's own events in workspace ws (mode l): an identified session that
// began anonymous (its first event carries no address), access events without a session, and
// a lead form with the address sent from an anonymous session of another book.
func readerEvents(ws int64, email string, viewer int64, at time.Time) []ingest.Event {
	tag := at.Format("150405.000000000")
	ev := func(book, session, typ string, v int64, mail, meta string, i int) ingest.Event {
		return ingest.Event{Workspace: ws, Mode: 'l', BookID: book, SessionID: session, Type: typ, ViewerID: v,
			ViewerEmail: mail, Metadata: meta, SourceType: "direct",
			OccurredAt: at.Add(time.Duration(i) * time.Millisecond), ReceivedAt: at.Add(time.Duration(i) * time.Millisecond)}
	}
	book := "bkreader" + strings.Repeat("x", int(ws%3))
	return []ingest.Event{
		ev(book, "", ingest.AccessRequested, 0, email, "", 0),
		ev(book, "", ingest.AccessGranted, viewer, email, "", 1),
		ev(book, "rs-"+tag, ingest.SessionStarted, 0, "", "", 2), // before the gate: anonymous, same session
		ev(book, "rs-"+tag, ingest.PageSegmentCompleted, viewer, email, "", 3),
		ev(book, "rs-"+tag, ingest.LeadFormSubmitted, viewer, email, `{"name":"R"}`, 4),
		ev(book+"-other", "anon-"+tag, ingest.SessionStarted, 0, "", "", 5),
		ev(book+"-other", "anon-"+tag, ingest.LeadFormSubmitted, 0, "", `{"Email":"`+strings.ToUpper(email[:1])+email[1:]+`","name":"R"}`, 6),
	}
}

// TestRedactReaderEverywhere: a reader's events in the archive, in level-0 run tables and in
// the recent table are all deleted, with the other rows of their sessions, while appends,
// compactions and merges go on; nothing else is touched (the same address and viewer id in
// another workspace and in test mode stay), the runs' bookkeeping stays exact so later merges
// work, and the counts before and after are what the log says.
func TestRedactReaderEverywhere(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(4)
	rng := rand.New(rand.NewPCG(21, 22))
	c := startConsumer(t, db, log, WithMaxBatch(400), WithCompaction(1000, 2), withCompactEvery(time.Millisecond))
	defer c.Close()
	ctx := waitCtx(t, 60*time.Second)
	const ws, email, viewer = 3, "r7@example.com", 7
	m := ReaderMatch{Workspace: ws, Mode: "l", Email: email, ViewerID: viewer}
	appendRound := func(events []ingest.Event) {
		t.Helper()
		if err := log.Append(ctx, events); err != nil {
			t.Fatal(err)
		}
		c.Wake()
		if err := c.WaitFor(ctx, log.ends()); err != nil {
			t.Fatal(err)
		}
	}
	// Rounds spread the reader's events over the archive, level-0 runs and the recent table:
	// they go on until each holds some.
	cond, args := m.cond()
	var where map[string]int64
	for i := 0; ; i++ {
		evs := genEvents(rng, 450, 5, time.Now().UTC())
		evs = append(evs, readerEvents(ws, email, viewer, time.Now().UTC())...)
		// The same address and viewer id in another workspace and in test mode.
		other := readerEvents(ws+1, email, viewer, time.Now().UTC())
		test := readerEvents(ws, email, viewer, time.Now().UTC())
		for j := range test {
			test[j].Mode = 't'
		}
		appendRound(append(append(evs, other...), test...))
		if i < 8 {
			continue
		}
		waitCompacted(t, db, c, 1000, 2)
		// The compactor may move rows between these counts: a row is then counted in neither
		// or both places, which only delays the end of the loop.
		where = map[string]int64{}
		runList, err := listRunTables(ctx, db.Handle())
		if err != nil {
			t.Fatal(err)
		}
		for _, table := range append([]string{ArchiveTable, RecentTable}, tableNames(runList)...) {
			var n int64
			if err := db.Handle().QueryRow(`SELECT count(*) FROM `+table+` WHERE `+cond, args...).Scan(&n); err != nil {
				if strings.Contains(err.Error(), "does not exist") { // merged away meanwhile
					continue
				}
				t.Fatal(err)
			}
			kind := table
			if strings.HasPrefix(table, runTablePrefix) {
				kind = "runs"
			}
			where[kind] += n
		}
		if where[ArchiveTable] > 0 && where["runs"] > 0 && where[RecentTable] > 0 {
			break
		}
		if i > 40 {
			t.Fatalf("the reader's rows are not in every kind of table: %v", where)
		}
	}
	t.Logf("the reader's rows: %v", where)

	ids, want := expectedRedaction(log, m)
	if want.Events < 28 || want.Leads < 8 || want.Sessions < 8 {
		t.Fatalf("fixture too small: %+v", want)
	}
	got, err := db.CountReader(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("CountReader %+v, want %+v", got, want)
	}
	mergesBefore := c.Stats().Merges

	// Appends of other workspaces go on during the redaction and after it (runs are made and
	// merged over the tables the redaction deleted from).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			evs := genEvents(rng, 300, 5, time.Now().UTC())
			kept := evs[:0]
			for _, e := range evs {
				if e.Workspace != ws {
					kept = append(kept, e)
				}
			}
			if err := log.Append(ctx, kept); err != nil {
				t.Error(err)
				return
			}
			c.Wake()
			time.Sleep(5 * time.Millisecond) // sleep: pacing the background appends of other workspaces
		}
	})
	done, err := c.RedactReader(ctx, m)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	if done != want {
		t.Errorf("RedactReader %+v, want %+v", done, want)
	}
	if again, err := db.CountReader(ctx, m); err != nil || again != (ReaderCounts{}) {
		t.Errorf("after the redaction: %+v, %v", again, err)
	}
	// A second redaction finds nothing.
	if again, err := c.RedactReader(ctx, m); err != nil || again != (ReaderCounts{}) {
		t.Errorf("second redaction: %+v, %v", again, err)
	}
	deadline, _ := ctx.Deadline()
	merged := testutil.Poll(time.Until(deadline), 5*time.Millisecond, func() error {
		if st := c.Stats(); st.Merges < mergesBefore+2 {
			return fmt.Errorf("%d merges since the redaction began, want 2: %+v", st.Merges-mergesBefore, st)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if merged != nil {
		t.Fatal(merged)
	}
	if err := c.WaitFor(ctx, log.ends()); err != nil {
		t.Fatal(err)
	}
	waitCompacted(t, db, c, 1000, 2)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Errors != 0 || st.Merges < mergesBefore+2 {
		t.Fatalf("compaction after the redaction: %+v", st)
	}
	var keep []int64
	for _, id := range log.ids() {
		if !ids[id] {
			keep = append(keep, id)
		}
	}
	slices.Sort(keep)
	checkExactlyOnce(t, db, keep)
	checkRuns(t, db)
	// The other tenants still hold the reader's events.
	for _, other := range []ReaderMatch{{Workspace: ws + 1, Mode: "l", Email: email, ViewerID: viewer}, {Workspace: ws, Mode: "t", Email: email, ViewerID: viewer}} {
		n, err := countReader(context.Background(), db.Handle(), other)
		if err != nil || n.Events < 3*7 {
			t.Fatalf("%+v: %+v, %v", other, n, err)
		}
	}
}

// TestRedactWithoutCompaction: the compactor goroutine runs redactions even when compaction is
// off; a redaction of an unknown reader changes nothing.
func TestRedactWithoutCompaction(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(2)
	c := startConsumer(t, db, log, WithCompaction(0, 2))
	defer c.Close()
	ctx := waitCtx(t, 20*time.Second)
	mine := readerEvents(1, "a&b@example.com", 4, time.Now().UTC())
	for i := range mine {
		mine[i].Metadata = strings.ReplaceAll(mine[i].Metadata, "&", `\u0026`) // as sonic writes it
	}
	if err := log.Append(ctx, append(mine, readerEvents(2, "c@example.com", 5, time.Now().UTC())...)); err != nil {
		t.Fatal(err)
	}
	c.Wake()
	if err := c.WaitFor(ctx, log.ends()); err != nil {
		t.Fatal(err)
	}
	if n, err := c.RedactReader(ctx, ReaderMatch{Workspace: 1, Mode: "l", Email: "nobody@example.com"}); err != nil || n != (ReaderCounts{}) {
		t.Fatalf("unknown reader: %+v, %v", n, err)
	}
	// The lead form names the address as sonic and encoding/json escape it ("&" is \u0026).
	m := ReaderMatch{Workspace: 1, Mode: "l", Email: "a&b@example.com"}
	n, err := c.RedactReader(ctx, m)
	if err != nil || n != (ReaderCounts{Events: 7, Sessions: 2, Leads: 2}) {
		t.Fatalf("redaction: %+v, %v", n, err)
	}
	if left := len(storedIDs(t, db)); left != 7 {
		t.Fatalf("%d rows left, want the other workspace's 7", left)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RedactReader(ctx, m); err != ErrConsumerStopped {
		t.Fatalf("after Close: %v", err)
	}
}
