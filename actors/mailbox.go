package actors

import (
	"sync"
	"sync/atomic"

	"github.com/anthdm/hollywood/actor"
)

// Mailbox depth, for metrics. hollywood v1.0.5 does not expose an inbox's length (its ring
// buffer is unexported and an Opts cannot supply another inbox), so the system counts it: for
// every live actor, the messages sent to it through tell (every send of this package goes
// through tell, ask included) and the messages its receiver was given (the counting
// middleware, the outermost of every actor's). The difference is what waits in its inbox, not
// counting the message being handled. hollywood's lifecycle messages (Initialized, Started,
// Stopped) and poison pills are not sent through tell and not counted.
//
// The counters belong to the actor, not to its kind: they are created when the actor starts and
// dropped when it stops, so a message sent to an actor that already stopped (a timer firing
// late: hollywood hands it to its dead letters) is counted nowhere, and no kind's depth drifts
// up over the lifetimes of passivated actors. Answers (c.Respond) go to ask's response
// processes, which are not actors, and are not counted; an actor's depth is never shown below 0.
//
// Cost: a send looks its actor up in a sync.Map and adds 1; a received message adds 1 to a
// counter its middleware already holds.

// ActorKinds are the kinds MailboxDepth always reports (0 when none runs).
var ActorKinds = []string{"accounts", "clock", "conversion", "bulk", "catalogsync", "catalog", "ws", "book", "webhooks"}

type mailbox struct {
	kind       string
	sent, recv atomic.Int64
}

// mailboxes are the counters of the live actors, by PID.ID.
type mailboxes struct{ m sync.Map }

// tell sends msg to pid and counts it in pid's mailbox. Every send of this package goes through
// it (or tellFrom).
func (s *System) tell(pid *actor.PID, msg any) { s.tellFrom(pid, msg, nil) }

// tellFrom is tell with a sender (the asker of a routed request, an actor's own PID).
func (s *System) tellFrom(pid *actor.PID, msg any, sender *actor.PID) {
	if pid == nil {
		return
	}
	if mb, ok := s.mail.m.Load(pid.ID); ok {
		mb.(*mailbox).sent.Add(1) // before the send: the receiver never counts it first
	}
	s.Engine.SendWithSender(pid, msg, sender)
}

// middleware is the option every actor is spawned with: the mailbox counter (outermost, so a
// message is counted received even if its handling panics), then recoverMW. kind is the label
// of the actor's mailbox (hollywood's kind of a child is its parent's PID plus a name).
func (s *System) middleware(kind string) actor.OptFunc {
	var mb *mailbox // this actor's; used only from its own receive calls
	count := func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			switch c.Message().(type) {
			case actor.Initialized:
				// Before Spawn returns: no one but the actor has its PID yet.
				mb = &mailbox{kind: kind}
				s.mail.m.Store(c.PID().ID, mb)
			case actor.Started:
			case actor.Stopped:
				if mb != nil {
					s.mail.m.CompareAndDelete(c.PID().ID, mb)
				}
			default:
				if mb != nil {
					mb.recv.Add(1)
				}
			}
			next(c)
		}
	}
	return actor.WithMiddleware(count, s.recoverMW)
}

// ActorStats are the live actors of one kind and the messages waiting in their inboxes.
type ActorStats struct {
	Live    int64
	Waiting int64
}

// MailboxDepth returns, per actor kind (every kind of ActorKinds, and any other running), how
// many actors run and how many messages sent to them wait to be handled. It walks the live
// actors (a scrape's cost grows with the number of book actors: about 10 ns each).
func (s *System) MailboxDepth() map[string]ActorStats {
	out := make(map[string]ActorStats, len(ActorKinds))
	for _, k := range ActorKinds {
		out[k] = ActorStats{}
	}
	s.mail.m.Range(func(_, v any) bool {
		mb := v.(*mailbox)
		st := out[mb.kind]
		st.Live++
		recv := mb.recv.Load() // first: a message is counted sent before it can be received
		st.Waiting += max(mb.sent.Load()-recv, 0)
		out[mb.kind] = st
		return true
	})
	return out
}
