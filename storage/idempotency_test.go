package storage

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/errs"
)

// A workspace's stored idempotent responses are bounded (MaxIdemBytes, MaxIdemEntries): the
// oldest go first, other workspaces keep theirs, and the bound holds across a reopen.
func TestIdempotencyBoundedPerTenant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	tn := Tenant{Workspace: 1, Mode: ModeLive}
	other := Tenant{Workspace: 2, Mode: ModeLive}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	body := bytes.Repeat([]byte("x"), 1<<20)
	require.NoError(t, s.PutIdem(other, "keep", &IdemEntry{Fingerprint: []byte{1}, Status: 201, Body: body, CreatedAt: now}))
	n := MaxIdemBytes>>20 + 8 // 40 answers of 1 MiB: 8 over the bound
	for i := 0; i < n; i++ {
		e := &IdemEntry{Fingerprint: []byte{byte(i)}, Status: 201, Body: body, CreatedAt: now.Add(time.Duration(i) * time.Second)}
		require.NoError(t, s.PutIdem(tn, fmt.Sprint("k", i), e))
	}
	live := func(s *Store) (first, count int) {
		first = -1
		for i := 0; i < n; i++ {
			if _, err := s.Idem(tn, fmt.Sprint("k", i), now); err == nil {
				if first < 0 {
					first = i
				}
				count++
			}
		}
		return
	}
	first, count := live(s)
	require.Less(t, count, n, "some entries were dropped")
	require.LessOrEqual(t, int64(count)*(1<<20), int64(MaxIdemBytes), "within the byte bound")
	require.Equal(t, n-count, first, "the oldest went first")
	_, err = s.Idem(tn, fmt.Sprint("k", n-1), now)
	require.NoError(t, err, "the newest is kept")
	_, err = s.Idem(other, "keep", now)
	require.NoError(t, err, "another workspace keeps its entry")

	// Reopened: the accounting is read back from the age index, so the bound still holds.
	require.NoError(t, s.Close())
	s, err = Open(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	for i := n; i < n+8; i++ {
		e := &IdemEntry{Fingerprint: []byte{byte(i)}, Status: 201, Body: body, CreatedAt: now.Add(time.Duration(i) * time.Second)}
		require.NoError(t, s.PutIdem(tn, fmt.Sprint("k", i), e))
	}
	total := 0
	for i := 0; i < n+8; i++ {
		if _, err := s.Idem(tn, fmt.Sprint("k", i), now); err == nil {
			total++
		}
	}
	require.LessOrEqual(t, int64(total)*(1<<20), int64(MaxIdemBytes))

	// Expiry removes the age entries too: after the TTL nothing is counted, and new entries fit.
	later := now.Add(IdemTTL + time.Hour)
	_, err = s.ExpireIdem(later)
	require.NoError(t, err)
	s.idem.mu.Lock()
	u, err := s.idemUsage(tn)
	s.idem.mu.Unlock()
	require.NoError(t, err)
	require.Zero(t, u.entries)
	require.Zero(t, u.bytes)
}

// The entry bound: small answers are capped by count.
func TestIdempotencyEntryBound(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 10,000 entries")
	}
	s := openStore(t)
	tn := Tenant{Workspace: 1, Mode: ModeLive}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for i := 0; i < MaxIdemEntries+50; i++ {
		require.NoError(t, s.PutIdem(tn, fmt.Sprint("k", i), &IdemEntry{Status: 201, Body: []byte("{}"), CreatedAt: now.Add(time.Duration(i))}))
	}
	s.idem.mu.Lock()
	u, _ := s.idemUsage(tn)
	entries := u.entries
	s.idem.mu.Unlock()
	require.Equal(t, MaxIdemEntries, entries)
	_, err := s.Idem(tn, "k0", now)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = s.Idem(tn, fmt.Sprint("k", MaxIdemEntries+49), now)
	require.NoError(t, err)
}

// TestExpireIdemOfOwned: a cluster node sweeps the expired entries of the workspaces it owns
// and leaves the others' (their owner's to delete; a write of them would be refused).
func TestExpireIdemOfOwned(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	defer s.Close()
	old := time.Now().Add(-2 * IdemTTL)
	mine, theirs := Tenant{Workspace: 7, Mode: ModeLive}, Tenant{Workspace: 8, Mode: ModeLive}
	for _, tn := range []Tenant{mine, theirs} {
		require.NoError(t, s.PutIdem(tn, "k", &IdemEntry{Status: 201, CreatedAt: old}))
	}
	now := time.Now()
	n, err := s.ExpireIdemOf(now, func(ws int64) bool { return ws == mine.Workspace })
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = s.Idem(mine, "k", old)
	require.ErrorIs(t, err, errs.ErrNotFound)
	e, err := s.Idem(theirs, "k", old)
	require.NoError(t, err)
	require.Equal(t, 201, e.Status)
	n, err = s.ExpireIdem(now) // one process: all of them
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
