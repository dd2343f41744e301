package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"flipbook/analytics"
	"flipbook/api"
)

// Targets of the analytics scenario (issue: analytics and CSV exports).
const (
	TargetAnalyticsP99      = 250 * time.Millisecond // each analytics call for one book
	TargetAnalyticsOverhead = 1.3                    // service p50 within this factor of the same SQL in DuckDB
	TargetExportRowsPerSec  = 500_000
	TargetExportPeakBytes   = 300 << 20
)

// AnalyticsOptions sizes the analytics scenario.
type AnalyticsOptions struct {
	Books      int // books sharing the events (default 1,000)
	Events     int // events across them (default 10,000,000)
	ExportRows int // events of the book exported as CSV (default 1,000,000)
	Calls      int // timed calls per operation and side (default 200)
	Rounds     int // raw and service measured in turns (default 2)
	SkipExport bool
}

// analyticsOp is one measured operation: its REST path and the same query straight in DuckDB.
type analyticsOp struct {
	name string
	path func(book string) string
	raw  func(ctx context.Context, q analytics.Querier, f analytics.Filter) error
}

var analyticsOps = []analyticsOp{
	{"page-performance", func(b string) string { return "/api/v1/analytics/page-performance?book_id=" + b },
		func(ctx context.Context, q analytics.Querier, f analytics.Filter) error {
			return analytics.PagePerformance(ctx, q, f, 12, func(analytics.PageSummary) error { return nil })
		}},
	{"book-flow", func(b string) string { return "/api/v1/analytics/book-flow?book_id=" + b },
		func(ctx context.Context, q analytics.Querier, f analytics.Filter) error {
			_, err := analytics.GetBookFlow(ctx, q, f, 12)
			return err
		}},
	{"readers", func(b string) string { return "/api/v1/analytics/readers?book_id=" + b },
		func(ctx context.Context, q analytics.Querier, f analytics.Filter) error {
			_, err := analytics.Readers(ctx, q, f, analytics.ReadersQuery{Sort: analytics.SortRecent,
				Limit: api.DefaultAnalyticsLimit + 1}, func(analytics.ReaderSummary) error { return nil })
			return err
		}},
}

