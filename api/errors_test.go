package api

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

// A write the store could not record in cluster mode is a 503 with Retry-After, never a 500:
// its partition moved (fenced, not owned) or the changelog was unavailable; nothing was applied.
func TestToErrorClusterWrites(t *testing.T) {
	moved := ToError(fmt.Errorf("%w: %w", storage.ErrChangelog, fmt.Errorf("cluster: fenced (%w)", storage.ErrMoved)))
	require.Equal(t, 503, moved.Status)
	require.Equal(t, TypeUnavailable, moved.Type)
	require.Equal(t, 1, moved.RetryAfter)
	require.Contains(t, moved.Message, "moving between nodes")

	down := ToError(fmt.Errorf("%w: %w", storage.ErrChangelog, fmt.Errorf("kafka: broker unreachable")))
	require.Equal(t, 503, down.Status)
	require.Equal(t, 5, down.RetryAfter)
	require.NotContains(t, down.Message, "kafka", "the cause stays in the log")

	require.Equal(t, 500, ToError(fmt.Errorf("something else")).Status)
}
