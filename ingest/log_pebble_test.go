package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

// pebbleEnv is a PebbleLog on the service's Pebble store (storage.Open) in dir.
type pebbleEnv struct {
	dir string
	st  *storage.Store
	log *PebbleLog
}

func newPebbleEnv(t testing.TB, dir string) *pebbleEnv {
	e := &pebbleEnv{dir: dir}
	e.open(t)
	t.Cleanup(func() { require.NoError(t, e.close()) })
	return e
}

func (e *pebbleEnv) open(t testing.TB) {
	st, err := storage.Open(e.dir, storage.Options{CacheBytes: 16 << 20})
	require.NoError(t, err)
	l, err := NewPebbleLog(st.DB(), PebbleOptions{Partitions: testPartitions})
	if err != nil {
		_ = st.Close()
	}
	require.NoError(t, err)
	e.st, e.log = st, l
}

func (e *pebbleEnv) close() error {
	if e.st == nil {
		return nil
	}
	err := errors.Join(e.log.Close(), e.st.Close())
	e.st, e.log = nil, nil
	return err
}

func (e *pebbleEnv) Log() Log    { return e.log }
func (e *pebbleEnv) Trims() bool { return true }
func (e *pebbleEnv) Reopen(t *testing.T) {
	require.NoError(t, e.close())
	e.open(t)
}

func openRawPebble(t testing.TB, dir string, readOnly bool) *pebble.DB {
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: readOnly, Logger: quietPebbleLogger{}})
	require.NoError(t, err)
	return db
}

type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...any)         {}
func (quietPebbleLogger) Errorf(string, ...any)        {}
func (quietPebbleLogger) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

// A commit that fails releases every waiting Append with the error and advances no offset.
// The failure is real: the DB is opened read-only, so Pebble refuses the batch.
func TestPebbleLogCommitFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := openRawPebble(t, dir, false)
	l, err := NewPebbleLog(db, PebbleOptions{Partitions: testPartitions})
	require.NoError(t, err)
	require.NoError(t, l.Append(ctx, []Event{testEvent(1, "ok", 0), testEvent(1, "ok", 1), testEvent(2, "ok", 2)}))
	require.NoError(t, l.Close())
	require.NoError(t, db.Close())

	db = openRawPebble(t, dir, true)
	defer db.Close()
	l, err = NewPebbleLog(db, PebbleOptions{}) // 0: the stored partition count
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, testPartitions, l.Partitions())
	p1, p2 := PartitionOf(1, testPartitions), PartitionOf(2, testPartitions)
	require.Equal(t, uint64(2), l.Next(p1))
	require.Equal(t, uint64(1), l.Next(p2))

	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.Append(ctx, []Event{testEvent(1, "fail", i), testEvent(2, "fail", i)})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, pebble.ErrReadOnly)
	}
	require.Equal(t, uint64(2), l.Next(p1), "offsets not advanced")
	require.Equal(t, uint64(1), l.Next(p2), "offsets not advanced")
	// The committer's own counters too (it wrote them before releasing the Appends above).
	require.Equal(t, uint64(2), l.next[p1])
	require.Equal(t, uint64(1), l.next[p2])
	recs := readAll(t, l, p1, 0, 10)
	requireDense(t, recs, p1, 0)
	require.Len(t, recs, 2)
	require.Equal(t, "ok", recs[1].Event.SessionID)
	require.Equal(t, PebbleLogStats{}, l.Stats(), "failed commits are not counted")
}

