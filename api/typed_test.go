package api

import (
	"mime/multipart"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/actors"
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
			X [][]string `param:"x,body"`
		}
		ParamsOf[badIn]()
	}, "arrays of arrays")
	require.Panics(t, func() {
		type badIn struct {
			X chan int `param:"x,body"`
		}
		ParamsOf[badIn]()
	}, "unsupported type")
}

// Embedded filters, nested objects, arrays and Opt fields: the declarations and the values
// handed to the handler.
func TestTypedComposite(t *testing.T) {
	t.Parallel()
	type filter struct {
		Date string `param:"date,query" max:"22"`
	}
	type item struct {
		ID    string   `param:"id,body,required" max:"64"`
		Tags  []string `param:"tags,body" maxitems:"3" itemmax:"9"`
		Price *float64 `param:"price,body,nullable" min:"0"`
	}
	type in struct {
		filter
		Book   string                  `param:"book,path,required" max:"64"`
		Items  []item                  `param:"items,body,required" minitems:"1" maxitems:"5"`
		One    *item                   `param:"one,body,nullable" refuse:"x|y" refusemsg:"no"`
		IDs    []int64                 `param:"ids,body" itemmin:"1" itemenum:"1|2"`
		Free   []any                   `param:"free,body,nullable"`
		Any    any                     `param:"any,body"`
		Files  []*multipart.FileHeader `param:"files,body" maxitems:"1"`
		Title  actors.Opt[string]      `param:"title,body,nullable" max:"255"`
		Flag   actors.Opt[bool]        `param:"flag,body"`
		Unused actors.Opt[time.Time]   `param:"unused,body,nullable"`
	}
	itemProps := []Param{
		Str("id", InBody, 64).Req(),
		{Name: "tags", In: InBody, Kind: KArray, MaxItems: 3, Items: &Param{Kind: KString, MaxLen: 9}},
		{Name: "price", In: InBody, Kind: KNumber, Nullable: true, Min: F64(0)},
	}
	require.Equal(t, []Param{
		Str("date", InQuery, 22),
		Str("book", InPath, 64).Req(),
		{Name: "items", In: InBody, Kind: KArray, Required: true, MinItems: 1, MaxItems: 5, Items: &Param{Kind: KObject, Props: itemProps}},
		{Name: "one", In: InBody, Kind: KObject, Nullable: true, Props: itemProps, Refuse: []string{"x", "y"}, RefuseMsg: "no"},
		{Name: "ids", In: InBody, Kind: KArray, Items: &Param{Kind: KInt, Min: F64(1), Enum: []string{"1", "2"}}},
		{Name: "free", In: InBody, Kind: KArray, Nullable: true},
		{Name: "any", In: InBody, Kind: KAny},
		{Name: "files", In: InBody, Kind: KFile, MaxItems: 1},
		Str("title", InBody, 255).Null(),
		Bool("flag", InBody),
		Time("unused", InBody).Null(),
	}, ParamsOf[in]())

	// ParamsOf's slice is the caller's: changing it leaves the next caller's alone.
	ps := Adjust(ParamsOf[in](), "book", func(p *Param) { p.Desc = "changed" })
	require.Equal(t, "changed", ps[1].Desc)
	require.Empty(t, ParamsOf[in]()[1].Desc)
	require.Panics(t, func() { Adjust(ParamsOf[in](), "nope", func(*Param) {}) })
	// Nested declarations too: a caller changing an array's items or an object's properties
	// leaves the cached declaration alone (two services built at once adjust their own copies).
	mine := ParamsOf[in]()
	mine[2].Items.Props[0].MaxLen = 1
	mine[4].Items.Enum[0] = "changed"
	require.Equal(t, 64, ParamsOf[in]()[2].Items.Props[0].MaxLen)
	require.Equal(t, "1", ParamsOf[in]()[4].Items.Enum[0])

	fh := []*multipart.FileHeader{{Filename: "a.pdf"}}
	var got *in
	h := Bind(func(_ *Request, x *in) (*Result, error) { got = x; return &Result{}, nil })
	_, err := h(&Request{Params: map[string]any{
		"date": "2026-11-28", "book": "b1",
		"items": []any{map[string]any{"id": "i1", "tags": []any{"a", "b"}, "price": 2.5}, map[string]any{"id": "i2", "price": nil}},
		"one":   map[string]any{"id": "o"},
		"ids":   []any{int64(1), int64(2)}, "free": []any{"x", 1.0}, "any": map[string]any{"k": true},
		"files": fh, "title": nil, "flag": true,
	}})
	require.NoError(t, err)
	require.Equal(t, "2026-11-28", got.Date)
	require.Equal(t, "b1", got.Book)
	price := 2.5
	require.Equal(t, []item{{ID: "i1", Tags: []string{"a", "b"}, Price: &price}, {ID: "i2"}}, got.Items)
	require.Equal(t, &item{ID: "o"}, got.One)
	require.Equal(t, []int64{1, 2}, got.IDs)
	require.Equal(t, []any{"x", 1.0}, got.Free)
	require.Equal(t, map[string]any{"k": true}, got.Any)
	require.Equal(t, fh, got.Files)
	require.Equal(t, actors.Opt[string]{Set: true, Null: true}, got.Title)
	require.Equal(t, actors.Val(true), got.Flag)
	require.Equal(t, actors.Opt[time.Time]{}, got.Unused)

	var direct in
	bindInto(&direct, map[string]any{"book": "b2", "title": "T"})
	require.Equal(t, "b2", direct.Book)
	require.Equal(t, actors.Val("T"), direct.Title)
}

// bindInto fills in (a pointer to an input struct) from validated parameters, as Bind does
// for a handler.
func bindInto(in any, params map[string]any) {
	v := reflect.ValueOf(in).Elem()
	typedOf(v.Type()).bind(v, params)
}
