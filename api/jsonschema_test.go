package api

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"
)

func TestPortable(t *testing.T) {
	t.Parallel()
	enum := Param{Name: "privacy", Kind: KString, Enum: []string{"public", "private"}, Nullable: true, Desc: "who sees it"}
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"privacy": ParamSchema(&enum),
		"at":      dateTime,
		"meta":    {Types: []string{"null", "object", "string"}},
		"list":    arrayOf(strN),
		"one":     {Types: []string{"integer"}, Minimum: F64(1)},
		"already": nullable(object(prop("id", integer))),
	}}
	before, err := json.Marshal(s)
	require.NoError(t, err)
	p := Portable(s)
	after, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, string(before), string(after), "the original is left as it was")
	got, err := json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{
		"privacy":{"description":"who sees it","anyOf":[{"type":"string","enum":["public","private"]},{"type":"null"}]},
		"at":{"anyOf":[{"type":"string","format":"date-time"},{"type":"null"}]},
		"meta":{"anyOf":[{"type":"null"},{"type":"object"},{"type":"string"}]},
		"list":{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"null"}]}},
		"one":{"type":"integer","minimum":1},
		"already":{"anyOf":[{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]},{"type":"null"}]}}}`, string(got))
}

func TestResultSchema(t *testing.T) {
	t.Parallel()
	data := object(prop("status", str))
	require.Same(t, data, ResultSchema(&Operation{Bare: true, Response: data}), "a bare answer is its data")
	env := ResultSchema(&Operation{Response: data, ResponseMeta: totalMetaSchema})
	require.Equal(t, []string{"data"}, env.Required)
	require.Same(t, data, env.Properties["data"])
	require.Same(t, totalMetaSchema, env.Properties["meta"])
}
