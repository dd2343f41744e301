// Package storage is the Pebble-backed state store of the service: records, secondary indexes,
// sequences and idempotency entries, plus the blob store for page images.
//
// Key layout is in keys.go; every tenant-owned key starts with the tenant prefix, so a read
// that forgets a check still cannot reach another tenant's records.
package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bytedance/sonic"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"flipbook/errs"
)

// errs.ErrNotFound is returned when a record does not exist.

// codec encodes stored records. CopyString keeps decoded strings independent of the source
// buffer (Pebble's value buffers are only valid until the closer is called).
var codec = sonic.Config{CopyString: true, ValidateString: true}.Froze()

// Store is the service's durable state.
type Store struct {
	db     *pebble.DB
	dir    string
	Blobs  *Blobs
	seqs   *sequences
	books  *bookCache
	idem   idemAccount        // stored idempotent responses per tenant (idempotency.go)
	sink   ChangeSink         // Options.Changes
	parts  int                // Options.Partitions
	home   func() (int, bool) // Options.Home
	shared []byte             // Options.SharedSecret
}

// Options configure Open.
type Options struct {
	// CacheBytes is Pebble's block cache size.
	CacheBytes int64
	// MemTableBytes is the size of Pebble's memtables (default DefaultMemTableBytes).
	MemTableBytes int64
	// Changes, when set, is given every write's mutations before the write is applied
	// (cluster mode's changelog; changes.go).
	Changes ChangeSink
	// BlobURL, when set, keeps the blobs (page images, thumbnails, logos) in an S3-compatible
	// store: s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT&region=REGION (blobs_s3.go).
	BlobURL string
	// Partitions, in cluster mode, is the cluster's number of partitions: ids of a workspace's
	// objects come from its partition (NextIDFor), unique across nodes. 0: one process.
	Partitions int
	// Home, in cluster mode, is a partition this node owns, where a new workspace is placed
	// (NextHomeID); false when it owns none.
	Home func() (int, bool)
	// SharedSecret, in cluster mode, is the secret every node shares (the admin token): the
	// installation's secrets are derived from it (Secret).
	SharedSecret []byte
}

// DefaultCacheBytes is the default Pebble block cache.
const DefaultCacheBytes = 128 << 20

// DefaultMemTableBytes is the memtable size. The embedded event log (ingest.PebbleLog) writes
// every reader event here and deletes it (a range deletion) once DuckDB holds it, normally
// within a second; events deleted while still in the memtable are dropped when it is flushed,
// never written to an sstable or compacted. With Pebble's 4 MiB default a memtable filled in
// about 0.3 s at 100k events/s, so nearly every event was flushed and compacted: 18% of the
// service's CPU in the ingest benchmark, 3% with 64 MiB (19.5 -> 14.0 µs of CPU per event).
// Memtables take their memory as they fill; at most two are held (one flushing).
const DefaultMemTableBytes = 64 << 20

