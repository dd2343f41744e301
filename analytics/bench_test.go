package analytics

import (
	"context"
	"database/sql/driver"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
	"github.com/duckdb/duckdb-go/v2"

	"flipbook/ingest"
)

// The three benchmarks store the same rows: the consumer end to end (log reads, Arrow
// batches, offsets, commits, trims), a raw DuckDB Appender, and raw Arrow inserts (the
// consumer's insert without the log and the offsets). Each reports events/s.
//
//	go test -tags pebblegozstd,duckdb_arrow -run '^$' -bench . -benchtime 3x ./analytics/

const benchEvents = 200_000

func benchData(parts int) (*memLog, []ingest.Record) {
	log := newMemLog(parts)
	log.Append(context.Background(), genEvents(rand.New(rand.NewPCG(9, 9)), benchEvents, 200, time.Now().UTC()))
	var recs []ingest.Record
	for p := 0; p < parts; p++ {
		r, _ := log.Read(context.Background(), p, 0, benchEvents)
		recs = append(recs, r...)
	}
	return log, recs
}

func reportRate(b *testing.B, elapsed time.Duration) {
	b.ReportMetric(float64(benchEvents*b.N)/elapsed.Seconds(), "events/s")
}

func BenchmarkConsumer(b *testing.B) {
	log, _ := benchData(16)
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		db := openTestDB(b, b.TempDir())
		start := time.Now()
		c := startConsumer(b, db, log)
		if err := c.WaitFor(context.Background(), log.ends()); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		b.Logf("%d events in %d transactions", c.Stats().Events, c.Stats().Batches)
		c.Close()
		db.Close()
	}
	reportRate(b, elapsed)
}

func BenchmarkRawAppender(b *testing.B) {
	_, recs := benchData(16)
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		db := openTestDB(b, b.TempDir())
		conn, err := db.Handle().Conn(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		err = conn.Raw(func(dc any) error {
			a, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", RecentTable)
			if err != nil {
				return err
			}
			row := make([]driver.Value, len(eventColumns))
			for j := range recs {
				r := &recs[j]
				for k, c := range eventColumns {
					row[k] = nil
					switch {
					case c.i64 != nil:
						if v, ok := c.i64(r); ok {
							row[k] = v
						}
					case c.i32 != nil:
						if v, ok := c.i32(r); ok {
							row[k] = v
						}
					case c.f64 != nil:
						if v, ok := c.f64(r); ok {
							row[k] = v
						}
					case c.str != nil:
						if v, ok := c.str(r); ok {
							row[k] = v
						}
					default:
						row[k] = c.ts(r)
					}
				}
				if err := a.AppendRow(row...); err != nil {
					return err
				}
			}
			return a.Close()
		})
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		conn.Close()
		db.Close()
	}
	reportRate(b, elapsed)
}

func BenchmarkRawArrowInsert(b *testing.B) {
	_, recs := benchData(16)
	mem := mallocator.NewMallocator()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		db := openTestDB(b, b.TempDir())
		conn, err := db.Handle().Conn(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for lo := 0; lo < len(recs); lo += DefaultMaxBatch {
			rec := BuildRecord(mem, recs[lo:min(lo+DefaultMaxBatch, len(recs))])
			rr, _ := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
			var release func()
			if err := conn.Raw(func(dc any) (err error) {
				release, err = RegisterArrowView(dc.(driver.Conn), rr, "bench_batch")
				return err
			}); err != nil {
				b.Fatal(err)
			}
			if _, err := conn.ExecContext(context.Background(), "INSERT INTO "+RecentTable+" SELECT * FROM bench_batch"); err != nil {
				b.Fatal(err)
			}
			// The Arrow view is persistent: never leave one behind.
			if _, err := conn.ExecContext(context.Background(), "DROP VIEW bench_batch"); err != nil {
				b.Fatal(err)
			}
			release()
			rr.Release()
			rec.Release()
		}
		elapsed += time.Since(start)
		conn.Close()
		db.Close()
	}
	reportRate(b, elapsed)
}
