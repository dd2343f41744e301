package api

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type directIn struct {
	Book  string `param:"book,path,required" max:"12"`
	Sort  string `param:"sort,query" enum:"asc|desc"`
	Label string `param:"label,query" minlen:"2" max:"5"`
}

// Define's direct binding (path and query strings, no map) binds exactly what Validate and
// Bind would, and leaves every call Validate refuses to Validate.
func TestDirectBindingMatchesValidate(t *testing.T) {
	t.Parallel()
	var got *directIn
	op := Define(Operation{ID: "x.get"}, func(r *Request, in *directIn) (*Data[string], error) {
		got = in
		return OK("ok"), nil
	})
	require.NotNil(t, op.direct, "an input of path and query strings binds directly")
	pieces := []string{"", " ", "a", "asc", "desc", "b1", "ünï", "\u200b", "\x00", "\t", "abcdefghijklm", "x y", "\xff"}
	pick := func(r *rand.Rand) string {
		var b strings.Builder
		for n := r.IntN(3); n >= 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	r := rand.New(rand.NewPCG(1, 2))
	direct := 0
	for i := 0; i < 5000; i++ {
		a := Args{Path: map[string]string{}, Query: map[string]string{}}
		if r.IntN(8) > 0 {
			a.Path["book"] = pick(r)
		}
		for _, q := range []string{"sort", "label"} {
			if r.IntN(2) == 0 {
				a.Query[q] = pick(r)
			}
		}
		if r.IntN(4) == 0 { // a tool call's values
			a = Args{Values: map[string]any{}}
			for _, n := range []string{"book", "sort", "label"} {
				switch r.IntN(4) {
				case 0:
				case 1:
					a.Values[n] = 7.0
				default:
					a.Values[n] = pick(r)
				}
			}
		}
		bound := op.direct(&a)
		params, err := Validate(op.Params, &a)
		if err != nil {
			require.Nil(t, bound, "direct binding accepted what Validate refuses: %#v", a)
			continue
		}
		require.NotNil(t, bound, "direct binding refused what Validate accepts: %#v", a)
		direct++
		_, err = op.Handler(&Request{Params: params})
		require.NoError(t, err)
		want := *got
		_, err = op.Handler(&Request{In: bound})
		require.NoError(t, err)
		require.Equal(t, want, *got, "%#v", a)
	}
	require.Greater(t, direct, 500, "enough valid calls were compared")

	// Other inputs are not bound directly.
	other := Define(Operation{ID: "x.list"}, func(r *Request, in *replyIn2) (*Data[string], error) { return OK(""), nil })
	require.Nil(t, other.direct)
}

type replyIn2 struct {
	Book  string `param:"book,path,required"`
	Limit int64  `param:"limit,query"`
}
