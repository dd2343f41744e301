package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Hostile sockets (issue 25 part 2): what anonymous and slow clients can make the service hold.
// The service runs as its own process on embedded defaults (rate limits off, so nothing but the
// body handling stands in the way); the figures are its RSS and the latency of GET /health
// measured before (the baseline), during and after the attack:
//
//   - Declare: sockets that send headers declaring a huge body (Content-Length 268435455) to
//     the collector, the upload route without a key and MCP without a key, then 1 KB of body,
//     and hold the connection; each reconnects as soon as it is answered or closed.
//   - Trickle: sockets that declare a 1 MB body to the collector or to an editor book (with a
//     valid key) and send one byte every 5 s.
//   - One authenticated chunked upload of 300 MB (over the 256 MiB cap).
//
// Targets: RSS growth under 100 MB, health p99 under 100 ms during the attack, and RSS back
// within 50 MB of idle once the sockets are gone.

// HostileOptions configure Hostile.
type HostileOptions struct {
	Declare  int           // sockets declaring huge bodies (default 50)
	Trickle  int           // sockets trickling bodies (default 500)
	Duration time.Duration // the attack (default 30 s)
	Settle   time.Duration // wait after the attack before reading memory (default 30 s)
	Upload   int           // bytes of the chunked upload (default 300 MB; over --max-body-bytes)
	Log      io.Writer     // the service's log (nil: discarded)
	// ChildArgs are extra flipbook serve flags.
	ChildArgs []string
}

// Hostile runs the scenario.
func Hostile(ctx context.Context, o HostileOptions, out io.Writer) (*Report, error) {
	if o.Declare == 0 {
		o.Declare = 50
	}
	if o.Trickle == 0 {
		o.Trickle = 500
	}
	if o.Duration == 0 {
		o.Duration = 30 * time.Second
	}
	if o.Settle == 0 {
		o.Settle = 30 * time.Second
	}
	if o.Upload == 0 {
		o.Upload = 300 << 20
	}
	rep := &Report{Scenario: "hostile"}
	dir, err := os.MkdirTemp("", "flipbook-bench-hostile-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	c, err := startChildLog(ctx, dir, logw, append([]string{"--log-level", "warn"}, o.ChildArgs...)...)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	pid := c.cmd.Process.Pid
	addr := strings.TrimPrefix(c.base, "http://")

	// Baseline: the idle service, and /health alone.
	time.Sleep(3 * time.Second)
	idle := treeRSS(pid)
	base := probeHealth(c.base, 5*time.Second)
	fmt.Fprintf(out, "  idle: RSS %s, health p50 %s p99 %s (%d probes)\n", mb(idle), base.P50, base.P99, base.Requests)

	actx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var wg sync.WaitGroup
	var answered, refusedEarly atomic.Int64
	declareTargets := []string{
		"POST /collect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json",
		"POST /api/v1/books HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b",
		"POST /mcp/public-api HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream",
	}
	for i := 0; i < o.Declare; i++ {
		head := declareTargets[i%len(declareTargets)] + "\r\nContent-Length: 268435455\r\n\r\n"
		wg.Add(1)
		go func() {
			defer wg.Done()
			for actx.Err() == nil {
				conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				_ = conn.SetDeadline(time.Now().Add(o.Duration))
				if _, err := io.WriteString(conn, head); err == nil {
					_, _ = conn.Write(make([]byte, 1024))
				}
				buf := make([]byte, 512)
				if n, _ := conn.Read(buf); n > 0 {
					answered.Add(1)
					if strings.Contains(string(buf[:n]), " 413 ") || strings.Contains(string(buf[:n]), " 401 ") {
						refusedEarly.Add(1)
					}
				}
				conn.Close()
				time.Sleep(100 * time.Millisecond) // each socket reconnects ten times a second at most
			}
		}()
	}
	var trickling atomic.Int64
	trickleTargets := []string{
		"POST /collect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json",
		"POST /api/v1/books/konva HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer " + c.key,
	}
	for i := 0; i < o.Trickle; i++ {
		head := trickleTargets[i%len(trickleTargets)] + "\r\nContent-Length: 1000000\r\n\r\n{"
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 5 * time.Millisecond) // spread the opens
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, head); err != nil {
				return
			}
			trickling.Add(1)
			defer trickling.Add(-1)
			t := time.NewTicker(5 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-actx.Done():
					return
				case <-t.C:
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}(i)
	}
	// One authenticated chunked upload of 300 MB.
	var uploadStatus atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		uploadStatus.Store(int64(chunkedUpload(actx, c.base, c.key, o.Upload)))
	}()

	// During: RSS sampled, /health probed.
	var peak int64
	stopSample := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSample:
				return
			case <-t.C:
				if r := treeRSS(pid); r > peak {
					peak = r
				}
			}
		}
	}()
	time.Sleep(2 * time.Second) // the sockets open
	during := probeHealth(c.base, o.Duration-3*time.Second)
	maxTrickle := trickling.Load()
	cancel()
	wg.Wait()
	close(stopSample)
	<-sampled
	fmt.Fprintf(out, "  attack (%s): %d declaring sockets (%d answers, %d of them 401/413 before the body), %d trickling open at the end, chunked upload of %s answered %d\n",
		o.Duration, o.Declare, answered.Load(), refusedEarly.Load(), maxTrickle, mb(int64(o.Upload)), uploadStatus.Load())
	fmt.Fprintf(out, "  during: RSS peak %s (+%s), health p50 %s p99 %s (%d probes, %d errors)\n",
		mb(peak), mb(peak-idle), during.P50, during.P99, during.Requests, during.Errors)

	// After: the sockets are gone; memory settles (the Go runtime returns freed heap to the
	// system within minutes, fasthttp's idle workers stop after 10 s).
	time.Sleep(o.Settle)
	after := treeRSS(pid)
	if os.Getenv("HOSTILE_DEBUG") != "" {
		tok, _ := os.ReadFile(dir + "/admin-token")
		req, _ := http.NewRequest("GET", c.base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		if res, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "go_memstats_heap") || strings.HasPrefix(l, "go_goroutines") || strings.HasPrefix(l, "go_memstats_stack") || strings.HasPrefix(l, "go_memstats_sys") || strings.HasPrefix(l, "flipbook_duckdb") || strings.HasPrefix(l, "flipbook_pebble") {
					fmt.Fprintln(out, "   ", l)
				}
			}
		}
	}
	fmt.Fprintf(out, "  after: RSS %s (%+.1f MB from idle)\n", mb(after), float64(after-idle)/(1<<20))
	rep.checkValue(out, "RSS growth under attack", float64(peak-idle)/(1<<20), "<=", 100, " MB")
	rep.checkValue(out, "health p99 under attack", float64(during.P99)/float64(time.Millisecond), "<=", 100, " ms")
	rep.check(out, "health p99 under attack / idle p99", float64(during.P99)/float64(max(base.P99, time.Millisecond)), "<=", 100)
	rep.checkValue(out, "RSS after the attack, above idle", float64(after-idle)/(1<<20), "<=", 50, " MB")
	if during.Errors > 0 {
		rep.Failed = append(rep.Failed, fmt.Sprintf("health failed %d times under attack: %v", during.Errors, during.FirstErr))
	}
	if s := uploadStatus.Load(); s != 413 {
		rep.Failed = append(rep.Failed, fmt.Sprintf("the chunked upload was answered %d, not 413", s))
	}
	return rep, nil
}

