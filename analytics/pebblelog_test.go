package analytics

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/ingest"
)

// TestExactlyOnceWithPebbleLog runs the consumer against the embedded log while writers append
// concurrently, stopping consumer and log at random moments (the consumer as if the process
// died at one of its steps, including between the DuckDB commit and the trim) and restarting
// both from their files. Every appended event must be stored once, and the log trimmed.
func TestExactlyOnceWithPebbleLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pebbleDir := filepath.Join(dir, "pebble")
	openLog := func() (*pebble.DB, *ingest.PebbleLog) {
		pdb, err := pebble.Open(pebbleDir, &pebble.Options{Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		l, err := ingest.NewPebbleLog(pdb, ingest.PebbleOptions{Partitions: 8})
		if err != nil {
			t.Fatal(err)
		}
		return pdb, l
	}
	rng := rand.New(rand.NewPCG(21, 22))
	steps := []string{stepRead, stepInserted, stepCommitted, stepTrimmed, stepCompacted}
	var appended atomic.Int64
	for round := 0; round < 10; round++ {
		pdb, log := openLog()
		db := openTestDB(t, dir)
		crashStep, crashAfter := steps[round%len(steps)], rng.IntN(3)
		c, err := NewConsumer(context.Background(), db, log, WithMaxBatch(rng.IntN(2000)+100),
			WithCompaction(2000, 3), withCompactEvery(2*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := 0
		c.hook = func(step string) error {
			mu.Lock()
			defer mu.Unlock()
			if step == crashStep {
				if seen == crashAfter {
					return errors.New("crash")
				}
				seen++
			}
			return nil
		}
		c.Start()
		// Four writers, like collector requests, each appending small batches.
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			seed := rng.Uint64()
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, 1))
				for i := 0; i < 20; i++ {
					ev := genEvents(r, r.IntN(50)+1, 40, time.Now().UTC())
					if err := log.Append(context.Background(), ev); err != nil {
						t.Error(err)
						return
					}
					appended.Add(int64(len(ev)))
				}
			})
		}
		wg.Wait()
		want := map[int]uint64{}
		for p := 0; p < log.Partitions(); p++ {
			want[p] = log.Next(p)
		}
		werr := c.WaitFor(waitCtx(t, 20*time.Second), want)
		if cerr := c.Close(); cerr != nil && !isHookStop(cerr) {
			t.Fatalf("round %d: %v", round, cerr)
		} else if cerr == nil && werr != nil {
			t.Fatalf("round %d: %v", round, werr)
		}
		db.Close()
		log.Close()
		pdb.Close()
	}
	pdb, log := openLog()
	defer pdb.Close()
	defer log.Close()
	db := openTestDB(t, dir)
	defer db.Close()
	c := startConsumer(t, db, log)
	want := map[int]uint64{}
	var ids []int64
	for p := 0; p < log.Partitions(); p++ {
		want[p] = log.Next(p)
		for o := uint64(0); o < want[p]; o++ {
			ids = append(ids, ingest.Record{Partition: p, Offset: o}.ID())
		}
	}
	if err := c.WaitFor(waitCtx(t, 20*time.Second), want); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if int64(len(ids)) != appended.Load() {
		t.Fatalf("log holds %d events, %d appended", len(ids), appended.Load())
	}
	checkExactlyOnce(t, db, ids)
	checkRuns(t, db)
	// Stored events were trimmed from the log.
	for p := 0; p < log.Partitions(); p++ {
		recs, err := log.Read(context.Background(), p, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 0 {
			t.Errorf("partition %d: record %d still in the log after it was stored", p, recs[0].Offset)
		}
	}
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic("pebble: fatal")
}
