package mcp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// appendEscaped writes JSON text as the inside of a JSON string, as encoding/json would (the
// text holds no control characters: it is JSON), whatever the quotes and backslashes.
func TestAppendEscaped(t *testing.T) {
	t.Parallel()
	for _, text := range []string{``, `{}`, `"`, `\`, `{"a":"b\"c\\d","e":[1,"\\\""]}`, `x"`, `"x`, `ünï"\`} {
		want, err := json.Marshal(text)
		require.NoError(t, err)
		got := appendEscaped([]byte("<"), []byte(text))
		require.Equal(t, "<"+string(want[1:len(want)-1]), string(got), text)
	}
}
