package analytics

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"flipbook/ingest"
)

// Defaults of the consumer.
const (
	// DefaultMaxBatch is the most events one transaction stores: four row groups. Under load a
	// transaction takes whatever the log holds up to this, in whole row groups; idle, it takes
	// what is there.
	DefaultMaxBatch = 4 * RowGroupSize
	// DefaultIdleWait is the longest pause between two looks at an idle log; the pause starts at
	// minIdleWait and doubles. Events are visible to queries at most about this long (plus one
	// transaction) after they are durable in the log, unless Wake is called.
	DefaultIdleWait = 50 * time.Millisecond
	minIdleWait     = 2 * time.Millisecond
	// maxErrorWait caps the pause after a failed read or transaction.
	maxErrorWait = 2 * time.Second
	// DefaultGatherWait is the longest a busy consumer waits for a partly filled row group to
	// fill (roundBudget).
	DefaultGatherWait = 25 * time.Millisecond
)

// ConsumerOption configures NewConsumer.
type ConsumerOption func(*Consumer)

// WithMaxBatch sets the most events stored per transaction.
func WithMaxBatch(n int) ConsumerOption {
	return func(c *Consumer) {
		if n > 0 {
			c.maxBatch = n
		}
	}
}

// WithIdleWait sets the longest pause between looks at an idle log.
func WithIdleWait(d time.Duration) ConsumerOption {
	return func(c *Consumer) {
		if d > 0 {
			c.idleWait = d
		}
	}
}

// WithLogger sets where errors are logged (default slog.Default()).
func WithLogger(l *slog.Logger) ConsumerOption { return func(c *Consumer) { c.logger = l } }

// WithTrimmer makes the consumer report what it stored to trim instead of trimming the log
// itself (a log shared with other readers trims behind the slowest: ingest.TrimGate).
func WithTrimmer(trim ingest.Trimmer) ConsumerOption { return func(c *Consumer) { c.trim = trim } }

// WithPartitions makes the consumer read only the partitions owns says yes to, each from its
// offset stored in DuckDB (cluster mode: a node stores the events of the partitions it owns; a
// partition it takes over is replayed from where its copy stopped, or from the log's start).
func WithPartitions(owns func(p int) bool) ConsumerOption { return func(c *Consumer) { c.owns = owns } }

// withAllocator replaces the Arrow allocator (tests use a checked allocator).
func withAllocator(m memory.Allocator) ConsumerOption { return func(c *Consumer) { c.mem = m } }

// Stats are the consumer's counters since it was created.
type Stats struct {
	Events    uint64 // events stored
	Batches   uint64 // transactions committed
	Skipped   uint64 // records the log returned again below the stored offset (not stored twice)
	Errors    uint64 // failed reads, transactions or compactions (each retried)
	LastError string

	Compactions   uint64 // runs made from RecentTable
	CompactedRows uint64 // rows moved into those runs
	Merges        uint64 // merges of runs into a run of the next level
	Promoted      uint64 // runs appended to the archive at once (at least half a merge's budget)
	CompactChunks uint64 // sorts of one range of books, in moves of more than one chunk
	Reattaches    uint64 // times the compactor reattached the file (reattach.go)
	// MoveCommitMax is the longest a compaction's or merge's commit kept queries out
	// (DB.commitMove): the longest an analytics query waited for one.
	MoveCommitMax time.Duration
}

