package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// adminCodeToken approves cfg with key (PKCE, REST resource) and exchanges the code.
func adminCodeToken(t *testing.T, h *harness, cfg *oauth2.Config, key string) *oauth2.Token {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	q := approve(t, h, cfg.AuthCodeURL("state-admin-1", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", h.base+APIBase)), key)
	tok, err := cfg.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier),
		oauth2.SetAuthURLParam("resource", h.base+APIBase))
	require.NoError(t, err)
	return tok
}

// adminRefresh uses a refresh token once.
func adminRefresh(cfg *oauth2.Config, rt string) (*oauth2.Token, error) {
	return cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: rt, Expiry: time.Now().Add(-time.Minute)}).Token()
}

// adminByField indexes a list answer by one of its string fields.
func adminByField(r *resp, field string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, v := range r.list() {
		m := v.(map[string]any)
		out[m[field].(string)] = m
	}
	return out
}

func TestAdminOAuthClientsAndGrants(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	keyA, wsA := h.workspaceKey(t, "company", "live", "*")
	keyB, wsB := h.workspaceKey(t, "company", "live", "*")
	ctx := context.Background()
	wsPath := func(ws int64) string { return "/workspaces/" + itoa(ws) + "/oauth" }
	books := func(tok string) int { return h.do(t, "GET", "/api/v1/books", tok, nil).Status }

	// Workspace A: two grants of a public (DCR) client, one token of a client-credentials
	// client registered with A's key. Workspace B: one grant of the same public client.
	cfg := oauthClient(t, h, "http://127.0.0.1:9/callback")
	tok1 := adminCodeToken(t, h, cfg, keyA)
	g := h.adminDo(t, "GET", wsPath(wsA)+"/grants", nil)
	require.Equal(t, 200, g.Status, "%s", g.Body)
	require.Len(t, g.list(), 1)
	grant1 := g.list()[0].(map[string]any)["id"].(string)
	tok2 := adminCodeToken(t, h, cfg, keyA)
	tokB := adminCodeToken(t, h, cfg, keyB)
	reg := h.do(t, "POST", "/oauth/register", keyA, map[string]any{"client_name": "cron", "grant_types": []string{"client_credentials"},
		"scope": "books:read"})
	require.Equal(t, 201, reg.Status, "%s", reg.Body)
	cc := &clientcredentials.Config{ClientID: reg.JSON["client_id"].(string), ClientSecret: reg.JSON["client_secret"].(string),
		TokenURL: h.base + "/oauth/token"}
	ccTok, err := cc.Token(ctx)
	require.NoError(t, err)
	// A second client-credentials client, registered but never used, in workspace B.
	regB := h.do(t, "POST", "/oauth/register", keyB, map[string]any{"client_name": "cron B", "grant_types": []string{"client_credentials"}})
	require.Equal(t, 201, regB.Status, "%s", regB.Body)
	ccB := regB.JSON["client_id"].(string)
	for _, tok := range []string{tok1.AccessToken, tok2.AccessToken, tokB.AccessToken, ccTok.AccessToken} {
		require.Equal(t, 200, books(tok)) // and the credential cache now holds each
	}

	// The listings: each workspace sees its own.
	c := h.adminDo(t, "GET", wsPath(wsA)+"/clients", nil)
	require.Equal(t, 200, c.Status, "%s", c.Body)
	clients := adminByField(c, "client_id")
	require.Len(t, clients, 2, "%s", c.Body)
	dcr := clients[cfg.ClientID]
	require.Equal(t, "Test host", dcr["client_name"])
	require.Equal(t, "dcr", dcr["source"])
	require.Equal(t, false, dcr["registered"])
	require.Nil(t, dcr["key_id"])
	require.Equal(t, 2.0, dcr["grants"])
	require.Equal(t, 2.0, dcr["active_grants"])
	cron := clients[cc.ClientID]
	require.Equal(t, "cron", cron["client_name"])
	require.Equal(t, "key", cron["source"])
	require.Equal(t, true, cron["registered"])
	require.NotNil(t, cron["key_id"])
	require.Equal(t, []any{"books:read"}, cron["scopes"])
	require.Equal(t, []any{"client_credentials"}, cron["grant_types"])
	require.Equal(t, 1.0, cron["grants"])
	require.NotContains(t, clients, ccB)

	c = h.adminDo(t, "GET", wsPath(wsB)+"/clients", nil)
	require.Equal(t, 200, c.Status, "%s", c.Body)
	clientsB := adminByField(c, "client_id")
	require.Len(t, clientsB, 2, "%s", c.Body)
	require.Equal(t, 1.0, clientsB[cfg.ClientID]["grants"])
	require.Equal(t, true, clientsB[ccB]["registered"])
	require.Equal(t, 0.0, clientsB[ccB]["grants"])

	g = h.adminDo(t, "GET", wsPath(wsA)+"/grants", nil)
	require.Equal(t, 200, g.Status, "%s", g.Body)
	grants := adminByField(g, "id")
	require.Len(t, grants, 3, "%s", g.Body)
	g1 := grants[grant1]
	require.Equal(t, cfg.ClientID, g1["client_id"])
	require.Equal(t, "Test host", g1["client_name"])
	require.Equal(t, "live", g1["mode"])
	require.Equal(t, []any{h.base + APIBase}, g1["resources"])
	require.Equal(t, true, g1["active"])
	require.NotNil(t, g1["created_at"])
	require.NotNil(t, g1["expires_at"])
	require.NotZero(t, g1["key_id"])
	nCC := 0
	for _, v := range grants {
		if v["client_id"] == cc.ClientID {
			nCC++
			require.Equal(t, []any{"books:read"}, v["scopes"])
		}
	}
	require.Equal(t, 1, nCC)
	g = h.adminDo(t, "GET", wsPath(wsB)+"/grants", nil)
	require.Len(t, g.list(), 1, "%s", g.Body)
	grantB := g.list()[0].(map[string]any)["id"].(string)
	require.NotContains(t, grants, grantB)

	// Revoking a grant: its access token is refused on the next request (though it was
	// cached), its refresh token no longer refreshes; the other grants are untouched.
	r := h.adminDo(t, "DELETE", wsPath(wsA)+"/grants/"+grant1, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, true, r.data()["revoked"])
	res := h.do(t, "GET", "/api/v1/books", tok1.AccessToken, nil)
	require.Equal(t, 401, res.Status)
	require.Contains(t, res.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	_, err = adminRefresh(cfg, tok1.RefreshToken)
	require.Error(t, err)
	require.Equal(t, "invalid_grant", oauthErr(err))
	require.Equal(t, 200, books(tok2.AccessToken))
	g = h.adminDo(t, "GET", wsPath(wsA)+"/grants", nil)
	require.Len(t, g.list(), 2, "%s", g.Body)
	require.NotContains(t, adminByField(g, "id"), grant1)

	// 404s: the grant again, another workspace's grant, an unknown one, an unknown workspace.
	for _, p := range []string{wsPath(wsA) + "/grants/" + grant1, wsPath(wsA) + "/grants/" + grantB,
		wsPath(wsA) + "/grants/nope", wsPath(999999) + "/grants/" + grantB} {
		r = h.adminDo(t, "DELETE", p, nil)
		require.Equal(t, 404, r.Status, "%s: %s", p, r.Body)
		require.Equal(t, "NotFound", r.errType())
	}
	require.Equal(t, 200, books(tokB.AccessToken), "B's grant survives A's attempt")
	for _, p := range []string{wsPath(999999) + "/grants", wsPath(999999) + "/clients"} {
		require.Equal(t, 404, h.adminDo(t, "GET", p, nil).Status, p)
	}

	// A refresh of the surviving grant keeps it listed, as one grant.
	tok2b, err := adminRefresh(cfg, tok2.RefreshToken)
	require.NoError(t, err)
	require.Equal(t, 200, books(tok2b.AccessToken))

	// Revoking the public client ends all its grants in A (the refreshed one too), not B's.
	r = h.adminDo(t, "DELETE", wsPath(wsA)+"/clients/"+url.PathEscape(cfg.ClientID), nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, 1.0, r.data()["grants"])
	require.Equal(t, cfg.ClientID, r.data()["client_id"])
	require.Equal(t, 401, books(tok2.AccessToken))
	require.Equal(t, 401, books(tok2b.AccessToken))
	_, err = adminRefresh(cfg, tok2b.RefreshToken)
	require.Error(t, err)
	require.Equal(t, 200, books(tokB.AccessToken))
	tokB2, err := adminRefresh(cfg, tokB.RefreshToken)
	require.NoError(t, err, "B's grant still refreshes")
	require.Equal(t, 200, books(tokB2.AccessToken))
	// A public client is not deleted: it may be approved again.
	tok3 := adminCodeToken(t, h, cfg, keyA)
	require.Equal(t, 200, books(tok3.AccessToken))

	// Revoking the client-credentials client ends its token and deletes it.
	r = h.adminDo(t, "DELETE", wsPath(wsA)+"/clients/"+cc.ClientID, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, 1.0, r.data()["grants"])
	require.Equal(t, 401, books(ccTok.AccessToken))
	_, err = cc.Token(ctx)
	require.Equal(t, "invalid_client", oauthErr(err))
	c = h.adminDo(t, "GET", wsPath(wsA)+"/clients", nil)
	clients = adminByField(c, "client_id")
	require.NotContains(t, clients, cc.ClientID)
	require.Equal(t, 1.0, clients[cfg.ClientID]["grants"], "the new approval")

	// A registered client with no grant is revoked (deleted) too; B's client is not A's.
	r = h.adminDo(t, "DELETE", wsPath(wsA)+"/clients/"+ccB, nil)
	require.Equal(t, 404, r.Status, "%s", r.Body)
	r = h.adminDo(t, "DELETE", wsPath(wsB)+"/clients/"+ccB, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, 0.0, r.data()["grants"])
	c = h.adminDo(t, "GET", wsPath(wsB)+"/clients", nil)
	require.NotContains(t, adminByField(c, "client_id"), ccB)

	// 404s for clients.
	for _, p := range []string{wsPath(wsA) + "/clients/" + cc.ClientID, wsPath(wsA) + "/clients/fbc_nope",
		wsPath(999999) + "/clients/" + cfg.ClientID} {
		r = h.adminDo(t, "DELETE", p, nil)
		require.Equal(t, 404, r.Status, "%s: %s", p, r.Body)
		require.Equal(t, "NotFound", r.errType())
	}

	// The admin token is required: none, a wrong one, an API key.
	for _, tok := range []string{"", "adm_wrong", keyA} {
		for _, call := range [][2]string{{"GET", wsPath(wsA) + "/clients"}, {"GET", wsPath(wsA) + "/grants"},
			{"DELETE", wsPath(wsA) + "/clients/" + cfg.ClientID}, {"DELETE", wsPath(wsA) + "/grants/x"}} {
			r = h.do(t, call[0], "/admin/v1"+call[1], tok, nil)
			require.Equal(t, 401, r.Status, "%s %s with %q: %s", call[0], call[1], tok, r.Body)
		}
	}
	require.Equal(t, 200, books(tok3.AccessToken), "nothing was revoked without the admin token")
}

// A metadata-document client's id is a URL: the admin API takes it percent-encoded in the path.
func TestAdminOAuthRevokeCIMDClient(t *testing.T) {
	t.Parallel()
	var docURL string
	doc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "Doc host",
			"redirect_uris": []string{"http://127.0.0.1:9/cb"}, "token_endpoint_auth_method": "none"})
	}))
	defer doc.Close()
	docURL = doc.URL + "/client.json"
	h := newHarness(t, func(c *Config) { c.AllowPrivateTargets = true })
	key, ws := h.workspaceKey(t, "company", "live", "*")
	cfg := &oauth2.Config{ClientID: docURL, RedirectURL: "http://127.0.0.1:9/cb",
		Endpoint: oauth2.Endpoint{AuthURL: h.base + "/oauth/authorize", TokenURL: h.base + "/oauth/token",
			AuthStyle: oauth2.AuthStyleInParams}}
	tok := adminCodeToken(t, h, cfg, key)
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status)

	c := h.adminDo(t, "GET", "/workspaces/"+itoa(ws)+"/oauth/clients", nil)
	require.Equal(t, 200, c.Status, "%s", c.Body)
	require.Len(t, c.list(), 1)
	m := c.list()[0].(map[string]any)
	require.Equal(t, docURL, m["client_id"])
	require.Equal(t, "Doc host", m["client_name"])
	require.Equal(t, "cimd", m["source"])

	r := h.adminDo(t, "DELETE", "/workspaces/"+itoa(ws)+"/oauth/clients/"+url.PathEscape(docURL), nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, docURL, r.data()["client_id"])
	require.Equal(t, 1.0, r.data()["grants"])
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status)
	_, err := adminRefresh(cfg, tok.RefreshToken)
	require.Error(t, err)
	g := h.adminDo(t, "GET", "/workspaces/"+itoa(ws)+"/oauth/grants", nil)
	require.Empty(t, g.list(), "%s", g.Body)
}
