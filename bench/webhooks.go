package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/actors"
)

// WebhooksOptions configure the webhooks scenario. Zero values mean the defaults.
type WebhooksOptions struct {
	// Deliveries to the healthy receiver per phase: as many reader events are posted, each of a
	// subscribed type (default 100,000).
	Deliveries int
	Conns      int // connections posting the events to POST /collect (default 8)
	Sessions   int // virtual reader sessions the events come from (default 64)
	// Paced events are posted at PacedRate events/s once a phase's backlog has drained: the
	// time from event to delivery without a backlog (defaults 2,000 and 1,000/s; Paced < 0:
	// none).
	Paced, PacedRate int
	// Timeout bounds the wait for a phase's deliveries (default max(2 minutes, 1 s per 250)).
	Timeout time.Duration
	// RSSEvery is how often the service's resident memory is sampled (default 200 ms).
	RSSEvery time.Duration
	// SingleBaseline runs the baseline once, before the dead-receiver phase; by default it runs
	// before and after it and the faster of the two is the baseline.
	SingleBaseline bool
	// ChildArgs are extra `flipbook serve` flags of every phase's service.
	ChildArgs []string
	// ChildProfile: a CPU profile of each phase's service, written to this path with the phase
	// inserted before the extension (cpu.prof: cpu-baseline.prof, cpu-dead.prof, ...).
	ChildProfile string
	// Log receives the services' logs (default: discarded).
	Log io.Writer
}

// Targets of the webhooks scenario (issue: webhook delivery).
const (
	TargetWebhookRate      = 2000 // deliveries/s to a healthy receiver (the issue aims for 10,000)
	TargetWebhookDeadRatio = 0.9  // healthy deliveries/s beside a dead receiver, share of the rate alone
	TargetWebhookRSSGrowth = 1.2  // RSS peak of the drain's last third within this factor of its first third's
)

// whEventTypes are the subscribed types: every reader event the generator makes maps to one.
var whEventTypes = []string{actors.WebhookFlipbookOpened, actors.WebhookPageDwelled, actors.WebhookLinkClicked,
	actors.WebhookDownloadRequested, actors.WebhookSessionEnded}

