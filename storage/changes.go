package storage

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// Cluster mode's changelog (issue 26, DESIGN.md §12) needs every state change before it is
// applied: a ChangeSink (Options.Changes) is given each write's mutations before the write
// reaches Pebble, and an error from it refuses the write (nothing is applied). Without a sink
// (one process, the default) nothing of this runs.

// Mutation is one key's change in a write.
type Mutation struct {
	Key    []byte
	Value  []byte // nil when Delete
	Delete bool
}

// ChangeSink receives the mutations of each write, in order, before the write is applied.
// The slices are only valid during the call. It may return mutations of the node's own
// bookkeeping ("l/..." keys: how far the changelog it wrote reaches) to apply in the same write,
// and done, which the store calls once the write is applied (or failed): until then the sink
// holds back other writes of the same keys, so the changelog's order is the store's.
type ChangeSink interface {
	Changes(muts []Mutation) (local []Mutation, done func(), err error)
}

// commit applies a Pebble batch, through the sink first when there is one.
func (s *Store) commit(pb *pebble.Batch, opts *pebble.WriteOptions) error {
	if s.sink != nil {
		muts, err := s.mutations(pb)
		if err != nil {
			return err
		}
		if len(muts) > 0 {
			local, done, err := s.sink.Changes(muts)
			if err != nil {
				return fmt.Errorf("%w: %w", errs.ErrChangelog, err)
			}
			if done != nil {
				defer done()
			}
			for _, m := range local {
				if m.Delete {
					_ = pb.Delete(m.Key, nil)
				} else {
					_ = pb.Set(m.Key, m.Value, nil)
				}
			}
		}
	}
	return pb.Commit(opts)
}

// mutations decodes a batch into point mutations. A range deletion becomes a deletion of each
// key it removes (those stored, and those set earlier in the batch), so a changelog holds only
// point records, which a compacted topic can keep one per key.
func (s *Store) mutations(pb *pebble.Batch) ([]Mutation, error) {
	var out []Mutation
	r := pb.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("storage: read batch: %w", err)
		}
		if !ok {
			return out, nil
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			out = append(out, Mutation{Key: key, Value: value})
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete, pebble.InternalKeyKindDeleteSized:
			out = append(out, Mutation{Key: key, Delete: true})
		case pebble.InternalKeyKindRangeDelete:
			start, end := key, value
			for _, m := range out { // set earlier in this batch
				if !m.Delete && bytes.Compare(m.Key, start) >= 0 && bytes.Compare(m.Key, end) < 0 {
					out = append(out, Mutation{Key: m.Key, Delete: true})
				}
			}
			it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
			if err != nil {
				return nil, err
			}
			for it.First(); it.Valid(); it.Next() {
				out = append(out, Mutation{Key: append([]byte(nil), it.Key()...), Delete: true})
			}
			if err := it.Close(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("storage: a batch with a %s write cannot go to the changelog", kind)
		}
	}
}

// ApplyChanges applies mutations read back from a changelog (restoring a partition's state)
// in one synced write; they do not go to the sink again. local are written in the same write
// (the offset the mutations reach, kept with them).
func (s *Store) ApplyChanges(muts []Mutation, local ...Mutation) error {
	b := s.db.NewBatch()
	for _, ms := range [][]Mutation{muts, local} {
		for _, m := range ms {
			if m.Delete {
				_ = b.Delete(m.Key, nil)
			} else {
				_ = b.Set(m.Key, m.Value, nil)
			}
		}
	}
	defer b.Close()
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	s.books.reset()
	return nil
}

// ScanAll calls fn with every key and value of the state in key order (comparing a restored
// store with its source).
func (s *Store) ScanAll(fn func(key, value []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// Local reads a key of the node's own bookkeeping ("l/...": never sent to a changelog).
func (s *Store) Local(key []byte) ([]byte, error) { return s.get(key) }
