package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

func dumpStore(t *testing.T, s *storage.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, s.ScanAll(func(k, v []byte) error { out[string(k)] = string(v); return nil }))
	return out
}

// A store writing through the StateSink can be rebuilt from the changelog alone: restoring the
// global table and every partition into an empty store gives the same state. A write to a
// partition whose writer this node dropped is refused and not applied.
func TestStateRestoresFromTheChangelog(t *testing.T) {
	brokers := newBrokers(t)
	ctx := context.Background()
	const parts = 4
	a := join(t, brokers, "a", parts)
	defer a.Close()
	settled(t, parts, a)
	sink := NewStateSink(a.Member)
	defer sink.Close()
	for p := 0; p < parts; p++ {
		require.NoError(t, sink.Open(ctx, p))
	}
	src, err := storage.Open(t.TempDir(), storage.Options{Changes: sink})
	require.NoError(t, err)
	defer src.Close()

	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for ws := int64(1); ws <= 6; ws++ {
		id, err := src.NextID("workspaces") // global only
		require.NoError(t, err)
		require.NoError(t, src.PutWorkspace(&storage.Workspace{ID: id, Name: fmt.Sprint("ws ", id), Slug: fmt.Sprint("ws-", id), Plan: "company"}, ""))
		tn := storage.Tenant{Workspace: id, Mode: storage.ModeLive}
		// A tenant's records with a global timer: one transaction of the partition.
		require.NoError(t, src.PutIdem(tn, "k1", &storage.IdemEntry{Status: 201, Body: []byte(`{"ws":` + fmt.Sprint(id) + `}`), CreatedAt: now.Add(-48 * time.Hour)}))
		require.NoError(t, src.PutIdem(tn, "k2", &storage.IdemEntry{Status: 200, Body: []byte("{}"), CreatedAt: now}))
		require.NoError(t, src.SetWebhookHealth(tn, 9, storage.WebhookHealth{LastSuccess: now}))
	}
	// A sweep across every tenant: one transaction per partition.
	n, err := src.ExpireIdem(now)
	require.NoError(t, err)
	require.Equal(t, 6, n)

	dst, err := storage.Open(t.TempDir(), storage.Options{})
	require.NoError(t, err)
	defer dst.Close()
	all := []int{0, 1, 2, 3}
	offs, err := a.ApplyTo(ctx, dst, all, nil)
	require.NoError(t, err)
	want := dumpStore(t, src)
	require.Equal(t, want, dumpStore(t, dst))
	require.Greater(t, len(want), 30)

	// Partition of workspace 3 dropped: its writes are refused, and nothing is applied.
	p3 := a.PartitionOf(3)
	sink.Drop(p3)
	err = src.SetWebhookHealth(storage.Tenant{Workspace: 3, Mode: storage.ModeLive}, 10, storage.WebhookHealth{LastSuccess: now})
	require.ErrorIs(t, err, ErrNotOwner)
	require.Equal(t, want, dumpStore(t, src))
	// Other partitions still write; a catch-up from the stored offsets brings only that.
	require.NoError(t, src.SetWebhookHealth(storage.Tenant{Workspace: 2, Mode: storage.ModeLive}, 10, storage.WebhookHealth{LastSuccess: now}))
	next, err := a.ApplyTo(ctx, dst, all, offs)
	require.NoError(t, err)
	require.Equal(t, dumpStore(t, src), dumpStore(t, dst))
	p2 := fmt.Sprint(a.PartitionOf(2))
	require.Greater(t, next[p2], offs[p2])
	require.Equal(t, offs["global"], next["global"])
}