func (o *WebhooksOptions) defaults() {
	if o.Deliveries <= 0 {
		o.Deliveries = 100_000
	}
	if o.Conns <= 0 {
		o.Conns = 8
	}
	if o.Sessions < o.Conns {
		o.Sessions = max(64, o.Conns)
	}
	if o.Paced == 0 {
		o.Paced = 2000
	}
	if o.PacedRate <= 0 {
		o.PacedRate = 1000
	}
	if o.Timeout <= 0 {
		o.Timeout = max(2*time.Minute, time.Duration(o.Deliveries/250)*time.Second)
	}
	if o.RSSEvery <= 0 {
		o.RSSEvery = 200 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Webhooks measures webhook delivery from reader events to a receiver: in each phase a fresh
// `flipbook serve` child process gets a company workspace, a published book and its
// subscriptions, then Deliveries reader events are posted to POST /collect as fast as it takes
// them, so the deliveries pile up and drain. The healthy receiver is a fasthttp server of this
// process answering 200 at once; it records each delivery's first arrival and its lag from the
// event's time (the payload's created_at: the events are stamped when they are posted). The
// baseline phase has one subscription, to the healthy receiver; the other adds a second
// subscription to the same events whose receiver is down the whole time (a loopback port
// nobody listens on). The service's RSS is sampled throughout.
func Webhooks(ctx context.Context, o WebhooksOptions, out io.Writer) (*Report, error) {
	o.defaults()
	rc, err := newWHReceiver()
	if err != nil {
		return nil, err
	}
	defer rc.close()
	dead, err := deadAddr()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "  %s deliveries per phase to a loopback receiver (answers 200 at once; signed), %d event types subscribed; "+
		"the events are posted to /collect over %d connections from %d sessions first, then the backlog drains; "+
		"dead receiver: http://%s (nothing listening); a fresh service per phase\n",
		thousands(float64(o.Deliveries)), len(whEventTypes), o.Conns, o.Sessions, dead)

	phases := []struct {
		name, label string
		dead        bool
	}{
		{"baseline", "baseline: one subscription, to the healthy receiver", false},
		{"dead", "with a dead receiver: a second subscription to the same events, its receiver down", true},
		{"baseline2", "baseline again", false},
	}
	if o.SingleBaseline {
		phases = phases[:2]
	}
	rep := &Report{Scenario: "webhooks"}
	var results []*whPhase
	for _, ph := range phases {
		fmt.Fprintf(out, "  %s:\n", ph.label)
		targets := []string{rc.url()}
		if ph.dead {
			targets = append(targets, "http://"+dead+"/hook")
		}
		res, err := whRunPhase(ctx, ph.name, targets, rc, o, out)
		if err != nil {
			return nil, fmt.Errorf("webhooks, %s: %w", ph.name, err)
		}
		res.print(out)
		if res.got < res.want {
			rep.Failed = append(rep.Failed, fmt.Sprintf("webhooks %s: %d of %d deliveries arrived within %s",
				ph.name, res.got, res.want, o.Timeout))
		}
		results = append(results, res)
	}

	// The faster baseline is the baseline (as the ingest scenario keeps the faster raw round):
	// the conservative choice for a target the dead phase must reach.
	base, withDead := results[0], results[1]
	if len(results) > 2 && results[2].rate() > base.rate() {
		base = results[2]
	}
	// The machine is shared: print the dead phase against every baseline, the faster is judged.
	for _, b := range results {
		if b == withDead {
			continue
		}
		fmt.Fprintf(out, "  beside a dead receiver / %s: healthy deliveries/s %.3fx, service CPU per healthy delivery %.2fx, p99 event -> delivered %.2fx\n",
			b.name, withDead.rate()/b.rate(), withDead.cpuPerDelivery()/b.cpuPerDelivery(),
			float64(withDead.pct(99))/float64(max(b.pct(99), 1)))
	}
	rep.checkValue(out, "deliveries/s to the healthy receiver, alone ("+base.name+")", base.rate(), ">=", TargetWebhookRate, "")
	rep.checkValue(out, "deliveries/s to the healthy receiver, beside a dead one", withDead.rate(), ">=", TargetWebhookRate, "")
	rep.checkValue(out, "healthy deliveries/s beside a dead receiver / alone", withDead.rate()/base.rate(), ">=", TargetWebhookDeadRatio, "x")
	worst, worstName := 0.0, ""
	for _, r := range results {
		if g, ok := r.rssGrowth(); ok && g > worst {
			worst, worstName = g, r.name
		}
	}
	if worstName != "" {
		rep.checkValue(out, "RSS peak of the drain's last third / first third ("+worstName+", the highest)", worst, "<=", TargetWebhookRSSGrowth, "x")
	} else {
		fmt.Fprintln(out, "  (drains too short for three RSS samples: memory not judged)")
	}
	return rep, nil
}

// whPhase is what one phase measured.
type whPhase struct {
	name       string
	want       int
	got        int // distinct deliveries that arrived at the healthy receiver
	dups       int // arrivals of a delivery that had already arrived
	first      time.Time
	last       time.Time
	lags       []time.Duration // arrival - the event's time, sorted
	postStart  time.Time
	postEnd    time.Time
	posted     int
	createdAt  time.Time // when every subscription's deliveries_count reached want (zero: not seen)
	cpuStart   time.Duration
	cpuEnd     time.Duration // the service's CPU time when the last delivery arrived
	rssIdle    int64
	rss        []whRSS
	rssEnd     int64
	paced      []time.Duration // lags of the paced events' deliveries, sorted
	pacedWant  int
	pacedRate  int
	deadStatus string
	dispatcher string // the dispatcher's counters at the end (GET /admin/v1/ingest)
}

type whRSS struct {
	at  time.Time
	rss int64
}

func (p *whPhase) rate() float64 {
	if p.got < 2 || !p.last.After(p.first) {
		return 0
	}
	return float64(p.got-1) / p.last.Sub(p.first).Seconds()
}

func (p *whPhase) pct(n int) time.Duration { return pct(p.lags, n) }

func (p *whPhase) cpuPerDelivery() float64 {
	if p.got == 0 {
		return 0
	}
	return float64((p.cpuEnd - p.cpuStart).Microseconds()) / float64(p.got)
}

// rssThirds are the RSS peaks of the drain's (first to last delivery) thirds; ok is false when
// a third has no sample.
func (p *whPhase) rssThirds() (peaks [3]int64, ok bool) {
	w := p.last.Sub(p.first)
	if w <= 0 {
		return peaks, false
	}
	var seen [3]bool
	for _, s := range p.rss {
		d := s.at.Sub(p.first)
		if d < 0 || d > w {
			continue
		}
		i := min(int(3*d/w), 2)
		peaks[i] = max(peaks[i], s.rss)
		seen[i] = true
	}
	return peaks, seen[0] && seen[1] && seen[2]
}

func (p *whPhase) rssGrowth() (float64, bool) {
	t, ok := p.rssThirds()
	if !ok {
		return 0, false
	}
	return float64(t[2]) / float64(t[0]), true
}

func (p *whPhase) print(out io.Writer) {
	secs := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return fmt.Sprintf("%.2f s", t.Sub(p.postStart).Seconds())
	}
	fmt.Fprintf(out, "    posted %s events in %.2f s (%s events/s); every subscription's deliveries created after %s\n",
		thousands(float64(p.posted)), p.postEnd.Sub(p.postStart).Seconds(),
		thousands(float64(p.posted)/max(p.postEnd.Sub(p.postStart).Seconds(), 1e-9)), secs(p.createdAt))
	fmt.Fprintf(out, "    delivered %s of %s (%d duplicates): first after %s, last after %s: %s deliveries/s\n",
		thousands(float64(p.got)), thousands(float64(p.want)), p.dups, secs(p.first), secs(p.last), thousands(p.rate()))
	var lagMax time.Duration
	if len(p.lags) > 0 {
		lagMax = p.lags[len(p.lags)-1]
	}
	fmt.Fprintf(out, "    event -> delivered (backlog): p50 %s, p99 %s, max %s\n", ms(p.pct(50)), ms(p.pct(99)), ms(lagMax))
	if p.pacedWant > 0 {
		fmt.Fprintf(out, "    event -> delivered (paced, %s events/s, no backlog): p50 %s, p99 %s (%s of %s delivered)\n",
			thousands(float64(p.pacedRate)), ms(pct(p.paced, 50)), ms(pct(p.paced, 99)),
			thousands(float64(len(p.paced))), thousands(float64(p.pacedWant)))
	}
	if w := p.last.Sub(p.postStart); w > 0 {
		fmt.Fprintf(out, "    service CPU %.2f cores from the first post to the last delivery, %.0f µs per healthy delivery\n",
			(p.cpuEnd-p.cpuStart).Seconds()/w.Seconds(), p.cpuPerDelivery())
	}
	var peak int64
	for _, s := range p.rss {
		peak = max(peak, s.rss)
	}
	thirds := "n/a (too few samples)"
	if t, ok := p.rssThirds(); ok {
		thirds = fmt.Sprintf("%d / %d / %d MB (last / first %.2fx)", t[0]>>20, t[1]>>20, t[2]>>20, float64(t[2])/float64(t[0]))
	}
	fmt.Fprintf(out, "    service RSS: idle %d MB; drain thirds' peaks %s; max %d MB; end %d MB\n",
		p.rssIdle>>20, thirds, peak>>20, p.rssEnd>>20)
	if p.deadStatus != "" {
		fmt.Fprintf(out, "    dead subscription: %s\n", p.deadStatus)
	}
	if p.dispatcher != "" {
		fmt.Fprintf(out, "    dispatcher: %s\n", p.dispatcher)
	}
}

