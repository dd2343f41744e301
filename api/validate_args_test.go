package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Tool arguments are named in errors as the tool names them (Param.ArgName), nested names
// included; REST keeps its own names.
func TestValidateNamesToolArguments(t *testing.T) {
	t.Parallel()
	params := []Param{
		{Name: "book", Arg: "book_id", In: InPath, Kind: KString, MaxLen: 64, Required: true},
		{Name: "cover", Arg: "cover_arg", In: InBody, Kind: KObject, Props: []Param{
			Str("title", InBody, 5).Req(),
			{Name: "tags", Kind: KArray, Items: &Param{Kind: KString, MaxLen: 3}},
		}},
	}
	_, err := Validate(params, &Args{Values: map[string]any{
		"cover": map[string]any{"tags": []any{"ok", "too long"}}}})
	e := err.(*Error)
	require.Equal(t, 422, e.Status)
	require.Equal(t, map[string][]string{
		"book_id":          {"is required"},
		"cover_arg.title":  {"is required"},
		"cover_arg.tags.1": {"must not be longer than 3 characters"},
	}, e.Details)
	require.Equal(t, "Validation failed: book_id is required (and 2 more errors).", e.Message)

	// REST: the REST names.
	_, err = Validate(params, &Args{Path: map[string]string{"book": "b1"},
		Body: map[string]any{"cover": map[string]any{"title": "far too long", "tags": []any{"long"}}}})
	e = err.(*Error)
	require.Equal(t, map[string][]string{
		"cover.title":  {"must not be longer than 5 characters"},
		"cover.tags.0": {"must not be longer than 3 characters"},
	}, e.Details)
}

// A path value that is not a valid id is 404, over REST and as a tool argument, and wins over
// the other failures; a missing tool path argument is still 422.
func TestValidatePathIDNotFound(t *testing.T) {
	t.Parallel()
	params := []Param{
		{Name: "catalog", Arg: "catalog_id", In: InPath, Kind: KInt, Required: true, Min: F64(1)},
		Str("name", InBody, 5).Req(),
	}
	for _, raw := range []string{"abc", "0", "-3", "1.5", "99999999999999999999", " "} {
		_, err := Validate(params, &Args{Path: map[string]string{"catalog": raw}})
		e := err.(*Error)
		require.Equal(t, 404, e.Status, raw)
		require.Equal(t, TypeNotFound, e.Type, raw)
		require.Equal(t, "catalog not found", e.Message, raw)
		require.Empty(t, e.Details, raw)
	}
	for _, raw := range []any{"abc", json.Number("0"), json.Number("1.5"), true} {
		_, err := Validate(params, &Args{Values: map[string]any{"catalog": raw, "name": "ok"}})
		require.Equal(t, 404, err.(*Error).Status, "%v", raw)
	}
	got, err := Validate(params, &Args{Values: map[string]any{"catalog": json.Number("7"), "name": "ok"}})
	require.NoError(t, err)
	require.Equal(t, int64(7), got["catalog"])

	_, err = Validate(params, &Args{Values: map[string]any{"name": "ok"}})
	e := err.(*Error)
	require.Equal(t, 422, e.Status)
	require.Equal(t, map[string][]string{"catalog_id": {"is required"}}, e.Details)

	// A string id over its length names nothing either.
	book := []Param{{Name: "book", Arg: "book_id", In: InPath, Kind: KString, MaxLen: 64, Required: true}}
	_, err = Validate(book, &Args{Path: map[string]string{"book": strings.Repeat("x", 65)}})
	require.Equal(t, 404, err.(*Error).Status)
	require.Equal(t, "book not found", err.(*Error).Message)
}
