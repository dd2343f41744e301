package main

// Exactly-once delivery of reader events across real process kills: concurrent clients post
// POST /collect batches to a child server (TestMain in conversion_kill_test.go re-executes the
// test binary as `flipbook serve`), the test SIGKILLs it while they post, restarts it on the
// same data dir, kills it again, restarts it, and finally stops it with SIGTERM. Then it reads
// <data>/analytics.duckdb: every event of every batch answered 202 is stored exactly once,
// nothing is stored twice, nothing is stored that was never sent; events of batches whose
// request failed (in flight at a kill) are stored at most once. It runs against both event
// logs: the embedded one (Pebble, in the data dir) and Kafka (kfake, an in-process broker in
// the test process, so it outlives the children).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"flipbook/analytics"
	"flipbook/ingest"
	"flipbook/internal/testutil"
	"flipbook/storage"
)

const (
	killWorkers   = 8  // concurrent clients
	killMaxBatch  = 50 // events per /collect request: 1..killMaxBatch
	killBookPages = 3
)

// sentBatch is one /collect request: session is unique to it, and its events carry the
// sequence 1..n in active_ms (every fifth is a link_clicked whose url ends in the sequence).
type sentBatch struct {
	session string
	n       int
}

// collectLedger records the outcome of every batch sent.
type collectLedger struct {
	mu       sync.Mutex
	batches  map[string]int  // session → events, every batch that may have reached a server
	accepted map[string]bool // answered 202: stored exactly once
	events   int             // events of accepted batches
}

func newCollectLedger() *collectLedger {
	return &collectLedger{batches: map[string]int{}, accepted: map[string]bool{}}
}

func (l *collectLedger) sent(b sentBatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches[b.session] = b.n
}

// refused forgets a batch whose connection was refused: none of it may be stored.
func (l *collectLedger) refused(b sentBatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.batches, b.session)
}

func (l *collectLedger) accept(b sentBatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accepted[b.session] = true
	l.events += b.n
}

func (l *collectLedger) counts() (batches, accepted, events int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.batches), len(l.accepted), l.events
}

// unknown is the number of events of batches not answered 202.
func (l *collectLedger) unknown() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for s, size := range l.batches {
		if !l.accepted[s] {
			n += size
		}
	}
	return n
}

func killEventType(seq int) string {
	if seq%5 == 0 {
		return ingest.LinkClicked
	}
	return ingest.PageSegmentCompleted
}

func killEventURL(session string, seq int) string {
	if seq%5 == 0 {
		return fmt.Sprintf("https://example.com/%s/%d", session, seq)
	}
	return ""
}

func collectKillBody(book string, b sentBatch) []byte {
	events := make([]map[string]any, b.n)
	for i := range events {
		seq := i + 1
		e := map[string]any{"type": killEventType(seq), "page_number": 1 + i%killBookPages, "active_ms": seq}
		if u := killEventURL(b.session, seq); u != "" {
			e["url"] = u
		}
		events[i] = e
	}
	body, _ := json.Marshal(map[string]any{"book_id": book, "session_id": b.session, "events": events})
	return body
}

// posters are the concurrent clients of one child's life.
type posters struct {
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	client *http.Client
	fail   atomic.Value // string: an answer that is neither 202 nor a failure of the server
}

// startPosters starts killWorkers clients posting batches to base until stopped. A 202 marks
// the batch accepted; a transport error or 503 leaves it unknown (it may have been stored).
func startPosters(t *testing.T, base, book, phase string, ledger *collectLedger, seed uint64) *posters {
	p := &posters{stop: make(chan struct{}), client: &http.Client{Timeout: 20 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: killWorkers}}}
	t.Cleanup(func() { p.once.Do(func() { close(p.stop) }); p.wg.Wait() }) // a test that failed early
	for w := 0; w < killWorkers; w++ {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		p.wg.Go(func() {
			for seq := 0; ; seq++ {
				select {
				case <-p.stop:
					return
				default:
				}
				b := sentBatch{session: fmt.Sprintf("%s-w%d-%d", phase, w, seq), n: 1 + rng.IntN(killMaxBatch)}
				ledger.sent(b)
				res, err := p.client.Post(base+"/collect", "application/json", bytes.NewReader(collectKillBody(book, b)))
				if errors.Is(err, syscall.ECONNREFUSED) { // after a kill: never reached a server
					ledger.refused(b)
					time.Sleep(time.Millisecond) // sleep: the load generator's pause before it retries a server that refused the connection
					continue
				}
				if err != nil {
					continue // unknown: the server may have died with the request in flight
				}
				raw, _ := io.ReadAll(res.Body)
				res.Body.Close()
				switch res.StatusCode {
				case 202:
					ledger.accept(b)
				case 503: // the log refused: unknown
				default:
					p.fail.CompareAndSwap(nil, fmt.Sprintf("POST /collect: %d %s", res.StatusCode, raw))
					return
				}
			}
		})
	}
	return p
}

