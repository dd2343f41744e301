package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tags declare the same parameters the table's constructors did (so validation, MCP and
// OpenAPI see no difference), and Bind hands the handler the validated values.
func TestTypedParams(t *testing.T) {
	t.Parallel()
	require.Equal(t, []Param{
		Str("book", InPath, 64).Req(),
		Str("name", InBody, 255).Req(),
		Str("slug", InBody, 255).Describe("unique across the service; generated when absent"),
		Str("channel", InBody, 64),
		Str("kind", InBody, 64).Describe("default manual"),
		{Name: "metadata", In: InBody, Kind: KObject, Nullable: true},
	}, ParamsOf[TrackedLinkCreate]())
	require.Equal(t, []Param{
		Str("book", InPath, 64).Req(),
		{Name: "embedDomain", In: InPath, Kind: KInt, Required: true, Min: F64(1)},
	}, ParamsOf[EmbedDomainDelete]())
	require.Equal(t, []Param{
		Int("pagination[per_page]", InQuery, 1, 200).Describe("entries per page (default 25)"),
		Int("pagination[rowsPerPage]", InQuery, 1, 200).Describe("alias of pagination[per_page]"),
		{Name: "pagination[page]", In: InQuery, Kind: KInt, Min: F64(1)},
		Str("filter", InQuery, 255).Describe("substring of the address, domain or book id"),
		Enum("type", InQuery, "email", "domain"),
	}, ParamsOf[SubscriberList]())
	require.Equal(t, []Param{
		Str("book_id", InBody, 64).Req(),
		Str("email", InBody, 255).Req().Describe("an address, or a domain for type domain"),
		Enum("type", InBody, "email", "domain"),
	}, ParamsOf[SubscriberCreate]())

	type all struct {
		S     string         `param:"s,query" minlen:"1" enum:"a|b" format:"email" desc:"d" arg:"s_arg"`
		N     *int64         `param:"n,body,nullable" min:"1" max:"9"`
		F     float64        `param:"f,body"`
		B     *bool          `param:"b,body"`
		T     *time.Time     `param:"t,body,lines"`
		M     map[string]any `param:"m,body"`
		Plain int
	}
	require.Equal(t, []Param{
		{Name: "s", In: InQuery, Kind: KString, MinLen: 1, Enum: []string{"a", "b"}, Format: "email", Desc: "d", Arg: "s_arg"},
		{Name: "n", In: InBody, Kind: KInt, Nullable: true, Min: F64(1), Max: F64(9)},
		{Name: "f", In: InBody, Kind: KNumber},
		{Name: "b", In: InBody, Kind: KBool},
		{Name: "t", In: InBody, Kind: KDateTime, Multiline: true},
		{Name: "m", In: InBody, Kind: KObject},
	}, ParamsOf[all]())

	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var got *all
	h := Bind(func(_ *Request, in *all) (*Result, error) { got = in; return &Result{}, nil })
	_, err := h(&Request{Params: map[string]any{"s": "a", "n": int64(3), "f": 1.5, "b": false, "t": at, "m": map[string]any{"k": "v"}}})
	require.NoError(t, err)
	require.Equal(t, "a", got.S)
	require.Equal(t, int64(3), *got.N)
	require.Equal(t, 1.5, got.F)
	require.False(t, *got.B)
	require.Equal(t, at, *got.T)
	require.Equal(t, map[string]any{"k": "v"}, got.M)
	// Absent and null: zero values, nil pointers; each call gets its own struct.
	first := got
	_, err = h(&Request{Params: map[string]any{"n": nil}})
	require.NoError(t, err)
	require.NotSame(t, first, got)
	require.Nil(t, got.N)
	require.Nil(t, got.B)
	require.Empty(t, got.S)

	// A declaration the tags cannot express is refused when the table is built.
	require.PanicsWithValue(t, `api: badIn.X: param tag "x": want "name,in[,options]"`, func() {
		type badIn struct {
			X string `param:"x"`
		}
		ParamsOf[badIn]()
	})
	require.Panics(t, func() {
		type badIn struct {
			X string `param:"x,body,nullable"`
		}
		ParamsOf[badIn]()
	}, "nullable needs a pointer")
	require.Panics(t, func() {
		type badIn struct {
			X []string `param:"x,body"`
		}
		ParamsOf[badIn]()
	}, "unsupported type")
}