// Analytics is the analytics scenario: Events interaction events across Books books (as the
// compactor leaves them: one sorted run and a small recent table), then p50/p99 of
// page-performance, book-flow and readers for random books over HTTP beside the same queries
// run straight on the DuckDB handle, in turns; then a CSV export of ExportRows events of one
// book from the service in its own process (rows/s and its peak memory).
func Analytics(ctx context.Context, o AnalyticsOptions, out io.Writer) (*Report, error) {
	o.Books = cmp(o.Books, 1000)
	o.Events = cmp(o.Events, 10_000_000)
	o.ExportRows = cmp(o.ExportRows, 1_000_000)
	o.Calls = cmp(o.Calls, 200)
	o.Rounds = cmp(o.Rounds, 2)
	dir, err := os.MkdirTemp("", "flipbook-bench-analytics-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	svc, cfg, err := startService(data, nil)
	if err != nil {
		return nil, err
	}
	stopped := false
	stopSvc := func() {
		if !stopped {
			stopped = true
			svc.Shutdown(context.Background())
		}
	}
	defer stopSvc()

	fmt.Fprintf(out, "analytics: generating %d events across %d books (+%d for the export)...\n", o.Events, o.Books, o.ExportRows)
	t0 := time.Now()
	key, w, ids, err := seedWorkspace(svc, "bench-analytics", o.Books+1)
	if err != nil {
		return nil, err
	}
	exportBook, ids := ids[o.Books], ids[:o.Books]
	books := make([]analytics.BenchBook, 0, len(ids)+1)
	for _, id := range ids {
		books = append(books, analytics.BenchBook{Workspace: w, Mode: "l", BookID: id, Events: o.Events / o.Books})
	}
	if !o.SkipExport {
		books = append(books, analytics.BenchBook{Workspace: w, Mode: "l", BookID: exportBook, Events: o.ExportRows})
	}
	base := time.Now().UTC().Add(-6 * 24 * time.Hour).Truncate(time.Hour)
	if err := svc.Analytics.InsertBenchEvents(books, base, 1<<50); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "analytics: generated in %s\n", time.Since(t0).Round(time.Millisecond))

	rep := &Report{Scenario: "analytics"}
	rng := rand.New(rand.NewPCG(7, 11))
	client := &http.Client{Timeout: time.Minute}
	raw := make([][]time.Duration, len(analyticsOps))
	api := make([][]time.Duration, len(analyticsOps))
	for round := 0; round < o.Rounds; round++ {
		for i, op := range analyticsOps {
			for c := 0; c < o.Calls/o.Rounds; c++ {
				book := ids[rng.IntN(len(ids))]
				f := analytics.Filter{Workspace: w, Mode: "l", BookID: book}
				start := time.Now()
				if err := op.raw(ctx, svc.Analytics.Query(), f); err != nil {
					return nil, fmt.Errorf("%s in DuckDB: %w", op.name, err)
				}
				raw[i] = append(raw[i], time.Since(start))
			}
			for c := 0; c < o.Calls/o.Rounds; c++ {
				book := ids[rng.IntN(len(ids))]
				start := time.Now()
				if err := getOK(ctx, client, "http://"+cfg.Addr+op.path(book), key, io.Discard); err != nil {
					return nil, fmt.Errorf("%s over HTTP: %w", op.name, err)
				}
				api[i] = append(api[i], time.Since(start))
			}
		}
	}
	for i, op := range analyticsOps {
		r50, r99 := pctOf(raw[i], 50), pctOf(raw[i], 99)
		a50, a99 := pctOf(api[i], 50), pctOf(api[i], 99)
		fmt.Fprintf(out, "  %-17s DuckDB p50 %7s p99 %7s | service p50 %7s p99 %7s\n", op.name,
			r50.Round(10*time.Microsecond), r99.Round(10*time.Microsecond), a50.Round(10*time.Microsecond), a99.Round(10*time.Microsecond))
		rep.checkValue(out, op.name+" p99 (service)", float64(a99)/float64(time.Millisecond), "<=", float64(TargetAnalyticsP99/time.Millisecond), " ms")
		rep.check(out, op.name+" service p50 / DuckDB p50", float64(a50)/float64(r50), "<=", TargetAnalyticsOverhead)
	}
	stopSvc()
	if o.SkipExport {
		return rep, nil
	}

	// The export, from the service in its own process (a fresh start: its memory is the
	// export's, not the earlier queries' cache).
	c, err := startChildOn(ctx, data, false, io.Discard)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				peak = max(peak, treeRSS(c.cmd.Process.Pid))
			}
		}
	})
	idle := treeRSS(c.cmd.Process.Pid)
	lines := &lineCounter{}
	start := time.Now()
	err = getOK(ctx, client, c.base+"/api/v1/exports/books/"+exportBook+"/interaction-events", key, lines)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	rows := lines.n - 1 // the header; every generated event is an interaction event
	peak = max(peak, peakRSS(c.cmd.Process.Pid))
	fmt.Fprintf(out, "  CSV export        %d rows in %s: %.0f rows/s; service RSS idle %d MB, peak %d MB\n",
		rows, elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds(), idle>>20, peak>>20)
	if rows != o.ExportRows {
		return nil, fmt.Errorf("export: %d rows, want %d", rows, o.ExportRows)
	}
	rep.checkValue(out, "CSV export rows/s", float64(rows)/elapsed.Seconds(), ">=", TargetExportRowsPerSec, "")
	rep.checkValue(out, "CSV export peak memory", float64(peak)/(1<<20), "<=", TargetExportPeakBytes>>20, " MB")
	return rep, nil
}

func cmp(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// pctOf is the p-th percentile of unsorted durations.
func pctOf(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return pct(s, p)
}

func getOK(ctx context.Context, client *http.Client, url, key string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("status %d: %s", res.StatusCode, body)
	}
	_, err = io.Copy(w, bufio.NewReaderSize(res.Body, 256<<10))
	return err
}

// lineCounter counts CSV records (lines: the generated values hold no newlines).
type lineCounter struct{ n int }

func (l *lineCounter) Write(p []byte) (int, error) {
	l.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}
