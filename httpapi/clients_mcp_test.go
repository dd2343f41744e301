package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
	"flipbook/mcp"
)

// Real MCP clients against the running service (issue 25, part 5; docs/CLIENTS.md): the
// official TypeScript SDK calling every tool with its output validated, and the Inspector's
// --strict schema lint. The conformance suite is in conformance_test.go.

// mcpClientFixture is a company workspace with a published book that has reader activity
// (an identified reader and an anonymous session, through a tracked link), and a webhook
// receiver the service may send to.
type mcpClientFixture struct {
	h        *harness
	key      string
	rid      string
	viewer   int64
	receiver *receiver
}

func newMCPClientFixture(t *testing.T) *mcpClientFixture {
	h := newHarness(t, fastWebhooks) // loopback webhook targets allowed, quick retries
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "Read by the SDK", "publish")
	link := h.do(t, "POST", "/api/v1/books/"+rid+"/tracked-links", key, map[string]any{"name": "Newsletter", "slug": "sdk-news"})
	require.Equal(t, 201, link.Status, "%s", link.Body)
	sub := h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "ann@example.com"})
	require.Equal(t, 201, sub.Status, "%s", sub.Body)
	ann := h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": "ann@example.com", "session_id": "s-ann"})
	require.Equal(t, 200, ann.Status, "%s", ann.Body)
	post := func(body map[string]any) {
		r := h.do(t, "POST", "/collect", "", body)
		require.Equal(t, 202, r.Status, "%s", r.Body)
	}
	b := collectBody(rid,
		map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 4000},
		map[string]any{"type": "link_clicked", "page_number": 2, "url": "https://example.com/x"},
		map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 6500},
		map[string]any{"type": "session_ended", "exit_reason": "closed"})
	b["session_id"], b["reader_token"] = "s-ann", ann.data()["reader_token"]
	post(b)
	// The gate off again (its only entry removed), so an anonymous reader may post.
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/subscribers/"+itoa(num(sub.data()["id"])), key, nil).Status)
	b = collectBody(rid,
		map[string]any{"type": "session_started", "page_number": 1},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 1500},
		map[string]any{"type": "document_downloaded", "page_number": 1})
	b["session_id"], b["tracked_link"], b["source_host"] = "s-anon", "sdk-news", "partner.example"
	post(b)
	h.logged(t)
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
		if n := len(h.do(t, "GET", "/api/v1/analytics/book-view-events?book_id="+rid, key, nil).list()); n < 2 {
			return fmt.Errorf("%d of the 2 sessions are in the analytics store", n)
		}
		return nil
	})
	return &mcpClientFixture{h: h, key: key, rid: rid, viewer: num(ann.data()["viewer_id"]),
		receiver: newReceiver(t, "whsec_0123456789abcdef")}
}

// TestMCPClientTypeScriptSDKCallsEveryTool runs clients/mcp-all-tools.mjs: every tool called
// at least once with valid arguments through the TypeScript SDK, whose callTool checks the
// structured content against the tool's outputSchema. The script names each failing tool.
func TestMCPClientTypeScriptSDKCallsEveryTool(t *testing.T) {
	t.Parallel()
	fx := newMCPClientFixture(t)
	start := time.Now()
	stdout, _, _ := runNode(t, 4*time.Minute, []string{
		"MCP_URL=" + fx.h.base + mcp.Path, "MCP_KEY=" + fx.key, "BOOK_ID=" + fx.rid,
		"VIEWER_ID=" + itoa(fx.viewer), "HOOK_URL=" + fx.receiver.url(),
	}, false, "mcp-all-tools.mjs")
	var sum struct {
		Tools, Calls, Succeeded int
	}
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout)), &sum), stdout)
	require.Equal(t, len(specTools), sum.Tools)
	require.Equal(t, len(specTools), sum.Succeeded, "every tool answered a valid call")
	t.Logf("TypeScript SDK: %d tools, %d calls in %s", sum.Tools, sum.Calls, time.Since(start).Round(time.Millisecond))
}

// TestMCPInspectorStrictToolsList runs mcp-inspector --cli --method tools/list --strict: no
// portability error (exit 6) and no warning (a type array, an untyped schema, a remote $ref)
// in any tool's inputSchema or outputSchema.
func TestMCPInspectorStrictToolsList(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	stdout, stderr, _ := runNode(t, 2*time.Minute, nil, false, "node_modules/.bin/mcp-inspector", "--cli", h.base+mcp.Path,
		"--transport", "http", "--header", "Authorization: Bearer "+key, "--method", "tools/list", "--strict")
	var list struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
	require.Len(t, list.Tools, len(specTools))
	for _, tool := range list.Tools {
		require.NotEmpty(t, tool.OutputSchema, "%s has an outputSchema", tool.Name)
	}
	require.NotContains(t, stderr, "Warning:", "no portability warning")
	require.NotContains(t, stderr, "Error:", "no portability error")
	require.NotContains(t, stderr, "Schema portability")
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
