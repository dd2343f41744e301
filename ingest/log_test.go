package ingest

// The conformance suite of the Log contract, run against both implementations for real: the
// embedded log on the service's Pebble store in a temporary directory, and the Kafka log over
// the Kafka protocol against an in-process kfake broker on loopback. No mocks.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild(os.Getenv(childEnv)))
	}
	os.Exit(m.Run())
}

// testPartitions is the partition count of the logs under test: fewer partitions than
// workspaces, so partitions hold several workspaces.
const testPartitions = 8

// logEnv is one log under test and how to restart it on the same data.
type logEnv interface {
	Log() Log
	// Reopen closes the log (the Pebble log also its DB) and opens it again on the same data.
	Reopen(t *testing.T)
	// Trims reports whether Trim deletes records (the Kafka log leaves it to retention).
	Trims() bool
}

// testEvent is an event of workspace ws; marker and seq identify it in assertions. Times are
// UTC without a monotonic reading, as the log returns them.
func testEvent(ws int64, marker string, seq int) Event {
	at := time.Unix(1_790_000_000+int64(seq), int64(seq)*1000+7).UTC()
	return Event{
		Workspace: ws, Mode: 'l', BookID: fmt.Sprintf("bk%d", ws), SessionID: marker,
		Type: PageSegmentCompleted, SourceType: "direct", PageNumber: int32(seq%300 + 1),
		ActiveMs: int64(seq), OccurredAt: at, ReceivedAt: at.Add(time.Millisecond),
	}
}

// readAll reads partition p from offset from to its end, in windows of n.
func readAll(t testing.TB, l Log, p int, from uint64, n int) []Record {
	t.Helper()
	var out []Record
	for {
		recs, err := l.Read(context.Background(), p, from, n)
		require.NoError(t, err)
		if len(recs) == 0 {
			return out
		}
		require.LessOrEqual(t, len(recs), n)
		out = append(out, recs...)
		from = recs[len(recs)-1].Offset + 1
	}
}

// requireDense checks that recs are partition p's records at offsets first, first+1, ...
func requireDense(t testing.TB, recs []Record, p int, first uint64) {
	t.Helper()
	for i, r := range recs {
		require.Equal(t, p, r.Partition)
		require.Equal(t, first+uint64(i), r.Offset, "record %d of partition %d", i, p)
		require.Equal(t, p, PartitionOf(r.Event.Workspace, testPartitions), "event of workspace %d in partition %d", r.Event.Workspace, p)
	}
}

