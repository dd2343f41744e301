package storage

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dropRecords drops the records a field of which matches, keeps the header and the others as
// CSV (quotes, commas and line breaks inside fields included), and takes a file that is not CSV
// whole when its text matches.
func TestDropRecords(t *testing.T) {
	t.Parallel()
	match := func(f string) bool { return strings.Contains(strings.ToLower(f), "ann@example.com") }
	in := "id,email,note\r\n1,Ann@Example.com,x\r\n2,bob@example.com,\"a, \"\"quoted\"\"\r\nnote\"\r\n3,c@example.com,\"{\"\"e\"\":\"\"ann@example.com\"\"}\"\r\n"
	out, n, whole := dropRecords([]byte(in), match)
	require.False(t, whole)
	require.Equal(t, 2, n)
	require.Equal(t, "id,email,note\r\n2,bob@example.com,\"a, \"\"quoted\"\"\r\nnote\"\r\n", string(out))

	out, n, _ = dropRecords([]byte("id,email\n1,bob@example.com\n"), match)
	require.Zero(t, n)
	require.Equal(t, "id,email\n1,bob@example.com\n", string(out), "untouched")

	_, n, whole = dropRecords([]byte("not \"csv at all ann@example.com"), match)
	require.True(t, whole)
	require.Equal(t, 1, n)
	_, n, whole = dropRecords([]byte("not \"csv at all"), match)
	require.False(t, whole)
	require.Zero(t, n)
}