// Consumer moves events from the log into DuckDB. Its goroutine owns the appending
// connection. Each transaction inserts one Arrow batch and moves the offsets of the partitions
// the batch came from; the offsets are read back from DuckDB on start, so every event the log
// returns is stored exactly once whatever moment the process stopped at.
type Consumer struct {
	db       *DB
	log      ingest.Log
	trim     ingest.Trimmer   // log.Trim unless WithTrimmer
	owns     func(p int) bool // the partitions read (WithPartitions); nil: all
	maxBatch int
	idleWait time.Duration
	logger   *slog.Logger
	mem      memory.Allocator

	compactRows   int64
	compactFanout int
	compactEvery  time.Duration
	compactChunk  int64
	reattachRows  int64 // rows written into runs that make the compactor reattach the file
	written       int64 // rows written into runs since the last reattach (compactLoop goroutine)

	conn        *sql.Conn // the appending connection, owned by the run goroutine
	compactConn *sql.Conn // owned by the compactLoop goroutine
	next        []uint64  // next offset per partition; only the run goroutine touches it
	// A partition whose read failed is read again after partWait[p], doubled at each failure
	// (at most maxErrorWait), while the others go on (run goroutine).
	partWait    []time.Duration
	partRetry   []time.Time
	buf         []ingest.Record // the records of a round, reused; only the run goroutine touches it
	busy        bool            // the last round stored whole row groups (run goroutine)
	gatherSince time.Time       // since when less than a row group waits while busy (run goroutine)
	gatherWait  time.Duration

	wake    chan struct{}
	redactq chan *redactJob // redactions (redact.go), run by the compactor goroutine
	cancel  context.CancelFunc
	done    chan struct{} // closed when both goroutines have returned
	runErr  error         // the first error that stopped a goroutine; read after done

	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced whenever committed or rounds change
	committed []uint64      // next offset per partition as stored in DuckDB
	started   uint64        // rounds started
	idleRound uint64        // last round that found nothing to read
	stats     Stats

	// hook, for tests, is called at each step of a batch; an error stops the consumer there as
	// if the process died (the open transaction is never committed).
	hook func(step string) error
}

// Steps reported to the test hook.
const (
	stepRead      = "read"      // records read, nothing written yet
	stepInserted  = "inserted"  // rows and offsets written, not committed
	stepCommitted = "committed" // committed, log not trimmed yet
	stepTrimmed   = "trimmed"   // log trimmed
)

// NewConsumer takes the database's appending connection and loads the stored offsets. Start
// runs it; Close stops it and gives the connection back.
func NewConsumer(ctx context.Context, db *DB, log ingest.Log, opts ...ConsumerOption) (*Consumer, error) {
	parts := log.Partitions()
	if parts <= 0 || parts > ingest.MaxPartitions {
		return nil, fmt.Errorf("analytics: log has %d partitions (1..%d supported)", parts, ingest.MaxPartitions)
	}
	c := &Consumer{
		db: db, log: log,
		maxBatch: DefaultMaxBatch, idleWait: DefaultIdleWait, gatherWait: DefaultGatherWait, logger: slog.Default(),
		mem:         mallocator.NewMallocator(),
		compactRows: DefaultCompactRows, compactFanout: DefaultCompactFanout,
		compactEvery: DefaultCompactEvery,
		compactChunk: DefaultCompactChunk, reattachRows: DefaultReattachRows,
		wake:    make(chan struct{}, 1),
		redactq: make(chan *redactJob),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	for _, f := range opts {
		f(c)
	}
	if c.trim == nil {
		c.trim = log.Trim
	}
	conn, err := db.acquireAppender(ctx)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	var stored map[int]uint64
	err = db.use(ctx, func() (err error) {
		stored, err = loadOffsets(ctx, conn)
		return err
	})
	if err == nil {
		c.compactConn, err = db.sql.Conn(ctx)
	}
	if err != nil {
		db.releaseAppender(conn)
		return nil, err
	}
	c.next = make([]uint64, parts)
	c.partWait, c.partRetry = make([]time.Duration, parts), make([]time.Time, parts)
	for p, n := range stored {
		if p < 0 || p >= parts {
			c.releaseConns()
			return nil, fmt.Errorf("analytics: stored offset for partition %d, but the log has %d partitions", p, parts)
		}
		c.next[p] = n
	}
	if err := c.checkLogEnd(ctx); err != nil {
		c.releaseConns()
		return nil, err
	}
	c.committed = append([]uint64(nil), c.next...)
	return c, nil
}

// ErrOffsetsPastLogEnd: the offsets stored with the analytics are past the event log's end,
// so the log is not the one they were stored from (a move from the embedded log to Kafka,
// another --kafka-topic, a topic recreated, a store restored from an older backup).
var ErrOffsetsPastLogEnd = errors.New("analytics: the stored offsets are past the event log's end")

// checkLogEnd refuses offsets past the log's end. Read from them, the new log's events would be
// taken for stored ones and skipped, without an error, until its offsets passed the old ones
// (found by a review: the events a service acknowledged after a move to Kafka were never
// stored). A log that cannot tell its end now (brokers away) is not checked.
func (c *Consumer) checkLogEnd(ctx context.Context) error {
	eo, ok := c.log.(ingest.EndOffsets)
	if !ok {
		return nil
	}
	ends, err := eo.EndOffsets(ctx)
	if err != nil {
		c.logger.Warn("analytics consumer: the event log's end is unknown; stored offsets not checked", "err", err)
		return nil
	}
	for p, next := range c.next {
		if p < len(ends) && next > ends[p] && (c.owns == nil || c.owns(p)) {
			return fmt.Errorf("%w: partition %d stored up to offset %d, and the log ends at %d; the analytics were stored "+
				"from another log (docs/OPERATIONS.md, \"Moving the event log\")", ErrOffsetsPastLogEnd, p, next, ends[p])
		}
	}
	return nil
}

// Start runs the consumer: one goroutine appends, one compacts.
func (c *Consumer) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	var wg sync.WaitGroup
	var once sync.Once
	// An error that stops one goroutine stops the other: the consumer stops as a whole, as
	// the process would.
	stop := func(err error) {
		if err != nil {
			once.Do(func() { c.runErr = err })
			cancel()
		}
	}
	wg.Go(func() { stop(c.run(ctx)) })
	// The compactor goroutine also runs redactions (redact.go), so it runs with compaction off.
	wg.Go(func() { stop(c.compactLoop(ctx)) })
	go func() {
		wg.Wait()
		close(c.done)
	}()
}

