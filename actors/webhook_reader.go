package actors

import (
	"context"
	"crypto/cipher"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/errs"
	"flipbook/ingest"
	"flipbook/outbound"
	"flipbook/storage"
)

// Defaults of WebhookOptions (docs/WEBHOOKS.md quotes them).
const (
	DefaultWebhookTimeout         = 10 * time.Second
	DefaultWebhookLaneConcurrency = 32
	DefaultWebhookMaxInflight     = 512
	DefaultWebhookBreakerFailures = 10
	DefaultWebhookBreakerCooldown = 30 * time.Second
	DefaultWebhookBreakerMax      = 10 * time.Minute
	DefaultWebhookDisableAfter    = 5 * 24 * time.Hour
	DefaultWebhookPoll            = 20 * time.Millisecond
	DefaultWebhookReadBatch       = 4096
	// MaxWebhookResponseBody is how much of a receiver's answer a delivery records.
	MaxWebhookResponseBody = 4096
	// MaxRetryAfter caps a receiver's Retry-After.
	MaxRetryAfter = 24 * time.Hour
)

// DefaultWebhookSchedule is when the attempts of a delivery are made, counted from the failure
// of the previous one (DESIGN §11): 8 attempts at about 0s, 10s, 1m, 5m, 30m, 2h, 6h, 12h.
var DefaultWebhookSchedule = []time.Duration{0, 10 * time.Second, time.Minute, 5 * time.Minute,
	30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour}

// WebhookOptions configure webhook delivery.
type WebhookOptions struct {
	// Schedule: element i is the delay before attempt i+1 (the first is normally 0); its
	// length is the number of attempts.
	Schedule        []time.Duration
	Timeout         time.Duration // one attempt: connect, send, answer
	LaneConcurrency int           // attempts in flight per subscription
	MaxInflight     int           // attempts in flight in all
	BreakerFailures int           // consecutive failures that pause a subscription's lane
	BreakerCooldown time.Duration // first pause; doubles up to BreakerMax
	BreakerMax      time.Duration
	DisableAfter    time.Duration // a subscription failing this long is deactivated
	Poll            time.Duration // how often the reader looks at the event log when idle
	ReadBatch       int
	AllowPrivate    bool   // outbound.Policy.AllowPrivate
	PublicURL       string // base of the book URLs in payloads
}

func (o *WebhookOptions) defaults() {
	if len(o.Schedule) == 0 {
		o.Schedule = DefaultWebhookSchedule
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultWebhookTimeout
	}
	if o.LaneConcurrency <= 0 {
		o.LaneConcurrency = DefaultWebhookLaneConcurrency
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = DefaultWebhookMaxInflight
	}
	if o.BreakerFailures <= 0 {
		o.BreakerFailures = DefaultWebhookBreakerFailures
	}
	if o.BreakerCooldown <= 0 {
		o.BreakerCooldown = DefaultWebhookBreakerCooldown
	}
	if o.BreakerMax <= 0 {
		o.BreakerMax = DefaultWebhookBreakerMax
	}
	if o.DisableAfter <= 0 {
		o.DisableAfter = DefaultWebhookDisableAfter
	}
	if o.Poll <= 0 {
		o.Poll = DefaultWebhookPoll
	}
	if o.ReadBatch <= 0 {
		o.ReadBatch = DefaultWebhookReadBatch
	}
}

// whState is the System's webhook part.
type whState struct {
	keyOnce sync.Once
	aead    cipher.AEAD
	keyErr  error

	index whIndex
	sup   *actor.PID
	opts  WebhookOptions
	log   ingest.Log
	trim  ingest.Trimmer

	client  *http.Client
	ctx     context.Context // attempts; cancelled at stop
	cancel  context.CancelFunc
	workers sync.WaitGroup
	stop    chan struct{}
	done    chan struct{}
	tests   chan *whTestReq
	started bool

	commitMu   sync.Mutex
	committing map[int64]struct{} // deliveries whose creating batch is being committed

	statsMu sync.Mutex
	stats   WebhookStats
}

// WebhookStats counts what the dispatcher did since start.
type WebhookStats struct {
	EventsRead int64 `json:"events_read"`
	Created    int64 `json:"deliveries_created"`
	Attempts   int64 `json:"attempts"`
	Succeeded  int64 `json:"succeeded"`
	Failed     int64 `json:"failed_attempts"`
	Inflight   int   `json:"inflight"`
	Lanes      int   `json:"lanes"`
}