// The partition count is fixed when the log is created.
func TestPebbleLogPartitionCountIsFixed(t *testing.T) {
	t.Parallel()
	db := openRawPebble(t, t.TempDir(), false)
	defer db.Close()
	l, err := NewPebbleLog(db, PebbleOptions{})
	require.NoError(t, err)
	require.Equal(t, DefaultPartitions, l.Partitions())
	require.NoError(t, l.Close())
	_, err = NewPebbleLog(db, PebbleOptions{Partitions: 4})
	require.ErrorContains(t, err, "cannot change")
	_, err = NewPebbleLog(db, PebbleOptions{Partitions: MaxPartitions + 1})
	require.Error(t, err)
	l, err = NewPebbleLog(db, PebbleOptions{Partitions: DefaultPartitions})
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

// The log writes and deletes only keys under its prefix: the DB is shared with the service.
func TestPebbleLogOwnsOnlyItsPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openRawPebble(t, t.TempDir(), false)
	defer db.Close()
	neighbours := []string{"g/evlo", "g/evlog", "g/evlog.", "g/evlogz", "g/ew/1", "g/", "t/\x00\x00\x00\x00\x00\x00\x00\x03l/book/x", "zzz"}
	for _, k := range neighbours {
		require.NoError(t, db.Set([]byte(k), []byte("v:"+k), pebble.Sync))
	}
	l, err := NewPebbleLog(db, PebbleOptions{Partitions: testPartitions})
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		require.NoError(t, l.Append(ctx, []Event{testEvent(int64(i%9), "n", i)}))
	}
	for p := 0; p < testPartitions; p++ {
		require.NoError(t, l.Trim(ctx, p, 1<<40))
	}
	require.NoError(t, l.Close())

	it, err := db.NewIter(nil)
	require.NoError(t, err)
	var others []string
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key())
		if strings.HasPrefix(k, pebblePrefix) {
			continue
		}
		require.Equal(t, "v:"+k, string(it.Value()))
		others = append(others, k)
	}
	require.NoError(t, it.Close())
	require.ElementsMatch(t, neighbours, others)
}

// Durability against a real process kill: a child process appends in a loop and prints every
// acknowledged event; the test SIGKILLs it mid-stream (three times, each child continuing the
// log of the one before), reopens the store and finds every acknowledged event at its offset, with
// dense offsets from 0.
func TestPebbleLogSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	type pos struct {
		p   int
		off uint64
	}
	acked := make(map[pos]string)
	for round := 1; round <= 3; round++ {
		lines := runKilledChild(t, dir, round, 6000)
		for _, line := range lines {
			var (
				p   int
				off uint64
				id  string
			)
			_, err := fmt.Sscanf(line, "%d %d %s", &p, &off, &id)
			require.NoError(t, err, "line %q", line)
			_, dup := acked[pos{p, off}]
			require.False(t, dup, "offset %d of partition %d acknowledged twice", off, p)
			acked[pos{p, off}] = id
		}
		t.Logf("round %d: %d events acknowledged before SIGKILL", round, len(lines))
	}

	env := newPebbleEnv(t, dir)
	stored := make(map[pos]string)
	ids := make(map[string]bool)
	for p := 0; p < testPartitions; p++ {
		recs := readAll(t, env.log, p, 0, 1000)
		requireDense(t, recs, p, 0)
		for _, r := range recs {
			id := fmt.Sprintf("%s/%d", r.Event.SessionID, r.Event.ActiveMs)
			require.False(t, ids[id], "event %s stored twice", id)
			ids[id] = true
			stored[pos{p, r.Offset}] = id
		}
	}
	for at, id := range acked {
		require.Equal(t, id, stored[at], "acknowledged event at partition %d offset %d", at.p, at.off)
	}
	t.Logf("%d acknowledged, %d stored", len(acked), len(stored))
}

const (
	childEnv    = "FLIPBOOK_INGEST_CHILD"
	childDirEnv = "FLIPBOOK_INGEST_DIR"
	childTagEnv = "FLIPBOOK_INGEST_TAG"
)

// runKilledChild starts the appending child on dir, SIGKILLs it once it acknowledged at least
// n events, and returns the complete lines it printed (one per acknowledged event).
func runKilledChild(t *testing.T, dir string, round, n int) []string {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=pebble-append", childDirEnv+"="+dir, childTagEnv+"=r"+strconv.Itoa(round))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	var (
		mu    sync.Mutex
		lines []string
	)
	progress := make(chan struct{}, 1)
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if err != nil { // io.EOF: a line cut by the kill has no newline and is dropped
				return
			}
			mu.Lock()
			lines = append(lines, strings.TrimSuffix(line, "\n"))
			mu.Unlock()
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}()

	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		mu.Lock()
		have := len(lines)
		mu.Unlock()
		if have >= n {
			break
		}
		select {
		case <-progress:
		case <-eof:
			t.Fatalf("the child exited early: %v", stderr.String())
		case <-deadline.C:
			t.Fatalf("the child acknowledged only %d events in 30 s; stderr: %s", have, stderr.String())
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	killed = true
	<-eof
	err = cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "killed by SIGKILL: %v (%v)", cmd.ProcessState, err)
	mu.Lock()
	defer mu.Unlock()
	return lines
}

