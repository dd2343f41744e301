package storage

import (
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Tracked-link slugs are case-insensitive (issue 25): /l/Spring-IG and /l/spring-ig are one
// link, so two workspaces cannot hold SLUG-A-X and slug-a-x. A slug is stored in lower case
// (the workspace actor lowers it before it claims it) and looked up in lower case.
//
// Data written before the rule may hold slugs with capitals. lowerSlugs, run once when the store
// opens, moves each to its lower-case key and rewrites its record, unless another link already
// holds the lower-case slug (a pair that differed only by case): then the older key stays as it
// is, an exact match still reaches it (TrackedLinkBySlug tries the slug as given first), and
// every other spelling reaches the link that holds the lower-case key.

// slugsLowerKey marks a store whose slugs have been lowered.
var slugsLowerKey = []byte("g/meta/tlslug-lower")

// lowerSlugs lowers the tracked-link slugs stored before slugs were case-insensitive (once).
func (s *Store) lowerSlugs() error {
	if done, err := s.has(slugsLowerKey); err != nil || done {
		return err
	}
	p := []byte("g/tlslug/")
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	type entry struct {
		slug  string
		value []byte
	}
	var mixed []entry
	for it.First(); it.Valid(); it.Next() {
		slug := string(it.Key()[len(p):])
		if slug != strings.ToLower(slug) {
			mixed = append(mixed, entry{slug, append([]byte(nil), it.Value()...)})
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	bt := s.NewBatch()
	claimed := map[string]bool{}
	for _, e := range mixed {
		lower := strings.ToLower(e.slug)
		if claimed[lower] {
			continue
		}
		if taken, err := s.has(tlSlugKey(lower)); err != nil {
			bt.Close()
			return err
		} else if taken {
			continue
		}
		l, err := s.TrackedLinkBySlug(e.slug)
		if err != nil {
			continue // a dangling slug entry: leave it
		}
		claimed[lower] = true
		l.Slug = lower
		bt.del(tlSlugKey(e.slug))
		if err := bt.PutTrackedLink(l); err != nil {
			bt.Close()
			return err
		}
	}
	bt.set(slugsLowerKey, []byte{1})
	return bt.Commit()
}
