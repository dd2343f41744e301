package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/mcp"
)

// TestMCPClientTypeScriptSDKResourcesToolsetsPrompts runs clients/mcp-resources-toolsets-prompts.mjs:
// resources, toolsets, prompts and completion of issue 28 through the official MCP TypeScript
// SDK client. The script names every check that failed.
func TestMCPClientTypeScriptSDKResourcesToolsetsPrompts(t *testing.T) {
	t.Parallel()
	fx := newMCPTextFixture(t, func(c *Config) { c.MCPPageSize = 2 })
	start := time.Now()
	stdout, _, _ := runNode(t, 3*time.Minute, []string{
		"MCP_URL=" + fx.h.base + mcp.Path, "MCP_KEY=" + fx.key, "NOREAD_KEY=" + fx.noReadKey, "OTHER_KEY=" + fx.otherKey,
		"BOOK_ID=" + fx.pdf, "BOOK_IDS=" + strings.Join(fx.books, ","), "OTHER_BOOK=" + fx.otherBook,
		"PAGE_TEXT=" + fx.pageTexts[1], "PAGE_SIZE=2",
	}, false, "mcp-resources-toolsets-prompts.mjs")
	var sum struct {
		Passed []string
		Failed int
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &sum), stdout)
	require.Zero(t, sum.Failed)
	require.Len(t, sum.Passed, 14, "%v", sum.Passed)
	t.Logf("TypeScript SDK: %d checks in %s", len(sum.Passed), time.Since(start).Round(time.Millisecond))
}