// whRunPhase runs one phase against a fresh service with a subscription per target (the first
// is the healthy receiver's).
func whRunPhase(ctx context.Context, name string, targets []string, rc *whReceiver, o WebhooksOptions, out io.Writer) (*whPhase, error) {
	dir, err := os.MkdirTemp("", "flipbook-bench-webhooks-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	token := "adm_bench_" + actors.RandomString(24)
	args := append([]string{"--admin-token", token, "--rate-limit-collect", "0", "--allow-private-targets=true"}, o.ChildArgs...)
	if o.ChildProfile != "" {
		ext := filepath.Ext(o.ChildProfile)
		args = append(args, "--cpuprofile", strings.TrimSuffix(o.ChildProfile, ext)+"-"+name+ext)
	}
	c, err := startChildLog(ctx, filepath.Join(dir, "data"), o.Log, args...)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	pid := c.cmd.Process.Pid
	adm := &adminClient{base: c.base + "/admin/v1", token: token}
	key, book, err := whSetup(ctx, c, adm)
	if err != nil {
		return nil, err
	}
	api := &whAPI{apiClient{base: c.base + "/api/v1", token: key}}
	var subs []int64
	for i, t := range targets {
		id, err := api.subscribe(ctx, fmt.Sprintf("bench %d", i), t)
		if err != nil {
			return nil, err
		}
		subs = append(subs, id)
	}
	time.Sleep(300 * time.Millisecond) // the service settles after setup
	res := &whPhase{name: name, want: o.Deliveries, rssIdle: treeRSS(pid)}

	// RSS sampler, deliveries_count poller and progress lines, until stop is closed.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex // guards res.rss and res.createdAt
	wg.Add(3)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.RSSEvery)
		defer t.Stop()
		for {
			r := treeRSS(pid)
			mu.Lock()
			res.rss = append(res.rss, whRSS{at: time.Now(), rss: r})
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			counts, err := api.counts(ctx)
			if err != nil {
				continue
			}
			all := len(counts) == len(subs)
			for _, n := range counts {
				all = all && n >= int64(o.Deliveries)
			}
			if all {
				mu.Lock()
				res.createdAt = time.Now()
				mu.Unlock()
				return
			}
		}
	}()
	rec := newWHRecorder(o.Deliveries)
	rc.cur.Store(rec)
	defer rc.cur.Store(nil)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-rec.done:
				return
			case <-t.C:
				fmt.Fprintf(out, "      %4.0fs: %s delivered, RSS %d MB\n", time.Since(start).Seconds(),
					thousands(float64(rec.count())), treeRSS(pid)>>20)
			}
		}
	}()

	res.cpuStart = procCPU(pid)
	res.postStart = time.Now()
	posted, err := whPost(ctx, c, book, o.Sessions, o.Conns, o.Deliveries, 0, 1)
	res.postEnd, res.posted = time.Now(), posted
	if err != nil {
		close(stop)
		wg.Wait()
		return nil, err
	}
	timer := time.NewTimer(o.Timeout - time.Since(res.postStart))
	select {
	case <-rec.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	timer.Stop()
	res.cpuEnd = procCPU(pid)
	rec.snapshot(res)

	// Without a backlog: paced events, their deliveries recorded apart.
	if o.Paced > 0 && res.got == res.want && ctx.Err() == nil {
		prec := newWHRecorder(o.Paced)
		rc.cur.Store(prec)
		if _, err := whPost(ctx, c, book, 4, 1, o.Paced, o.PacedRate, uint64(o.Sessions)+1); err != nil {
			close(stop)
			wg.Wait()
			return nil, err
		}
		select {
		case <-prec.done:
		case <-time.After(30 * time.Second):
		case <-ctx.Done():
		}
		var p whPhase
		prec.snapshot(&p)
		res.paced, res.pacedWant, res.pacedRate = p.lags, o.Paced, o.PacedRate
	}
	close(stop)
	wg.Wait()
	res.rssEnd = treeRSS(pid)
	if len(subs) > 1 {
		res.deadStatus = api.deadStatus(ctx, subs[1])
	}
	res.dispatcher = whDispatcherStats(ctx, adm)
	return res, nil
}

