// Package bench is the benchmark harness behind `make bench` (`flipbook bench`): each scenario
// measures the service beside a baseline in the same run and reports ratios against it, because
// the machines are shared and noisy and absolute numbers do not travel.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/httpapi"
)

// Load is a closed-loop HTTP load: Conns workers each send a request, wait for the answer, and
// send the next, for Duration after a Warmup.
type Load struct {
	Addr     string
	Conns    int
	Warmup   time.Duration
	Duration time.Duration
	// Request fills req for the n-th request of worker w.
	Request func(w, n int, req *fasthttp.Request)
	// Check validates a response; a failure counts as an error.
	Check func(resp *fasthttp.Response) error
}

// Stats is what a load measured.
type Stats struct {
	Requests int
	Errors   int
	FirstErr error
	Elapsed  time.Duration
	P50, P99 time.Duration
}

// RPS is requests per second.
func (s Stats) RPS() float64 { return float64(s.Requests) / s.Elapsed.Seconds() }

func (s Stats) String() string {
	return fmt.Sprintf("%9.0f req/s  p50 %7s  p99 %7s  (%d requests, %d errors)",
		s.RPS(), s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond), s.Requests, s.Errors)
}

// Run drives the load and returns its statistics.
func (l Load) Run(ctx context.Context) Stats {
	client := &fasthttp.HostClient{Addr: l.Addr, MaxConns: l.Conns, ReadTimeout: 10 * time.Second}
	start := time.Now()
	warmEnd := start.Add(l.Warmup)
	end := warmEnd.Add(l.Duration)
	lat := make([][]time.Duration, l.Conns)
	errs := make([]int, l.Conns)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < l.Conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			samples := make([]time.Duration, 0, 1<<14)
			for n := 0; ctx.Err() == nil; n++ {
				now := time.Now()
				if now.After(end) {
					break
				}
				req.Reset()
				l.Request(w, n, req)
				req.Header.SetHost(l.Addr)
				t0 := time.Now()
				err := client.Do(req, resp)
				d := time.Since(t0)
				if err == nil && l.Check != nil {
					err = l.Check(resp)
				}
				if t0.Before(warmEnd) {
					continue
				}
				if err != nil {
					errs[w]++
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				samples = append(samples, d)
			}
			lat[w] = samples
		}(w)
	}
	wg.Wait()
	var all []time.Duration
	st := Stats{Elapsed: time.Since(warmEnd)}
	if st.Elapsed > l.Duration {
		st.Elapsed = l.Duration
	}
	for w := range lat {
		all = append(all, lat[w]...)
		st.Errors += errs[w]
	}
	if e, ok := firstErr.Load().(error); ok {
		st.FirstErr = e
	}
	st.Requests = len(all)
	slices.Sort(all)
	if len(all) > 0 {
		st.P50 = all[len(all)*50/100]
		st.P99 = all[len(all)*99/100]
	}
	return st
}

// status200 is a Check accepting only 200.
func status200(resp *fasthttp.Response) error {
	if resp.StatusCode() != 200 {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode(), resp.Body())
	}
	return nil
}

// startService starts a service on dataDir with the rate limits off, listening on a free
// loopback port; mod may change the config first.
func startService(dataDir string, mod func(*httpapi.Config)) (*httpapi.Service, httpapi.Config, error) {
	cfg := httpapi.DefaultConfig()
	cfg.DataDir = dataDir
	cfg.RateWorkspace, cfg.RateEndpoint, cfg.RateUnauthenticated = 0, 0, 0
	// As served (docs/OPERATIONS.md): a JSON line per request at info, here into
	// <data>/service.log, so the figures include the request log's cost; warnings and errors
	// also reach the terminal.
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, cfg, err
	}
	logFile, err := os.OpenFile(filepath.Join(dataDir, "service.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, cfg, err
	}
	// Batched like serve's (httpapi.LogWriter); the file and its flusher live as long as the
	// bench process.
	logw := httpapi.NewLogWriter(logFile)
	toTerminal := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	cfg.Logger = slog.New(slog.NewMultiHandler(
		slog.NewJSONHandler(logw.Direct(), &slog.HandlerOptions{Level: slog.LevelInfo}), toTerminal))
	cfg.RequestLog = &httpapi.RequestLog{W: logw}
	if mod != nil {
		mod(&cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, cfg, err
	}
	cfg.Addr = ln.Addr().String()
	svc, err := httpapi.New(cfg)
	if err != nil {
		ln.Close()
		return nil, cfg, err
	}
	go svc.Serve(ln)
	return svc, cfg, nil
}
