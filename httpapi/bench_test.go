package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/valyala/fasthttp"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/internal/testutil"
	"flipbook/mcp"
)

// benchBook is a service with serve's request log (a RequestLog on a LogWriter; here to
// io.Discard), one workspace's key and one of its books, and the service's handler.
func benchBook(b *testing.B) (handler fasthttp.RequestHandler, key, rid string) {
	logw := NewLogWriter(io.Discard)
	b.Cleanup(func() { logw.Close() })
	h := newHarness(b, func(c *Config) { c.RequestLog = &RequestLog{W: logw} })
	key = h.workspace(b, "company", "live")
	rid = h.konva(b, key, "bench", "draft")
	return h.svc.Handler(), key, rid
}

// BenchmarkGetBook measures the handler path of GET /books/{book} without the network, with
// serve's request log. The request's parts are built once: allocations are the service's.
func BenchmarkGetBook(b *testing.B) {
	handler, key, rid := benchBook(b)
	uri, auth := "/api/v1/books/"+rid, "Bearer "+key
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.SetRequestURI(uri)
			ctx.Request.Header.Set("Authorization", auth)
			handler(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}

// BenchmarkMCPGetBook measures tools/call books_get (protocol 2025-11-25, the fast path) on
// the handler, without the network, with serve's request log.
func BenchmarkMCPGetBook(b *testing.B) {
	handler, key, rid := benchBook(b)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"books_get","arguments":{"book_id":"` + rid + `"}}}`)
	auth := "Bearer " + key
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.Header.SetMethod("POST")
			ctx.Request.SetRequestURI(mcp.Path)
			ctx.Request.Header.Set("Authorization", auth)
			ctx.Request.Header.SetContentType("application/json")
			ctx.Request.Header.Set("Accept", "application/json, text/event-stream")
			ctx.Request.Header.Set("MCP-Protocol-Version", "2025-11-25")
			ctx.Request.SetBody(body)
			handler(&ctx)
			if ctx.Response.StatusCode() != 200 || bytes.Contains(ctx.Response.Body(), []byte(`"isError":true`)) {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}

// BenchmarkExportCSV downloads the CSV export of 1,000,000 interaction events of one book over
// HTTP (the benchmark scenario's base: target ≥ 500,000 rows/s, peak memory under 300 MB) and
// reports rows/s and the process's peak RSS during the download (VmHWM, reset before each run
// through /proc/self/clear_refs). EXPORT_BENCH_EVENTS changes the size.
//
//	go test -tags pebblegozstd,duckdb_arrow -run '^$' -bench ExportCSV -benchtime 3x ./httpapi/
func BenchmarkExportCSV(b *testing.B) {
	events := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("EXPORT_BENCH_EVENTS")); err == nil && v > 0 {
		events = v
	}
	h := newHarness(b, nil)
	key, rid, _ := bigExport(b, h, events)
	if events >= analytics.DefaultCompactRows {
		// Measure the steady state: the compactor sorts rows into runs once recent holds
		// DefaultCompactRows (seconds of background work on both cores).
		if err := testutil.Poll(5*time.Minute, 100*time.Millisecond, func() error {
			if n := h.svc.consumer.Stats().CompactedRows; n < uint64(events) {
				return fmt.Errorf("%d of %d rows compacted", n, events)
			}
			return nil
		}); err != nil {
			b.Logf("measuring before the compactor is done: %v", err)
		}
	}
	h.restart(b) // a fresh process: DuckDB caches only what the export reads
	url := h.base + "/api/v1/exports/books/" + rid + "/interaction-events"
	runtime.GC()
	var elapsed time.Duration
	var peak, base, bytes int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resetPeakRSS()
		base = max(base, rss("VmRSS:"))
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		start := time.Now()
		res, err := h.http.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		elapsed += time.Since(start)
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("status %d: %v", res.StatusCode, err)
		}
		bytes += n
		peak = max(peak, rss("VmHWM:"))
	}
	b.ReportMetric(float64(events*b.N)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(bytes)/float64(b.N)/(1<<20), "MB/export")
	if peak > 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
		b.ReportMetric(float64(base)/(1<<20), "rss-before-MB")
	}
}

// BenchmarkCSVRows measures the CSV writer alone (Arrow batches of interaction events to an
// in-memory sink, one core), without DuckDB and HTTP.
func BenchmarkCSVRows(b *testing.B) {
	h := newHarness(b, nil)
	_, rid, ws := bigExport(b, h, 65536)
	cols := interactionColumns()
	rows, err := h.svc.Analytics.Export(context.Background(), analytics.ExportQuery{From: analytics.InteractionView,
		Columns: selectList(cols), Filter: analytics.Filter{Workspace: ws, Mode: "l", BookID: rid}, TimeCol: "occurred_at", Desc: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var recs []arrow.RecordBatch
	for rows.Next() {
		rec := rows.Record()
		rec.Retain()
		recs = append(recs, rec)
	}
	if rows.Err() != nil || len(recs) == 0 {
		b.Fatal(rows.Err(), len(recs))
	}
	bw := bufio.NewWriterSize(io.Discard, csvBufferSize)
	cells := make([]cellFunc, len(cols))
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := recs[i%len(recs)]
		for j, c := range cols {
			bind := c.bind
			if bind == nil {
				bind = bindByType
			}
			if cells[j], err = bind(rec.Column(j)); err != nil {
				b.Fatal(err)
			}
		}
		if err := writeRows(bw, cells, int(rec.NumRows())); err != nil {
			b.Fatal(err)
		}
		n += int(rec.NumRows())
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

// resetPeakRSS resets the process's peak RSS (Linux; a no-op elsewhere).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// rss is a memory figure of the process from /proc/self/status in bytes (0 when unknown):
// "VmRSS:" now, "VmHWM:" the peak since the last reset.
func rss(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// collectBenchBody is a viewer-like collector batch of n events (mostly page segments).
func collectBenchBody(rid string, n int) []byte {
	b := []byte(`{"book_id":"` + rid + `","session_id":"3f0c9a8e-2b7d-4c1e-9a55-7c0e1d2f3a4b","events":[`)
	at := time.Now().UTC().Add(-time.Minute)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		ts := at.Add(time.Duration(i) * 40 * time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
		switch {
		case i == 0:
			b = append(b, `{"type":"session_started","page_number":1,"occurred_at":"`+ts+`"}`...)
		case i%25 == 0:
			b = append(b, `{"type":"link_clicked","page_number":2,"url":"https://shop.example.com/products/42","occurred_at":"`+ts+`"}`...)
		default:
			b = append(b, `{"type":"page_segment_completed","page_number":`+strconv.Itoa(i%2+1)+`,"active_ms":`+strconv.Itoa(300+i*97)+`,"occurred_at":"`+ts+`"}`...)
		}
	}
	return append(b, "]}"...)
}

// BenchmarkCollectParse measures decoding and validating a 60-event collector batch (the
// request pipeline's share of POST /collect, without the log append).
func BenchmarkCollectParse(b *testing.B) {
	h := newHarness(b, nil)
	var op *api.Operation
	for _, o := range h.svc.Operations() {
		if o.ID == "reader.collect" {
			op = o
		}
	}
	body := collectBenchBody("abcdefghijkl", 60)
	b.ReportAllocs()
	b.ResetTimer()
	var ctx fasthttp.RequestCtx
	for i := 0; i < b.N; i++ {
		ctx.Request.Reset()
		ctx.Request.SetBody(body)
		if err := readArgs(&ctx, op, &api.Args{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/60, "ns/event")
}
