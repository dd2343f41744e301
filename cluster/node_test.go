package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

func startNode(t *testing.T, brokers []string, name string, parts int) *Node {
	return startNodeWith(t, brokers, name, parts, false)
}

func startNodeWith(t *testing.T, brokers []string, name string, parts int, standby bool) *Node {
	t.Helper()
	dir := t.TempDir()
	n, err := StartNode(context.Background(), Options{Brokers: brokers, Node: name, URL: "http://" + name + ".test:8080",
		Partitions: parts, SessionTimeout: 6 * time.Second, Standby: standby, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		func(sink storage.ChangeSink, _ *Member) (*storage.Store, error) {
			return storage.Open(dir, storage.Options{Changes: sink})
		})
	require.NoError(t, err)
	return n
}

func readyAll(t *testing.T, n *Node, parts ...int) {
	t.Helper()
	for _, p := range parts {
		require.True(t, n.WaitReady(p, 30*time.Second), "partition %d taken over", p)
	}
}

// tenantState is a store's keys of a workspace's tenant.
func tenantState(t *testing.T, st *storage.Store, ws int64) map[string]string {
	t.Helper()
	prefix := append([]byte("t/"), binary.BigEndian.AppendUint64(nil, uint64(ws))...)
	out := map[string]string{}
	require.NoError(t, st.ScanAll(func(k, v []byte) error {
		if bytes.HasPrefix(k, prefix) {
			out[string(k)] = string(v)
		}
		return nil
	}))
	return out
}

// A node taking a partition over restores its state from the changelog, fencing the previous
// owner first; given the partition back later, a node only catches up from the offset it stored.
func TestNodeTakeOverAndCatchUp(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	const parts = 2
	a := startNode(t, brokers, "a", parts)
	defer a.Close()
	readyAll(t, a, 0, 1)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for ws := int64(1); ws <= 4; ws++ { // workspaces 2 and 4 in partition 0, 1 and 3 in 1
		tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
		require.NoError(t, a.Store().PutIdem(tn, "k", &storage.IdemEntry{Status: 201, Body: []byte("{}"), CreatedAt: now}))
		require.NoError(t, a.Store().SetWebhookHealth(tn, 1, storage.WebhookHealth{LastSuccess: now}))
	}

	b := startNode(t, brokers, "b", parts)
	require.Eventually(t, func() bool { return len(b.Member().Owned()) == 1 }, 30*time.Second, 50*time.Millisecond)
	p := b.Member().Owned()[0]
	readyAll(t, b, p)
	ws := int64(2 - p) // a workspace of p: 2 for partition 0, 1 for partition 1
	require.Equal(t, p, b.Member().PartitionOf(ws))
	require.NotEmpty(t, tenantState(t, a.Store(), ws))
	require.Equal(t, tenantState(t, a.Store(), ws), tenantState(t, b.Store(), ws), "restored from the changelog")
	require.Empty(t, tenantState(t, b.Store(), 3-ws), "not the other partition's")

	// a can no longer write p; b can.
	tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
	require.Eventually(t, func() bool {
		return a.Store().SetWebhookHealth(tn, 2, storage.WebhookHealth{LastSuccess: now}) != nil
	}, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, b.Store().SetWebhookHealth(tn, 3, storage.WebhookHealth{LastSuccess: now.Add(time.Hour)}))

	// b leaves: a takes p back and catches up with b's write, from the offset it stored with
	// its own last write of p (not from the start).
	bState := tenantState(t, b.Store(), ws)
	off, err := a.Store().Local(OffsetKey(p))
	require.NoError(t, err)
	aReached := int64(binary.BigEndian.Uint64(off))
	require.Positive(t, aReached, "a's writes stored how far its changelog reached")
	require.NoError(t, b.Close())
	readyAll(t, a, p)
	require.Equal(t, bState, tenantState(t, a.Store(), ws), "caught up with what b wrote")
	off, err = a.Store().Local(OffsetKey(p))
	require.NoError(t, err)
	require.Greater(t, int64(binary.BigEndian.Uint64(off)), aReached)
	require.NoError(t, a.Store().SetWebhookHealth(tn, 4, storage.WebhookHealth{LastSuccess: now}), "a writes p again")
	require.NoError(t, a.Err())
}

// A standby node follows the partitions it does not own: when it takes one over, its restore
// only catches up (here: nothing left to apply), and its copy equals the owner's.
func TestNodeStandbyTakesOverWithoutReplay(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	const parts = 2
	a := startNode(t, brokers, "a", parts)
	readyAll(t, a, 0, 1)
	b := startNodeWith(t, brokers, "b", parts, true)
	defer b.Close()
	require.Eventually(t, func() bool { return len(b.Member().Owned()) == 1 && len(a.Member().Owned()) == 1 }, 30*time.Second, 50*time.Millisecond)
	readyAll(t, b, b.Member().Owned()[0])
	p := a.Member().Owned()[0] // a keeps p; b stands by for it
	ws := int64(2 - p)
	require.Equal(t, p, a.Member().PartitionOf(ws))
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const writes = 300
	for i := 0; i < writes; i++ {
		tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
		require.NoError(t, a.Store().SetWebhookHealth(tn, int64(i+1), storage.WebhookHealth{LastSuccess: now.Add(time.Duration(i) * time.Second)}))
	}
	require.Eventually(t, func() bool { return b.StandbyApplied() >= writes }, 30*time.Second, 50*time.Millisecond,
		"the standby applied the owner's writes (%d)", b.StandbyApplied())
	require.Equal(t, tenantState(t, a.Store(), ws), tenantState(t, b.Store(), ws), "the standby's copy is the owner's")

	before, _ := b.Restored()
	aState := tenantState(t, a.Store(), ws)
	require.NoError(t, a.Close())
	readyAll(t, b, p)
	after, _ := b.Restored()
	require.Less(t, after-before, int64(10), "the takeover only caught up (%d records)", after-before)
	require.Equal(t, aState, tenantState(t, b.Store(), ws))
	tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
	require.NoError(t, b.Store().SetWebhookHealth(tn, 9999, storage.WebhookHealth{LastSuccess: now}), "b writes p")
	require.NoError(t, b.Err())
}
