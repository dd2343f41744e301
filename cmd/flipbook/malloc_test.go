package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMallocArenas(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "MALLOC_ARENA_MAX" {
				return v
			}
			return ""
		}
	}
	n, err := mallocArenas(env(""))
	require.NoError(t, err)
	require.Equal(t, defaultMallocArenas, n)
	require.NoError(t, limitMallocArenas(n))

	// The operator's own setting is glibc's to apply; serve leaves it alone.
	n, err = mallocArenas(env("8"))
	require.NoError(t, err)
	require.Zero(t, n)

	for _, bad := range []string{"0", "-1", "two"} {
		_, err = mallocArenas(env(bad))
		require.ErrorContains(t, err, "MALLOC_ARENA_MAX", bad)
	}
}
