package actors

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/anthdm/hollywood/actor"

	"flipbook/errs"
	"flipbook/storage"
)

// A backfill is a supervisor that brings books up to date in the background, one book at a
// time: the page-text backfill (textfill.go) and the page renditions (renditions.go). At start
// (and at Resume) it walks every book of the workspaces this node owns and queues those its
// job needs; a book can also be asked for directly (want). One worker goroutine fills one book
// at a time (its programs use the conversion's renderer slots, so conversions and backfills
// share the cores), and what it made is written through the book's actor, so a book deleted
// meanwhile stays deleted.

// backfillJob is what a backfill does to a book.
type backfillJob interface {
	// name labels the job's log lines ("text backfill").
	name() string
	// needs says whether a book needs the job (read from the store; called off the actor).
	needs(t storage.Tenant, rid string) bool
	// fill does the job on a book and stores its result through the book's actor.
	fill(ctx context.Context, t storage.Tenant, rid string) error
}

// wanted asks a backfill for a book. walked: sent by the walk, which holds a place of
// backfill.room for it until it leaves the queue.
type wanted struct {
	t      storage.Tenant
	rid    string
	walked bool
}

// backfillQueued is how many books the walk queues ahead of the worker: the walk waits for
// room, so a first start over a million books holds a few hundred in memory, not all.
const backfillQueued = 256

// fillDone tells the backfill its worker finished a book.
type fillDone struct{}

// walkEnded tells the backfill a walk over the books ended.
type walkEnded struct{}

type backfill struct {
	s       *System
	job     backfillJob
	queue   []wanted
	known   map[bookKey]bool
	room    chan struct{} // places of walked books in the queue (backfillQueued)
	busy    bool
	walking bool // a walk is running
	rewalk  bool // another walk was asked for meanwhile (Resume)
	ctx     context.Context
	cancel  context.CancelFunc
	running sync.WaitGroup // the worker and the walk, awaited at stop
}

func newBackfill(s *System, job backfillJob) actor.Producer {
	return func() actor.Receiver {
		return &backfill{s: s, job: job, known: map[bookKey]bool{}, room: make(chan struct{}, backfillQueued)}
	}
}

// bookKey names a book in the queue.
type bookKey struct {
	t   storage.Tenant
	rid string
}

func (v *backfill) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		v.ctx, v.cancel = context.WithCancel(context.Background())
		v.walk(c)
	case actor.Stopped:
		// The worker is cancelled; its book is found again by the next start's walk.
		v.cancel()
		v.running.Wait()
	case resumeQueues:
		if v.walking {
			v.rewalk = true
		} else {
			v.walk(c)
		}
	case wanted:
		if k := (bookKey{m.t, m.rid}); !v.known[k] {
			v.known[k] = true
			v.queue = append(v.queue, m)
		} else if m.walked {
			<-v.room
		}
		v.next(c)
	case fillDone:
		v.busy = false
		v.next(c)
	case walkEnded:
		v.walking = false
		if v.rewalk {
			v.rewalk = false
			v.walk(c)
		}
	}
}

// walk looks, off the actor, for the owned books the job needs, and queues them.
func (v *backfill) walk(c *actor.Context) {
	pid, e, ctx := c.PID(), c.Engine(), v.ctx
	v.walking = true
	v.running.Add(1)
	go func() {
		defer v.running.Done()
		if err := v.walkBooks(ctx, func(w wanted) { e.Send(pid, w) }); err != nil {
			v.s.opts.Logger.Error(v.job.name()+": walk the books", "err", err)
		}
		e.Send(pid, walkEnded{})
	}()
}

// walkBooks sends each owned book the job needs to the queue, a step of books at a time,
// waiting for room in the queue.
func (v *backfill) walkBooks(ctx context.Context, send func(wanted)) error {
	after := ""
	for ctx.Err() == nil {
		refs, err := v.s.Store.BooksAfter(after, backfillQueued)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if !v.s.owns(r.Tenant.Workspace) || !v.job.needs(r.Tenant, r.RandomID) {
				continue
			}
			select {
			case v.room <- struct{}{}: // freed as the book leaves the queue
			case <-ctx.Done():
				return nil
			}
			send(wanted{t: r.Tenant, rid: r.RandomID, walked: true})
		}
		if len(refs) < backfillQueued {
			return nil
		}
		after = refs[len(refs)-1].RandomID
	}
	return nil
}

// next starts the worker on the next queued book when it is idle.
func (v *backfill) next(c *actor.Context) {
	if v.busy || len(v.queue) == 0 || v.ctx.Err() != nil {
		return
	}
	w := v.queue[0]
	v.queue = v.queue[1:]
	delete(v.known, bookKey{w.t, w.rid})
	if w.walked {
		<-v.room
	}
	v.busy = true
	pid, e, ctx := c.PID(), c.Engine(), v.ctx
	v.running.Add(1)
	go func() {
		defer v.running.Done()
		if v.s.owns(w.t.Workspace) && v.job.needs(w.t, w.rid) {
			if err := v.job.fill(ctx, w.t, w.rid); err != nil && ctx.Err() == nil {
				v.s.opts.Logger.Error(v.job.name(), "book", w.rid, "err", err)
			}
		}
		e.Send(pid, fillDone{})
	}()
}

// localBlob is a file path of a book's blob: its own in the blob folder, or a copy in dir when
// the blobs are in an object store.
func (s *System) localBlob(dir, rid, name string) (string, error) {
	if p, ok := s.Store.Blobs.Path(rid, name); ok {
		return p, nil
	}
	r, _, err := s.Store.Blobs.Open(rid, name)
	if err != nil {
		return "", err
	}
	defer r.Close()
	p := filepath.Join(dir, filepath.Base(name))
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return "", err
	}
	return p, f.Close()
}

// notFoundOK is err, except that a book or a file gone (deleted meanwhile) is no error.
func notFoundOK(err error) error {
	if errors.Is(err, errs.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