func (p *posters) halt(t *testing.T) {
	t.Helper()
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
	p.client.CloseIdleConnections()
	if f := p.fail.Load(); f != nil {
		t.Fatal(f)
	}
}

// walStamp identifies the state of DuckDB's write-ahead log: it changes when the consumer
// commits (or a checkpoint empties it).
func walStamp(dir string) string {
	fi, err := os.Stat(filepath.Join(dir, "analytics.duckdb.wal"))
	if err != nil {
		return "none"
	}
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
}

// checkStored opens the analytics store (no server may be running) and checks what it holds
// against the ledger: no event twice, no event never sent, the rows are exactly those below the
// stored log offsets, and (complete) every accepted event is there. It returns the row count.
func checkStored(t *testing.T, db *analytics.DB, book string, ledger *collectLedger, complete bool) int {
	t.Helper()
	ctx := context.Background()
	q := db.Query()
	var rows, ids int
	require.NoError(t, q.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT id) FROM events`).Scan(&rows, &ids))
	require.Equal(t, rows, ids, "event ids are unique")
	var offsets int
	require.NoError(t, q.QueryRowContext(ctx, `SELECT CAST(coalesce(sum(next_offset), 0) AS BIGINT) FROM consumer_offsets`).Scan(&offsets))
	// Both logs number each partition's records densely from 0, so the store holds exactly the
	// records below its offsets only if the counts agree.
	require.Equal(t, offsets, rows, "rows stored = records below the stored log offsets")

	res, err := q.QueryContext(ctx, `SELECT session_id, coalesce(active_ms, 0), count(*), min(book_id), max(book_id),
		min(event_type), coalesce(min(page_number), 0), min(url) FROM events GROUP BY ALL`)
	require.NoError(t, err)
	defer res.Close()
	seen := map[string]map[int]bool{}
	for res.Next() {
		var session, book1, book2, typ, url string
		var seq, n, page int
		require.NoError(t, res.Scan(&session, &seq, &n, &book1, &book2, &typ, &page, &url))
		ledger.mu.Lock()
		size, sent := ledger.batches[session]
		ledger.mu.Unlock()
		require.True(t, sent && seq >= 1 && seq <= size, "stored event %s/%d was never sent", session, seq)
		require.Equal(t, 1, n, "event %s/%d stored %d times", session, seq, n)
		require.Equal(t, book, book1)
		require.Equal(t, book, book2)
		require.Equal(t, killEventType(seq), typ, "%s/%d", session, seq)
		require.Equal(t, 1+(seq-1)%killBookPages, page, "%s/%d", session, seq)
		require.Equal(t, killEventURL(session, seq), url, "%s/%d", session, seq)
		if seen[session] == nil {
			seen[session] = map[int]bool{}
		}
		seen[session][seq] = true
	}
	require.NoError(t, res.Err())
	if complete {
		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		for session := range ledger.accepted {
			for seq := 1; seq <= ledger.batches[session]; seq++ {
				require.True(t, seen[session][seq], "accepted event %s/%d is not stored", session, seq)
			}
		}
	}
	return rows
}

func openAnalytics(t *testing.T, dir string) *analytics.DB {
	t.Helper()
	db, err := analytics.Open(context.Background(), filepath.Join(dir, "analytics.duckdb"), analytics.WithThreads(2))
	require.NoError(t, err)
	return db
}

// checkAfterKill checks the store a killed server left (DuckDB recovers from its WAL).
func checkAfterKill(t *testing.T, dir, book string, ledger *collectLedger) int {
	t.Helper()
	db := openAnalytics(t, dir)
	defer func() { require.NoError(t, db.Close()) }()
	return checkStored(t, db, book, ledger, false)
}

func TestCollectExactlyOnceAcrossKills(t *testing.T) {
	for _, backend := range []string{"pebble", "kafka"} {
		t.Run(backend, func(t *testing.T) { testCollectKill(t, backend) })
	}
}

func testCollectKill(t *testing.T, backend string) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	args := []string{"--data", dir, "--addr", "127.0.0.1:0", "--admin-token", "adm_collect_kill",
		"--rate-limit-endpoint", "0", "--rate-limit-workspace", "0", "--rate-limit-collect", "0"}
	var brokers []string
	if backend == "kafka" {
		// The broker lives in the test process: it survives the children's kills. The service
		// creates its topic (ingest.DefaultPartitions partitions) on the first start.
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		brokers = c.ListenAddrs()
		args = append(args, "--kafka-brokers", brokers[0])
	}

	child := startChild(t, args...)
	var key string // printed after the address startChild waited for
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, keyWritten(&key, child.stdout))
	body := konvaBody(t, "Read under fire", killBookPages, 40, 60)
	body["status"] = "publish"
	created := call(t, "POST", child.base+"/api/v1/books/konva", key, body)
	require.Equal(t, 201, created.status, "%s", created.raw)
	book := created.data()["random_id"].(string)

	ledger := newCollectLedger()
	// post runs the clients against child for a random 300-1500 ms, and at least until minBatches
	// more batches were accepted and the consumer committed to DuckDB since the child started
	// (its WAL changed); then it kills the child (SIGKILL, clients still posting) or stops it.
	post := func(phase string, minBatches int, kill bool) {
		t.Helper()
		wal := walStamp(dir)
		_, before, _ := ledger.counts()
		p := startPosters(t, child.base, book, phase, ledger, rng.Uint64())
		until := time.Now().Add(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
			if f := p.fail.Load(); f != nil {
				t.Fatal(f)
			}
			_, accepted, _ := ledger.counts()
			if accepted-before < minBatches {
				return fmt.Errorf("%s: %d of %d batches accepted", phase, accepted-before, minBatches)
			}
			if walStamp(dir) == wal {
				return fmt.Errorf("%s: %d batches accepted, but the DuckDB WAL has not changed since the child started", phase, accepted-before)
			}
			// The consumer committed events since the child started (not only its own setup).
			st := call(t, "GET", child.base+"/admin/v1/ingest", "adm_collect_kill", nil)
			cons, _ := st.data()["consumer"].(map[string]any)
			n, _ := cons["events"].(float64)
			if st.status != 200 || n <= 0 {
				return fmt.Errorf("%s: the consumer committed no events since the child started: %d %s", phase, st.status, st.raw)
			}
			return nil
		})
		time.Sleep(time.Until(until)) // sleep: the clients post for a random 300-1500 ms before the kill or stop (the load under test)
		if kill {
			child.kill(t)
			p.halt(t)
		} else {
			p.halt(t)
			child.stop(t)
		}
		sent, accepted, events := ledger.counts()
		t.Logf("%s: %d batches sent, %d accepted (%d events) so far", phase, sent, accepted, events)
	}

	post("first", 20, true)
	stored := checkAfterKill(t, dir, book, ledger)
	require.Positive(t, stored, "the consumer stored events before the first kill")
	t.Logf("after the first kill: %d events stored", stored)

	child = startChild(t, args...)
	post("second", 20, true)
	t.Logf("after the second kill: %d events stored", checkAfterKill(t, dir, book, ledger))

	child = startChild(t, args...)
	post("third", 10, false)

	// The service's shutdown does not drain the log into DuckDB, and DuckDB cannot be read while
	// a server holds it: the test catches up itself, with the service's consumer on the same
	// log and store (resuming from the stored offsets, as a restarted service would).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var log ingest.Log
	var st *storage.Store
	switch backend {
	case "pebble":
		var err error
		st, err = storage.Open(dir, storage.Options{})
		require.NoError(t, err)
		log, err = ingest.NewPebbleLog(st.DB(), ingest.PebbleOptions{})
		require.NoError(t, err)
	case "kafka":
		var err error
		log, err = ingest.NewKafkaLog(ctx, ingest.KafkaOptions{Brokers: brokers})
		require.NoError(t, err)
	}
	db := openAnalytics(t, dir)
	cons, err := analytics.NewConsumer(ctx, db, log, analytics.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	cons.Start()
	require.NoError(t, cons.WaitCaughtUp(ctx))
	require.NoError(t, cons.Close())
	require.NoError(t, log.Close())
	if st != nil {
		require.NoError(t, st.Close())
	}
	stats := cons.Stats()
	require.Zero(t, stats.Errors, "%s", stats.LastError)
	stored = checkStored(t, db, book, ledger, true)
	require.NoError(t, db.Close())
	sent, accepted, events := ledger.counts()
	unknown := ledger.unknown()
	t.Logf("%s: %d batches sent, %d accepted: %d accepted events, %d unknown; %d events stored (%d of them at the catch-up)",
		backend, sent, accepted, events, unknown, stored, stats.Events)
	require.GreaterOrEqual(t, stored, events)
	require.LessOrEqual(t, stored, events+unknown)
}