// probeHealth calls GET /api/v1/health every 20 ms for d on one keep-alive connection.
func probeHealth(base string, d time.Duration) Stats {
	client := &http.Client{Timeout: 5 * time.Second}
	var lat []time.Duration
	var st Stats
	start := time.Now()
	for time.Since(start) < d {
		t0 := time.Now()
		res, err := client.Get(base + "/api/v1/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				err = fmt.Errorf("status %d", res.StatusCode)
			}
		}
		if err != nil {
			st.Errors++
			if st.FirstErr == nil {
				st.FirstErr = err
			}
		}
		lat = append(lat, time.Since(t0))
		time.Sleep(20 * time.Millisecond)
	}
	st.Requests, st.Elapsed = len(lat), time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		st.P50, st.P99 = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return st
}

// chunkedUpload sends n bytes of a multipart upload chunked, and returns the status answered.
func chunkedUpload(ctx context.Context, base, key string, n int) int {
	pr, pw := io.Pipe()
	go func() {
		head := "--b\r\nContent-Disposition: form-data; name=\"files[]\"; filename=\"big.pdf\"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\n"
		if _, err := io.WriteString(pw, head); err != nil {
			return
		}
		chunk := make([]byte, 1<<20)
		for sent := 0; sent < n && ctx.Err() == nil; sent += len(chunk) {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(pw, "\r\n--b--\r\n")
		pw.Close()
	}()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/v1/books", pr)
	if err != nil {
		return 0
	}
	req.ContentLength = -1 // chunked
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	res, err := http.DefaultClient.Do(req)
	pr.Close()
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
