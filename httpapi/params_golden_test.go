package httpapi

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// Every operation's declared parameters (what validation, the MCP input schemas and the
// OpenAPI document are built from), as JSON: a change of declaration style (typed inputs,
// issue 27) must leave them exactly as they were. A deliberate change rewrites the golden file
// (-update) and shows in its diff.
func TestOperationParamsGolden(t *testing.T) {
	t.Parallel()
	s := &Service{}
	type decl struct {
		ID         string      `json:"id"`
		Params     []api.Param `json:"params,omitempty"`
		ToolParams []api.Param `json:"tool_params,omitempty"`
	}
	var all []decl
	ops := append(api.Table(s.backends(), api.TableOptions{MaxUploadBody: DefaultMaxBodyBytes}), s.adminOperations()...)
	for _, op := range append(ops, s.readerOperations()...) {
		all = append(all, decl{ID: op.ID, Params: op.Params, ToolParams: op.ToolParams})
	}
	got, err := json.MarshalIndent(all, "", " ")
	require.NoError(t, err)
	checkGolden(t, "operation_params.golden.json", append(got, '\n'))
}

// Every operation's response schemas (data and meta: what the OpenAPI document and the MCP
// output schemas say), as JSON with each object's required names sorted and no property
// order: deriving them from the handlers' output types (issue 27, api.Define) must leave them
// as they were. A deliberate change rewrites the golden file (-update) and shows in its diff.
func TestOperationResponsesGolden(t *testing.T) {
	t.Parallel()
	s := &Service{}
	type decl struct {
		ID       string             `json:"id"`
		Response *jsonschema.Schema `json:"response,omitempty"`
		Meta     *jsonschema.Schema `json:"meta,omitempty"`
	}
	var all []decl
	ops := append(api.Table(s.backends(), api.TableOptions{MaxUploadBody: DefaultMaxBodyBytes}), s.adminOperations()...)
	for _, op := range append(ops, s.readerOperations()...) {
		all = append(all, decl{ID: op.ID, Response: canonicalSchema(op.Response), Meta: canonicalSchema(op.ResponseMeta)})
	}
	got, err := json.MarshalIndent(all, "", " ")
	require.NoError(t, err)
	checkGolden(t, "operation_responses.golden.json", append(got, '\n'))
}

// canonicalSchema is a copy of s with required names sorted and no property order (neither
// says anything a client reads).
func canonicalSchema(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	c := s.CloneSchemas()
	var walk func(*jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		slices.Sort(s.Required)
		s.PropertyOrder = nil
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties)
		for _, l := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems} {
			for _, x := range l {
				walk(x)
			}
		}
	}
	walk(c)
	return c
}
