package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// ErrClosed is returned by a log's methods after Close.
var ErrClosed = errors.New("ingest: event log closed")

// Keys of the embedded log. The log owns every key under "g/evlog/" in the service's Pebble
// DB and writes nothing else; nothing else writes under it.
//
//	g/evlog/meta                        number of partitions (uvarint), fixed at first open
//	g/evlog/r<partition 2B><offset 8B>  encoded event (codec.go); big-endian, so key order is
//	                                    partition, then offset order
//	g/evlog/f<partition 2B>             trim floor: records below this offset were deleted (8B)
const (
	pebblePrefix  = "g/evlog/"
	pebbleMetaKey = pebblePrefix + "meta"
	recPrefix     = pebblePrefix + "r"
	floorPrefix   = pebblePrefix + "f"
	recKeyLen     = len(recPrefix) + 2 + 8
)

// DefaultPartitions is the number of partitions of a new log when none is configured.
const DefaultPartitions = 16

// PebbleOptions configure NewPebbleLog. Zero values mean the defaults.
type PebbleOptions struct {
	// Partitions of a new log (default DefaultPartitions). An existing log keeps the count it
	// was created with; a different non-zero value is an error (it would move workspaces to
	// other partitions and break their order).
	Partitions int
	// MaxDelay is how long the committer waits after the first pending Append for more to
	// join its batch. Default 0: it commits at once, and Appends that arrive while a commit is
	// in progress form the next batch, which under load is already large.
	MaxDelay time.Duration
	// MaxBatchEvents and MaxBatchBytes bound one group commit (defaults 16384 events and
	// 8 MiB of encoded events). One Append is never split: a larger one is committed alone.
	MaxBatchEvents int
	MaxBatchBytes  int
	// QueueSize is how many Appends may wait for the committer (default 1024); further
	// Appends block, which bounds the memory held by intake.
	QueueSize int
}

// PebbleLog is the embedded event log: events under their own key prefix in the service's
// Pebble DB, appended by group commit.
//
// Every Append encodes its events in the caller's goroutine and hands them to one committer
// goroutine, which takes every pending Append (up to the batch limits), assigns the offsets
// (so they are dense and in commit order), writes one Pebble batch with a synced commit, and
// then releases all of them with the commit's result. A synced commit costs ~0.27 ms here, so
// one commit per Append would cap intake near 4k Appends/s; grouped, the cost is shared.
//
// Pebble makes a batch visible to readers before its WAL sync completes, so Read only returns
// records below each partition's durable offset, which the committer advances after the
// synced commit returned: a reader never sees an event that a crash could still take away.
//
// The log does not own the DB: Close the log before the DB. Open one PebbleLog per DB (two
// committers would hand out the same offsets).
type PebbleLog struct {
	db    *pebble.DB
	parts int
	opts  PebbleOptions

	reqs   chan *appendReq
	mu     sync.RWMutex // closed, and sending on reqs (Close closes reqs under the write lock)
	closed bool
	isDone atomic.Bool   // Close was called (for Read and Trim)
	done   chan struct{} // the committer has exited

	next    []uint64        // next offset per partition; owned by the committer
	saved   []uint64        // next before the batch being committed (to undo a failed commit)
	durable []atomic.Uint64 // per partition: every offset below it is durably committed

	trimMu sync.Mutex
	floor  []uint64 // per partition: offsets below it were trimmed; guarded by trimMu

	commits, committed atomic.Uint64 // statistics
}

// appendReq is one Append waiting for the committer. Pooled: the caller puts it back after
// receiving the result (never when it gave up waiting, since the committer may still use it).
type appendReq struct {
	buf     []byte   // encoded events, back to back
	ends    []int    // end of each event in buf
	parts   []uint16 // partition of each event
	offsets []uint64 // filled by the committer
	done    chan error
}

var reqPool = sync.Pool{New: func() any { return &appendReq{done: make(chan error, 1)} }}