// Close stops the consumer: the batch in progress finishes, no new batch starts, a compaction
// in progress stops after its current statement (rolled back; a merge statement of ~8M rows can
// take tens of seconds on 2 cores), and the connections are released. It returns the error
// that stopped the consumer early, if any.
func (c *Consumer) Close() error {
	c.closeOnce.Do(func() {
		if c.cancel != nil {
			c.cancel()
			<-c.done
		}
		c.closeErr = c.releaseConns()
		if c.runErr != nil {
			c.closeErr = c.runErr
		}
	})
	return c.closeErr
}

func (c *Consumer) releaseConns() error {
	// database/sql closes a connection itself when the context of its transaction ends (a
	// compaction abandoned at Close): that is not a failure.
	ignoreDone := func(err error) error {
		if errors.Is(err, sql.ErrConnDone) {
			return nil
		}
		return err
	}
	return errors.Join(ignoreDone(c.compactConn.Close()), ignoreDone(c.db.releaseAppender(c.conn)))
}

// Wake makes an idle consumer look at the log now (the collector may call it after an append).
func (c *Consumer) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Stats returns the counters.
func (c *Consumer) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Offsets returns the committed next offset of every partition.
func (c *Consumer) Offsets() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]uint64(nil), c.committed...)
}

// WaitFor returns once the committed next offset of each partition in want is at least the
// given one (so those events are visible to queries), or when ctx ends.
func (c *Consumer) WaitFor(ctx context.Context, want map[int]uint64) error {
	return c.waitUntil(ctx, func() bool {
		for p, n := range want {
			if p < 0 || p >= len(c.committed) || c.committed[p] < n {
				return false
			}
		}
		return true
	})
}

// WaitStored returns once the consumer has stored at least n events since it started
// (Stats().Events), or when ctx ends.
func (c *Consumer) WaitStored(ctx context.Context, n uint64) error {
	return c.waitUntil(ctx, func() bool { return c.stats.Events >= n })
}

// WaitCaughtUp returns once a full pass over the log that started after the call found nothing
// left to store: every event durable in the log before the call is then visible to queries.
func (c *Consumer) WaitCaughtUp(ctx context.Context) error {
	c.mu.Lock()
	target := c.started + 1
	c.mu.Unlock()
	return c.waitUntil(ctx, func() bool { return c.idleRound >= target })
}

