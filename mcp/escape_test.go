package mcp

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
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

// The same on random texts of every length around the eight-byte steps.
func TestAppendEscapedRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "\"", "\\", " ", "{", ":", "é"}
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		for k := r.IntN(40); k > 0; k-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		want, err := json.Marshal(text)
		require.NoError(t, err)
		require.Equal(t, string(want[1:len(want)-1]), string(appendEscaped(nil, []byte(text))), "%q", text)
	}
}

// isJSONString takes the plain form, escaped forms and surrounding space, and nothing else.
func TestIsJSONString(t *testing.T) {
	t.Parallel()
	const v = "2026-07-28"
	for raw, want := range map[string]bool{
		`"2026-07-28"`: true, ` "2026-07-28" `: true, `"2026\u002d07-28"`: true,
		`"2026-07-29"`: false, `"2026-07-28`: false, `2026-07-28`: false, `"2026-07-28 "`: false,
		`null`: false, ``: false, `""`: false, `["2026-07-28"]`: false, `"2026-07-28"x`: false,
	} {
		require.Equal(t, want, isJSONString(json.RawMessage(raw), v), raw)
	}
}