// whSetup creates a company workspace (admin API), its live key and a published book.
func whSetup(ctx context.Context, c *child, adm *adminClient) (string, *ingestBook, error) {
	ws, key, err := benchWorkspace(ctx, adm, "bench webhooks", actors.PlanCompany)
	if err != nil {
		return "", nil, err
	}
	rid, err := publishBook(ctx, c, key, "Webhook catalogue")
	if err != nil {
		return "", nil, err
	}
	return key, &ingestBook{ws: ws, rid: rid, pages: ingestPages}, nil
}

// whDispatcherStats are the webhook dispatcher's counters of GET /admin/v1/ingest ("" when
// the service does not report them).
func whDispatcherStats(ctx context.Context, adm *adminClient) string {
	var r struct {
		Data struct {
			Webhooks *actors.WebhookStats `json:"webhooks"`
		} `json:"data"`
	}
	if err := adm.do(ctx, "GET", "/ingest", nil, 200, &r); err != nil || r.Data.Webhooks == nil {
		return ""
	}
	w := r.Data.Webhooks
	return fmt.Sprintf("%s events read, %s deliveries created, %s attempts (%s succeeded, %s failed), %d in flight",
		thousands(float64(w.EventsRead)), thousands(float64(w.Created)), thousands(float64(w.Attempts)),
		thousands(float64(w.Succeeded)), thousands(float64(w.Failed)), w.Inflight)
}

