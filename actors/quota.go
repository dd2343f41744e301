package actors

import (
	"fmt"
	"sync"

	"flipbook/errs"
	"flipbook/storage"
)

// quota enforces the published-book limit of a plan. Every write that moves a book into
// publish or schedule takes the tenant's lock around count-then-write, so two book actors of one
// workspace cannot both take the last slot. It is a mutex, not an actor: a book actor never
// waits on another actor's reply.
type quota struct {
	mu    sync.Mutex
	locks map[storage.Tenant]*sync.Mutex
}

func (q *quota) lock(t storage.Tenant) *sync.Mutex {
	q.mu.Lock()
	defer q.mu.Unlock()
	l, ok := q.locks[t]
	if !ok {
		l = &sync.Mutex{}
		q.locks[t] = l
	}
	return l
}

func isLive(status string) bool {
	return status == storage.StatusPublish || status == storage.StatusSchedule
}

// withPublishSlot runs write; if the book goes from not-live to live, it first checks the plan's
// limit under the tenant lock and holds the lock until write returns.
func (s *System) withPublishSlot(t storage.Tenant, from, to string, write func() error) error {
	if isLive(from) {
		to = ""
	}
	return s.withPublishSlotN(t, to, 1, write)
}

// withPublishSlotN is withPublishSlot for n new books going to status to.
func (s *System) withPublishSlotN(t storage.Tenant, to string, n int, write func() error) error {
	if !isLive(to) {
		return write()
	}
	l := s.quota.lock(t)
	l.Lock()
	defer l.Unlock()
	ws, err := s.Store.Workspace(t.Workspace)
	if err != nil {
		return err
	}
	limit := Plans[ws.Plan].PublishedBooks
	if limit > 0 {
		count := 0
		for _, st := range []string{storage.StatusPublish, storage.StatusSchedule} {
			c, err := s.Store.CountBooks(t, st, limit)
			if err != nil {
				return err
			}
			count += c
		}
		if count+n > limit {
			return &errs.PlanError{Message: fmt.Sprintf("the %s plan allows %d published or scheduled books; unpublish one or upgrade the plan", ws.Plan, limit)}
		}
	}
	return write()
}
