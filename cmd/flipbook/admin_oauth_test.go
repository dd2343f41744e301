package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2/clientcredentials"
)

// list runs an admin command that must succeed and answer a list.
func (a adminCLI) list(args ...string) []map[string]any {
	a.t.Helper()
	m, out, err := a.run(args...)
	require.NoError(a.t, err, "admin %v: %s", args, out)
	l, ok := m["data"].([]any)
	require.True(a.t, ok, "admin %v: %s", args, out)
	res := make([]map[string]any, len(l))
	for i, v := range l {
		res[i] = v.(map[string]any)
	}
	return res
}

// `flipbook admin oauth-clients | oauth-grants | revoke-oauth-client | revoke-oauth-grant`.
func TestAdminOAuthCommands(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, serveArgs(dir), nil)
	a := adminCLI{t: t, base: s.base, dir: dir}
	ctx := context.Background()

	ws := idArg(a.ok("workspaces", "create", "--name", "OAuth Co", "--plan", "company")["id"])
	key := a.ok("keys", "create", "--workspace", ws, "--scopes", "*")["key"].(string)
	other := idArg(a.ok("workspaces", "create", "--name", "Other Co", "--plan", "company")["id"])

	// A client-credentials client of the workspace and a token of it.
	reg := call(t, "POST", s.base+"/oauth/register", key, map[string]any{"client_name": "cron",
		"grant_types": []string{"client_credentials"}})
	require.Equal(t, 201, reg.status, "%s", reg.raw)
	cc := &clientcredentials.Config{ClientID: reg.json["client_id"].(string), ClientSecret: reg.json["client_secret"].(string),
		TokenURL: s.base + "/oauth/token"}
	tok, err := cc.Token(ctx)
	require.NoError(t, err)
	require.Equal(t, 200, call(t, "GET", s.base+"/api/v1/books", tok.AccessToken, nil).status)

	clients := a.list("oauth-clients", ws)
	require.Len(t, clients, 1)
	require.Equal(t, cc.ClientID, clients[0]["client_id"])
	require.Equal(t, true, clients[0]["registered"])
	require.Equal(t, 1.0, clients[0]["grants"])
	require.Empty(t, a.list("oauth-clients", other))
	grants := a.list("oauth-grants", ws)
	require.Len(t, grants, 1)
	require.Equal(t, cc.ClientID, grants[0]["client_id"])
	require.Equal(t, true, grants[0]["active"])
	require.Empty(t, a.list("oauth-grants", other))

	// Revoking the grant: the token is refused on the next request; the client remains.
	gid := grants[0]["id"].(string)
	rev := a.ok("revoke-oauth-grant", ws, gid)
	require.Equal(t, true, rev["revoked"])
	require.Equal(t, 401, call(t, "GET", s.base+"/api/v1/books", tok.AccessToken, nil).status)
	require.Empty(t, a.list("oauth-grants", ws))
	m, out, err := a.run("revoke-oauth-grant", ws, gid)
	require.ErrorContains(t, err, "404")
	require.Equal(t, "NotFound", m["error"].(map[string]any)["type"], out)

	// Revoking the client ends its new token and deletes it.
	tok2, err := cc.Token(ctx)
	require.NoError(t, err)
	require.Equal(t, 200, call(t, "GET", s.base+"/api/v1/books", tok2.AccessToken, nil).status)
	_, _, err = a.run("revoke-oauth-client", other, cc.ClientID)
	require.ErrorContains(t, err, "404", "not the other workspace's")
	rc := a.ok("revoke-oauth-client", ws, cc.ClientID)
	require.Equal(t, 1.0, rc["grants"])
	require.Equal(t, 401, call(t, "GET", s.base+"/api/v1/books", tok2.AccessToken, nil).status)
	_, err = cc.Token(ctx)
	require.Error(t, err)
	require.Empty(t, a.list("oauth-clients", ws))

	t.Run("usage errors", func(t *testing.T) {
		_, _, err := a.run("oauth-clients")
		require.ErrorContains(t, err, "takes 1 argument")
		_, out, err := a.run("revoke-oauth-grant", ws)
		require.ErrorContains(t, err, "takes 2 argument")
		require.Contains(t, out, "revoke-oauth-grant WORKSPACE GRANT_ID")
		_, _, err = a.run("oauth-grants", "acme")
		require.ErrorContains(t, err, "numeric id")
		m, out, err := a.run("oauth-grants", "999999")
		require.ErrorContains(t, err, "404")
		require.Equal(t, "NotFound", m["error"].(map[string]any)["type"], out)
	})
}
