package analytics

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"flipbook/ingest"
)

func TestSchemaMatchesArrowAndIsIdempotent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openTestDB(t, dir)
	db.Close()
	db = openTestDB(t, dir) // second open: nothing to create, nothing fails
	defer db.Close()

	// A run table, as the compactor makes it.
	conn, err := db.Handle().Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddSortedRun(context.Background(), conn, 0, func(*sql.Tx, string) (int64, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	for _, table := range []string{RecentTable, ArchiveTable, runTable(1), EventsView} {
		rows, err := db.Handle().Query(`SELECT column_name, data_type, is_nullable FROM information_schema.columns
			WHERE table_name = ? ORDER BY ordinal_position`, table)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for rows.Next() {
			var name, typ, nullable string
			if err := rows.Scan(&name, &typ, &nullable); err != nil {
				t.Fatal(err)
			}
			// Inserts name their columns (columnList), so only names and types must agree; a
			// database migrated from an older version may have its added columns elsewhere.
			k := slices.IndexFunc(eventColumns, func(c column) bool { return c.name == name })
			if k < 0 {
				t.Fatalf("%s has a column eventColumns lacks: %s", table, name)
			}
			c := eventColumns[k]
			f := eventSchema.Field(k)
			if f.Name != c.name {
				t.Fatalf("%s column %s: arrow field %d is %s", table, name, k, f.Name)
			}
			if !strings.HasPrefix(c.sqlType, typ) {
				t.Errorf("%s column %s: table type %s, declared %s", table, name, typ, c.sqlType)
			}
			if table != EventsView && (nullable == "YES") != f.Nullable {
				t.Errorf("%s column %s: nullable %s in table, %v in arrow", table, name, nullable, f.Nullable)
			}
			i++
		}
		rows.Close()
		if want := len(eventColumns); i != want {
			t.Fatalf("%s has %d columns, want %d", table, i, want)
		}
	}
	for _, v := range []string{AuditView, InteractionView} {
		if _, err := db.Handle().Exec(`SELECT count(*) FROM ` + v); err != nil {
			t.Errorf("view %s: %v", v, err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(4)
	paris, _ := time.LoadLocation("Europe/Paris")
	if paris == nil {
		paris = time.FixedZone("CET", 3600)
	}
	at := time.Date(2026, 3, 1, 10, 30, 15, 123456000, paris) // 09:30:15.123456 UTC
	recv := time.Date(2026, 3, 1, 9, 30, 16, 0, time.UTC)
	events := []ingest.Event{
		{ // everything set
			Workspace: 7, Mode: 't', BookID: "bookA", SessionID: "sess-1", Type: ingest.LeadFormSubmitted,
			ViewerID: 42, ViewerEmail: "ada@example.com", TrackedLinkID: 9, SourceHost: "blog.example.org",
			SourceType: "embed", PageNumber: 3, ActiveMs: 5200, URL: "https://x.example/a?b=c",
			ExitReason: "closed", Reason: "r", Metadata: `{"name":"Ada","tags":["a","b"]}`,
			Country: "FR", Region: "IDF", City: "Paris", OccurredAt: at, ReceivedAt: recv,
			BookPages: 12, HasLatLong: true, Latitude: 48.85, Longitude: -2.35,
		},
		{ // nothing optional: NULLs; no client time: occurred_at is the server time
			Workspace: 8, Mode: 'l', BookID: "bookB", SessionID: "sess-2", Type: ingest.SessionStarted,
			SourceType: "direct", ReceivedAt: recv,
		},
		{ // access event, invalid UTF-8 is repaired rather than blocking the batch
			Workspace: 7, Mode: 'l', BookID: "bookA", SessionID: "sess-3", Type: ingest.AccessRejected,
			ViewerEmail: "bad\xffmail@example.com", SourceType: "direct", Reason: "not on the list",
			OccurredAt: recv, ReceivedAt: recv,
		},
	}
	if err := log.Append(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	c := startConsumer(t, db, log, withAllocator(mem))
	if err := c.WaitFor(waitCtx(t, 10*time.Second), log.ends()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0) // every Arrow buffer released

	type row struct {
		id, ws                          int64
		mode, book, sess, typ           string
		viewer                          sql.NullInt64
		email                           string
		link                            sql.NullInt64
		srcType                         string
		host                            sql.NullString
		page                            sql.NullInt32
		ms                              sql.NullInt64
		url, exit, reason               string
		meta, country, region, city     sql.NullString
		lat, lon                        sql.NullFloat64
		occurred, created               time.Time
		bookPages                       sql.NullInt32
		metaName                        sql.NullString
		auditSource                     sql.NullString
		auditSourceEventID              sql.NullInt64
		interactionRow                  bool
		occurredEpochUS, createdEpochUS int64
	}
	rows, err := db.Handle().Query(`SELECT e.*, json_extract_string(e.metadata, '$.name'),
		a.source, a.source_event_id, i.id IS NOT NULL, epoch_us(e.occurred_at), epoch_us(e.created_at)
		FROM ` + EventsView + ` e
		LEFT JOIN ` + AuditView + ` a ON a.id = e.id
		LEFT JOIN ` + InteractionView + ` i ON i.id = e.id
		ORDER BY e.workspace, e.session_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.ws, &r.mode, &r.book, &r.sess, &r.typ, &r.viewer, &r.email, &r.link,
			&r.srcType, &r.host, &r.page, &r.ms, &r.url, &r.exit, &r.reason, &r.meta, &r.country, &r.region,
			&r.city, &r.lat, &r.lon, &r.occurred, &r.created, &r.bookPages, &r.metaName, &r.auditSource,
			&r.auditSourceEventID, &r.interactionRow, &r.occurredEpochUS, &r.createdEpochUS); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d rows", len(got))
	}
	full, access, bare := got[0], got[1], got[2]
	if full.sess != "sess-1" || access.sess != "sess-3" || bare.sess != "sess-2" {
		t.Fatalf("unexpected order: %s %s %s", full.sess, access.sess, bare.sess)
	}
	p7 := ingest.PartitionOf(7, 4)
	want := row{
		id: ingest.Record{Partition: p7, Offset: 0}.ID(), ws: 7, mode: "t", book: "bookA", sess: "sess-1",
		typ: "lead_form_submitted", viewer: sql.NullInt64{Int64: 42, Valid: true}, email: "ada@example.com",
		link: sql.NullInt64{Int64: 9, Valid: true}, srcType: "embed",
		host: sql.NullString{String: "blog.example.org", Valid: true}, page: sql.NullInt32{Int32: 3, Valid: true},
		ms: sql.NullInt64{Int64: 5200, Valid: true}, url: "https://x.example/a?b=c", exit: "closed", reason: "r",
		meta:    sql.NullString{String: `{"name":"Ada","tags":["a","b"]}`, Valid: true},
		country: sql.NullString{String: "FR", Valid: true}, region: sql.NullString{String: "IDF", Valid: true},
		city: sql.NullString{String: "Paris", Valid: true}, occurred: at.UTC(), created: recv,
		lat: sql.NullFloat64{Float64: 48.85, Valid: true}, lon: sql.NullFloat64{Float64: -2.35, Valid: true},
		bookPages: sql.NullInt32{Int32: 12, Valid: true},
		metaName:  sql.NullString{String: "Ada", Valid: true}, auditSource: sql.NullString{String: "interaction", Valid: true},
		auditSourceEventID: sql.NullInt64{Int64: ingest.Record{Partition: p7, Offset: 0}.ID(), Valid: true},
		interactionRow:     true, occurredEpochUS: at.UnixMicro(), createdEpochUS: recv.UnixMicro(),
	}
	if full != want {
		t.Errorf("full event:\n got %+v\nwant %+v", full, want)
	}
	if full.occurred.Location() != time.UTC {
		t.Errorf("occurred_at scanned in %v, want UTC", full.occurred.Location())
	}
	p8 := ingest.PartitionOf(8, 4)
	wantBare := row{
		id: ingest.Record{Partition: p8, Offset: 0}.ID(), ws: 8, mode: "l", book: "bookB", sess: "sess-2",
		typ: "session_started", srcType: "direct", occurred: recv, created: recv, interactionRow: true,
		occurredEpochUS: recv.UnixMicro(), createdEpochUS: recv.UnixMicro(),
	}
	if bare != wantBare {
		t.Errorf("bare event:\n got %+v\nwant %+v", bare, wantBare)
	}
	if access.email != "bad\uFFFDmail@example.com" || access.typ != "access_rejected" ||
		access.auditSource.String != "access" || access.interactionRow || access.reason != "not on the list" ||
		access.id != (ingest.Record{Partition: p7, Offset: 1}.ID()) {
		t.Errorf("access event: %+v", access)
	}
}

func TestExactlyOnceAcrossCrashes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := newMemLog(8)
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	steps := []string{stepRead, stepInserted, stepCommitted, stepTrimmed, stepCompacted, stepMerged}
	crashes := map[string]int{}
	appended := 0
	for round := 0; round < 24; round++ {
		// New events arrive while the consumer runs; some before it starts.
		n := rng.IntN(3000) + 1
		if err := log.Append(context.Background(), genEvents(rng, n, 20, at)); err != nil {
			t.Fatal(err)
		}
		appended += n
		db := openTestDB(t, dir)
		crashStep := steps[round%len(steps)]
		crashAfter := rng.IntN(4) // batches that pass before the crash
		// Compaction runs often and concurrently with the appends: runs of a few hundred rows,
		// merged three at a time.
		compactRows := int64(rng.IntN(1500) + 200)
		c, err := NewConsumer(context.Background(), db, log, WithMaxBatch(rng.IntN(700)+50),
			WithCompaction(compactRows, 3), withCompactEvery(2*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := 0
		c.hook = func(step string) error {
			mu.Lock()
			defer mu.Unlock()
			if step != crashStep {
				return nil
			}
			if seen == crashAfter {
				return errors.New("crash")
			}
			seen++
			return nil
		}
		c.Start()
		more := genEvents(rng, rng.IntN(1500), 20, at)
		if err := log.Append(context.Background(), more); err != nil {
			t.Fatal(err)
		}
		appended += len(more)
		// Either it crashes, or it catches up and is stopped mid-stream. A crash in the
		// compactor may need a few compaction rounds to come.
		err = c.WaitFor(waitCtx(t, 20*time.Second), log.ends())
		if err == nil && (crashStep == stepCompacted || crashStep == stepMerged) {
			waitCompacted(t, db, c, compactRows, 3)
		}
		cerr := c.Close()
		if cerr != nil {
			if !errors.Is(cerr, errHookStop) {
				t.Fatalf("round %d: %v", round, cerr)
			}
			crashes[crashStep]++
		} else if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if round%3 == 0 {
			// Stored rows are exactly a prefix of each partition: no duplicate so far.
			ids := storedIDs(t, db)
			if len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("round %d: duplicate ids", round)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Last run, no crash: everything, once.
	db := openTestDB(t, dir)
	defer db.Close()
	c := startConsumer(t, db, log, WithCompaction(500, 3), withCompactEvery(2*time.Millisecond))
	if err := c.WaitFor(waitCtx(t, 20*time.Second), log.ends()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, db, log.ids())
	checkRuns(t, db)
	if len(log.ids()) != appended {
		t.Fatalf("log holds %d, appended %d", len(log.ids()), appended)
	}
	for _, s := range steps {
		if crashes[s] == 0 {
			t.Errorf("no crash at step %s", s)
		}
	}
	stored, err := db.Offsets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for p, n := range log.ends() {
		if n > 0 && stored[p] != n {
			t.Errorf("partition %d: stored offset %d, log end %d", p, stored[p], n)
		}
	}
	t.Logf("%d events, crashes per step %v", appended, crashes)
}

func TestReplayedRecordsNotStoredTwice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openTestDB(t, dir)
	log := newMemLog(2)
	rng := rand.New(rand.NewPCG(3, 4))
	at := time.Now().UTC()
	log.Append(context.Background(), genEvents(rng, 500, 4, at))
	c := startConsumer(t, db, log)
	if err := c.WaitFor(waitCtx(t, 10*time.Second), log.ends()); err != nil {
		t.Fatal(err)
	}
	// The log hands back already committed records in front of new ones.
	log.setReplay(300)
	log.Append(context.Background(), genEvents(rng, 200, 4, at))
	c.Wake()
	if err := c.WaitFor(waitCtx(t, 10*time.Second), log.ends()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Skipped == 0 {
		t.Fatal("replay was not exercised")
	}
	checkExactlyOnce(t, db, log.ids())
	db.Close()

	// The same after a restart: a replay on the first read of a fresh consumer.
	db = openTestDB(t, dir)
	defer db.Close()
	log.setReplay(1000)
	log.Append(context.Background(), genEvents(rng, 100, 4, at))
	c = startConsumer(t, db, log)
	if err := c.WaitFor(waitCtx(t, 10*time.Second), log.ends()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Skipped == 0 {
		t.Fatal("replay after restart was not exercised")
	}
	checkExactlyOnce(t, db, log.ids())
}

func TestVisibleWithinTwoSeconds(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(4)
	c := startConsumer(t, db, log)
	defer c.Close()
	// Let the consumer go idle (its pause grows to the maximum) before each append.
	rng := rand.New(rand.NewPCG(5, 6))
	var worst time.Duration
	for i := 0; i < 10; i++ {
		if err := c.WaitCaughtUp(waitCtx(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitCaughtUp(waitCtx(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		e := genEvents(rng, 1, 3, time.Now().UTC())
		e[0].SessionID = "visible-" + string(rune('a'+i))
		start := time.Now()
		if err := log.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		ctx := waitCtx(t, 2*time.Second)
		for {
			var n int
			if err := db.Query().QueryRowContext(ctx, `SELECT count(*) FROM `+EventsView+` WHERE session_id = ?`,
				e[0].SessionID).Scan(&n); err != nil {
				t.Fatalf("event %d not visible within 2 s: %v", i, err)
			}
			if n == 1 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("event %d not visible within 2 s", i)
			case <-time.After(2 * time.Millisecond):
			}
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("worst time from append to visible (idle consumer, no Wake): %v", worst)
}

func TestReadErrorsAreRetried(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(2)
	log.Append(context.Background(), genEvents(rand.New(rand.NewPCG(7, 8)), 100, 3, time.Now()))
	log.setReadErr(errors.New("disk on fire"))
	c := startConsumer(t, db, log, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer c.Close()
	ctx := waitCtx(t, 10*time.Second)
	for c.Stats().Errors == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no error counted")
		case <-time.After(time.Millisecond):
		}
	}
	log.setReadErr(nil)
	if err := c.WaitFor(ctx, log.ends()); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); !strings.Contains(s.LastError, "disk on fire") || s.Events != 100 {
		t.Fatalf("stats %+v", s)
	}
	checkExactlyOnce(t, db, log.ids())
}

func TestOneConsumerPerDatabase(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(1)
	c := startConsumer(t, db, log)
	if _, err := NewConsumer(context.Background(), db, log); err == nil {
		t.Fatal("second consumer accepted")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := startConsumer(t, db, log) // the connection is free again
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRefusesTooManyPartitions(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	if _, err := NewConsumer(context.Background(), db, newMemLog(ingest.MaxPartitions+1)); err == nil {
		t.Fatal("accepted more partitions than Record.ID can tell apart")
	}
}

// endsMemLog is a memLog that tells where its partitions end, as the embedded log does.
type endsMemLog struct{ *memLog }

func (l endsMemLog) Next(p int) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.parts[p]))
}

// TestBatchesAreWholeRowGroups: with a log that tells how much is waiting, a transaction
// stores whole row groups when there is at least one, the rest in the next; the file's row
// groups are RowGroupSize rows.
func TestBatchesAreWholeRowGroups(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := endsMemLog{newMemLog(4)}
	const n = 3*RowGroupSize + 1000
	if err := log.Append(context.Background(), genEvents(rand.New(rand.NewPCG(7, 8)), n, 9, time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	c, err := NewConsumer(context.Background(), db, log)
	if err != nil {
		t.Fatal(err)
	}
	c.hook = func(step string) error {
		if step == stepCommitted {
			sizes = append(sizes, int(c.Stats().Events)-sum(sizes))
		}
		return nil
	}
	c.Start()
	if err := c.WaitFor(waitCtx(t, 20*time.Second), log.ends()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil { // after this, sizes is the test's
		t.Fatal(err)
	}
	if want := []int{3 * RowGroupSize, 1000}; !slices.Equal(sizes, want) {
		t.Fatalf("transactions of %v events, want %v", sizes, want)
	}
	if _, err := db.Handle().Exec("CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	var groups, biggest int64
	if err := db.Handle().QueryRow(`SELECT count(DISTINCT row_group_id), max(count) FROM pragma_storage_info('`+RecentTable+`')`).Scan(&groups, &biggest); err != nil {
		t.Fatal(err)
	}
	if groups != 4 || biggest != RowGroupSize {
		t.Fatalf("%d row groups of at most %d rows, want 4 of at most %d", groups, biggest, RowGroupSize)
	}
}

func sum(xs []int) (s int) {
	for _, x := range xs {
		s += x
	}
	return s
}

// TestWaitStored: WaitStored returns once the consumer has stored that many events, at once
// when it has, and with an error when the consumer stops first.
func TestWaitStored(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := newMemLog(4)
	c := startConsumer(t, db, log)
	done := make(chan error, 1)
	go func() { done <- c.WaitStored(waitCtx(t, 10*time.Second), 30) }()
	if err := log.Append(context.Background(), genEvents(rand.New(rand.NewPCG(1, 1)), 20, 3, time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	c.Wake()
	if err := c.WaitStored(waitCtx(t, 10*time.Second), 20); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("WaitStored(30) returned after 20 events: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := log.Append(context.Background(), genEvents(rand.New(rand.NewPCG(2, 2)), 10, 3, time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	c.Wake()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStored(context.Background(), 30); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.WaitStored(ctx, 31); err == nil {
		t.Fatal("WaitStored(31) returned without the 31st event")
	}
	c.Close()
	if err := c.WaitStored(context.Background(), 1000); err == nil {
		t.Fatal("WaitStored on a stopped consumer returned nil")
	}
}

// TestBusyConsumerGathersWholeRowGroups: right after a transaction of whole row groups, less
// than a row group waiting is not stored at once: events arriving within gatherWait fill it.
func TestBusyConsumerGathersWholeRowGroups(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.Close()
	log := endsMemLog{newMemLog(4)}
	rng := rand.New(rand.NewPCG(3, 4))
	if err := log.Append(context.Background(), genEvents(rng, RowGroupSize+100, 9, time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	later := genEvents(rng, RowGroupSize-100, 9, time.Now().UTC())
	var sizes []int
	c, err := NewConsumer(context.Background(), db, log)
	if err != nil {
		t.Fatal(err)
	}
	// The rest comes from a goroutine woken 5 ms after the first commit: on a loaded machine it
	// may run well past DefaultGatherWait (25 ms) later, and the consumer would then store the
	// 100 waiting events alone. A wider window keeps the test about the gathering itself.
	c.gatherWait = time.Second
	appended := make(chan error, 1)
	c.hook = func(step string) error {
		if step != stepCommitted {
			return nil
		}
		sizes = append(sizes, int(c.Stats().Events)-sum(sizes))
		if len(sizes) == 1 { // the rest of the row group comes 5 ms after the first commit
			go func() {
				time.Sleep(5 * time.Millisecond) // sleep: the rest of the row group deliberately arrives 5 ms after the first commit, for the consumer to gather
				appended <- log.Append(context.Background(), later)
			}()
		}
		return nil
	}
	c.Start()
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(waitCtx(t, 20*time.Second), log.ends()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if want := []int{RowGroupSize, RowGroupSize}; !slices.Equal(sizes, want) {
		t.Fatalf("transactions of %v events, want %v", sizes, want)
	}
}

// TestAttachesFileWithDefaultRowGroups: a file written as DuckDB's main database with its
// default row groups (122,880 rows; how Open used to open it), its last row group partly
// filled, takes appends of small and whole 32,768-row groups after Open attaches it.
func TestAttachesFileWithDefaultRowGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "analytics.duckdb")
	conn, err := duckdb.NewConnector(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := sql.OpenDB(conn)
	tx, err := old.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemaIn(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`INSERT INTO ` + RecentTable + ` (id, workspace, mode, book_id, session_id, event_type,
		viewer_email, source_type, url, exit_reason, reason, occurred_at, created_at)
		SELECT i, 1, 'l', 'b', 's', 'session_started', '', 'direct', '', '', '', now(), now() FROM range(40000) t(i)`); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log := endsMemLog{newMemLog(4)}
	c := startConsumer(t, db, log)
	defer c.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{100, 2 * RowGroupSize} {
		if err := log.Append(ctx, genEvents(rng, n, 3, time.Now().UTC())); err != nil {
			t.Fatal(err)
		}
		c.Wake()
		if err := c.WaitFor(waitCtx(t, 10*time.Second), log.ends()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Handle().Exec("CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	var rows int64
	if err := db.Handle().QueryRow(`SELECT count(*) FROM ` + RecentTable).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if want := int64(40000 + 100 + 2*RowGroupSize); rows != want || c.Stats().Errors != 0 {
		t.Fatalf("%d rows, want %d; %+v", rows, want, c.Stats())
	}
}

// TestSpillsBesideTheFile: the file is attached to an in-memory instance, whose own default
// would spill to .tmp in the working directory; Open points DuckDB beside the file.
func TestSpillsBesideTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openTestDB(t, dir)
	defer db.Close()
	var tmp string
	if err := db.Handle().QueryRow(`SELECT current_setting('temp_directory')`).Scan(&tmp); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "analytics.duckdb") + ".tmp"; tmp != want {
		t.Fatalf("temp_directory %q, want %q", tmp, want)
	}
}

// evlogRecKey is the embedded log's key of one record (ingest/log_pebble.go: g/evlog/r<p 2B><offset 8B>).
func evlogRecKey(p int, off uint64) []byte {
	k := binary.BigEndian.AppendUint16([]byte("g/evlog/r"), uint16(p))
	return binary.BigEndian.AppendUint64(k, off)
}

// TestUndecodableRecordStallsOnlyItsPartition: one record of partition 0 that this build
// cannot decode (here: written by a newer release, version byte 9; with Kafka any foreign or
// damaged message on the topic) does not keep the events of every other workspace out of
// DuckDB: the consumer dropped the whole round when one partition's read failed, so partition
// 1's events were never stored (found by a review). Its error is reported.
func TestUndecodableRecordStallsOnlyItsPartition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pebbleDir := filepath.Join(dir, "pebble")
	pdb, err := pebble.Open(pebbleDir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	log, err := ingest.NewPebbleLog(pdb, ingest.PebbleOptions{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	ev := func(ws int64, i int) ingest.Event {
		return ingest.Event{Workspace: ws, Mode: 'l', BookID: fmt.Sprintf("bk%d", ws), SessionID: "s", Type: ingest.SessionStarted,
			SourceType: "direct", OccurredAt: now.Add(time.Duration(i) * time.Millisecond), ReceivedAt: now}
	}
	var events []ingest.Event
	for i := 0; i < 5; i++ {
		events = append(events, ev(2, i), ev(1, i)) // workspace 2: partition 0, workspace 1: partition 1
	}
	if err := log.Append(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	// Partition 0, offset 2: a record this build refuses.
	if err := pdb.Set(evlogRecKey(0, 2), []byte{9, 1, 2, 3}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	log, err = ingest.NewPebbleLog(pdb, ingest.PebbleOptions{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()

	db := openTestDB(t, dir)
	defer db.Close()
	c := startConsumer(t, db, log, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitFor(ctx, map[int]uint64{1: 5}); err != nil {
		s := c.Stats()
		t.Fatalf("workspace 1's 5 events (partition 1) not stored within 5 s because of one bad record in partition 0: "+
			"offsets %v, %d errors, last: %s", c.Offsets(), s.Errors, s.LastError)
	}
	require.Contains(t, c.Stats().LastError, "read partition 0 offset 2", "the bad partition's error is reported")
}

// TestStoredOffsetsPastTheLogEnd: the consumer resumed from the offsets stored in DuckDB
// without checking them against the log. When the log behind the same data directory started
// over (the service moved from the embedded log to --kafka-brokers, --kafka-topic changed, the
// topic was recreated), every event acknowledged with 202 was taken for a stored one and
// skipped without an error until the new log's offsets passed the old ones (found by a review).
// The consumer now refuses to start on such offsets (ErrOffsetsPastLogEnd).
func TestStoredOffsetsPastTheLogEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	quiet := WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Now().UTC()
	ev := func(session string, i int) ingest.Event {
		return ingest.Event{Workspace: 1, Mode: 'l', BookID: "bk1", SessionID: session, Type: ingest.PageSegmentCompleted,
			PageNumber: 1, ActiveMs: int64(i + 1), SourceType: "direct", OccurredAt: now, ReceivedAt: now}
	}
	db := openTestDB(t, dir)
	defer db.Close()

	// Months on the embedded log: 200 events of workspace 1 stored.
	pdb, err := pebble.Open(filepath.Join(dir, "pebble"), &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	plog, err := ingest.NewPebbleLog(pdb, ingest.PebbleOptions{Partitions: ingest.DefaultPartitions})
	if err != nil {
		t.Fatal(err)
	}
	var before []ingest.Event
	for i := 0; i < 200; i++ {
		before = append(before, ev("embedded", i))
	}
	if err := plog.Append(context.Background(), before); err != nil {
		t.Fatal(err)
	}
	c := startConsumer(t, db, plog, quiet)
	if err := c.WaitFor(waitCtx(t, 10*time.Second), map[int]uint64{1: 200}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	plog.Close()

	// Restarted with --kafka-brokers: a new topic, offsets from 0.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	klog, err := ingest.NewKafkaLog(context.Background(), ingest.KafkaOptions{Brokers: cluster.ListenAddrs(), Topic: "flipbook-events"})
	if err != nil {
		t.Fatal(err)
	}
	defer klog.Close()
	_, err = NewConsumer(context.Background(), db, klog, quiet)
	require.ErrorIs(t, err, ErrOffsetsPastLogEnd)
	require.Contains(t, err.Error(), "partition 1 stored up to offset 200, and the log ends at 0")
	// Once the new log is past the stored offsets there is no telling: the check is at start.
	// The old log again: it starts.
	plog, err = ingest.NewPebbleLog(pdb, ingest.PebbleOptions{Partitions: ingest.DefaultPartitions})
	require.NoError(t, err)
	c, err = NewConsumer(context.Background(), db, plog, quiet)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	plog.Close()
}
