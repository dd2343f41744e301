package bench

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The search scenario builds its books and times every kind of query (small sizes here; the
// figures are make bench's).
func TestSearchScenario(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	rep, err := Search(context.Background(), SearchOptions{Books: 40, Pages: 3, Words: 40, Queries: 25}, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, "search", rep.Scenario)
	for _, want := range []string{"indexed 40 books", "bytes a page", "common word", "rare word", "two words", "prefix", "search p99"} {
		require.Contains(t, out.String(), want)
	}
}