func (c *Consumer) waitUntil(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		ok, ch := cond(), c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-c.done:
			c.mu.Lock()
			ok = cond()
			c.mu.Unlock()
			if ok {
				return nil
			}
			if c.runErr != nil {
				return fmt.Errorf("analytics: consumer stopped: %w", c.runErr)
			}
			return errors.New("analytics: consumer stopped")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notify wakes the waiters; call with c.mu held.
func (c *Consumer) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Consumer) run(ctx context.Context) error {
	parts := len(c.next)
	wait := minIdleWait
	errWait := time.Duration(0)
	first := 0 // partition read first this round, rotated so none starves under load
	for ctx.Err() == nil {
		c.mu.Lock()
		c.started++
		round := c.started
		c.mu.Unlock()

		budget, gather := c.roundBudget(time.Now())
		if gather {
			if !c.pause(ctx, minIdleWait) {
				return nil
			}
			continue
		}
		batch, recs, partErr, err := c.readRound(ctx, first, budget)
		if partErr != nil {
			// One partition could not be read (a record this build cannot decode, a Kafka
			// offset gone): the others are stored meanwhile, and it is read again later.
			c.mu.Lock()
			c.stats.Errors++
			c.stats.LastError = partErr.Error()
			c.mu.Unlock()
			c.logger.Error("analytics consumer", "err", partErr)
		}
		n := len(recs)
		c.busy = n >= RowGroupSize
		first = (first + 1) % parts
		if err == nil && n > 0 {
			// A batch that started is finished even when Close comes meanwhile (it is
			// short); only the pauses and reads between batches end at Close. DuckDB never
			// sees a cancelled context (see compactRecent).
			err = c.store(context.WithoutCancel(ctx), batch, recs)
		}
		clear(recs) // the buffer stays, the events' strings go
		if n == 0 && cap(c.buf) > idleBufCap {
			c.buf = nil // idle: give the buffer back
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if isHookStop(err) {
				return err
			}
			c.mu.Lock()
			c.stats.Errors++
			c.stats.LastError = err.Error()
			c.mu.Unlock()
			c.logger.Error("analytics consumer", "err", err)
			// Whatever failed, the offsets DuckDB holds are the truth: a failure reported
			// after a commit took effect must not make the batch be stored twice.
			if err := c.reloadOffsets(context.WithoutCancel(ctx)); err != nil {
				c.logger.Error("analytics consumer: reload offsets", "err", err)
			}
			errWait = min(max(2*errWait, 10*time.Millisecond), maxErrorWait)
			if !c.pause(ctx, errWait) {
				return nil
			}
			continue
		}
		errWait = 0
		if n > 0 {
			wait = minIdleWait
			continue
		}
		c.mu.Lock()
		c.idleRound = round
		c.notify()
		c.mu.Unlock()
		if !c.pause(ctx, wait) {
			return nil
		}
		wait = min(2*wait, c.idleWait)
	}
	return nil
}

// reloadOffsets sets next from the offsets stored in DuckDB.
func (c *Consumer) reloadOffsets(ctx context.Context) error {
	var stored map[int]uint64
	err := c.db.use(ctx, func() (err error) {
		stored, err = loadOffsets(ctx, c.conn)
		return err
	})
	if err != nil {
		return err
	}
	for p, n := range stored {
		if p >= 0 && p < len(c.next) {
			c.next[p] = n
		}
	}
	c.mu.Lock()
	copy(c.committed, c.next)
	c.notify()
	c.mu.Unlock()
	return nil
}

// pause waits d, or until Wake; false when the consumer is stopping.
func (c *Consumer) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.wake:
	case <-ctx.Done():
		return false
	}
	return true
}

// partBatch is what one partition contributes to a transaction.
type partBatch struct {
	p    int
	recs []ingest.Record // a part of the round's records
}

// appendReader is a log that reads into a caller's buffer (the embedded log): one buffer holds
// every partition's records of a round, which are then one batch as they are, not copied.
type appendReader interface {
	ReadAppend(ctx context.Context, p int, from uint64, max int, dst []ingest.Record) ([]ingest.Record, error)
}

// idleBufCap is the largest record buffer kept while the log is idle.
const idleBufCap = 4096

// endsLog is a log that tells without I/O where each partition ends (the embedded log).
type endsLog interface {
	Next(p int) uint64
}