func runConformance(t *testing.T, newEnv func(t *testing.T) logEnv) {
	ctx := context.Background()

	t.Run("AppendThenReadInOrder", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		l := env.Log()
		require.Equal(t, testPartitions, l.Partitions())
		want := make([][]Event, testPartitions)
		seq := 0
		for batch := 0; batch < 5; batch++ {
			var events []Event
			for j := 0; j < 20; j++ {
				ws := int64((batch*20+j)%11 + 1)
				e := testEvent(ws, "order", seq)
				seq++
				events = append(events, e)
				p := PartitionOf(ws, testPartitions)
				want[p] = append(want[p], e)
			}
			require.NoError(t, l.Append(ctx, events))
		}
		for p := 0; p < testPartitions; p++ {
			recs := readAll(t, l, p, 0, 7)
			requireDense(t, recs, p, 0)
			got := make([]Event, len(recs))
			for i, r := range recs {
				got[i] = r.Event
			}
			if len(want[p]) == 0 {
				require.Empty(t, got)
				continue
			}
			require.Equal(t, want[p], got, "partition %d", p)
		}
	})

	t.Run("EndOffsets", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		ends := func() []uint64 {
			t.Helper()
			eo, ok := env.Log().(EndOffsets)
			require.True(t, ok, "the log reports its end offsets")
			got, err := eo.EndOffsets(ctx)
			require.NoError(t, err)
			require.Len(t, got, testPartitions)
			return got
		}
		require.Equal(t, make([]uint64, testPartitions), ends(), "an empty log ends at 0")
		want := make([]uint64, testPartitions)
		var events []Event
		for i := 0; i < 30; i++ {
			ws := int64(i%5 + 1)
			events = append(events, testEvent(ws, "ends", i))
			want[PartitionOf(ws, testPartitions)]++
		}
		require.NoError(t, env.Log().Append(ctx, events))
		require.Equal(t, want, ends())
		p := PartitionOf(1, testPartitions)
		require.NoError(t, env.Log().Trim(ctx, p, want[p]))
		require.Equal(t, want, ends(), "trimming does not move the end")
		env.Reopen(t)
		require.Equal(t, want, ends(), "the end survives a restart")
	})

	t.Run("ReadWindows", func(t *testing.T) {
		t.Parallel()
		l := newEnv(t).Log()
		const ws = 5
		p := PartitionOf(ws, testPartitions)
		for p2 := 0; p2 < testPartitions; p2++ { // nothing anywhere yet
			recs, err := l.Read(ctx, p2, 0, 10)
			require.NoError(t, err)
			require.Empty(t, recs)
		}
		events := make([]Event, 10)
		for i := range events {
			events[i] = testEvent(ws, "win", i)
		}
		require.NoError(t, l.Append(ctx, events))
		recs, err := l.Read(ctx, p, 2, 3)
		require.NoError(t, err)
		requireDense(t, recs, p, 2)
		require.Len(t, recs, 3)
		require.Equal(t, events[2:5], []Event{recs[0].Event, recs[1].Event, recs[2].Event})
		for _, from := range []uint64{10, 11, 1000, 1 << 40} { // at and beyond the end
			recs, err := l.Read(ctx, p, from, 10)
			require.NoError(t, err, "from %d", from)
			require.Empty(t, recs, "from %d", from)
		}
		recs, err = l.Read(ctx, p, 0, 0)
		require.NoError(t, err)
		require.Empty(t, recs)
		_, err = l.Read(ctx, testPartitions, 0, 10)
		require.Error(t, err, "partition out of range")
		_, err = l.Read(ctx, -1, 0, 10)
		require.Error(t, err, "negative partition")
		require.NoError(t, l.Append(ctx, nil), "empty append")
		require.Len(t, readAll(t, l, p, 0, 100), 10)
	})

	t.Run("Concurrent64", func(t *testing.T) {
		t.Parallel()
		l := newEnv(t).Log()
		const goroutines, appends, perAppend = 64, 8, 20
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				marker := fmt.Sprintf("g%d", g)
				seq := 0
				for a := 0; a < appends; a++ {
					events := make([]Event, perAppend)
					for j := range events {
						events[j] = testEvent(int64((g*7+j)%40+1), marker, seq)
						seq++
					}
					if err := l.Append(ctx, events); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		// A reader tails every partition meanwhile: what it sees has no gap at any moment.
		stopTail := make(chan struct{})
		tailed := make(chan int)
		go func() {
			next := make([]uint64, testPartitions)
			n := 0
			defer func() { tailed <- n }()
			for {
				select {
				case <-stopTail:
					return
				default:
				}
				for p := range next {
					recs, err := l.Read(ctx, p, next[p], 100)
					if !assertNoError(t, err) {
						return
					}
					for _, r := range recs {
						if r.Offset != next[p] {
							t.Errorf("partition %d: offset %d read while %d was expected", p, r.Offset, next[p])
							return
						}
						next[p]++
						n++
					}
				}
			}
		}()
		wg.Wait()
		close(stopTail)
		t.Logf("the tailing reader saw %d events during the appends", <-tailed)
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		seen := make(map[string]int) // "g/seq" -> times read
		total := 0
		for p := 0; p < testPartitions; p++ {
			recs := readAll(t, l, p, 0, 500)
			requireDense(t, recs, p, 0)
			last := make(map[string]int64) // goroutine marker + workspace -> last seq
			for _, r := range recs {
				e := r.Event
				seen[fmt.Sprintf("%s/%d", e.SessionID, e.ActiveMs)]++
				k := fmt.Sprintf("%s/%d", e.SessionID, e.Workspace)
				if prev, ok := last[k]; ok {
					require.Greater(t, e.ActiveMs, prev, "order of %s in partition %d", k, p)
				}
				last[k] = e.ActiveMs
			}
			total += len(recs)
		}
		require.Equal(t, goroutines*appends*perAppend, total)
		require.Len(t, seen, total)
		for k, n := range seen {
			require.Equal(t, 1, n, "event %s read %d times", k, n)
		}
	})

	t.Run("ReopenKeepsEventsAndContinuesOffsets", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		counts := make([]int, testPartitions)
		appendMixed := func(marker string, n int) {
			events := make([]Event, n)
			for i := range events {
				ws := int64(i%13 + 1)
				events[i] = testEvent(ws, marker, i)
				counts[PartitionOf(ws, testPartitions)]++
			}
			require.NoError(t, env.Log().Append(ctx, events))
		}
		appendMixed("before", 100)
		env.Reopen(t)
		appendMixed("after", 50)
		env.Reopen(t)
		for p := 0; p < testPartitions; p++ {
			recs := readAll(t, env.Log(), p, 0, 64)
			requireDense(t, recs, p, 0)
			require.Len(t, recs, counts[p], "partition %d", p)
			after := false
			for _, r := range recs { // the later events follow the earlier ones
				if r.Event.SessionID == "after" {
					after = true
				} else {
					require.False(t, after, "an earlier event after a later one in partition %d", p)
				}
			}
		}
	})

	t.Run("Trim", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		l := env.Log()
		const ws, other = 3, 4 // two partitions
		p, po := PartitionOf(ws, testPartitions), PartitionOf(other, testPartitions)
		require.NotEqual(t, p, po)
		events := make([]Event, 100)
		for i := range events {
			events[i] = testEvent(ws, "trim", i)
		}
		require.NoError(t, l.Append(ctx, events))
		require.NoError(t, l.Append(ctx, []Event{testEvent(other, "other", 0)}))
		require.NoError(t, l.Trim(ctx, p, 40))
		recs := readAll(t, l, p, 0, 1000)
		if !env.Trims() { // Kafka: a no-op, retention deletes
			requireDense(t, recs, p, 0)
			require.Len(t, recs, 100)
			return
		}
		requireDense(t, recs, p, 40)
		require.Len(t, recs, 60)
		require.NoError(t, l.Trim(ctx, p, 10), "trimming below the floor is a no-op")
		require.Len(t, readAll(t, l, p, 0, 1000), 60)
		require.NoError(t, l.Trim(ctx, p, 1<<40), "beyond the end: trims what is there")
		require.Empty(t, readAll(t, l, p, 0, 1000))
		require.Len(t, readAll(t, l, po, 0, 1000), 1, "other partitions are untouched")

		require.NoError(t, l.Append(ctx, []Event{testEvent(ws, "later", 0), testEvent(ws, "later", 1)}))
		recs = readAll(t, l, p, 0, 1000)
		requireDense(t, recs, p, 100)
		require.Len(t, recs, 2)

		// Every record trimmed, then a restart: offsets still continue.
		require.NoError(t, l.Trim(ctx, p, 102))
		env.Reopen(t)
		l = env.Log()
		require.Empty(t, readAll(t, l, p, 0, 1000))
		require.NoError(t, l.Append(ctx, []Event{testEvent(ws, "restart", 0)}))
		recs = readAll(t, l, p, 0, 1000)
		requireDense(t, recs, p, 102)
		require.Len(t, recs, 1)
		require.Len(t, readAll(t, l, po, 0, 1000), 1)
	})

	t.Run("CloseCommitsQueuedAppends", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		l := env.Log()
		const goroutines = 16
		var (
			mu    sync.Mutex
			acked = make(map[string]bool)
			wg    sync.WaitGroup
		)
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := 0; ; seq += 5 {
					events := make([]Event, 5)
					for j := range events {
						events[j] = testEvent(int64(g+1), fmt.Sprintf("c%d", g), seq+j)
					}
					err := l.Append(ctx, events)
					if errors.Is(err, ErrClosed) {
						return
					}
					if !assertNoError(t, err) {
						return
					}
					mu.Lock()
					for _, e := range events {
						acked[fmt.Sprintf("%s/%d", e.SessionID, e.ActiveMs)] = true
					}
					n := len(acked)
					mu.Unlock()
					if n > 2000 && g == 0 {
						assertNoError(t, l.Close())
					}
				}
			}()
		}
		wg.Wait()
		require.NoError(t, l.Close(), "a second Close")
		require.ErrorIs(t, l.Append(ctx, []Event{testEvent(1, "x", 0)}), ErrClosed)
		_, err := l.Read(ctx, 0, 0, 10)
		require.ErrorIs(t, err, ErrClosed)

		env.Reopen(t)
		found := 0
		for p := 0; p < testPartitions; p++ {
			recs := readAll(t, env.Log(), p, 0, 1000)
			requireDense(t, recs, p, 0)
			for _, r := range recs {
				if acked[fmt.Sprintf("%s/%d", r.Event.SessionID, r.Event.ActiveMs)] {
					found++
				}
			}
		}
		require.Equal(t, len(acked), found, "every acknowledged event is stored")
	})
}

// assertNoError reports err from a goroutine other than the test's.
func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

func TestPebbleLogConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T) logEnv { return newPebbleEnv(t, t.TempDir()) })
}

func TestKafkaLogConformance(t *testing.T) {
	t.Parallel()
	brokers := newKafkaCluster(t)
	runConformance(t, func(t *testing.T) logEnv { return newKafkaEnv(t, brokers, nextTopic()) })
}