// NewPebbleLog opens the event log stored in db (creating it on first use) and starts its
// committer. Offsets continue where they ended: from the last record of each partition, or
// the trim floor when every record was trimmed.
func NewPebbleLog(db *pebble.DB, o PebbleOptions) (*PebbleLog, error) {
	if o.Partitions < 0 || o.Partitions > MaxPartitions {
		return nil, fmt.Errorf("ingest: partitions must be 1..%d, got %d", MaxPartitions, o.Partitions)
	}
	if o.MaxBatchEvents <= 0 {
		o.MaxBatchEvents = 16384
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = 8 << 20
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1024
	}
	parts, err := pebbleLogPartitions(db, o.Partitions)
	if err != nil {
		return nil, err
	}
	l := &PebbleLog{
		db: db, parts: parts, opts: o,
		reqs:    make(chan *appendReq, o.QueueSize),
		done:    make(chan struct{}),
		next:    make([]uint64, parts),
		saved:   make([]uint64, parts),
		durable: make([]atomic.Uint64, parts),
		floor:   make([]uint64, parts),
	}
	if err := l.load(); err != nil {
		return nil, err
	}
	go l.run()
	return l, nil
}

// pebbleLogPartitions reads the stored partition count, or stores the configured one.
func pebbleLogPartitions(db *pebble.DB, want int) (int, error) {
	v, closer, err := db.Get([]byte(pebbleMetaKey))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if want == 0 {
			want = DefaultPartitions
		}
		if err := db.Set([]byte(pebbleMetaKey), binary.AppendUvarint(nil, uint64(want)), pebble.Sync); err != nil {
			return 0, fmt.Errorf("ingest: store event log partitions: %w", err)
		}
		return want, nil
	case err != nil:
		return 0, fmt.Errorf("ingest: read event log partitions: %w", err)
	}
	stored, n := binary.Uvarint(v)
	_ = closer.Close()
	if n <= 0 || stored == 0 || stored > MaxPartitions {
		return 0, fmt.Errorf("ingest: corrupt event log partitions %x", v)
	}
	if want != 0 && uint64(want) != stored {
		return 0, fmt.Errorf("ingest: the event log has %d partitions, configured %d (the count cannot change)", stored, want)
	}
	return int(stored), nil
}

// load derives each partition's next offset from its last record and its trim floor.
func (l *PebbleLog) load() error {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte(recPrefix), UpperBound: partPrefix(recPrefix, MaxPartitions)})
	if err != nil {
		return err
	}
	for p := 0; p < l.parts; p++ {
		if it.SeekLT(partPrefix(recPrefix, p+1)) && len(it.Key()) == recKeyLen && int(binary.BigEndian.Uint16(it.Key()[len(recPrefix):])) == p {
			l.next[p] = binary.BigEndian.Uint64(it.Key()[len(recPrefix)+2:]) + 1
		}
		v, closer, err := l.db.Get(partPrefix(floorPrefix, p))
		if err == nil {
			if len(v) == 8 {
				l.floor[p] = binary.BigEndian.Uint64(v)
			}
			_ = closer.Close()
		} else if !errors.Is(err, pebble.ErrNotFound) {
			_ = it.Close()
			return err
		}
		l.next[p] = max(l.next[p], l.floor[p])
		l.durable[p].Store(l.next[p])
	}
	return it.Close()
}

// partPrefix is prefix + the partition as 2 bytes big endian.
func partPrefix(prefix string, p int) []byte {
	return binary.BigEndian.AppendUint16([]byte(prefix), uint16(p))
}

// recKey is the key of a record.
func recKey(p int, off uint64) []byte {
	return binary.BigEndian.AppendUint64(partPrefix(recPrefix, p), off)
}

// Partitions is the number of partitions.
func (l *PebbleLog) Partitions() int { return l.parts }

// Append stores events durably (see Log). All events of one Append are in one synced Pebble
// batch: they are all stored or none is. When ctx ends before the result, Append returns
// ctx.Err() and the events may or may not be stored.
func (l *PebbleLog) Append(ctx context.Context, events []Event) error {
	return l.append(ctx, events, nil)
}

