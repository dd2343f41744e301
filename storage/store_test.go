package storage

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/errs"
)

func TestSequencesUniqueIncreasingAcrossCleanRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)

	// Cross several lease boundaries; ids start at 1 and have no gaps while running.
	const n = 2*seqLease + 500
	for i := 1; i <= n; i++ {
		id, err := s.NextID("book")
		require.NoError(t, err)
		require.Equal(t, int64(i), id)
	}
	// Sequences are independent.
	id, err := s.NextID("workspace")
	require.NoError(t, err)
	require.Equal(t, int64(1), id)
	require.NoError(t, s.Close())

	s, err = Open(dir, Options{})
	require.NoError(t, err)
	id, err = s.NextID("book")
	require.NoError(t, err)
	require.Equal(t, int64(n+1), id, "a clean restart continues without a gap")
	id, err = s.NextID("workspace")
	require.NoError(t, err)
	require.Equal(t, int64(2), id)
	require.NoError(t, s.Close())

	// A sequence untouched in a session keeps its mark through the next close.
	s, err = Open(dir, Options{})
	require.NoError(t, err)
	_, err = s.NextID("other")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = Open(dir, Options{})
	require.NoError(t, err)
	id, err = s.NextID("book")
	require.NoError(t, err)
	require.Equal(t, int64(n+2), id)
	require.NoError(t, s.Close())
}

func TestSequencesConcurrentUnique(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	const workers, each = 8, 400
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prev := int64(0)
			for i := 0; i < each; i++ {
				id, err := s.NextID("c")
				if !assertNoErr(t, err) {
					return
				}
				if id <= prev {
					t.Errorf("ids went back: %d after %d", id, prev)
					return
				}
				prev = id
				mu.Lock()
				if seen[id] {
					t.Errorf("duplicate id %d", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, workers*each)
	for i := int64(1); i <= workers*each; i++ {
		require.True(t, seen[i], "id %d missing", i)
	}
}

func assertNoErr(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// copyTree copies a directory (a crash image of an open store: every write was synced).
func copyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	require.NoError(tb, filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o750)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}))
}

func TestSequencesAfterCrashNeverReuseIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t)
	var last int64
	for i := 0; i < seqLease+10; i++ {
		id, err := s.NextID("book")
		require.NoError(t, err)
		last = id
	}
	// Copy the directory while the store is open: what a crash leaves (no Close, no exact marks).
	copyTree(t, s.Dir(), dir)
	c, err := Open(dir, Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	id, err := c.NextID("book")
	require.NoError(t, err)
	require.Greater(t, id, last)
	require.LessOrEqual(t, id, last+seqLease, "the gap after a crash is at most one lease")
}

