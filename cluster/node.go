package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"flipbook/errs"
	"flipbook/storage"
)

// Node ties a node's membership, its changelog writers and its store together: the takeover of
// a partition (issue 26, "Taking over a partition") and its release.
//
// Taking partition p over: open its writer first, which fences the previous owner (from then on
// nothing more of p can commit but through this node), then restore p's changes from the offset
// stored with this node's copy (l/cluster/offset/<p>, written with the changes it applied), so a
// node that owned p before only catches up; then p is ready: Ready(p) closes, and this node's
// writes to p go through. Releasing p: its writer is dropped in the group's callback, before the
// group can give p to another node, and Ready(p) is a fresh, open channel again.
type Node struct {
	m     *Member
	sink  *StateSink
	store *storage.Store
	log   logger

	onReady atomic.Pointer[func(p int)] // OnReady

	// Restores: those under way (partition → progress), and the totals of those done.
	restoring     sync.Map // int → *RestoreProgress
	restoredTotal atomic.Int64
	restoreNanos  atomic.Int64

	// Standby (standby.go): the follower of the partitions not owned, its applied records, and
	// the partitions' locks between its applies and their takeovers.
	standbyStop    context.CancelFunc
	standbyDone    chan struct{}
	standbyApplied atomic.Int64
	plocks         map[int]*sync.Mutex // under mu

	mu     sync.Mutex
	ready  map[int]chan struct{} // closed once the partition is taken over
	events chan event
	done   chan struct{}
	err    error
}

type logger interface {
	Info(msg string, args ...any)
	Error(msg string, args ...any)
}

type event struct {
	parts    []int
	assigned bool
}

// StartNode joins the cluster with o and opens the node's store through open, which must pass
// the sink it is given as storage.Options.Changes (and may ask the member for the partitions).
func StartNode(ctx context.Context, o Options, open func(storage.ChangeSink, *Member) (*storage.Store, error)) (*Node, error) {
	n := &Node{ready: map[int]chan struct{}{}, events: make(chan event, 64), done: make(chan struct{})}
	o.OnAssigned = func(p []int) { n.events <- event{parts: p, assigned: true} }
	o.OnRevoked = n.revoked
	m, err := Join(ctx, o)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.m, n.log = m, m.log
	n.sink = NewStateSink(m)
	n.mu.Unlock()
	if n.store, err = open(n.sink, m); err != nil {
		m.Close()
		return nil, err
	}
	go n.run()
	if o.Standby {
		sctx, cancel := context.WithCancel(context.Background())
		n.standbyStop, n.standbyDone = cancel, make(chan struct{})
		go n.standby(sctx)
	}
	return n, nil
}

// StandbyApplied is how many changelog records the standby follower applied (0 without it).
func (n *Node) StandbyApplied() int64 { return n.standbyApplied.Load() }

// Member is the node's membership; Store its store.
func (n *Node) Member() *Member       { return n.m }
func (n *Node) Store() *storage.Store { return n.store }
func (n *Node) Sink() *StateSink      { return n.sink }

// Ready is closed once partition p is taken over by this node (writes to it go through).
func (n *Node) Ready(p int) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.readyLocked(p)
}

func (n *Node) readyLocked(p int) chan struct{} {
	c := n.ready[p]
	if c == nil {
		c = make(chan struct{})
		n.ready[p] = c
	}
	return c
}

// OnReady sets what is called (on the node's takeover goroutine) each time a partition has been
// taken over: the service's supervisors pick up the partition's queues then.
func (n *Node) OnReady(f func(p int)) { n.onReady.Store(&f) }

// IsReady says whether partition p is this node's and taken over.
func (n *Node) IsReady(p int) bool {
	select {
	case <-n.Ready(p):
		return true
	default:
		return false
	}
}

// ReadyOwned is the partitions this node owns and has taken over, in order.
func (n *Node) ReadyOwned() []int {
	var out []int
	for _, p := range n.m.Owned() {
		if n.IsReady(p) {
			out = append(out, p)
		}
	}
	return out
}

// WaitReady waits at most d for partition p to be this node's: false when it is not by then
// (the caller answers 503 with Retry-After, or forwards to the owner).
func (n *Node) WaitReady(p int, d time.Duration) bool {
	select {
	case <-n.Ready(p):
		return true
	case <-time.After(d):
		return false
	}
}

