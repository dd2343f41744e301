package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
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

// Main runs the scenarios named by -scenario (comma-separated; "all" for every one).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarios := fs.String("scenario", "all", "scenarios to run: rest (or all)")
	duration := fs.Duration("duration", 10*time.Second, "measured time per load")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up time per load")
	conns := fs.Int("conns", 32, "concurrent connections")
	books := fs.Int("books", 100000, "books in the large workspace (rest)")
	small := fs.Int("small-books", 1000, "books in the small workspace (rest)")
	skipList := fs.Bool("skip-list", false, "rest: measure only the bare handler and GET /books/{book}")
	strict := fs.Bool("strict", false, "exit non-zero when a target is missed")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
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
	for _, sc := range strings.Split(*scenarios, ",") {
		var rep *Report
		var err error
		switch strings.TrimSpace(sc) {
		case "rest", "all":
			fmt.Fprintln(stdout, "== scenario rest ==")
			rep, err = Rest(ctx, RestOptions{Books: *books, SmallBooks: *small, Conns: *conns,
				Warmup: *warmup, Duration: *duration, SkipList: *skipList}, stdout)
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
