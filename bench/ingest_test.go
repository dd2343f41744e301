package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/ingest"
)

// TestIngestScenarioRuns keeps the ingest scenario working: a few seconds against a service
// child process (this test binary acting as `flipbook serve`) must complete without request
// errors, store every accepted event, and report every target. (The targets themselves are
// judged by `make bench` on the full 10-minute run, not here.)
func TestIngestScenarioRuns(t *testing.T) {
	asChild(t)
	var out, log bytes.Buffer
	rep, err := Ingest(context.Background(), IngestOptions{Duration: 2 * time.Second, Warmup: 500 * time.Millisecond,
		Conns: 4, Sessions: 16, Workspaces: 2, BooksPerWorkspace: 1, RawEvents: 20_000, Log: &log}, &out)
	require.NoError(t, err, "%s\nservice log:\n%s", out.String(), log.String())
	t.Log(out.String())
	require.Equal(t, "ingest", rep.Scenario)
	for _, want := range []string{"raw Arrow append into DuckDB", "stored in DuckDB, end to end", "202 -> visible",
		"events/s end to end", "raw DuckDB append", "p99 time from 202 to visible", "RSS", "compaction:"} {
		require.Contains(t, out.String(), want)
	}
	require.Contains(t, out.String(), "; 0 not visible when the drain ended", "every batch became visible")
	require.NotContains(t, out.String(), " 0 events per transaction")
	for _, f := range rep.Failed {
		require.False(t, strings.Contains(f, "requests failed"), f)
	}
}

// TestReaderSessionBatches: the generator makes what the viewer sends and the collector
// accepts: 20-100 events, sessions that start and end, pages within the book.
func TestReaderSessionBatches(t *testing.T) {
	book := &ingestBook{ws: 3, rid: "abc", pages: ingestPages}
	s := newReaderSession(book, 1)
	now := time.Now()
	starts, ends := 0, 0
	var evs []genEvent
	for i := 0; i < 200; i++ {
		var id string
		evs, id = s.next(evs, now)
		require.GreaterOrEqual(t, len(evs), 20)
		require.LessOrEqual(t, len(evs), 100)
		var body struct {
			BookID    string `json:"book_id"`
			SessionID string `json:"session_id"`
			Events    []struct {
				Type       string `json:"type"`
				Page       int    `json:"page_number"`
				ActiveMs   int64  `json:"active_ms"`
				URL        string `json:"url"`
				OccurredAt string `json:"occurred_at"`
			} `json:"events"`
		}
		require.NoError(t, json.Unmarshal(appendCollectBody(nil, book, id, evs), &body))
		require.Equal(t, "abc", body.BookID)
		require.Equal(t, id, body.SessionID)
		require.Len(t, body.Events, len(evs))
		for j, e := range body.Events {
			require.Contains(t, ingest.InteractionTypes, e.Type)
			require.LessOrEqual(t, e.Page, ingestPages)
			at, err := time.Parse(time.RFC3339Nano, e.OccurredAt)
			require.NoError(t, err)
			require.False(t, at.After(now))
			switch e.Type {
			case ingest.PageSegmentCompleted:
				require.Positive(t, e.Page)
				require.Positive(t, e.ActiveMs)
			case ingest.LinkClicked:
				require.NotEmpty(t, e.URL)
			case ingest.SessionStarted:
				require.Zero(t, j)
				starts++
			case ingest.SessionEnded:
				require.Equal(t, len(evs)-1, j)
				ends++
			}
			ev := collectedEvent(book, id, &evs[j], now)
			require.Equal(t, int64(3), ev.Workspace)
			require.Equal(t, e.Type, ev.Type)
		}
	}
	require.Greater(t, starts, 5)
	require.InDelta(t, starts, ends, 1)
}