func TestIdempotencyEntries(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	tn := Tenant{Workspace: 1, Mode: ModeLive}
	other := Tenant{Workspace: 1, Mode: ModeTest}
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

	fresh := &IdemEntry{Fingerprint: []byte{1, 2, 3}, Status: 201, ContentType: "application/json",
		Body: []byte(`{"ok":true}`), CreatedAt: now.Add(-time.Hour)}
	old := &IdemEntry{Fingerprint: []byte{9}, Status: 200, Body: []byte("old"), CreatedAt: now.Add(-IdemTTL - time.Minute)}
	edge := &IdemEntry{Fingerprint: []byte{8}, Status: 200, Body: []byte("edge"), CreatedAt: now.Add(-IdemTTL)}
	require.NoError(t, s.PutIdem(tn, "fresh", fresh))
	require.NoError(t, s.PutIdem(tn, "old", old))
	require.NoError(t, s.PutIdem(tn, "edge", edge))

	got, err := s.Idem(tn, "fresh", now)
	require.NoError(t, err)
	require.Equal(t, fresh.Fingerprint, got.Fingerprint)
	require.Equal(t, fresh.Status, got.Status)
	require.Equal(t, fresh.ContentType, got.ContentType)
	require.Equal(t, fresh.Body, got.Body)
	require.True(t, fresh.CreatedAt.Equal(got.CreatedAt))

	_, err = s.Idem(tn, "old", now)
	require.ErrorIs(t, err, errs.ErrNotFound, "an entry older than the TTL reads as not found")
	_, err = s.Idem(tn, "edge", now)
	require.ErrorIs(t, err, errs.ErrNotFound, "an entry exactly TTL old has expired")
	_, err = s.Idem(tn, "missing", now)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = s.Idem(other, "fresh", now)
	require.ErrorIs(t, err, errs.ErrNotFound, "entries are per tenant")

	n, err := s.ExpireIdem(now)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, k := range []string{"old", "edge"} {
		_, err := s.get(idemKey(tn, k))
		require.ErrorIs(t, err, errs.ErrNotFound, "expired entry %q is deleted", k)
	}
	_, err = s.get(idemKey(tn, "fresh"))
	require.NoError(t, err, "the fresh entry is kept")
	n, err = s.ExpireIdem(now)
	require.NoError(t, err)
	require.Zero(t, n, "nothing more is due")
	require.Len(t, rawKeys(t, s, []byte(idemExpPrefix)), 1)

	// A key first used long ago and reused recently: expiring the first use keeps the second.
	require.NoError(t, s.PutIdem(tn, "reused", &IdemEntry{Body: []byte("first"), CreatedAt: now.Add(-IdemTTL - time.Hour)}))
	require.NoError(t, s.PutIdem(tn, "reused", &IdemEntry{Body: []byte("second"), CreatedAt: now.Add(-time.Minute)}))
	got, err = s.Idem(tn, "reused", now)
	require.NoError(t, err)
	require.Equal(t, []byte("second"), got.Body)
	_, err = s.ExpireIdem(now)
	require.NoError(t, err)
	got, err = s.Idem(tn, "reused", now)
	require.NoError(t, err)
	require.Equal(t, []byte("second"), got.Body)
	require.Len(t, rawKeys(t, s, []byte(idemExpPrefix)), 2, "the first use's expiry entry is gone")

	// A day later everything goes.
	n, err = s.ExpireIdem(now.Add(IdemTTL))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, k := range []string{"fresh", "reused"} {
		_, err := s.get(idemKey(tn, k))
		require.ErrorIs(t, err, errs.ErrNotFound)
	}
	require.Empty(t, rawKeys(t, s, []byte(idemExpPrefix)))
}

