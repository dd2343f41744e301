package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRestScenarioRuns keeps the harness working: a tiny rest scenario must complete without
// request errors and report both target checks. (The targets themselves are judged by `make
// bench` on full-size runs, not here.)
func TestRestScenarioRuns(t *testing.T) {
	var out bytes.Buffer
	rep, err := Rest(context.Background(), RestOptions{Books: 300, SmallBooks: 30, Conns: 4,
		Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond}, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, "rest", rep.Scenario)
	require.Contains(t, out.String(), "bare fasthttp handler")
	require.Contains(t, out.String(), "GET /books/{book} req/s vs bare handler")
	require.Contains(t, out.String(), "list p99")
}

func TestMainRejectsUnknownScenario(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Error(t, Main(context.Background(), []string{"-scenario", "nope"}, &out, &errOut))
}
