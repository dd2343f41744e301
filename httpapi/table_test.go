package httpapi

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// TestOperationTable checks the table every reader depends on: unique ids, routes and tools,
// a handler for each entry, every {path value} declared, and tool arguments without clashes.
func TestOperationTable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ids, routes, tools := map[string]bool{}, map[string]bool{}, map[string]bool{}
	pathVar := regexp.MustCompile(`\{([^}]+)\}`)
	for _, op := range h.svc.Operations() {
		require.False(t, ids[op.ID], "duplicate id %s", op.ID)
		ids[op.ID] = true
		route := op.Method + " " + op.Base + op.Path
		require.False(t, routes[route], "duplicate route %s", route)
		routes[route] = true
		require.NotNil(t, op.Handler, op.ID)
		require.NotEmpty(t, op.Summary, op.ID)
		declared := map[string]bool{}
		args := map[string]bool{}
		for _, p := range op.Params {
			if p.In == api.InPath {
				declared[p.Name] = true
				require.True(t, p.Required, "%s: path value %s is required", op.ID, p.Name)
			}
			if p.Kind != api.KFile {
				require.False(t, args[p.ArgName()], "%s: two parameters named %s as tool arguments", op.ID, p.ArgName())
				args[p.ArgName()] = true
			}
		}
		for _, p := range op.ToolParams {
			require.Equal(t, api.InTool, p.In, op.ID)
			require.False(t, args[p.Name], "%s: tool-only argument %s clashes", op.ID, p.Name)
			args[p.Name] = true
		}
		for _, m := range pathVar.FindAllStringSubmatch(op.Path, -1) {
			require.True(t, declared[m[1]], "%s: {%s} has no parameter", op.ID, m[1])
		}
		if op.Tool != "" {
			require.False(t, tools[op.Tool], "duplicate tool %s", op.Tool)
			tools[op.Tool] = true
			require.False(t, op.Internal, op.ID)
			require.Equal(t, APIBase, op.Base, "%s: tools are public operations", op.ID)
			for _, p := range op.Params {
				if p.In == api.InPath {
					require.Regexp(t, `_id$`, p.ArgName(), "%s: path values are *_id arguments (spec §4.11)", op.ID)
				}
			}
		}
	}
}
