// Package actors holds the hollywood actors that own every write: the accounts actor (workspaces
// and API keys), one workspace actor per tenant (book creation, routing to book actors), one book
// actor per active book (settings, status, timed transitions), and the clock that wakes books
// whose scheduled publish or expiry has come.
//
// Reads never go through actors: a write is synced to Pebble before the actor replies, so a read
// straight from the store sees it.
package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/actors/convert"
	"flipbook/errs"
	"flipbook/storage"
)

// Defaults of Options.
const (
	DefaultAskTimeout  = 10 * time.Second
	DefaultBookIdle    = 2 * time.Minute
	defaultInboxSize   = 64
	accountsInboxSize  = 1024
	workspaceInboxSize = 1024
)

// Options configure the actor system.
type Options struct {
	AskTimeout time.Duration
	// BookIdle is how long a book actor lives without messages before it stops (passivation).
	BookIdle time.Duration
	Logger   *slog.Logger
	// Now is the clock (tests may move it); defaults to time.Now.
	Now func() time.Time
	// Conversion configures document conversion (zero values: defaults).
	Conversion ConversionOptions
	// ImageFetcher makes the fetcher of a catalog render's product images (under the outbound
	// address rules) and its release; nil: images are drawn as placeholders.
	ImageFetcher func() (convert.Fetcher, func())
	// Owns, in cluster mode, says whether this node owns a workspace's partition now: the
	// supervisors (conversion, bulk settings, catalog sync, webhook delivery, the clock) work
	// only on what it owns, and Resume picks up a partition's queues once it is taken over.
	// nil: everything is this process's.
	Owns func(workspace int64) bool
	// OwnsPartition is Owns for a partition of the event log (the webhook reader reads the
	// partitions this node owns, each from the position stored with it).
	OwnsPartition func(p int) bool
	// NoTextBackfill turns the page-text backfill off (textfill.go): for tests that count
	// what the system writes.
	NoTextBackfill bool
	// NoRenditions turns the page renditions off (renditions.go): the viewer shows the page
	// images alone (flipbook serve --no-renditions).
	NoRenditions bool
	// MaxCatalogItems bounds the items of one catalog (0: MaxCatalogItems).
	MaxCatalogItems int64
}

// System is the running actor engine and the PIDs of its long-lived actors.
type System struct {
	Engine *actor.Engine
	Store  *storage.Store
	opts   Options

	accounts   *actor.PID
	clock      *actor.PID
	conversion *actor.PID
	// catalogSync runs catalog sync jobs (catalog_sync.go).
	catalogSync *actor.PID
	textfill    *actor.PID // the page-text backfill (textfill.go)
	renditions  *actor.PID // the page renditions backfill (renditions.go)

	conv        ConversionOptions
	renderSlots chan struct{}
	workers     sync.WaitGroup // conversion and cleanup goroutines

	mu         sync.Mutex
	workspaces map[storage.Tenant]*actor.PID
	stopping   bool

	quota  quota
	slugMu sync.Mutex // claims of global tracked-link slugs
	askID  atomic.Uint64
	books  atomic.Int64 // live book actors, for tests and metrics
	mail   mailboxes    // mailbox depth of every live actor (mailbox.go)
	convM  convMetrics  // conversion queue and pages (conversion.go)

	wh   whState   // webhook delivery (webhooks.go, webhook_reader.go, webhook_sup.go)
	bulk bulkState // bulk settings batches (bulk.go)
}

