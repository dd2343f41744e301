package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateTypedValues(t *testing.T) {
	t.Parallel()
	params := []Param{
		Str("book", InPath, 64).Req(),
		Int("limit", InQuery, 1, 200),
		Str("cursor", InQuery, 100),
		Bool("flag", InQuery),
		Str("title", InBody, 5).Null(),
		{Name: "out", In: InTool, Kind: KString},
	}
	// MCP values: typed JSON; null or "" for a query value is "absent", as in REST.
	got, err := Validate(params, &Args{Values: map[string]any{
		"book": "abc", "limit": json.Number("20"), "cursor": "", "flag": nil, "title": nil, "out": "x"}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"book": "abc", "limit": int64(20), "title": nil}, got)

	// A boolean must be a JSON boolean in typed values, while REST's query strings convert.
	_, err = Validate(params, &Args{Values: map[string]any{"book": "a", "flag": "true"}})
	require.Equal(t, []string{"must be true or false"}, err.(*Error).Details["flag"])
	got, err = Validate(params, &Args{Path: map[string]string{"book": "a"}, Query: map[string]string{"flag": "true", "limit": "7"}})
	require.NoError(t, err)
	require.Equal(t, true, got["flag"])
	require.Equal(t, int64(7), got["limit"])

	// Every failure is collected.
	_, err = Validate(params, &Args{Values: map[string]any{"limit": json.Number("0"), "title": "too long"}})
	e := err.(*Error)
	require.Equal(t, 422, e.Status)
	require.Equal(t, TypeValidation, e.Type)
	require.Len(t, e.Details, 3) // book, limit, title
}

func TestParamSchema(t *testing.T) {
	t.Parallel()
	s := ParamSchema(&Param{Name: "x", Kind: KString, MaxLen: 10, Required: true, Enum: []string{"a", "b"}, Nullable: true})
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":["string","null"],"minLength":1,"maxLength":10,"enum":["a","b",null]}`, string(b))
	s = ObjectSchema([]Param{Int("limit", InQuery, 1, 200), Str("book", InPath, 64).Req()}, false)
	b, err = json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","required":["book"],"properties":{
		"limit":{"type":"integer","minimum":1,"maximum":200},
		"book":{"type":"string","minLength":1,"maxLength":64}}}`, string(b))
}