// WebhookStats reports the dispatcher's counters.
func (s *System) WebhookStats() WebhookStats {
	s.wh.statsMu.Lock()
	defer s.wh.statsMu.Unlock()
	return s.wh.stats
}

func (s *System) whCount(f func(*WebhookStats)) {
	s.wh.statsMu.Lock()
	f(&s.wh.stats)
	s.wh.statsMu.Unlock()
}

// StartWebhooks starts webhook delivery: the supervisor actor and the reader that turns events
// of log into deliveries. trim reports the reader's durable position (ingest.TrimGate).
func (s *System) StartWebhooks(log ingest.Log, trim ingest.Trimmer, o WebhookOptions) error {
	o.defaults()
	if err := s.loadWebhookIndex(); err != nil {
		return err
	}
	s.wh.opts, s.wh.log, s.wh.trim = o, log, trim
	pol := outbound.Policy{AllowPrivate: o.AllowPrivate}
	tr := pol.Transport(outbound.TransportOptions{Timeout: o.Timeout, MaxIdlePerHost: o.LaneConcurrency * 2})
	s.wh.client = &http.Client{Transport: tr, Timeout: o.Timeout,
		// Redirects are not followed: a delivery answered with 3xx failed (and a redirect could
		// lead anywhere).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s.wh.ctx, s.wh.cancel = context.WithCancel(context.Background())
	s.wh.stop, s.wh.done = make(chan struct{}), make(chan struct{})
	s.wh.tests = make(chan *whTestReq)
	s.wh.committing = map[int64]struct{}{}
	r, err := newWHReader(s)
	if err != nil {
		return err
	}
	s.wh.sup = s.Engine.Spawn(newWebhookSup(s), "webhooks", actor.WithID("main"), actor.WithInboxSize(4096),
		s.middleware("webhooks"))
	s.wh.started = true
	go r.run()
	return nil
}

// StopWebhooks stops the reader (before the event log closes), cancels attempts in flight (their
// deliveries stay queued and are sent again after a restart) and stops the supervisor.
func (s *System) StopWebhooks() {
	if !s.wh.started {
		return
	}
	s.wh.started = false
	close(s.wh.stop)
	<-s.wh.done
	s.wh.cancel()
	// The supervisor stops before the attempts are waited for: it alone starts attempts
	// (workers.Add in pump), and an Add racing the Wait would misuse the WaitGroup (an attempt
	// that ends sends whSent, whose pump may start the next one).
	s.awaitStop(s.wh.sup)
	s.wh.workers.Wait()
}

// whReader turns reader events into deliveries. It keeps its own position in the event log
// (g/whpos/<partition>), written in the same batch as the deliveries it creates, so after any
// stop every event is turned into deliveries exactly once; it reports the position to the trim
// gate only after that batch is durable.
type whReader struct {
	s      *System
	pos    []uint64
	counts map[storage.WebhookLane]int64 // deliveries per subscription (this reader is their only writer)
	// have, in cluster mode, marks the partitions whose position was read since this node took
	// them over; the others are not read.
	have   []bool
	titles map[string]string
}

func newWHReader(s *System) (*whReader, error) {
	log := s.wh.log
	r := &whReader{s: s, pos: make([]uint64, log.Partitions()), counts: map[storage.WebhookLane]int64{}}
	if s.opts.OwnsPartition != nil {
		// Cluster mode: each partition's position is read when this node has taken it over
		// (pass, takeOver).
		r.have = make([]bool, len(r.pos))
		return r, nil
	}
	var missing []int
	for p := range r.pos {
		v, ok, err := s.Store.WebhookPosition(p)
		if err != nil {
			return nil, err
		}
		if ok {
			r.pos[p] = v
		} else {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return r, nil
	}
	// The very first start: events from before webhook delivery existed had no subscription,
	// so the reader starts at the log's end. (A partition missing beside stored ones starts at
	// 0.) The start is stored at once, so a stop before the first pass does not move it.
	if len(missing) == len(r.pos) {
		if eo, ok := log.(ingest.EndOffsets); ok {
			ends, err := eo.EndOffsets(context.Background())
			if err != nil {
				return nil, err
			}
			for _, p := range missing {
				if p < len(ends) {
					r.pos[p] = ends[p]
				}
			}
		}
	}
	b := s.Store.NewBatch()
	for _, p := range missing {
		b.SetWebhookPosition(p, r.pos[p])
	}
	return r, b.Commit()
}

// whTestReq asks the reader to queue a test delivery.
type whTestReq struct {
	sub     *storage.WebhookSubscription
	typ     string
	eventID string
	payload []byte
	reply   chan whTestRes
}

type whTestRes struct {
	d   *storage.WebhookDelivery
	err error
}

// QueueTestDelivery queues a test delivery of payload (event type typ) to a subscription,
// active or not, and returns its record.
func (s *System) QueueTestDelivery(sub *storage.WebhookSubscription, typ, eventID string, payload []byte) (*storage.WebhookDelivery, error) {
	if !s.wh.started {
		return nil, errs.ErrStopping
	}
	req := &whTestReq{sub: sub, typ: typ, eventID: eventID, payload: payload, reply: make(chan whTestRes, 1)}
	t := time.NewTimer(s.opts.AskTimeout)
	defer t.Stop()
	select {
	case s.wh.tests <- req:
	case <-s.wh.done:
		return nil, errs.ErrStopping
	case <-t.C:
		return nil, errs.ErrTimeout
	}
	res := <-req.reply
	return res.d, res.err
}

func (r *whReader) run() {
	defer close(r.s.wh.done)
	wait := time.Millisecond
	for {
		n, err := r.pass()
		if err != nil && !errors.Is(err, context.Canceled) {
			r.s.opts.Logger.Error("webhooks: read the event log", "err", err)
		}
		if n > 0 && err == nil {
			wait = time.Millisecond
			select {
			case <-r.s.wh.stop:
				return
			case req := <-r.s.wh.tests:
				r.test(req)
			default:
			}
			continue
		}
		if err != nil {
			wait = min(max(wait*2, 50*time.Millisecond), 2*time.Second)
		} else {
			wait = r.s.wh.opts.Poll
		}
		t := time.NewTimer(wait)
		select {
		case <-r.s.wh.stop:
			t.Stop()
			return
		case req := <-r.s.wh.tests:
			t.Stop()
			r.test(req)
		case <-t.C:
		}
	}
}

// pass reads what the log holds past the reader's position, partition by partition, and
// returns how many records it handled.
func (r *whReader) pass() (int, error) {
	ctx := r.s.wh.ctx
	log := r.s.wh.log
	var mine []bool // cluster mode: the partitions this node owns and reads
	if r.have != nil {
		var gained bool
		var err error
		if mine, gained, err = r.takeOver(ctx); err != nil {
			return 0, err
		}
		if gained {
			// The subscriptions of the workspaces taken over are indexed before their
			// partitions are read (else their events would be skipped as nobody's).
			if err := r.s.loadWebhookIndex(); err != nil {
				return 0, err
			}
		}
	}
	snap := r.s.wh.index.snapshot()
	wanted := make([]bool, len(r.pos))
	for t := range snap.byTenant {
		wanted[ingest.PartitionOf(t.Workspace, len(r.pos))] = true
	}
	for p := range mine {
		wanted[p] = wanted[p] && mine[p]
	}
	// Partitions of tenants without subscriptions are skipped to their end, unread, unless a
	// subscription appeared meanwhile (then the pass starts again).
	if eo, ok := log.(ingest.EndOffsets); ok {
		ends, err := eo.EndOffsets(ctx)
		if err != nil {
			return 0, err
		}
		if r.s.wh.index.generation() != snap.gen {
			return 1, nil
		}
		b := r.s.Store.NewBatch()
		var moved []int
		for p := range r.pos {
			if !wanted[p] && (mine == nil || mine[p]) && p < len(ends) && ends[p] > r.pos[p] {
				b.SetWebhookPosition(p, ends[p])
				moved = append(moved, p)
			}
		}
		if len(moved) > 0 {
			if err := b.Commit(); err != nil {
				return 0, err
			}
			for _, p := range moved {
				r.pos[p] = ends[p]
				r.report(ctx, p)
			}
		} else {
			b.Close()
		}
	} else {
		for p := range wanted {
			wanted[p] = true
		}
	}
	total := 0
	for p := range r.pos {
		if !wanted[p] {
			continue
		}
		recs, err := log.Read(ctx, p, r.pos[p], r.s.wh.opts.ReadBatch)
		if err != nil {
			return total, err
		}
		if len(recs) == 0 {
			continue
		}
		if err := r.store(p, recs); err != nil {
			return total, err
		}
		total += len(recs)
	}
	return total, nil
}

// planHasWebhooks says whether a workspace's plan has webhooks (WebhooksPlan), read once per
// store call (plans): a workspace moved below it gets no more deliveries, as it may not manage
// its subscriptions any more (found by a review: a downgraded workspace kept getting them and
// could not delete them). A workspace that cannot be read now keeps its deliveries.
func (r *whReader) planHasWebhooks(plans map[int64]bool, ws int64) bool {
	ok, seen := plans[ws]
	if !seen {
		w, err := r.s.Store.Workspace(ws)
		switch {
		case err == nil:
			ok = PlanAtLeast(w.Plan, WebhooksPlan)
		case errors.Is(err, errs.ErrNotFound):
			ok = false
		default:
			ok = true
		}
		plans[ws] = ok
	}
	return ok
}

// store turns one partition's records into deliveries and commits them with the new position.
func (r *whReader) store(p int, recs []ingest.Record) error {
	s := r.s
	// The index as it is now: a subscription created before these events were appended is in it.
	snap := s.wh.index.snapshot()
	now := s.whNow()
	b := s.Store.NewBatch()
	lanes := map[storage.WebhookLane][]byte{} // lane → its smallest new queue key
	var ids []int64
	counts := map[storage.WebhookLane]int64{}
	created := 0
	next := r.pos[p]
	r.titles = map[string]string{}
	plans := map[int64]bool{} // workspace → whether its plan has webhooks, read once per call
	for i := range recs {
		rec := &recs[i]
		if rec.Offset < next {
			continue // a replay of records already handled
		}
		next = rec.Offset + 1
		ev := &rec.Event
		typ := WebhookTypeOf(ev.Type)
		if typ == "" {
			continue
		}
		t := storage.Tenant{Workspace: ev.Workspace, Mode: storage.Mode(ev.Mode)}
		subs := snap.byTenant[t]
		if len(subs) > 0 && !r.planHasWebhooks(plans, t.Workspace) {
			continue
		}
		var body []byte
		for _, sub := range subs {
			if !webhookMatches(sub, typ, ev) {
				continue
			}
			if body == nil {
				var err error
				if body, err = json.Marshal(BuildPayload(rec.ID(), ev, r.title(t, ev.BookID), s.wh.opts.PublicURL+"/view/"+ev.BookID)); err != nil {
					b.Close()
					return err
				}
				b.PutWebhookPayload(t, EventID(rec.ID()), body)
			}
			lane := storage.WebhookLane{Tenant: t, Sub: sub.ID}
			key, err := r.addDelivery(b, lane, counts, &storage.WebhookDelivery{SubscriptionID: sub.ID,
				EventID: EventID(rec.ID()), EventType: typ, Status: storage.DeliveryPending, Payload: body, CreatedAt: now})
			if err != nil {
				b.Close()
				return err
			}
			if k, ok := lanes[lane]; !ok || string(key) < string(k) {
				lanes[lane] = key
			}
			ids = append(ids, d0(key))
			created++
		}
	}
	for lane, n := range counts {
		b.SetWebhookCount(lane.Tenant, lane.Sub, n)
	}
	b.SetWebhookPosition(p, next)
	if err := s.whCommit(b, ids); err != nil {
		// Counts read from the store again next time: what this batch added is not there.
		for lane := range counts {
			delete(r.counts, lane)
		}
		return err
	}
	r.pos[p] = next
	s.whCount(func(st *WebhookStats) { st.EventsRead += int64(len(recs)); st.Created += int64(created) })
	r.report(s.wh.ctx, p)
	if len(lanes) > 0 {
		s.tell(s.wh.sup, &whQueued{lanes: lanes})
	}
	return nil
}

// whCommit commits a batch of new deliveries. Pebble makes a batch visible before its sync to
// disk ends: until Commit returns, the supervisor's scans skip these deliveries (committing),
// so none is sent before it is durable; otherwise a crash could lose a delivery that was sent
// and the event would be delivered again under a new delivery id.
func (s *System) whCommit(b *storage.Batch, ids []int64) error {
	s.wh.commitMu.Lock()
	for _, id := range ids {
		s.wh.committing[id] = struct{}{}
	}
	s.wh.commitMu.Unlock()
	err := b.Commit()
	s.wh.commitMu.Lock()
	for _, id := range ids {
		delete(s.wh.committing, id)
	}
	s.wh.commitMu.Unlock()
	return err
}

// whCommitting reports whether a delivery's creation is being committed.
func (s *System) whCommitting(id int64) bool {
	s.wh.commitMu.Lock()
	defer s.wh.commitMu.Unlock()
	_, ok := s.wh.committing[id]
	return ok
}

// d0 is the delivery id at the end of a queue key.
func d0(key []byte) int64 { return int64(binary.BigEndian.Uint64(key[len(key)-8:])) }

func (r *whReader) report(ctx context.Context, p int) {
	if r.s.wh.trim == nil {
		return
	}
	if err := r.s.wh.trim(ctx, p, r.pos[p]); err != nil && ctx.Err() == nil {
		r.s.opts.Logger.Warn("webhooks: trim", "partition", p, "err", err)
	}
}

// addDelivery stages a new delivery (its id, record, queue entry) and counts it; it returns the
// queue key.
func (r *whReader) addDelivery(b *storage.Batch, lane storage.WebhookLane, counts map[storage.WebhookLane]int64, d *storage.WebhookDelivery) ([]byte, error) {
	id, err := r.s.Store.NextIDFor(lane.Tenant.Workspace, "whdelivery")
	if err != nil {
		return nil, err
	}
	d.ID = id
	due := d.CreatedAt
	d.NextAttemptAt = &due
	if err := b.PutWebhookDelivery(lane.Tenant, d); err != nil {
		return nil, err
	}
	key := lane.QueueKey(due, id)
	b.Enqueue(key)
	countLane := storage.WebhookLane{Tenant: lane.Tenant, Sub: lane.Sub}
	n, ok := counts[countLane]
	if !ok {
		if n, ok = r.counts[countLane]; !ok {
			if n, err = r.s.Store.WebhookCount(lane.Tenant, lane.Sub); err != nil {
				return nil, err
			}
		}
	}
	counts[countLane] = n + 1
	r.counts[countLane] = n + 1
	return key, nil
}

func (r *whReader) title(t storage.Tenant, rid string) string {
	if v, ok := r.titles[rid]; ok {
		return v
	}
	name := ""
	if b, err := r.s.Store.GetBook(t, rid); err == nil {
		name = b.Name
	}
	r.titles[rid] = name
	return name
}

func (r *whReader) test(req *whTestReq) {
	s := r.s
	t := req.sub.Tenant()
	lane := storage.WebhookLane{Tenant: t, Sub: req.sub.ID, Test: true}
	counts := map[storage.WebhookLane]int64{}
	d := &storage.WebhookDelivery{SubscriptionID: req.sub.ID, EventID: req.eventID, EventType: req.typ,
		Status: storage.DeliveryPending, Payload: req.payload, Test: true, CreatedAt: s.whNow()}
	b := s.Store.NewBatch()
	b.PutWebhookPayload(t, req.eventID, req.payload)
	key, err := r.addDelivery(b, lane, counts, d)
	if err == nil {
		for l, n := range counts {
			b.SetWebhookCount(l.Tenant, l.Sub, n)
		}
		err = s.whCommit(b, []int64{d.ID})
	} else {
		b.Close()
	}
	if err != nil {
		for l := range counts {
			delete(r.counts, l)
		}
		req.reply <- whTestRes{err: err}
		return
	}
	s.tell(s.wh.sup, &whQueued{lanes: map[storage.WebhookLane][]byte{lane: key}})
	req.reply <- whTestRes{d: d}
}

// takeOver (cluster mode) says which partitions this node owns now; a partition it gained since
// the last pass has its position read from the store (restored with the partition, so the
// reader continues where the previous owner's stopped), or, when none was ever stored, starts at
// the log's end, stored at once (a partition nobody read for webhooks yet, as at a first start).
func (r *whReader) takeOver(ctx context.Context) (mine []bool, gained bool, err error) {
	mine = make([]bool, len(r.pos))
	var fresh []int
	for p := range r.pos {
		mine[p] = r.s.opts.OwnsPartition(p)
		if !mine[p] {
			r.have[p] = false
			continue
		}
		if r.have[p] {
			continue
		}
		gained = true
		v, ok, err := r.s.Store.WebhookPosition(p)
		if err != nil {
			return nil, false, err
		}
		if ok {
			r.pos[p], r.have[p] = v, true
			r.s.opts.Logger.Info("webhooks: reading a partition taken over", "partition", p, "from", v)
		} else {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return mine, gained, nil
	}
	eo, ok := r.s.wh.log.(ingest.EndOffsets)
	var ends []uint64
	if ok {
		var err error
		if ends, err = eo.EndOffsets(ctx); err != nil {
			return nil, false, err
		}
	}
	b := r.s.Store.NewBatch()
	for _, p := range fresh {
		r.pos[p] = 0
		if p < len(ends) {
			r.pos[p] = ends[p]
		}
		b.SetWebhookPosition(p, r.pos[p])
	}
	if err := b.Commit(); err != nil {
		return nil, false, err
	}
	for _, p := range fresh {
		r.have[p] = true
	}
	return mine, gained, nil
}