// whAPI calls the webhook subscription operations with a workspace key.
type whAPI struct{ apiClient }

func (a *whAPI) subscribe(ctx context.Context, name, target string) (int64, error) {
	var r struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	err := a.do(ctx, "POST", "/webhook-subscriptions", map[string]any{"name": name, "provider": "generic",
		"target_url": target, "event_types": whEventTypes, "signing_secret": "whsec_bench_0123456789abcdef"}, 201, &r)
	return r.Data.ID, err
}

// counts are the subscriptions' deliveries_count.
func (a *whAPI) counts(ctx context.Context) (map[int64]int64, error) {
	var r struct {
		Data []struct {
			ID    int64 `json:"id"`
			Count int64 `json:"deliveries_count"`
		} `json:"data"`
	}
	if err := a.do(ctx, "GET", "/webhook-subscriptions", nil, 200, &r); err != nil {
		return nil, err
	}
	m := map[int64]int64{}
	for _, s := range r.Data {
		m[s.ID] = s.Count
	}
	return m, nil
}

// deadStatus says what became of the dead subscription's deliveries: how many were created and
// how many were attempted (they wait to be retried).
func (a *whAPI) deadStatus(ctx context.Context, sub int64) string {
	counts, err := a.counts(ctx)
	if err != nil {
		return err.Error()
	}
	var r struct {
		Data []struct {
			Attempts int `json:"attempts"`
		} `json:"data"`
		Meta struct {
			HasMore bool `json:"has_more"`
		} `json:"meta"`
	}
	path := "/webhook-subscriptions/" + strconv.FormatInt(sub, 10) + "/deliveries?status=retrying&limit=100"
	if err := a.do(ctx, "GET", path, nil, 200, &r); err != nil {
		return err.Error()
	}
	attempts := 0
	for _, d := range r.Data {
		attempts += d.Attempts
	}
	n := strconv.Itoa(len(r.Data))
	if r.Meta.HasMore {
		n = "more than 100"
	}
	return fmt.Sprintf("%s deliveries created, %s attempted and waiting for a retry (%d attempts among the newest 100), the rest pending",
		thousands(float64(counts[sub])), n, attempts)
}