// roundBudget is how many events a round reads: up to maxBatch; when the log can tell how many
// are waiting and they fill at least one row group, a multiple of RowGroupSize (the rest waits
// for the next round, which starts at once). Whole row groups are written straight into the
// file; a partly filled one goes through DuckDB's WAL and is compressed twice (db.go). A log
// that cannot tell is read up to maxBatch.
//
// Right after a round of whole row groups (the consumer is busy), less than a row group
// waiting is deferred (wait = true) for up to gatherWait: the events that follow are usually
// milliseconds away (collector requests paced by the backlog are released by the commit that
// just happened), and waiting for them keeps the next transaction whole too.
func (c *Consumer) roundBudget(now time.Time) (budget int, wait bool) {
	el, ok := c.log.(endsLog)
	if !ok {
		return c.maxBatch, false
	}
	waiting := 0
	for p, next := range c.next {
		if end := el.Next(p); end > next {
			waiting += int(min(end-next, uint64(c.maxBatch)))
		}
	}
	budget = min(waiting, c.maxBatch)
	if budget >= RowGroupSize {
		c.gatherSince = time.Time{}
		return budget - budget%RowGroupSize, false
	}
	if budget > 0 && c.busy && c.gatherWait > 0 {
		if c.gatherSince.IsZero() {
			c.gatherSince = now
		}
		if now.Sub(c.gatherSince) < c.gatherWait {
			return 0, true
		}
	}
	c.gatherSince = time.Time{}
	return budget, false
}

// readRound reads each partition from its next offset, up to roundBudget events in all. It
// returns each partition's part and all the records, in c.buf. A partition that cannot be read
// is left out of the round (partErr says why) and waits its turn (partWait): one record that
// does not decode stopped every workspace's analytics (found by a review).
func (c *Consumer) readRound(ctx context.Context, first, budget int) (_ []partBatch, _ []ingest.Record, partErr, _ error) {
	var out []partBatch
	parts := len(c.next)
	now := time.Now()
	ar, _ := c.log.(appendReader)
	if ar != nil && cap(c.buf) < budget {
		c.buf = make([]ingest.Record, 0, budget) // never grown while parts point into it
	}
	all := c.buf[:0]
	defer func() { c.buf = all[:0] }()
	for i := 0; i < parts && len(all) < budget; i++ {
		p := (first + i) % parts
		if (c.owns != nil && !c.owns(p)) || now.Before(c.partRetry[p]) {
			continue
		}
		var recs []ingest.Record
		var err error
		start := len(all)
		if ar != nil {
			all, err = ar.ReadAppend(ctx, p, c.next[p], budget-len(all), all)
			recs = all[start:]
		} else {
			recs, err = c.log.Read(ctx, p, c.next[p], budget-len(all))
		}
		fail := func(err error) {
			clear(all[start:])
			all = all[:start]
			c.partWait[p] = min(max(2*c.partWait[p], 10*time.Millisecond), maxErrorWait)
			c.partRetry[p] = now.Add(c.partWait[p])
			partErr = errors.Join(partErr, fmt.Errorf("read partition %d from %d: %w", p, c.next[p], err))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, all, nil, ctx.Err()
			}
			fail(err)
			continue
		}
		// A log may hand back records below the asked offset (a replay): they are stored
		// already, by the offset invariant, and are dropped here.
		skip := 0
		for skip < len(recs) && recs[skip].Offset < c.next[p] {
			skip++
		}
		if skip > 0 {
			c.mu.Lock()
			c.stats.Skipped += uint64(skip)
			c.mu.Unlock()
			recs = recs[skip:]
		}
		if len(recs) == 0 {
			clear(all[start:])
			all = all[:start]
			c.partWait[p] = 0
			continue
		}
		if err := checkOffsets(p, c.next[p], recs); err != nil {
			fail(err)
			continue
		}
		c.partWait[p] = 0
		if ar != nil {
			if skip > 0 { // close the gap: the batch is all[...] as it is
				n := copy(all[start:], recs)
				clear(all[start+n:])
				all = all[:start+n]
				recs = all[start:]
			}
		} else {
			all = append(all, recs...)
			recs = all[start:]
		}
		out = append(out, partBatch{p: p, recs: recs})
	}
	return out, all, partErr, nil
}

// checkOffsets refuses a batch whose offsets are not increasing from next. A gap (the log
// lost or trimmed records never stored) is stored as is and logged by the caller's log line.
func checkOffsets(p int, next uint64, recs []ingest.Record) error {
	prev := next
	for i, r := range recs {
		if r.Partition != p {
			return fmt.Errorf("read partition %d: record %d is of partition %d", p, i, r.Partition)
		}
		if r.Offset < prev || (i > 0 && r.Offset == prev) {
			return fmt.Errorf("read partition %d: offsets not increasing at %d (offset %d after %d)", p, i, r.Offset, prev)
		}
		prev = r.Offset
	}
	return nil
}

var errHookStop = errors.New("analytics: stopped by test hook")

