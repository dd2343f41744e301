package analytics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"flipbook/ingest"
)

func openTestDB(t testing.TB, dir string) *DB {
	t.Helper()
	type opened struct {
		db  *DB
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		db, err := Open(context.Background(), filepath.Join(dir, "analytics.duckdb"), WithMemoryLimit("512MB"))
		ch <- opened{db, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.db
	case <-time.After(20 * time.Second):
		// DuckDB spins forever reopening a file whose previous instance is still referenced
		// (a connection or result left open): fail loudly instead of hanging.
		panic("reopening the DuckDB file hangs: something kept the previous instance open")
	}
}

func startConsumer(t testing.TB, db *DB, log ingest.Log, opts ...ConsumerOption) *Consumer {
	t.Helper()
	c, err := NewConsumer(context.Background(), db, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	return c
}

// waitCtx is a deadline for a wait in a test: never a fixed sleep, always a bounded poll.
func waitCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var eventTypes = append(append([]string(nil), ingest.InteractionTypes...),
	ingest.AccessRequested, ingest.AccessGranted, ingest.AccessRejected)

// genEvents makes n varied events over the given number of workspaces and 50 books each.
func genEvents(rng *rand.Rand, n, workspaces int, at time.Time) []ingest.Event {
	out := make([]ingest.Event, n)
	for i := range out {
		ws := int64(rng.IntN(workspaces) + 1)
		e := ingest.Event{
			Workspace:  ws,
			Mode:       'l',
			BookID:     fmt.Sprintf("bk%03d%05d", ws, rng.IntN(50)),
			SessionID:  fmt.Sprintf("s-%d", rng.IntN(5000)),
			Type:       eventTypes[rng.IntN(len(eventTypes))],
			SourceType: "direct",
			OccurredAt: at.Add(time.Duration(i) * time.Millisecond),
			ReceivedAt: at.Add(time.Duration(i)*time.Millisecond + 20*time.Millisecond),
		}
		if rng.IntN(4) == 0 {
			e.Mode = 't'
		}
		if rng.IntN(2) == 0 {
			e.ViewerID = int64(rng.IntN(1000) + 1)
			e.ViewerEmail = fmt.Sprintf("r%d@example.com", e.ViewerID)
		}
		if rng.IntN(3) == 0 {
			e.TrackedLinkID = int64(rng.IntN(20) + 1)
			e.SourceType = "tracked_link"
		}
		if rng.IntN(3) == 0 {
			e.SourceHost = "blog.example.org"
			e.SourceType = "embed"
		}
		if e.Type == ingest.PageSegmentCompleted {
			e.PageNumber = int32(rng.IntN(40) + 1)
			e.ActiveMs = int64(rng.IntN(60000) + 1)
		}
		if e.Type == ingest.LeadFormSubmitted {
			e.Metadata = `{"name":"Ada","company":"X"}`
		}
		out[i] = e
	}
	return out
}

// storedIDs is every id in the events table, sorted.
func storedIDs(t testing.TB, db *DB) []int64 {
	t.Helper()
	rows, err := db.Handle().Query(`SELECT id FROM ` + EventsView + ` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkExactlyOnce fails unless the table holds exactly the ids in want, each once.
func checkExactlyOnce(t testing.TB, db *DB, want []int64) {
	t.Helper()
	got := storedIDs(t, db)
	if len(got) != len(want) {
		dups := 0
		for i := 1; i < len(got); i++ {
			if got[i] == got[i-1] {
				dups++
			}
		}
		t.Fatalf("stored %d rows, want %d (%d duplicate ids)", len(got), len(want), dups)
	}
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("first difference at %d: stored id %d, want %d", i, got[i], want[i])
			}
		}
	}
}
