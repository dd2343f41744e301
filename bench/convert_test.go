package bench

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConvertScenarioRuns keeps the convert scenario working on tiny PDFs: the service with
// and without page text, the scanned PDF read by OCR, and every figure printed (the targets
// are judged by make bench on full-size runs).
func TestConvertScenarioRuns(t *testing.T) {
	asChild(t)
	var out bytes.Buffer
	rep, err := Convert(context.Background(), ConvertOptions{Pages: 4, BigPages: 6, LongEdge: 800, Runs: 1, Scanned: 2}, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, "convert", rep.Scenario)
	for _, want := range []string{"service without page text", "scanned PDF, 2 pages", "OCR", "pages/s with page text / without"} {
		require.Contains(t, out.String(), want)
	}
}
