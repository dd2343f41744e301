package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"
)

// Report collects a scenario's figures and its target checks.
type Report struct {
	Scenario string
	Failed   []string
}

func (r *Report) line(out io.Writer, label string, s Stats) {
	fmt.Fprintf(out, "  %s %s\n", label, s)
}

func (r *Report) check(out io.Writer, what string, got float64, op string, target float64) {
	ok := (op == ">=" && got >= target) || (op == "<=" && got <= target)
	verdict := "PASS"
	if !ok {
		verdict = "MISS"
		r.Failed = append(r.Failed, fmt.Sprintf("%s: %.2f (target %s %.2f)", what, got, op, target))
	}
	fmt.Fprintf(out, "  [%s] %s: %.2fx (target %s %.2fx)\n", verdict, what, got, op, target)
}

// checkValue reports a figure against a target with its unit.
func (r *Report) checkValue(out io.Writer, what string, got float64, op string, target float64, unit string) {
	ok := (op == ">=" && got >= target) || (op == "<=" && got <= target)
	verdict := "PASS"
	if !ok {
		verdict = "MISS"
		r.Failed = append(r.Failed, fmt.Sprintf("%s: %.2f%s (target %s %.2f%s)", what, got, unit, op, target, unit))
	}
	fmt.Fprintf(out, "  [%s] %s: %.2f%s (target %s %.2f%s)\n", verdict, what, got, unit, op, target, unit)
}

