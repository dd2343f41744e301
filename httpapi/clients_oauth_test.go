package httpapi

import (
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/mcp"
)

// TestOAuthSDKClientFlow runs the MCP TypeScript SDK's own OAuth client (clients/oauth-flow.mjs:
// StreamableHTTPClientTransport with an OAuthClientProvider) against the MCP endpoint: discovery
// from the 401, registration (dynamic, and a Client ID Metadata Document served over https),
// consent approved with a key, code + PKCE + resource, tools/list, a tool call, a refresh and
// another call; each with and without a host-supplied state.
func TestOAuthSDKClientFlow(t *testing.T) {
	t.Parallel()
	docs := newCIMDServer(t, true)
	roots := x509.NewCertPool()
	roots.AddCert(docs.Certificate())
	// The document is https on loopback (the SDK insists on https): its certificate is trusted.
	h := newHarness(t, func(c *Config) { c.AllowPrivateTargets, c.OAuthDocumentRoots = true, roots })
	key, _ := h.workspaceKey(t, "company", "live", "*")
	h.konva(t, key, "sdk oauth book", "draft")
	cimd := docs.URL + "/mcp/client.json"
	// The document registers the loopback redirect without a port: the host listens on any.
	docs.set("/mcp/client.json", map[string]any{"client_id": cimd, "client_name": "SDK metadata-document host",
		"redirect_uris": []string{"http://localhost/callback"}, "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "token_endpoint_auth_method": "none"})

	// The cases run one after another (no t.Parallel): they share the service and the document
	// server, whose fetches are counted after the loop (the document is cached), and each runs
	// a Node process.
	for _, c := range []struct {
		mode, state, redirect, register string
	}{
		{"dcr", "1", "http://127.0.0.1:33418/callback", ""},
		{"dcr", "0", "http://localhost:49152/oauth/callback", "http://localhost/oauth/callback"},
		{"cimd", "1", "http://localhost:51123/callback", ""},
		{"cimd", "0", "http://localhost:40001/callback", ""},
	} {
		t.Run(c.mode+"/state="+c.state, func(t *testing.T) {
			env := []string{"FLIPBOOK_URL=" + h.base, "FLIPBOOK_KEY=" + key, "OAUTH_MODE=" + c.mode,
				"OAUTH_STATE=" + c.state, "OAUTH_REDIRECT=" + c.redirect, "OAUTH_TOOLS=55", "OAUTH_TOOL=books_list",
				`OAUTH_TOOL_ARGS={"limit": 5}`}
			if c.register != "" {
				env = append(env, "OAUTH_REGISTER_REDIRECT="+c.register)
			}
			if c.mode == "cimd" {
				env = append(env, "OAUTH_CIMD_URL="+cimd)
			}
			start := time.Now()
			stdout, _, _ := runNode(t, 90*time.Second, env, false, "oauth-flow.mjs")
			t.Logf("%s/state=%s: %s", c.mode, c.state, time.Since(start).Round(time.Millisecond))
			var out struct {
				ClientID      string   `json:"client_id"`
				Tools         int      `json:"tools"`
				Registrations int      `json:"registrations"`
				TokenRequests []string `json:"token_requests"`
				AccessToken   string   `json:"access_token"`
				RefreshToken  string   `json:"refresh_token"`
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &out), "%s", stdout)
			require.Equal(t, 55, out.Tools)
			require.Equal(t, []string{"authorization_code", "refresh_token"}, out.TokenRequests)
			if c.mode == "cimd" {
				require.Equal(t, cimd, out.ClientID)
				require.Zero(t, out.Registrations)
			} else {
				require.Equal(t, 1, out.Registrations)
				require.True(t, strings.HasPrefix(out.ClientID, "fbc_"), out.ClientID)
			}
			// The token was issued for the resource the SDK named (the MCP endpoint), not the REST API.
			m := h.do(t, "POST", mcp.Path, out.AccessToken, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
				"Accept", "application/json, text/event-stream")
			require.Equal(t, 200, m.Status, "%s", m.Body)
			r := h.do(t, "GET", "/api/v1/books", out.AccessToken, nil)
			require.Equal(t, 401, r.Status, "%s", r.Body)
		})
	}
	require.LessOrEqual(t, docs.count("/mcp/client.json"), 2, "the document is cached")
}
