package httpapi

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/mcp"
)

// TestMCPConformanceSuite runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, server mode, its active scenarios) against the running
// service. The scenarios a tools-only stateless server can pass must pass; those needing the
// suite's own fixture tools, prompts and resources are listed, with the reason, in
// clients/conformance-expected-failures.yml, and the suite fails when one of them passes (the
// list cannot go stale). docs/CLIENTS.md.
//
// The suite has no option for request headers, so the API key travels as the api_key query
// parameter the endpoint also accepts (spec §1); the harness listens on 127.0.0.1, which the
// DNS-rebinding scenario needs.
func TestMCPConformanceSuite(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	start := time.Now()
	stdout, _, _ := runNode(t, 3*time.Minute, nil, false, "node_modules/.bin/conformance", "server",
		"--url", h.base+mcp.Path+"?api_key="+key,
		"--expected-failures", "conformance-expected-failures.yml",
		"-o", filepath.Join(t.TempDir(), "results"))
	for _, scenario := range []string{"server-initialize", "ping", "logging-set-level", "tools-list",
		"resources-list", "prompts-list", "completion-complete", "dns-rebinding-protection"} {
		re := regexp.MustCompile(`(?m)^✓ ` + regexp.QuoteMeta(scenario) + `: (\d+) passed, 0 failed`)
		require.Regexp(t, re, stdout, "scenario %s passes", scenario)
	}
	t.Logf("conformance suite: %s", time.Since(start).Round(time.Millisecond))
}
