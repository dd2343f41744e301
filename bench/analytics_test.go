package bench

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnalyticsScenarioRuns keeps the analytics scenario working on a small data set: every
// operation answers over HTTP and in DuckDB and each target line is printed. (The export part
// needs the flipbook binary as a child process and runs under `make bench`.)
func TestAnalyticsScenarioRuns(t *testing.T) {
	var out bytes.Buffer
	rep, err := Analytics(context.Background(), AnalyticsOptions{Books: 10, Events: 20_000, Calls: 6, Rounds: 2, SkipExport: true}, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, "analytics", rep.Scenario)
	for _, op := range []string{"page-performance", "book-flow", "readers"} {
		require.Contains(t, out.String(), op+" p99 (service)")
		require.Contains(t, out.String(), op+" service p50 / DuckDB p50")
	}
}