// runChild is the body of a child process (TestMain). "pebble-append": append to the log
// in $FLIPBOOK_INGEST_DIR from 8 goroutines until killed, printing "<partition> <offset>
// <tag>-g<goroutine>/<seq>" for every event once its Append returned.
func runChild(mode string) int {
	if mode != "pebble-append" {
		fmt.Fprintln(os.Stderr, "unknown child mode", mode)
		return 2
	}
	st, err := storage.Open(os.Getenv(childDirEnv), storage.Options{CacheBytes: 16 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := NewPebbleLog(st.DB(), PebbleOptions{Partitions: testPartitions})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tag := os.Getenv(childTagEnv)
	var mu sync.Mutex
	stop := time.Now().Add(60 * time.Second) // never outlive a test that died
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			marker := fmt.Sprintf("%s-g%d", tag, g)
			var buf []byte
			for seq := 0; time.Now().Before(stop); {
				events := make([]Event, 1+rng.IntN(30))
				for i := range events {
					events[i] = testEvent(int64(rng.IntN(50)), marker, seq)
					seq++
				}
				offs, err := l.AppendOffsets(context.Background(), events)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				buf = buf[:0]
				for i, e := range events {
					buf = fmt.Appendf(buf, "%d %d %s/%d\n", PartitionOf(e.Workspace, testPartitions), offs[i], e.SessionID, e.ActiveMs)
				}
				mu.Lock()
				_, err = os.Stdout.Write(buf)
				mu.Unlock()
				if err != nil {
					os.Exit(1)
				}
			}
		}()
	}
	wg.Wait()
	_ = l.Close()
	_ = st.Close()
	return 0
}

// BenchmarkPebbleAppend: many concurrent Appends of 20 events (64 goroutines on this 2-core
// machine) into the embedded log on the service's store, as the collector makes them.
// "untrimmed" keeps every event (Pebble flushes and compacts all of them); "trimmed" trims
// what was appended every 50 ms, as the analytics consumer does once DuckDB holds the events.
func BenchmarkPebbleAppend(b *testing.B) {
	for _, trim := range []bool{false, true} {
		name := "untrimmed"
		if trim {
			name = "trimmed"
		}
		b.Run(name, func(b *testing.B) { benchmarkPebbleAppend(b, trim) })
	}
}

func benchmarkPebbleAppend(b *testing.B, trim bool) {
	env := newPebbleEnv(b, b.TempDir())
	l := env.log
	stop, trimmed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(trimmed)
		if !trim {
			return
		}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for p := 0; p < l.Partitions(); p++ {
				if err := l.Trim(context.Background(), p, l.Next(p)); err != nil {
					b.Error(err)
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-trimmed }()
	start := l.Stats()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		events := make([]Event, 20)
		for pb.Next() {
			ws := int64(rng.IntN(1000))
			for i := range events {
				events[i] = sampleEvent(ws, i)
			}
			if err := l.Append(context.Background(), events); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	s := l.Stats()
	b.ReportMetric(float64(b.N*20)/b.Elapsed().Seconds(), "events/s")
	if c := s.Commits - start.Commits; c > 0 {
		b.ReportMetric(float64(s.Events-start.Events)/float64(c), "events/commit")
	}
}

// TestReadErrorNamesTheBadRecord: when a record of the embedded log does not decode, the
// error must name its offset (the operator has to find it: it stops the analytics consumer).
// ReadAppend cleared the records it read, the bad one included, before it formatted the error
// with rec.Offset, so every such error said "offset 0" (found by a review).
func TestReadErrorNamesTheBadRecord(t *testing.T) {
	t.Parallel()
	env := newPebbleEnv(t, t.TempDir())
	var events []Event
	for i := 0; i < 5; i++ {
		events = append(events, testEvent(1, "m", i))
	}
	require.NoError(t, env.log.Append(context.Background(), events))
	p := PartitionOf(1, testPartitions)
	require.NoError(t, env.st.DB().Set(recKey(p, 3), []byte{9, 1, 2, 3}, pebble.Sync))
	_, err := env.log.Read(context.Background(), p, 0, 10)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "offset 3"), "the error names the wrong record: %v", err)
}
