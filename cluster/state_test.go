package cluster

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

func dumpStore(t *testing.T, s *storage.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, s.ScanAll(func(k, v []byte) error {
		if !bytes.HasPrefix(k, []byte("l/")) { // a node's own bookkeeping
			out[string(k)] = string(v)
		}
		return nil
	}))
	return out
}

// A store writing through the StateSink can be rebuilt from the changelog alone: restoring the
// global table and every partition into an empty store gives the same state. A write to a
// partition whose writer this node dropped is refused and not applied.
func TestStateRestoresFromTheChangelog(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	ctx := context.Background()
	const parts = 4
	a := join(t, brokers, "a", parts)
	defer a.Close()
	sink, src := soleWriter(t, a, parts, nil)

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

// Ids stay unique across nodes (issue 26 item 5): each node hands out ids of the partitions it
// owns; a partition taken over continues after the ids its previous owner reserved.
func TestStateIDsUniqueAcrossNodes(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	ctx := context.Background()
	const parts = 4
	a := join(t, brokers, "a", parts)
	defer a.Close()
	b := join(t, brokers, "b", parts)
	defer b.Close()
	settled(t, parts, a, b)
	open := func(m *Member, owned []int) (*StateSink, *storage.Store) {
		sink := NewStateSink(m)
		for _, p := range owned {
			require.NoError(t, sink.Open(ctx, p))
		}
		st, err := storage.Open(t.TempDir(), storage.Options{Changes: sink})
		require.NoError(t, err)
		return sink, st
	}
	sa, sta := open(a.Member, a.Owned())
	defer sa.Close()
	defer sta.Close()
	sb, stb := open(b.Member, b.Owned())
	defer sb.Close()
	defer stb.Close()
	seen := map[int64]string{}
	take := func(st *storage.Store, p int, who string) int64 {
		id, err := st.NextIDIn(p, parts, "book")
		require.NoError(t, err)
		require.Empty(t, seen[id], "id %d handed out twice", id)
		seen[id] = who
		return id
	}
	for _, p := range a.Owned() {
		for i := 0; i < 3; i++ {
			take(sta, p, "a")
		}
	}
	for _, p := range b.Owned() {
		for i := 0; i < 3; i++ {
			take(stb, p, "b")
		}
	}
	// b takes over one of a's partitions: it restores the partition and continues its ids.
	p := a.Owned()[0]
	sa.Drop(p)
	_, err := b.ApplyTo(ctx, stb, []int{p}, nil)
	require.NoError(t, err)
	require.NoError(t, sb.Open(ctx, p))
	for i := 0; i < 3; i++ {
		take(stb, p, "b after takeover")
	}
	// a cannot reserve more ids of it: that write is refused.
	for i := 0; i < 2000; i++ {
		if _, err = sta.NextIDIn(p, parts, "book"); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, ErrNotOwner)
}

// Every node follows the global table: a workspace created on one node (a global write) is in
// every node's store, and a restarted follower continues from the offset it stored.
func TestStateGlobalFollowed(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const parts = 2
	a := join(t, brokers, "a", parts)
	defer a.Close()
	b := join(t, brokers, "b", parts)
	defer b.Close()
	settled(t, parts, a, b)
	sinkA := NewStateSink(a.Member)
	defer sinkA.Close()
	stA, err := storage.Open(t.TempDir(), storage.Options{Changes: sinkA})
	require.NoError(t, err)
	defer stA.Close()
	require.NoError(t, stA.PutWorkspace(&storage.Workspace{ID: 11, Name: "Eleven", Slug: "eleven", Plan: "company"}, ""))

	dirB := t.TempDir()
	stB, err := storage.Open(dirB, storage.Options{})
	require.NoError(t, err)
	follow := func(st *storage.Store) (stop func()) {
		fctx, fcancel := context.WithCancel(ctx)
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- b.FollowGlobal(fctx, st, ready, nil) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("follow: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("the follower did not catch up")
		}
		return func() { fcancel(); require.ErrorIs(t, <-done, context.Canceled) }
	}
	stop := follow(stB)
	w, err := stB.Workspace(11)
	require.NoError(t, err, "caught up at start")
	require.Equal(t, "Eleven", w.Name)
	// Later writes arrive as they commit.
	require.NoError(t, stA.PutWorkspace(&storage.Workspace{ID: 12, Name: "Twelve", Slug: "twelve", Plan: "team"}, ""))
	require.Eventually(t, func() bool { _, err := stB.Workspace(12); return err == nil }, 10*time.Second, 50*time.Millisecond)
	stop()
	require.NoError(t, stB.Close())

	// Restarted: it continues from its stored offset and gets what came meanwhile.
	require.NoError(t, stA.PutWorkspace(&storage.Workspace{ID: 13, Name: "Thirteen", Slug: "thirteen", Plan: "team"}, ""))
	stB, err = storage.Open(dirB, storage.Options{})
	require.NoError(t, err)
	defer stB.Close()
	stop = follow(stB)
	defer stop()
	w, err = stB.Workspace(13)
	require.NoError(t, err)
	require.Equal(t, "Thirteen", w.Name)
	w, err = stB.Workspace(11)
	require.NoError(t, err)
	require.Equal(t, "Eleven", w.Name)
}

// Concurrent writes of the same key reach the changelog and the store in the same order: the
// store rebuilt from the changelog equals the store written.
func TestStateConcurrentWritesKeepOrder(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	ctx := context.Background()
	const parts = 2
	a := join(t, brokers, "a", parts)
	defer a.Close()
	// The time between the changelog's commit and the store's is widened, so a sink that let
	// the next write of the key through before the store applied this one would be caught.
	_, src := soleWriter(t, a, parts, func(s *StateSink) storage.ChangeSink { return slowSink{s} })
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				for ws := int64(1); ws <= 2; ws++ { // one workspace per partition
					h := storage.WebhookHealth{LastSuccess: time.Unix(int64(g*100+i), 0).UTC()}
					require.NoError(t, src.SetWebhookHealth(storage.Tenant{Workspace: ws, Mode: storage.ModeLive}, 1, h))
				}
			}
		}(g)
	}
	wg.Wait()
	dst, err := storage.Open(t.TempDir(), storage.Options{})
	require.NoError(t, err)
	defer dst.Close()
	_, err = a.ApplyTo(ctx, dst, []int{0, 1}, nil)
	require.NoError(t, err)
	require.Equal(t, dumpStore(t, src), dumpStore(t, dst))
}

// slowSink returns from Changes a moment after the changelog committed.
type slowSink struct{ *StateSink }

func (s slowSink) Changes(muts []storage.Mutation) ([]storage.Mutation, func(), error) {
	local, done, err := s.StateSink.Changes(muts)
	time.Sleep(time.Duration(len(muts)%3+1) * 300 * time.Microsecond) // sleep: the slow sink under test returns a moment after the changelog committed
	return local, done, err
}

// soleWriter makes a, once it owns every partition, the writer of all of them, with a store
// writing through its sink (wrapped by wrap when given).
func soleWriter(t *testing.T, a *node, parts int, wrap func(*StateSink) storage.ChangeSink) (*StateSink, *storage.Store) {
	t.Helper()
	settled(t, parts, a)
	sink := NewStateSink(a.Member)
	t.Cleanup(sink.Close)
	for p := 0; p < parts; p++ {
		require.NoError(t, sink.Open(context.Background(), p))
	}
	var cs storage.ChangeSink = sink
	if wrap != nil {
		cs = wrap(sink)
	}
	st, err := storage.Open(t.TempDir(), storage.Options{Changes: cs})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return sink, st
}