func isHookStop(err error) bool { return errors.Is(err, errHookStop) }

func (c *Consumer) step(s string) error {
	if c.hook == nil {
		return nil
	}
	if err := c.hook(s); err != nil {
		return fmt.Errorf("%w at %s: %v", errHookStop, s, err)
	}
	return nil
}

// viewName is the Arrow view of the batch being inserted. RegisterArrowView makes a
// persistent view in the main schema (DuckDB's arrow_scan, temporary=false), pointing at
// memory that is freed after the batch: it is created and dropped inside the batch's
// transaction, so it is never committed.
const viewName = "ingest_batch"

// store writes one batch (recs, the parts of batch one after another) and its offsets in one
// transaction, then trims the log.
func (c *Consumer) store(ctx context.Context, batch []partBatch, recs []ingest.Record) error {
	if err := c.step(stepRead); err != nil {
		return err
	}
	for _, b := range batch {
		if gap := b.recs[0].Offset - c.next[b.p]; gap > 0 {
			c.logger.Warn("analytics consumer: log offsets skipped", "partition", b.p, "from", c.next[b.p], "to", b.recs[0].Offset)
		}
	}
	rec := BuildRecord(c.mem, recs)
	defer rec.Release()

	if err := c.insert(ctx, rec, batch); err != nil {
		return err
	}
	for _, b := range batch {
		c.next[b.p] = b.recs[len(b.recs)-1].Offset + 1
	}
	c.mu.Lock()
	for _, b := range batch {
		c.committed[b.p] = c.next[b.p]
	}
	c.stats.Events += uint64(len(recs))
	c.stats.Batches++
	c.notify()
	c.mu.Unlock()

	if err := c.step(stepCommitted); err != nil {
		return err
	}
	// Trim is advisory: a failure leaves records that the stored offsets skip anyway, and the
	// next trim of the partition covers them.
	for _, b := range batch {
		if err := c.trim(ctx, b.p, c.next[b.p]); err != nil && ctx.Err() == nil {
			c.logger.Warn("analytics consumer: trim", "partition", b.p, "err", err)
		}
	}
	return c.step(stepTrimmed)
}

// insert is the transaction: the Arrow batch into RecentTable and the partitions' new next
// offsets into OffsetsTable, committed together or not at all.
func (c *Consumer) insert(ctx context.Context, rec arrow.RecordBatch, batch []partBatch) (err error) {
	if err := c.db.gate.enter(ctx); err != nil {
		return err
	}
	defer c.db.gate.leave()
	rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return err
	}
	defer rr.Release()

	tx, err := c.conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()

	var release func()
	err = c.conn.Raw(func(dc any) (err error) {
		release, err = RegisterArrowView(dc.(driver.Conn), rr, viewName)
		return err
	})
	if err != nil {
		return fmt.Errorf("register arrow view: %w", err)
	}
	defer release()
	// Only ever SELECT * from an Arrow view, once (DEPENDENCIES.md: a projection of some
	// columns can read the wrong column).
	res, err := tx.ExecContext(ctx, "INSERT INTO "+RecentTable+" ("+columnList+") SELECT * FROM "+viewName)
	if err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n != rec.NumRows() {
		return fmt.Errorf("insert events: %d rows inserted of %d", n, rec.NumRows())
	}
	if _, err := tx.ExecContext(ctx, "DROP VIEW "+viewName); err != nil {
		return fmt.Errorf("drop arrow view: %w", err)
	}
	if _, err := tx.ExecContext(ctx, offsetsUpsert(batch)); err != nil {
		return fmt.Errorf("store offsets: %w", err)
	}
	if err := c.step(stepInserted); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	return nil
}

// offsetsUpsert is one statement setting every batch partition's next offset (integers only,
// written out: no parameters to bind).
func offsetsUpsert(batch []partBatch) string {
	var sb strings.Builder
	sb.WriteString("INSERT OR REPLACE INTO " + OffsetsTable + " VALUES ")
	for i, b := range batch {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(")
		sb.WriteString(strconv.Itoa(b.p))
		sb.WriteString(", ")
		sb.WriteString(strconv.FormatUint(b.recs[len(b.recs)-1].Offset+1, 10))
		sb.WriteString(")")
	}
	return sb.String()
}

// stopped reports whether both goroutines have returned.
func (c *Consumer) stopped() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