// Open opens (or creates) the store under dir: Pebble in dir/state, blobs in dir/blobs.
func Open(dir string, o Options) (*Store, error) {
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.MemTableBytes == 0 {
		o.MemTableBytes = DefaultMemTableBytes
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("storage: create data dir: %w", err)
	}
	// Pebble counts its memtables against the block cache: without room for them, the cache
	// would cache nothing.
	cache := pebble.NewCache(o.CacheBytes + 2*o.MemTableBytes)
	defer cache.Unref()
	opts := &pebble.Options{
		Cache:        cache,
		MemTableSize: uint64(o.MemTableBytes),
		Logger:       quietLogger{},
	}
	// Bloom filters (all levels): point reads of keys that do not exist (a new catalog item's
	// match entry, a fresh idempotency key) skip the sstables that cannot hold them.
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	db, err := pebble.Open(filepath.Join(dir, "state"), opts)
	if err != nil {
		return nil, fmt.Errorf("storage: open pebble: %w", err)
	}
	blobs, err := openBlobs(filepath.Join(dir, "blobs"))
	if err == nil && o.BlobURL != "" {
		blobs.remote, err = openS3Blobs(o.BlobURL)
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s := &Store{db: db, dir: dir, Blobs: blobs, books: newBookCache(), sink: o.Changes, parts: o.Partitions, home: o.Home, shared: o.SharedSecret}
	s.seqs = newSequences(s)
	if err := s.lowerSlugs(); err != nil { // tracked-link slugs are case-insensitive (slugcase.go)
		_ = db.Close()
		return nil, fmt.Errorf("storage: lower tracked-link slugs: %w", err)
	}
	return s, nil
}

// Dir is the data directory.
func (s *Store) Dir() string { return s.dir }

// DB exposes Pebble for packages that own their own key prefix (the event log).
func (s *Store) DB() *pebble.DB { return s.db }

// Close flushes sequences and closes Pebble.
func (s *Store) Close() error {
	if err := s.seqs.close(); err != nil {
		_ = s.db.Close()
		return err
	}
	return s.db.Close()
}

// get reads a raw value (copied).
func (s *Store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, errs.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	_ = closer.Close()
	return out, nil
}

// getJSON decodes the value at key into out.
func (s *Store) getJSON(key []byte, out any) error {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return errs.ErrNotFound
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	return codec.Unmarshal(v, out)
}

// listJSON decodes every value under prefix p, in key order (reverse: last first).
func listJSON[T any](s *Store, p []byte, reverse bool) ([]*T, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := []*T{}
	first, next := it.First, it.Next
	if reverse {
		first, next = it.Last, it.Prev
	}
	for ok := first(); ok; ok = next() {
		var v T
		if err := codec.Unmarshal(it.Value(), &v); err != nil {
			return nil, err
		}
		out = append(out, &v)
	}
	return out, it.Error()
}

// has reports whether key exists.
func (s *Store) has(key []byte) (bool, error) {
	_, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_ = closer.Close()
	return true, nil
}

// Batch is a set of writes applied atomically and synced.
type Batch struct {
	b       *pebble.Batch
	s       *Store
	touched []string // book cache keys to invalidate once committed
	// fills are the book records the batch writes, by cache key, decoded from the bytes
	// written: cached once the commit succeeded (bookCache.end).
	fills map[string]*Book
	// ixTerms are the search index term lists this batch wrote (nil: it removed the book's),
	// by the list's key: a second index write of a book in the batch removes what the first
	// staged (searchindex.go).
	ixTerms map[string][]byte
}

// NewBatch starts a write batch.
func (s *Store) NewBatch() *Batch { return &Batch{b: s.db.NewBatch(), s: s} }

// Commit applies the batch durably (fsync) and releases it.
func (b *Batch) Commit() error {
	for _, k := range b.touched {
		b.s.books.begin(k)
	}
	err := b.s.commit(b.b, pebble.Sync)
	_ = b.b.Close()
	b.endTouched(err)
	return err
}

// CommitNoSync applies the batch without waiting for the WAL to reach the disk: a process
// crash (kill -9) keeps it (the write is in the OS), only an OS crash or power loss can lose
// it, and then it is lost whole, with every later batch (the WAL is a sequence). For steps
// whose progress is recorded in the same batch (catalog sync steps), ending with a synced
// commit.
func (b *Batch) CommitNoSync() error {
	for _, k := range b.touched {
		b.s.books.begin(k)
	}
	err := b.s.commit(b.b, pebble.NoSync)
	_ = b.b.Close()
	b.endTouched(err)
	return err
}

// endTouched ends the cache marks of the batch's books, filling the cache with the records
// written when the commit succeeded.
func (b *Batch) endTouched(err error) {
	for _, k := range b.touched {
		var fill *Book
		if err == nil {
			fill = b.fills[k]
		}
		b.s.books.end(k, fill)
	}
}

// Close releases an uncommitted batch.
func (b *Batch) Close() { _ = b.b.Close() }

func (b *Batch) set(key, value []byte) { _ = b.b.Set(key, value, nil) }
func (b *Batch) del(key []byte)        { _ = b.b.Delete(key, nil) }
func (b *Batch) setJSON(key []byte, v any) error {
	data, err := codec.Marshal(v)
	if err != nil {
		return err
	}
	b.set(key, data)
	return nil
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}

// Settle flushes memtables and compacts the whole keyspace, so no background compaction runs
// afterwards (benchmarks call it after bulk loading).
func (s *Store) Settle() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	return s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, true)
}