func TestBlobs(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	bl := s.Blobs
	data := []byte("\x89PNG fake page image")

	name, err := bl.Put("book1", data, "png")
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{32}\.png$`, name)
	again, err := bl.Put("book1", data, "png")
	require.NoError(t, err)
	require.Equal(t, name, again, "content addressed: same bytes, same name")
	other, err := bl.Put("book1", []byte("different"), "png")
	require.NoError(t, err)
	require.NotEqual(t, name, other)

	p, ok := bl.Path("book1", name)
	require.True(t, ok)
	read, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, data, read)
	entries, err := os.ReadDir(filepath.Dir(p))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{name, other}
	sort.Strings(want)
	require.Equal(t, want, names, "no temp files left behind")

	for _, bad := range []string{"../x", ".hidden", "a/b", "", "..", "a\\b", "x y", string(bytes.Repeat([]byte("a"), 129))} {
		_, ok := bl.Path("book1", bad)
		require.Falsef(t, ok, "Path(book1, %q)", bad)
		_, ok = bl.Path(bad, "file.png")
		require.Falsef(t, ok, "Path(%q, file.png)", bad)
		_, err := bl.Put(bad, data, "png")
		require.Errorf(t, err, "Put(%q)", bad)
		require.Errorf(t, bl.DeleteBook(bad), "DeleteBook(%q)", bad)
	}
	_, ok = bl.Path("book-1_A.b", "abc.jpg")
	require.True(t, ok)

	_, err = bl.Put("book2", data, "png")
	require.NoError(t, err)
	_, err = bl.Put("book3", data, "jpg")
	require.NoError(t, err)

	require.NoError(t, bl.DeleteBook("book1"))
	_, err = os.Stat(filepath.Dir(p))
	require.True(t, os.IsNotExist(err), "DeleteBook removes the folder")
	require.NoError(t, bl.DeleteBook("book1"), "deleting a missing folder is fine")

	// Sweep: keep book2, drop book3; stray files and invalid names are left alone.
	blobDir := filepath.Join(s.Dir(), "blobs")
	require.NoError(t, os.WriteFile(filepath.Join(blobDir, "stray-file"), []byte("x"), 0o640))
	require.NoError(t, os.Mkdir(filepath.Join(blobDir, ".tmpdir"), 0o750))
	var asked []string
	n, err := bl.Sweep(func(rid string) bool {
		asked = append(asked, rid)
		return rid == "book2"
	})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.ElementsMatch(t, []string{"book2", "book3"}, asked)
	for rid, exists := range map[string]bool{"book2": true, "book3": false, "stray-file": true, ".tmpdir": true} {
		_, err := os.Stat(filepath.Join(blobDir, rid))
		require.Equalf(t, exists, err == nil, "%s exists", rid)
	}
}

func TestWorkspacesAndSlugs(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	has, err := s.HasWorkspaces()
	require.NoError(t, err)
	require.False(t, has)

	now := time.Date(2025, 2, 3, 4, 5, 6, 7, time.UTC)
	w := &Workspace{ID: 42, Name: "Acme", Slug: "acme", Plan: "free", CanRename: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.PutWorkspace(w, ""))
	has, err = s.HasWorkspaces()
	require.NoError(t, err)
	require.True(t, has)

	id, err := s.WorkspaceIDBySlug("acme")
	require.NoError(t, err)
	require.Equal(t, int64(42), id)
	got, err := s.Workspace(42)
	require.NoError(t, err)
	require.Equal(t, "Acme", got.Name)
	require.True(t, got.CreatedAt.Equal(now))

	w.Slug = "acme-corp"
	require.NoError(t, s.PutWorkspace(w, "acme"))
	_, err = s.WorkspaceIDBySlug("acme")
	require.ErrorIs(t, err, errs.ErrNotFound, "the old slug is released")
	id, err = s.WorkspaceIDBySlug("acme-corp")
	require.NoError(t, err)
	require.Equal(t, int64(42), id)

	// Same slug again: the entry stays.
	w.Plan = "pro"
	require.NoError(t, s.PutWorkspace(w, "acme-corp"))
	id, err = s.WorkspaceIDBySlug("acme-corp")
	require.NoError(t, err)
	require.Equal(t, int64(42), id)
	got, err = s.Workspace(42)
	require.NoError(t, err)
	require.Equal(t, "pro", got.Plan)

	_, err = s.Workspace(43)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = s.WorkspaceIDBySlug("nope")
	require.ErrorIs(t, err, errs.ErrNotFound)
}

func TestAPIKeysRotateAndDelete(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	h1 := HashSecret("wsk_live_first")
	require.Len(t, h1, 32)
	require.NotEqual(t, h1, HashSecret("wsk_live_second"))
	k := &APIKey{ID: 7, Workspace: 1, Name: "ci", Scopes: []string{"books:read"}, Mode: ModeTest, Hash: h1,
		CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	require.NoError(t, s.PutKey(k, nil))

	got, err := s.KeyByHash(h1)
	require.NoError(t, err)
	require.Equal(t, int64(7), got.ID)
	require.Equal(t, []string{"books:read"}, got.Scopes)
	require.Equal(t, Tenant{Workspace: 1, Mode: ModeTest}, got.Tenant())
	got, err = s.KeyByID(7)
	require.NoError(t, err)
	require.Equal(t, h1, got.Hash)

	h2 := HashSecret("wsk_live_second")
	k.Hash = h2
	require.NoError(t, s.PutKey(k, h1))
	_, err = s.KeyByHash(h1)
	require.ErrorIs(t, err, errs.ErrNotFound, "the rotated-out secret stops working")
	got, err = s.KeyByHash(h2)
	require.NoError(t, err)
	require.Equal(t, int64(7), got.ID)
	got, err = s.KeyByID(7)
	require.NoError(t, err)
	require.Equal(t, h2, got.Hash)

	require.NoError(t, s.DeleteKey(k))
	_, err = s.KeyByHash(h2)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = s.KeyByID(7)
	require.ErrorIs(t, err, errs.ErrNotFound)
}

func TestMeta(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	_, err = s.Meta("cursor")
	require.ErrorIs(t, err, errs.ErrNotFound)
	require.NoError(t, s.SetMeta("cursor", []byte("secret")))
	require.NoError(t, s.Close())
	s, err = Open(dir, Options{})
	require.NoError(t, err)
	v, err := s.Meta("cursor")
	require.NoError(t, err)
	require.Equal(t, []byte("secret"), v)
	require.NoError(t, s.Close())
}
