package ingest

import (
	"context"
	"sync"
)

// TrimGate lets several readers share one log. Each reader keeps its own durable position (the
// analytics consumer in DuckDB, the webhook dispatcher in Pebble) and reports it through its
// Trimmer after storing it; the log is trimmed only below the slowest reader's position. Until
// every reader has reported a position for a partition (after a restart, say), nothing of that
// partition is trimmed: a reader that has not reported may still need every record.
type TrimGate struct {
	log Log

	mu  sync.Mutex
	pos map[string][]uint64 // reader → per partition: position+1 (0: not reported yet)
}

// NewTrimGate makes a gate over log for the named readers (fixed for the gate's life).
func NewTrimGate(log Log, readers ...string) *TrimGate {
	g := &TrimGate{log: log, pos: make(map[string][]uint64, len(readers))}
	for _, r := range readers {
		g.pos[r] = make([]uint64, log.Partitions())
	}
	return g
}

// Trimmer is a reader's trim function: records of partition p below `before` are stored
// durably by that reader.
type Trimmer func(ctx context.Context, p int, before uint64) error

// Reader returns the trim function of a reader named at NewTrimGate (it panics for another).
func (g *TrimGate) Reader(name string) Trimmer {
	if _, ok := g.pos[name]; !ok {
		panic("ingest: TrimGate has no reader " + name)
	}
	return func(ctx context.Context, p int, before uint64) error { return g.report(ctx, name, p, before) }
}

func (g *TrimGate) report(ctx context.Context, name string, p int, before uint64) error {
	g.mu.Lock()
	ps := g.pos[name]
	if p < 0 || p >= len(ps) {
		g.mu.Unlock()
		return nil
	}
	if before+1 > ps[p] {
		ps[p] = before + 1
	}
	floor := ^uint64(0)
	for _, q := range g.pos {
		if q[p] == 0 {
			g.mu.Unlock()
			return nil
		}
		floor = min(floor, q[p]-1)
	}
	g.mu.Unlock()
	if floor == 0 {
		return nil
	}
	return g.log.Trim(ctx, p, floor)
}

// Positions returns the reported position of every reader per partition (-1: none reported),
// for operators (GET /admin/v1/ingest) and tests.
func (g *TrimGate) Positions() map[string][]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]int64, len(g.pos))
	for name, ps := range g.pos {
		o := make([]int64, len(ps))
		for i, v := range ps {
			o[i] = int64(v) - 1
		}
		out[name] = o
	}
	return out
}
