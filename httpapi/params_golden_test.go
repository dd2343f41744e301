package httpapi

import (
	"encoding/json"
	"testing"

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
