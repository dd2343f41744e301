package api

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// An integer in a path or query is written one way: "+1", "01", " 1" and "1 " are not 1 (a
// lenient parse let DELETE /subscribers/+1 delete subscriber 1).
func TestIntegersAreCanonical(t *testing.T) {
	t.Parallel()
	params := []Param{Int("subscriber", InPath, 1, 1<<53), Int("limit", InQuery, 1, 200)}
	for _, id := range []string{"+1", "01", " 1", "1 ", "1e0", "0x1", "1.0", "-", ""} {
		_, err := Validate(params, &Args{Path: map[string]string{"subscriber": id}})
		require.Error(t, err, "%q", id)
		if id != "" {
			require.Equal(t, 404, err.(*Error).Status, "%q is no id", id)
		}
	}
	got, err := Validate(params, &Args{Path: map[string]string{"subscriber": "10"}, Query: map[string]string{"limit": "7"}})
	require.NoError(t, err)
	require.Equal(t, int64(10), got["subscriber"])
	require.Equal(t, int64(7), got["limit"])
	_, err = Validate(params, &Args{Path: map[string]string{"subscriber": "1"}, Query: map[string]string{"limit": "07"}})
	require.Equal(t, 422, err.(*Error).Status)
	require.Contains(t, err.(*Error).Details, "limit")
	for _, s := range []string{"0", "-5", "9223372036854775807"} {
		require.True(t, canonicalInt(s), s)
	}
}

// A number is finite: "NaN" and the infinities, which strconv.ParseFloat reads, are refused
// wherever a number comes from (NaN passed every range check and was stored: a review found a
// click at x "NaN" breaking its page's heatmap for good).
func TestNumbersAreFinite(t *testing.T) {
	t.Parallel()
	params := []Param{{Name: "x", In: InBody, Kind: KNumber, Min: F64(0), Max: F64(1)}, {Name: "q", In: InQuery, Kind: KNumber}}
	for _, v := range []any{"NaN", "nan", "Inf", "-Inf", "+Infinity", "1e400", json.Number("1e400"), math.NaN(), math.Inf(1)} {
		_, err := Validate(params, &Args{Body: map[string]any{"x": v}})
		require.Error(t, err, "%v", v)
		require.Equal(t, 422, err.(*Error).Status)
		require.Contains(t, err.(*Error).Details, "x", "%v", v)
		if s, ok := v.(string); ok {
			_, err := Validate(params, &Args{Query: map[string]string{"q": s}, Body: map[string]any{"x": 0.5}})
			require.Error(t, err, "%v", v)
		}
	}
	got, err := Validate(params, &Args{Query: map[string]string{"q": "-2.5e3"}, Body: map[string]any{"x": json.Number("0.25")}})
	require.NoError(t, err)
	require.Equal(t, 0.25, got["x"])
	require.Equal(t, -2500.0, got["q"])
}