// AppendOffsets is Append that also reports the offset each event got (its partition is
// PartitionOf(event.Workspace, Partitions())).
func (l *PebbleLog) AppendOffsets(ctx context.Context, events []Event) ([]uint64, error) {
	out := make([]uint64, len(events))
	if err := l.append(ctx, events, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (l *PebbleLog) append(ctx context.Context, events []Event, offsets []uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(events) == 0 {
		if l.isDone.Load() {
			return ErrClosed
		}
		return nil
	}
	r := reqPool.Get().(*appendReq)
	r.buf, r.ends, r.parts = r.buf[:0], r.ends[:0], r.parts[:0]
	if cap(r.offsets) < len(events) {
		r.offsets = make([]uint64, len(events))
	}
	r.offsets = r.offsets[:len(events)]
	for i := range events {
		r.buf = appendEvent(r.buf, &events[i])
		r.ends = append(r.ends, len(r.buf))
		r.parts = append(r.parts, uint16(PartitionOf(events[i].Workspace, l.parts)))
	}

	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		reqPool.Put(r)
		return ErrClosed
	}
	select {
	case l.reqs <- r:
		l.mu.RUnlock()
	case <-ctx.Done():
		l.mu.RUnlock()
		reqPool.Put(r)
		return ctx.Err()
	}

	select {
	case err := <-r.done:
		copy(offsets, r.offsets)
		if cap(r.buf) <= 1<<20 { // do not keep a rare huge buffer alive in the pool
			reqPool.Put(r)
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the committer: it groups pending Appends into one synced batch at a time. After
// Close it commits what is still queued and exits.
func (l *PebbleLog) run() {
	defer close(l.done)
	var (
		batch []*appendReq
		timer *time.Timer
	)
	for {
		r, ok := <-l.reqs
		if !ok {
			return
		}
		batch = append(batch[:0], r)
		events, bytes := len(r.ends), len(r.buf)
		open := true
		var expired <-chan time.Time
		if l.opts.MaxDelay > 0 {
			if timer == nil {
				timer = time.NewTimer(l.opts.MaxDelay)
			} else {
				timer.Reset(l.opts.MaxDelay)
			}
			expired = timer.C
		}
	collect:
		for events < l.opts.MaxBatchEvents && bytes < l.opts.MaxBatchBytes {
			select {
			case r, open = <-l.reqs:
			default:
				if expired == nil {
					break collect
				}
				select {
				case r, open = <-l.reqs:
				case <-expired:
					expired = nil
					break collect
				}
			}
			if !open {
				break
			}
			batch = append(batch, r)
			events += len(r.ends)
			bytes += len(r.buf)
		}
		if expired != nil {
			timer.Stop() // since Go 1.23 a stopped timer delivers no stale tick after Reset
		}
		l.commit(batch, events, bytes)
		clear(batch) // do not keep pooled requests reachable from here
		if !open {
			return
		}
	}
}

// commit writes the events of batch in one synced Pebble batch and releases its Appends.
func (l *PebbleLog) commit(batch []*appendReq, events, bytes int) {
	copy(l.saved, l.next)
	b := l.db.NewBatchWithSize(bytes + events*(recKeyLen+16))
	var key [recKeyLen]byte
	copy(key[:], recPrefix)
	for _, r := range batch {
		start := 0
		for i, end := range r.ends {
			p := r.parts[i]
			off := l.next[p]
			l.next[p]++
			r.offsets[i] = off
			binary.BigEndian.PutUint16(key[len(recPrefix):], p)
			binary.BigEndian.PutUint64(key[len(recPrefix)+2:], off)
			if err := b.Set(key[:], r.buf[start:end], nil); err != nil {
				panic(err) // Set on a fresh batch only fails for a closed batch
			}
			start = end
		}
	}
	err := l.db.Apply(b, pebble.Sync)
	_ = b.Close()
	if err != nil {
		copy(l.next, l.saved) // nothing of the batch was stored: reuse its offsets
		err = fmt.Errorf("ingest: commit events: %w", err)
	} else {
		for p := range l.next {
			if l.next[p] != l.saved[p] {
				l.durable[p].Store(l.next[p])
			}
		}
		l.commits.Add(1)
		l.committed.Add(uint64(events))
	}
	for _, r := range batch {
		r.done <- err
	}
}

// Read returns up to max durable records of partition p from offset `from` (see Log).
// Records below the trim floor are gone: reading there starts at the first remaining one.
func (l *PebbleLog) Read(ctx context.Context, p int, from uint64, max int) ([]Record, error) {
	return l.ReadAppend(ctx, p, from, max, nil)
}

// ReadAppend is Read appending the records to dst, so a reader can reuse one buffer for every
// partition and round (the analytics consumer builds one batch of all of them).
func (l *PebbleLog) ReadAppend(ctx context.Context, p int, from uint64, max int, dst []Record) ([]Record, error) {
	if err := l.check(ctx, p); err != nil {
		return dst, err
	}
	end := l.durable[p].Load()
	if max <= 0 || from >= end {
		return dst, nil
	}
	if uint64(max) < end-from {
		end = from + uint64(max)
	}
	it, err := l.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: recKey(p, from), UpperBound: recKey(p, end)})
	if err != nil {
		return dst, err
	}
	out := dst
	if out == nil {
		out = make([]Record, 0, min(end-from, 4096))
	}
	for ok := it.First(); ok; ok = it.Next() {
		// Decoded in place: a Record is a few hundred bytes, not worth copying.
		out = append(out, Record{Partition: p, Offset: binary.BigEndian.Uint64(it.Key()[len(recPrefix)+2:])})
		rec := &out[len(out)-1]
		v, err := it.ValueAndErr()
		if err == nil {
			err = decodeEvent(v, &rec.Event)
		}
		if err != nil {
			_ = it.Close()
			err = fmt.Errorf("ingest: read partition %d offset %d: %w", p, rec.Offset, err) // before rec is cleared
			clear(out[len(dst):])
			return dst, err
		}
	}
	if err := it.Close(); err != nil {
		return dst, err
	}
	return out, nil
}

// Trim deletes the records of partition p below offset `before` (one Pebble DeleteRange) and
// stores the new trim floor with it, so offsets continue after a restart even when every
// record was trimmed. Offsets not yet durable are never trimmed. The delete is not synced: if a
// crash loses it, the records come back and are trimmed again by a later call.
func (l *PebbleLog) Trim(ctx context.Context, p int, before uint64) error {
	if err := l.check(ctx, p); err != nil {
		return err
	}
	l.trimMu.Lock()
	defer l.trimMu.Unlock()
	before = min(before, l.durable[p].Load())
	if before <= l.floor[p] {
		return nil
	}
	b := l.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(recKey(p, l.floor[p]), recKey(p, before), nil); err != nil {
		return err
	}
	if err := b.Set(partPrefix(floorPrefix, p), binary.BigEndian.AppendUint64(nil, before), nil); err != nil {
		return err
	}
	if err := l.db.Apply(b, pebble.NoSync); err != nil {
		return fmt.Errorf("ingest: trim partition %d: %w", p, err)
	}
	l.floor[p] = before
	return nil
}

func (l *PebbleLog) check(ctx context.Context, p int) error {
	if l.isDone.Load() {
		return ErrClosed
	}
	if p < 0 || p >= l.parts {
		return fmt.Errorf("ingest: partition %d out of range 0..%d", p, l.parts-1)
	}
	return ctx.Err()
}

// Next is the offset the next event of partition p will get (every offset below it is
// durable), or 0 for a partition out of range.
func (l *PebbleLog) Next(p int) uint64 {
	if p < 0 || p >= l.parts {
		return 0
	}
	return l.durable[p].Load()
}

// EndOffsets returns Next of every partition (see EndOffsets).
func (l *PebbleLog) EndOffsets(ctx context.Context) ([]uint64, error) {
	if l.isDone.Load() {
		return nil, ErrClosed
	}
	out := make([]uint64, l.parts)
	for p := range out {
		out[p] = l.durable[p].Load()
	}
	return out, ctx.Err()
}

// PebbleLogStats counts group commits since the log was opened.
type PebbleLogStats struct {
	Commits uint64 // synced batches
	Events  uint64 // events in them
}

// Stats reports how many commits stored how many events.
func (l *PebbleLog) Stats() PebbleLogStats {
	return PebbleLogStats{Commits: l.commits.Load(), Events: l.committed.Load()}
}

// Close commits the Appends already queued, stops the committer and waits for it. Later
// calls return ErrClosed. It does not close the Pebble DB.
func (l *PebbleLog) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		l.isDone.Store(true)
		close(l.reqs)
	}
	l.mu.Unlock()
	<-l.done
	return nil
}

var (
	_ Log        = (*PebbleLog)(nil)
	_ Log        = (*KafkaLog)(nil)
	_ EndOffsets = (*PebbleLog)(nil)
	_ EndOffsets = (*KafkaLog)(nil)
)