// Start creates the engine and the long-lived actors.
func Start(store *storage.Store, o Options) (*System, error) {
	if o.AskTimeout == 0 {
		o.AskTimeout = DefaultAskTimeout
	}
	if o.BookIdle == 0 {
		o.BookIdle = DefaultBookIdle
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxCatalogItems <= 0 {
		o.MaxCatalogItems = MaxCatalogItems
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, err
	}
	s := &System{Engine: e, Store: store, opts: o, workspaces: map[storage.Tenant]*actor.PID{}}
	s.quota.locks = map[storage.Tenant]*sync.Mutex{}
	s.accounts = e.Spawn(newAccounts(s), "accounts", actor.WithID("main"),
		actor.WithInboxSize(accountsInboxSize), s.middleware("accounts"))
	s.clock = e.Spawn(newClock(s), "clock", actor.WithID("main"), s.middleware("clock"))
	s.conv = o.Conversion
	if s.conv.Workers <= 0 {
		s.conv.Workers = runtime.NumCPU()
	}
	if s.conv.LongEdge <= 0 {
		s.conv.LongEdge = convert.DefaultLongEdge
	}
	s.renderSlots = make(chan struct{}, s.conv.Workers)
	s.conversion = e.Spawn(newConversion(s), "conversion", actor.WithID("main"), s.middleware("conversion"))
	s.startBulk()
	s.catalogSync = e.Spawn(newCatalogSup(s), "catalogsync", actor.WithID("main"),
		actor.WithInboxSize(defaultInboxSize), s.middleware("catalogsync"))
	if !o.NoTextBackfill && !o.Conversion.NoText {
		s.textfill = e.Spawn(newBackfill(s, textJob{s}), "textfill", actor.WithID("main"),
			actor.WithInboxSize(defaultInboxSize), s.middleware("textfill"))
	}
	if !o.NoRenditions {
		if convert.RenditionsUsable() {
			s.renditions = e.Spawn(newBackfill(s, renditionJob{s}), "renditions", actor.WithID("main"),
				actor.WithInboxSize(defaultInboxSize), s.middleware("renditions"))
		} else {
			o.Logger.Warn("page renditions are off: " + convert.ErrNoVips.Error())
		}
	}
	return s, nil
}

// Stop stops every actor after it has handled what is already in its inbox: first conversion,
// then the clock
// (so it dispatches nothing more), then the workspace actors (each stops its book actors), then
// the accounts actor. No actor is spawned once Stop has begun.
func (s *System) Stop() {
	s.StopWebhooks()
	// Conversions stop first (a batch being converted stays "processing" and resumes on the
	// next start); their workers may still be waiting on book actors, which are running.
	<-s.Engine.Poison(s.conversion).Done()
	s.workers.Wait()
	// The text backfill stops its OCR (the book is taken up again at the next start).
	if s.textfill != nil {
		s.awaitStop(s.textfill)
	}
	if s.renditions != nil {
		s.awaitStop(s.renditions)
	}
	// Bulk settings runners stop starting items; those in flight finish (unfinished batches
	// resume on the next start).
	s.stopBulk()
	// Catalog workers stop after the step they are in (a job resumes from its last step).
	s.awaitStop(s.catalogSync)
	<-s.Engine.Poison(s.clock).Done()
	s.mu.Lock()
	s.stopping = true
	pids := make([]*actor.PID, 0, len(s.workspaces))
	for _, pid := range s.workspaces {
		pids = append(pids, pid)
	}
	s.workspaces = map[storage.Tenant]*actor.PID{}
	s.mu.Unlock()
	for _, pid := range pids {
		s.awaitStop(pid)
	}
	s.awaitStop(s.accounts)
}

// stopWait bounds the wait for one actor to stop. hollywood v1.0.5 can lose a poison pill sent
// to an actor that is already stopping (its inbox is stopped before it leaves the registry): a
// workspace stopping while one of its book actors passivates then waits for that child forever.
// Everything an actor writes is committed when its message returns, so Stop goes on.
const stopWait = 10 * time.Second

func (s *System) awaitStop(pid *actor.PID) {
	select {
	case <-s.Engine.Poison(pid).Done():
	case <-time.After(stopWait):
		slog.Warn("actor did not stop in time; shutting down without it", "actor", pid.String())
	}
}

// LiveBookActors is the number of book actors currently running.
func (s *System) LiveBookActors() int64 { return s.books.Load() }

func (s *System) now() time.Time { return s.opts.Now().UTC() }

// owns says whether this node works on workspace ws's queues (Options.Owns).
func (s *System) owns(ws int64) bool { return s.opts.Owns == nil || s.opts.Owns(ws) }

// resumeQueues tells a supervisor to read its queue again (Resume).
type resumeQueues struct{}

// Resume makes every supervisor read its queue from the store again and take up what it does
// not know yet of the workspaces it owns: cluster mode calls it once a partition was taken
// over (restored from the changelog), so what the previous owner had queued or in flight —
// conversions, bulk batches, catalog sync jobs, webhook deliveries, timed transitions — goes
// on here. What a supervisor already runs is not started twice.
func (s *System) Resume() {
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if stopping {
		return
	}
	s.opts.Logger.Debug("supervisors: read the queues again (a partition was taken over)")
	for _, pid := range []*actor.PID{s.conversion, s.bulk.pid, s.catalogSync, s.clock} {
		s.tell(pid, resumeQueues{})
	}
	for _, pid := range []*actor.PID{s.textfill, s.renditions} { // the backfills walk again
		if pid != nil {
			s.tell(pid, resumeQueues{})
		}
	}
	if s.wh.started {
		if err := s.loadWebhookIndex(); err != nil {
			s.opts.Logger.Error("webhooks: reload subscriptions", "err", err)
		}
		s.tell(s.wh.sup, resumeQueues{})
	}
}

// workspace returns the workspace actor of a tenant, spawning it on first use; nil once the
// system is stopping.
func (s *System) workspace(t storage.Tenant) *actor.PID {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pid, ok := s.workspaces[t]; ok {
		return pid
	}
	if s.stopping {
		return nil
	}
	id := strconv.FormatInt(t.Workspace, 10) + "-" + t.Mode.String()
	pid := s.Engine.Spawn(newWorkspace(s, t), "ws", actor.WithID(id),
		actor.WithInboxSize(workspaceInboxSize), s.middleware("ws"))
	s.workspaces[t] = pid
	return pid
}

// ask sends msg to pid and waits for the reply. A reply that is an error is returned as the
// error. It replaces Engine.Request, whose response ids are random 31-bit numbers that can
// collide under load and deliver one caller's answer to another.
func (s *System) ask(pid *actor.PID, msg any) (any, error) {
	if pid == nil {
		return nil, errs.ErrStopping
	}
	p := &askProc{
		pid: actor.NewPID(s.Engine.Address(), "ask/"+strconv.FormatUint(s.askID.Add(1), 10)),
		ch:  make(chan any, 1),
	}
	s.Engine.SpawnProc(p)
	defer s.Engine.Registry.Remove(p.pid)
	s.tellFrom(pid, msg, p.pid)
	t := time.NewTimer(s.opts.AskTimeout)
	defer t.Stop()
	select {
	case v := <-p.ch:
		if err, ok := v.(error); ok {
			return nil, err
		}
		return v, nil
	case <-t.C:
		return nil, errs.ErrTimeout
	}
}

type askProc struct {
	pid *actor.PID
	ch  chan any
}

func (p *askProc) Start()                  {}
func (p *askProc) PID() *actor.PID         { return p.pid }
func (p *askProc) Shutdown()               {}
func (p *askProc) Invoke([]actor.Envelope) {}
func (p *askProc) Send(_ *actor.PID, msg any, _ *actor.PID) {
	select { // first answer wins; a second one (a bug) must never block the actor
	case p.ch <- msg:
	default:
	}
}

// resettable actors drop in-memory state after a recovered panic (it is reloaded from Pebble).
type resettable interface{ reset() }

// errInternal answers a request whose handling panicked.
var errInternal = errors.New("actors: internal error")

// recoverMW turns a panic in a receiver into a logged, failed request. Hollywood's own restart
// path crashes the process after MaxRestarts, so no panic may reach it.
func (s *System) recoverMW(next actor.ReceiveFunc) actor.ReceiveFunc {
	return func(c *actor.Context) {
		defer func() {
			if r := recover(); r != nil {
				s.opts.Logger.Error("actor panic", "pid", c.PID().String(),
					"msg", fmt.Sprintf("%T", c.Message()), "panic", r, "stack", string(debug.Stack()))
				if rs, ok := c.Receiver().(resettable); ok {
					rs.reset()
				}
				if c.Sender() != nil {
					c.Respond(errInternal)
				}
			}
		}()
		next(c)
	}
}