// revoked is the group's callback: the partitions' writers go before it returns.
func (n *Node) revoked(parts []int) {
	n.mu.Lock()
	sink := n.sink
	for _, p := range parts {
		if c := n.ready[p]; c != nil {
			select {
			case <-c:
				delete(n.ready, p) // a fresh channel: not ready
			default:
			}
		}
	}
	n.mu.Unlock()
	if sink == nil {
		return // revoked before the node was up: no writer was opened
	}
	for _, p := range parts {
		sink.Drop(p)
	}
}

// run takes over the partitions assigned, in order.
func (n *Node) run() {
	defer close(n.done)
	for ev := range n.events {
		for _, p := range ev.parts {
			if err := n.takeOver(p); err != nil {
				n.log.Error("take partition over", "partition", p, "err", err)
				n.mu.Lock()
				n.err = err
				n.mu.Unlock()
			}
		}
	}
}

func (n *Node) takeOver(p int) error {
	if !n.m.Owns(p) {
		return nil // revoked again meanwhile
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := n.sink.Open(ctx, p); err != nil { // fences the previous owner first
		return err
	}
	l := n.partLock(p) // no standby apply of p from here on (it sees p owned)
	l.Lock()
	defer l.Unlock()
	from := int64(0)
	if v, err := n.store.Local(OffsetKey(p)); err == nil && len(v) == 8 {
		from = int64(binary.BigEndian.Uint64(v))
	} else if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return err
	}
	// The offset written with each chunk is where this restore began until it is done (a
	// chunk applied twice after a crash is the same state), then where it ended.
	next := from
	a := &applier{st: n.store, local: func() []storage.Mutation {
		return []storage.Mutation{{Key: OffsetKey(p), Value: binary.BigEndian.AppendUint64(nil, uint64(next))}}
	}}
	prog := &RestoreProgress{From: from, Started: start}
	if end, err := n.m.stableEnd(ctx, n.m.o.ChangelogTopic, p); err == nil {
		prog.To = end
	}
	n.restoring.Store(p, prog)
	defer n.restoring.Delete(p)
	last, applied, err := n.m.Restore(ctx, p, from, func(c Change) error {
		prog.Applied.Add(1)
		return a.add(c)
	})
	if err != nil {
		return fmt.Errorf("restore partition %d: %w", p, err)
	}
	next = last
	if err := a.flush(); err != nil {
		return err
	}
	n.restoredTotal.Add(int64(applied))
	n.restoreNanos.Add(int64(time.Since(start)))
	n.mu.Lock()
	if n.m.Owns(p) {
		c := n.readyLocked(p)
		select {
		case <-c:
		default:
			close(c)
		}
	}
	n.mu.Unlock()
	if f := n.onReady.Load(); f != nil {
		(*f)(p)
	}
	n.log.Info("partition taken over", "partition", p, "restored", applied, "from", from, "to", last, "took", time.Since(start))
	return nil
}

// RestoreProgress is a partition's restore under way: the changelog's offsets it reads from and
// to, and the records applied so far.
type RestoreProgress struct {
	From, To int64
	Started  time.Time
	Applied  atomic.Int64
}

// Restoring is the restores under way, by partition.
func (n *Node) Restoring() map[int]*RestoreProgress {
	out := map[int]*RestoreProgress{}
	n.restoring.Range(func(k, v any) bool {
		out[k.(int)] = v.(*RestoreProgress)
		return true
	})
	return out
}

// Restored is the changelog records this node applied in its takeovers since it started, and
// the time those took (their ratio is the restore rate).
func (n *Node) Restored() (records int64, took time.Duration) {
	return n.restoredTotal.Load(), time.Duration(n.restoreNanos.Load())
}

// Err is the last takeover error (nil when every takeover went through).
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Close leaves the cluster (the partitions go to the others at once) and closes the store.
func (n *Node) Close() error {
	if n.standbyStop != nil {
		n.standbyStop()
		<-n.standbyDone
	}
	n.m.Close() // revokes: writers dropped
	close(n.events)
	<-n.done
	n.sink.Close()
	return n.store.Close()
}