// Main runs the scenarios named by -scenario (comma-separated; "all" for every one).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarios := fs.String("scenario", "all", "scenarios to run, comma-separated: rest, mcp, convert, search, ingest, analytics, webhooks, catalog, hostile, cluster, viewer (or all)")
	duration := fs.Duration("duration", 10*time.Second, "measured time per load (ingest: default 10m)")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up time per load (ingest: default duration/20, 1-30 s)")
	conns := fs.Int("conns", 32, "concurrent connections (ingest: default 64)")
	books := fs.Int("books", 100000, "books in the large workspace (rest)")
	small := fs.Int("small-books", 1000, "books in the small workspace (rest; mcp: its one workspace)")
	mcpSDKOnly := fs.Bool("mcp-sdk-only", false, "mcp: every tools/call through the go-sdk's handler (no fast path)")
	skipList := fs.Bool("skip-list", false, "rest: measure only the bare handler and GET /books/{book}")
	pages := fs.Int("pages", 200, "convert: pages of the speed test PDF")
	bigPages := fs.Int("big-pages", 1000, "convert: pages of the memory test PDF")
	viewerBefore := fs.String("viewer-before", "", "viewer: a flipbook executable built from an earlier commit (the viewer before issue 29), measured as the targets' baseline")
	runs := fs.Int("runs", 3, "convert: timed conversions per side (best kept); viewer: rounds of each view per service (lowest kept)")
	scanned := fs.Int("scanned-pages", 10, "convert: pages of the scanned PDF read by OCR (0: none)")
	searchBooks := fs.Int("search-books", 10000, "search: books of the workspace")
	searchPages := fs.Int("search-pages", 20, "search: pages a book")
	searchWords := fs.Int("search-words", 100, "search: words a page")
	searchQueries := fs.Int("search-queries", 500, "search: timed queries")
	anBooks := fs.Int("analytics-books", 1000, "analytics: books sharing the events")
	anEvents := fs.Int("analytics-events", 10_000_000, "analytics: interaction events across the books")
	anExport := fs.Int("export-rows", 1_000_000, "analytics: events of the book exported as CSV")
	anCalls := fs.Int("calls", 200, "analytics: timed calls per operation and side")
	sessions := fs.Int("sessions", 256, "ingest: virtual reader sessions")
	rate := fs.Int("rate", 0, "ingest: offered events/s (0: closed loop, as fast as the service answers)")
	rawEvents := fs.Int("raw-events", 1_000_000, "ingest: events per raw DuckDB append round")
	whDeliveries := fs.Int("webhook-deliveries", 100_000, "webhooks: deliveries to the healthy receiver per phase")
	catItems := fs.Int("catalog-items", 100_000, "catalog: items bulk-upserted per pass (500 a request)")
	bulkBooks := fs.Int("bulk-books", 10_000, "catalog: books changed by bulk settings batches (1,000 a batch)")
	childProfile := fs.String("child-cpuprofile", "", "ingest, webhooks, catalog: write a CPU profile of the service process to this file (webhooks: one per phase, the phase's name before the extension)")
	childLog := fs.String("child-log", "", "ingest, webhooks, catalog: write the service's log to this file")
	serveArgs := fs.String("serve-args", "", "ingest, webhooks, catalog: extra flipbook serve flags, space-separated (e.g. '--ingest-backlog 65536')")
	strict := fs.Bool("strict", false, "exit non-zero when a target is missed")
	clusterStandby := fs.Bool("cluster-standby", false, "cluster: run the nodes as standby replicas (--cluster-standby)")
	clusterGetOnly := fs.Bool("cluster-get-only", false, "cluster: measure only the GETs through the owner and through another node")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var missed []string
	list := strings.Split(*scenarios, ",")
	if *scenarios == "all" {
		list = []string{"rest", "mcp", "convert", "search", "ingest", "analytics", "webhooks", "catalog", "hostile", "cluster", "viewer"}
	}
	var childOut io.Writer
	if *childLog != "" {
		f, err := os.Create(*childLog)
		if err != nil {
			return err
		}
		defer f.Close()
		childOut = f
	}
	for _, sc := range list {
		var rep *Report
		var err error
		switch strings.TrimSpace(sc) {
		case "rest":
			fmt.Fprintln(stdout, "== scenario rest ==")
			rep, err = Rest(ctx, RestOptions{Books: *books, SmallBooks: *small, Conns: *conns,
				Warmup: *warmup, Duration: *duration, SkipList: *skipList}, stdout)
		case "mcp":
			fmt.Fprintln(stdout, "== scenario mcp ==")
			rep, err = MCP(ctx, MCPOptions{Books: *small, Conns: *conns, Warmup: *warmup, Duration: *duration, SDKOnly: *mcpSDKOnly}, stdout)
		case "analytics":
			fmt.Fprintln(stdout, "== scenario analytics ==")
			rep, err = Analytics(ctx, AnalyticsOptions{Books: *anBooks, Events: *anEvents, ExportRows: *anExport, Calls: *anCalls}, stdout)
		case "convert":
			fmt.Fprintln(stdout, "== scenario convert ==")
			rep, err = Convert(ctx, ConvertOptions{Pages: *pages, BigPages: *bigPages, LongEdge: 1600, Runs: *runs, Scanned: *scanned}, stdout)
		case "search":
			fmt.Fprintln(stdout, "== scenario search ==")
			rep, err = Search(ctx, SearchOptions{Books: *searchBooks, Pages: *searchPages, Words: *searchWords, Queries: *searchQueries}, stdout)
		case "ingest":
			fmt.Fprintln(stdout, "== scenario ingest ==")
			o := IngestOptions{Sessions: *sessions, Rate: *rate, RawEvents: *rawEvents}
			if given["duration"] {
				o.Duration = *duration
			}
			if given["warmup"] {
				o.Warmup = *warmup
			}
			if given["conns"] {
				o.Conns = *conns
			}
			o.ChildArgs = append(o.ChildArgs, strings.Fields(*serveArgs)...)
			if *childProfile != "" {
				abs, err := filepath.Abs(*childProfile)
				if err != nil {
					return err
				}
				o.ChildArgs = append(o.ChildArgs, "--cpuprofile", abs)
			}
			o.Log = childOut
			rep, err = Ingest(ctx, o, stdout)
		case "webhooks":
			fmt.Fprintln(stdout, "== scenario webhooks ==")
			o := WebhooksOptions{Deliveries: *whDeliveries, Log: childOut, ChildArgs: strings.Fields(*serveArgs)}
			if *childProfile != "" {
				abs, err := filepath.Abs(*childProfile)
				if err != nil {
					return err
				}
				o.ChildProfile = abs
			}
			rep, err = Webhooks(ctx, o, stdout)
		case "catalog":
			fmt.Fprintln(stdout, "== scenario catalog ==")
			o := CatalogOptions{Items: *catItems, Books: *bulkBooks, Log: childOut, ChildArgs: strings.Fields(*serveArgs)}
			if *childProfile != "" {
				abs, err := filepath.Abs(*childProfile)
				if err != nil {
					return err
				}
				o.ChildProfile = abs
			}
			rep, err = Catalog(ctx, o, stdout)
		case "cluster":
			fmt.Fprintln(stdout, "== scenario cluster ==")
			o := ClusterOptions{Log: childOut, Standby: *clusterStandby, GetOnly: *clusterGetOnly}
			if given["duration"] {
				o.Duration = *duration
			}
			if given["conns"] {
				o.Conns = *conns
			}
			rep, err = Cluster(ctx, o, stdout)
		case "hostile":
			fmt.Fprintln(stdout, "== scenario hostile ==")
			o := HostileOptions{Log: childOut}
			if given["duration"] {
				o.Duration = *duration
			}
			rep, err = Hostile(ctx, o, stdout)
		case "viewer":
			fmt.Fprintln(stdout, "== scenario viewer ==")
			rep, err = Viewer(ctx, ViewerOptions{Rounds: *runs, Log: childOut, Before: *viewerBefore}, stdout)
		default:
			return fmt.Errorf("unknown scenario %q", sc)
		}
		if err != nil {
			return err
		}
		missed = append(missed, rep.Failed...)
	}
	if len(missed) > 0 {
		fmt.Fprintf(stdout, "targets missed:\n  %s\n", strings.Join(missed, "\n  "))
		if *strict {
			return fmt.Errorf("%d benchmark targets missed", len(missed))
		}
	} else {
		fmt.Fprintln(stdout, "all targets met")
	}
	return nil
}
