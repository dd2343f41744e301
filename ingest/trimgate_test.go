package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTrimGateTrimsBehindTheSlowestReader runs two readers over one embedded log: records are
// deleted only below both positions, never before a reader reported one.
func TestTrimGateTrimsBehindTheSlowestReader(t *testing.T) {
	t.Parallel()
	e := newPebbleEnv(t, t.TempDir())
	ctx := context.Background()
	var evs []Event
	for i := 0; i < 100; i++ {
		evs = append(evs, Event{Workspace: 7, Mode: 'l', BookID: "b", SessionID: "s", Type: SessionStarted, OccurredAt: time.Now()})
	}
	require.NoError(t, e.log.Append(ctx, evs))
	p := PartitionOf(7, e.log.Partitions())
	count := func() int {
		recs, err := e.log.Read(ctx, p, 0, 1000)
		require.NoError(t, err)
		if len(recs) == 0 {
			return 0
		}
		return int(recs[len(recs)-1].Offset-recs[0].Offset) + 1
	}
	require.Equal(t, 100, count())

	g := NewTrimGate(e.log, "analytics", "webhooks")
	fast, slow := g.Reader("analytics"), g.Reader("webhooks")
	require.NoError(t, fast(ctx, p, 90))
	require.Equal(t, 100, count(), "nothing is trimmed until every reader reported a position")
	require.NoError(t, slow(ctx, p, 30))
	require.Equal(t, 70, count(), "trimmed below the slower reader")
	require.NoError(t, fast(ctx, p, 100))
	require.Equal(t, 70, count(), "the faster reader moving on trims nothing more")
	require.NoError(t, slow(ctx, p, 60))
	require.Equal(t, 40, count())
	require.NoError(t, slow(ctx, p, 50), "a position never moves back")
	require.Equal(t, int64(60), g.Positions()["webhooks"][p])
	require.Equal(t, int64(-1), g.Positions()["webhooks"][(p+1)%e.log.Partitions()])
	require.Panics(t, func() { g.Reader("nobody") })
}
