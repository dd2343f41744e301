package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A date-time is accepted only within the years an answer can write back (RFC 3339 and
// JSON: 0001-9999 in UTC); an offset must not carry it out (FuzzRESTValidation found
// "0000-01-01T00:00:00+01:00" accepted, and the answer then failed to encode).
func TestValidateDateTimeYears(t *testing.T) {
	t.Parallel()
	params := []Param{Time("at", InBody)}
	for _, bad := range []string{"0000-01-01T00:00:00+01:00", "0000-06-01T00:00:00Z", "9999-12-31T23:30:00-01:00"} {
		_, err := Validate(params, &Args{Values: map[string]any{"at": bad}})
		require.Error(t, err, bad)
		require.Contains(t, err.(*Error).Details["at"][0], "between years 0001 and 9999", bad)
	}
	got, err := Validate(params, &Args{Values: map[string]any{"at": "0001-01-01T00:30:00+00:30"}})
	require.NoError(t, err)
	require.Equal(t, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), got["at"])
	got, err = Validate(params, &Args{Values: map[string]any{"at": "9999-12-31T23:59:59Z"}})
	require.NoError(t, err)
	require.Equal(t, 9999, got["at"].(time.Time).Year())
}
