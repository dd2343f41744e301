package api

import (
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
