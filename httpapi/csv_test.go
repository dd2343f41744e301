package httpapi

import (
	"bytes"
	"encoding/csv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCSVFields: fields round-trip through encoding/csv; only fields with a comma, quote, CR or
// LF are quoted.
func TestCSVFields(t *testing.T) {
	t.Parallel()
	values := []string{"", "plain", "a,b", `say "hi"`, "two\nlines", "cr\rlf\r\n", `"`, `""`, ",", "ünïcödé ✓ 東京",
		" spaced ", "=1+2", "tab\there"}
	var row []byte
	for i, v := range values {
		if i > 0 {
			row = append(row, ',')
		}
		row = appendCSVString(row, v)
	}
	row = append(row, '\r', '\n')
	recs, err := csv.NewReader(bytes.NewReader(row)).ReadAll()
	require.NoError(t, err)
	want := append([]string(nil), values...)
	want[5] = "cr\rlf\n" // encoding/csv reads a quoted \r\n as \n
	require.Equal(t, [][]string{want}, recs)
	require.Equal(t, "plain", string(appendCSVString(nil, "plain")))
	require.Equal(t, `"say ""hi"""`, string(appendCSVString(nil, `say "hi"`)))
	require.Equal(t, " spaced ", string(appendCSVString(nil, " spaced ")))
}

// TestCSVTimestamps: the timestamp writers agree with TimeFormat, across second, day and year
// boundaries and before 1970.
func TestCSVTimestamps(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var tc timeCache
	base := time.Date(2026, 12, 31, 23, 59, 58, 0, time.UTC).UnixMicro()
	for i := 0; i < 20000; i++ {
		var us int64
		switch i % 3 {
		case 0:
			us = base + int64(i)*997 // runs of the same second, then the next
		case 1:
			us = rng.Int64N(4e17) - 1e17 // 1966 to 2096
		default:
			us = -int64(i) * 12345
		}
		want := time.UnixMicro(us).UTC().Format(TimeFormat)
		require.Equal(t, want, string(tc.append(nil, us)), "%d", us)
		require.Equal(t, want, string(appendTimestamp(nil, time.UnixMicro(us))), "%d", us)
	}
}
