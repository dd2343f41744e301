package analytics

import (
	"context"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCompactionMemory is a probe of the compactor's memory over a long ingest, in one
// process (no HTTP, no log on disk): 700 batches of 32,768 events through the consumer with
// level-0 runs of 2^18 rows merged 8 at a time, reattaching every 2^22 rows written into runs,
// as the service does. For each period between two reattaches it reports the peak of glibc
// malloc's bytes in use (sampled every 5 ms) and the events stored by then. About 3 minutes.
//
//	go test -tags=pebblegozstd,duckdb_arrow -run '^$' -bench CompactionMemory -benchtime 1x ./analytics/
//
// FLIPBOOK_PROBE_SET runs one statement first (e.g. "SET max_vacuum_tasks = 0");
// FLIPBOOK_PROBE_FANOUT=1: no merges; FLIPBOOK_PROBE_ONE_SORT=1: every move in one statement.
// docs/BENCHMARKS.md ("ingest", memory) has what it measured.
func BenchmarkCompactionMemory(b *testing.B) {
	if _, ok := ReadMallocStats(); !ok {
		b.Skip("needs glibc malloc's counters")
	}
	db := openTestDB(b, b.TempDir())
	defer db.Close()
	ctx := context.Background()
	if q := os.Getenv("FLIPBOOK_PROBE_SET"); q != "" {
		if _, err := db.Handle().ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	fanout := 8
	if os.Getenv("FLIPBOOK_PROBE_FANOUT") != "" {
		fanout = 1 << 20
	}
	opts := []ConsumerOption{WithCompaction(1<<18, fanout), WithReattachRows(1 << 22)}
	if os.Getenv("FLIPBOOK_PROBE_ONE_SORT") != "" {
		opts = append(opts, withCompactChunk(1<<40))
	}
	log := newMemLog(4)
	c := startConsumer(b, db, log, opts...)
	defer c.Close()
	var peak atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if m, _ := ReadMallocStats(); int64(m.InUse) > peak.Load() {
				peak.Store(int64(m.InUse))
			}
		}
	}()
	batch := genEvents(rand.New(rand.NewPCG(1, 2)), 1<<15, 30, time.Now().UTC())
	var seen uint64
	var first, last float64
	for i := 0; i < 700; i++ {
		for j := range batch {
			batch[j].OccurredAt = batch[j].OccurredAt.Add(time.Millisecond)
		}
		if err := log.Append(ctx, batch); err != nil {
			b.Fatal(err)
		}
		c.Wake()
		if err := c.WaitFor(waitCtx(b, time.Minute), log.ends()); err != nil {
			b.Fatal(err)
		}
		if st := c.Stats(); st.Reattaches != seen {
			seen = st.Reattaches
			p := float64(peak.Swap(0)) / 1e6
			if first == 0 {
				first = p
			}
			last = p
			b.Logf("%5.1fM events stored: peak malloc in use %5.1f MB since the previous reattach (runs %d, merges %d)",
				float64(st.Events)/1e6, p, st.Compactions, st.Merges)
		}
	}
	b.ReportMetric(first, "MB-first-period")
	b.ReportMetric(last, "MB-last-period")
}
