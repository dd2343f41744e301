package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Slugs stored with capitals before slugs were case-insensitive are lowered once at open,
// except one whose lower-case form another link holds: it keeps its key, reachable as written.
func TestLowerSlugsAtOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	a, b := Tenant{Workspace: 1, Mode: ModeLive}, Tenant{Workspace: 2, Mode: ModeLive}
	links := []*TrackedLink{
		{ID: 1, Workspace: a.Workspace, Mode: a.Mode, BookID: "bookA", Name: "a", Slug: "SLUG-A-X"},
		{ID: 2, Workspace: b.Workspace, Mode: b.Mode, BookID: "bookB", Name: "b", Slug: "slug-a-x"},
		{ID: 3, Workspace: a.Workspace, Mode: a.Mode, BookID: "bookA", Name: "c", Slug: "Spring-IG"},
		{ID: 4, Workspace: b.Workspace, Mode: b.Mode, BookID: "bookB", Name: "d", Slug: "Twin"},
		{ID: 5, Workspace: a.Workspace, Mode: a.Mode, BookID: "bookA", Name: "e", Slug: "TWIN"},
	}
	bt := s.NewBatch()
	for _, l := range links {
		require.NoError(t, bt.PutTrackedLink(l))
	}
	bt.del(slugsLowerKey) // a store from before the rule
	require.NoError(t, bt.Commit())
	require.NoError(t, s.Close())

	s, err = Open(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	id := func(slug string) int64 {
		l, err := s.TrackedLinkBySlug(slug)
		if err != nil {
			return 0
		}
		return l.ID
	}
	require.EqualValues(t, 3, id("spring-ig"), "moved to its lower-case key")
	require.EqualValues(t, 3, id("SPRING-IG"))
	l, err := s.TrackedLinkBySlug("Spring-IG")
	require.NoError(t, err)
	require.Equal(t, "spring-ig", l.Slug, "the record is rewritten")
	taken, err := s.SlugTaken("Spring-IG")
	require.NoError(t, err)
	require.False(t, taken, "the old key is gone")

	require.EqualValues(t, 1, id("SLUG-A-X"), "a pair: the capitalised one keeps its key")
	require.EqualValues(t, 2, id("slug-a-x"))
	require.EqualValues(t, 2, id("Slug-A-X"), "other spellings reach the lower-case holder")
	// Two capitalised spellings of one slug: one of them takes the lower-case key.
	tw := id("twin")
	require.Contains(t, []int64{4, 5}, tw)
	require.EqualValues(t, 9-tw, id(map[int64]string{4: "TWIN", 5: "Twin"}[tw]), "the other keeps its key")

	// Once: a later capitalised key (not written by this version) is left alone.
	bt = s.NewBatch()
	require.NoError(t, bt.PutTrackedLink(&TrackedLink{ID: 6, Workspace: a.Workspace, Mode: a.Mode, BookID: "bookA", Slug: "Later"}))
	require.NoError(t, bt.Commit())
	require.NoError(t, s.lowerSlugs())
	require.EqualValues(t, 6, id("Later"), "not lowered again, still reachable as written")
}