// whPost posts n reader events for book to POST /collect over conns connections, each event
// stamped with the time its batch is built; rate > 0 paces the posts to rate events/s in
// batches of 10, otherwise they go as fast as the service answers.
func whPost(ctx context.Context, c *child, book *ingestBook, sessions, conns, n, rate int, seed uint64) (int, error) {
	addr := strings.TrimPrefix(c.base, "http://")
	client := &fasthttp.HostClient{Addr: addr, MaxConns: conns, ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second}
	var left atomic.Int64
	left.Store(int64(n))
	claim := func(want int) int {
		for {
			l := left.Load()
			if l <= 0 {
				return 0
			}
			take := min(int64(want), l)
			if left.CompareAndSwap(l, l-take) {
				return int(take)
			}
		}
	}
	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(time.Second) * 10 * float64(conns) / float64(rate))
	}
	var firstErr atomic.Value
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		var mine []*readerSession
		for i := w; i < sessions; i += conns {
			mine = append(mine, newReaderSession(book, seed+uint64(i)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			var evs []genEvent
			var body []byte
			due := time.Now()
			for k := 0; ctx.Err() == nil && firstErr.Load() == nil; k++ {
				if interval > 0 {
					time.Sleep(time.Until(due))
					due = due.Add(interval)
				}
				s := mine[k%len(mine)]
				now := time.Now()
				var id string
				evs, id = s.next(evs, now)
				if interval > 0 {
					evs = evs[:min(len(evs), 10)]
				}
				take := claim(len(evs))
				if take == 0 {
					return
				}
				evs = evs[:take]
				at := now.Truncate(time.Millisecond)
				for i := range evs {
					evs[i].at = at
				}
				body = appendCollectBody(body[:0], book, id, evs)
				req.Reset()
				req.SetRequestURI("/collect")
				req.Header.SetHost(addr)
				req.Header.SetMethod("POST")
				req.Header.SetContentType("application/json")
				req.SetBodyRaw(body)
				err := client.Do(req, resp)
				if err == nil && resp.StatusCode() != 202 {
					err = fmt.Errorf("POST /collect: status %d: %.300s", resp.StatusCode(), resp.Body())
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				sent.Add(int64(take))
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return int(sent.Load()), err
	}
	return int(sent.Load()), ctx.Err()
}

// whReceiver is the healthy receiver: it answers every request 200 at once and hands it to the
// current phase's recorder.
type whReceiver struct {
	ln  net.Listener
	srv *fasthttp.Server
	cur atomic.Pointer[whRecorder]
}

func newWHReceiver() (*whReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &whReceiver{ln: ln}
	rc.srv = &fasthttp.Server{Handler: rc.serve, ReadTimeout: time.Minute, IdleTimeout: time.Minute}
	go rc.srv.Serve(ln)
	return rc, nil
}

func (rc *whReceiver) url() string { return "http://" + rc.ln.Addr().String() + "/hook" }

func (rc *whReceiver) close() { _ = rc.srv.Shutdown() }

func (rc *whReceiver) serve(ctx *fasthttp.RequestCtx) {
	now := time.Now()
	if r := rc.cur.Load(); r != nil {
		r.record(now, ctx.Request.Header.Peek("X-Webhook-Id"), ctx.PostBody())
	}
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"received":true}`)
}

// deadAddr is a loopback address nothing listens on: a port bound and closed again.
func deadAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// whRecorder records a phase's deliveries: per X-Webhook-Id the first arrival.
type whRecorder struct {
	want int
	done chan struct{}

	mu          sync.Mutex
	seen        map[string]struct{}
	first, last time.Time
	lags        []time.Duration
	dups        int
}

func newWHRecorder(want int) *whRecorder {
	return &whRecorder{want: want, done: make(chan struct{}), seen: make(map[string]struct{}, want),
		lags: make([]time.Duration, 0, want)}
}

var createdAtKey = []byte(`"created_at":"`)

func (r *whRecorder) record(now time.Time, id, body []byte) {
	lag := time.Duration(-1)
	if i := bytes.Index(body, createdAtKey); i >= 0 {
		v := body[i+len(createdAtKey):]
		if j := bytes.IndexByte(v, '"'); j > 0 {
			if t, err := time.Parse(time.RFC3339Nano, string(v[:j])); err == nil {
				lag = now.Sub(t)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen[string(id)]; ok {
		r.dups++
		return
	}
	r.seen[string(id)] = struct{}{}
	if r.first.IsZero() {
		r.first = now
	}
	r.last = now
	if lag >= 0 {
		r.lags = append(r.lags, lag)
	}
	if len(r.seen) == r.want {
		close(r.done)
	}
}

func (r *whRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// snapshot copies what was recorded into p (lags sorted).
func (r *whRecorder) snapshot(p *whPhase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.got, p.dups, p.first, p.last = len(r.seen), r.dups, r.first, r.last
	p.lags = slices.Clone(r.lags)
	slices.Sort(p.lags)
}
