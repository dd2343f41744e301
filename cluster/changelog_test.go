package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readCommitted is every committed record of the changelog's partition p, as a restoring node
// reads it.
func readCommitted(t *testing.T, brokers []string, topic string, p int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(p): kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Key)+"="+string(r.Value)) })
	}
}

// A node that opens a partition's writer fences the writer the previous owner still holds: the
// old owner's next write fails with ErrFenced and never becomes visible, the new owner's does.
func TestChangelogWriterFencesThePreviousOwner(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	a := join(t, brokers, "a", 4)
	defer a.Close()
	b := join(t, brokers, "b", 4)
	defer b.Close()
	ctx := context.Background()

	wa, err := a.OpenWriter(ctx, 2)
	require.NoError(t, err)
	defer wa.Close()
	require.NoError(t, wa.Append(ctx, Change{Key: []byte("book/1"), Value: []byte("v1")}, Change{Key: []byte("book/2"), Value: []byte("v1")}))

	// b takes partition 2 over (as after a rebalance) while a still believes it owns it.
	wb, err := b.OpenWriter(ctx, 2)
	require.NoError(t, err)
	defer wb.Close()
	err = wa.Append(ctx, Change{Key: []byte("book/1"), Value: []byte("stale")})
	require.ErrorIs(t, err, ErrFenced)
	require.NoError(t, wb.Append(ctx, Change{Key: []byte("book/2"), Value: []byte("v2")}, Change{Key: []byte("book/3")}))
	// Still fenced on the next try.
	require.ErrorIs(t, wa.Append(ctx, Change{Key: []byte("book/9"), Value: []byte("x")}), ErrFenced)

	got := readCommitted(t, brokers, DefaultChangelogTopic, 2)
	require.Equal(t, []string{"book/1=v1", "book/2=v1", "book/2=v2", "book/3="}, got, "the fenced writes are not there")
	_, err = a.OpenWriter(ctx, 4)
	require.Error(t, err, "no partition 4 of 4")
}

// The SIGSTOP case: a node cut off past the session timeout and then back cannot
// acknowledge a write for a partition it lost, though its writer was open all along.
func TestChangelogStoppedNodeCannotAcknowledge(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	const parts = 4
	ctx := context.Background()
	a := join(t, brokers, "a", parts)
	defer a.Close()
	cut := &cutter{}
	b := joinVia(t, brokers, "b", parts, cut.dial)
	defer b.Close()
	settled(t, parts, a, b)
	p := b.Owned()[0]
	wb, err := b.OpenWriter(ctx, p)
	require.NoError(t, err)
	defer wb.Close()
	require.NoError(t, wb.Append(ctx, Change{Key: []byte("k"), Value: []byte("before")}))

	cut.cutOff()
	settled(t, parts, a) // a owns everything, b's partitions included
	wa, err := a.OpenWriter(ctx, p)
	require.NoError(t, err)
	defer wa.Close()
	require.NoError(t, wa.Append(ctx, Change{Key: []byte("k"), Value: []byte("new owner")}))

	cut.resume()
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.ErrorIs(t, wb.Append(actx, Change{Key: []byte("k"), Value: []byte("stale")}), ErrFenced)
	require.Equal(t, []string{"k=before", "k=new owner"}, readCommitted(t, brokers, DefaultChangelogTopic, p))
}
