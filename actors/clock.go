package actors

import (
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/storage"
)

// clock wakes books whose timed transition (scheduled publish, expiry) has come. The due times
// live in Pebble (g/due/...), written in the same batch as the book, so none is lost across a
// restart; the clock only holds a timer for the earliest one.
type clock struct {
	s     *System
	pid   *actor.PID
	timer *time.Timer
	next  time.Time
}

type (
	clockWake  struct{}
	scheduleAt struct{ at time.Time }
)

// dueBatch bounds the books dispatched per wake.
const dueBatch = 1000

// retryDue is how soon the clock looks again at entries it has dispatched but that are still there.
const retryDue = time.Second

func newClock(s *System) actor.Producer {
	return func() actor.Receiver { return &clock{s: s} }
}

func (k *clock) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized:
	case actor.Started:
		k.pid = c.PID()
		k.wake(c.Engine())
	case actor.Stopped:
		if k.timer != nil {
			k.timer.Stop()
		}
	case resumeQueues:
		k.next = time.Time{}
		k.wake(c.Engine())
	case clockWake:
		k.next = time.Time{}
		k.wake(c.Engine())
	case *scheduleAt:
		k.arm(c.Engine(), m.at)
	}
}

func (k *clock) wake(e *actor.Engine) {
	now := time.Now()
	due, later, err := k.s.Store.DueBooks(k.s.now(), dueBatch)
	if err != nil {
		k.s.opts.Logger.Error("clock: read due books", "err", err)
		k.arm(e, now.Add(retryDue))
		return
	}
	for _, d := range due {
		if !k.s.owns(d.Tenant.Workspace) {
			continue
		}
		if ws := k.s.workspace(d.Tenant); ws != nil {
			k.s.tell(ws, &dueBook{due: d})
		}
	}
	if len(due) > 0 {
		// What was sent may still be in the book actors' inboxes: look again later, not now.
		k.arm(e, now.Add(retryDue))
	}
	if !later.IsZero() && later.After(k.s.now()) {
		// A later time that is already due means the batch limit was hit: the retry above
		// picks up the backlog without re-sending the same books in a tight loop.
		k.arm(e, later)
	}
}

// arm makes sure the clock wakes at or before at.
func (k *clock) arm(e *actor.Engine, at time.Time) {
	if !k.next.IsZero() && !at.Before(k.next) {
		return
	}
	k.next = at
	d := time.Until(at)
	if d < 0 {
		d = 0
	}
	if k.timer != nil {
		k.timer.Stop()
	}
	pid := k.pid
	k.timer = time.AfterFunc(d, func() { k.s.tell(pid, clockWake{}) })
}

// scheduleTransition tells the clock about a book's next timed transition, if any.
func (s *System) scheduleTransition(b *storage.Book) {
	if at, ok := storage.NextTransition(b); ok {
		s.tell(s.clock, &scheduleAt{at: at})
	}
}
