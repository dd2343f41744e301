package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A partition's state restored from the changelog is its committed changes in order: a fenced
// owner's writes are not in it, and restoring again from the stored offset reads only what came
// since.
func TestRestoreAppliesCommittedChanges(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	ctx := context.Background()
	a := join(t, brokers, "a", 4)
	defer a.Close()
	b := join(t, brokers, "b", 4)
	defer b.Close()
	const p = 1
	wa, err := a.OpenWriter(ctx, p)
	require.NoError(t, err)
	defer wa.Close()
	const batches, per = 50, 20
	for i := 0; i < batches; i++ {
		cs := make([]Change, per)
		for j := range cs {
			cs[j] = Change{Key: []byte(fmt.Sprintf("k%02d", j)), Value: []byte(fmt.Sprint(i))}
		}
		require.NoError(t, wa.Append(ctx, cs...))
	}
	require.NoError(t, wa.Append(ctx, Change{Key: []byte("gone"), Value: []byte("x")}))
	require.NoError(t, wa.Append(ctx, Change{Key: []byte("gone")})) // deleted

	state := map[string]string{}
	apply := func(c Change) error {
		if c.Value == nil {
			delete(state, string(c.Key))
		} else {
			state[string(c.Key)] = string(c.Value)
		}
		return nil
	}
	start := time.Now()
	off, n, err := b.Restore(ctx, p, 0, apply)
	require.NoError(t, err)
	took := time.Since(start)
	require.Equal(t, batches*per+2, n)
	require.Len(t, state, per)
	require.Equal(t, fmt.Sprint(batches-1), state["k07"])
	t.Logf("restored %d changes in %s (%.0f changes/s on kfake)", n, took.Round(time.Millisecond), float64(n)/took.Seconds())

	// b takes over: a's next write is fenced and never read; b's is.
	wb, err := b.OpenWriter(ctx, p)
	require.NoError(t, err)
	defer wb.Close()
	require.ErrorIs(t, wa.Append(ctx, Change{Key: []byte("k00"), Value: []byte("stale")}), ErrFenced)
	require.NoError(t, wb.Append(ctx, Change{Key: []byte("k01"), Value: []byte("b")}))
	off2, n2, err := b.Restore(ctx, p, off, apply)
	require.NoError(t, err)
	require.Equal(t, 1, n2, "only what came since the stored offset")
	require.Greater(t, off2, off)
	require.Equal(t, "b", state["k01"])
	require.Equal(t, fmt.Sprint(batches-1), state["k00"], "the fenced write is not applied")

	// Nothing new: nothing read.
	off3, n3, err := a.Restore(ctx, p, off2, apply)
	require.NoError(t, err)
	require.Zero(t, n3)
	require.Equal(t, off2, off3)
	// An empty partition restores to nothing.
	_, n4, err := a.Restore(ctx, 3, 0, apply)
	require.NoError(t, err)
	require.Zero(t, n4)
}
