package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/actors"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")

	t.Run("missing key", func(t *testing.T) {
		r := h.do(t, "GET", "/api/v1/books", "", nil)
		require.Equal(t, 401, r.Status)
		require.Equal(t, api.TypeUnauthenticated, r.errType())
		require.NotEmpty(t, r.Header.Get("X-Request-Id"))
	})
	t.Run("wrong key", func(t *testing.T) {
		r := h.do(t, "GET", "/api/v1/books", "wsk_live_nottherightkey", nil)
		require.Equal(t, 401, r.Status)
	})
	t.Run("non-bearer scheme", func(t *testing.T) {
		r := h.do(t, "GET", "/api/v1/books", "", nil, "Authorization", "Basic "+key)
		require.Equal(t, 401, r.Status)
	})
	t.Run("scheme in any case", func(t *testing.T) {
		for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
			r := h.do(t, "GET", "/api/v1/books", "", nil, "Authorization", scheme+" "+key)
			require.Equal(t, 200, r.Status, "%s: %s", scheme, r.Body)
		}
	})
	t.Run("api_key query parameter", func(t *testing.T) {
		r := h.do(t, "GET", "/api/v1/books?api_key="+key, "", nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
	})
	t.Run("health needs no key", func(t *testing.T) {
		r := h.do(t, "GET", "/api/v1/health", "", nil)
		require.Equal(t, 200, r.Status)
		require.Equal(t, "ok", r.JSON["status"])
		require.Equal(t, Version, r.JSON["version"])
		require.NotEmpty(t, r.JSON["timestamp"])
	})
	t.Run("me", func(t *testing.T) {
		r := h.do(t, "GET", "/api/v1/me", key, nil)
		require.Equal(t, 200, r.Status)
		d := r.data()
		require.Equal(t, float64(ws), d["workspace"].(map[string]any)["id"])
		require.Equal(t, "company", d["workspace"].(map[string]any)["plan"])
		require.Equal(t, "company", d["plan"].(map[string]any)["name"])
		require.Equal(t, true, d["plan"].(map[string]any)["analytics"])
		require.Equal(t, []any{"*"}, d["scopes"])
		require.Equal(t, "live", d["mode"])
	})
	t.Run("keys are stored hashed", func(t *testing.T) {
		k, err := h.svc.Store.KeyByHash(storage.HashSecret(key))
		require.NoError(t, err)
		require.NotContains(t, string(k.Hash), key)
		_, err = h.svc.Store.KeyByHash([]byte(key))
		require.ErrorIs(t, err, errs.ErrNotFound)
	})
	t.Run("admin surface needs the admin token", func(t *testing.T) {
		r := h.do(t, "POST", "/admin/v1/workspaces", "", map[string]any{"name": "x", "plan": "pro"})
		require.Equal(t, 401, r.Status)
		r = h.do(t, "POST", "/admin/v1/workspaces", key, map[string]any{"name": "x", "plan": "pro"})
		require.Equal(t, 401, r.Status)
	})
}

func TestScopes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	full, ws := h.workspaceKey(t, "company", "live", "*")
	rid := h.konva(t, full, "scoped", "draft")
	readOnly := h.key(t, ws, "live", "books:read", "analytics:read")
	writeOnly := h.key(t, ws, "live", "books:write")
	none := h.key(t, ws, "live", "brand:read")

	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books/"+rid, readOnly, nil).Status)
	r := h.do(t, "PUT", "/api/v1/books/"+rid, readOnly, map[string]any{"status": "draft"})
	require.Equal(t, 403, r.Status)
	require.Equal(t, api.TypeMissingScope, r.errType())
	e := r.JSON["error"].(map[string]any)
	require.Equal(t, []any{"books:read", "analytics:read"}, e["scopes"], "the error lists the key's scopes")
	require.Equal(t, "books:write", e["required_scope"])

	require.Equal(t, 403, h.do(t, "GET", "/api/v1/books", writeOnly, nil).Status)
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, writeOnly, map[string]any{"status": "draft"}).Status)
	require.Equal(t, 403, h.do(t, "DELETE", "/api/v1/books/"+rid, none, nil).Status)
	require.Equal(t, 403, h.do(t, "POST", "/api/v1/books/konva", readOnly, konvaBody("x", "", 1)).Status)
	// Identity needs no scope.
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/me", none, nil).Status)
}

func TestRevokedAndRotatedKeysStopAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	_, ws := h.workspaceKey(t, "pro", "live", "*")
	k := h.adminDo(t, "POST", "/workspaces/"+itoa(ws)+"/keys", map[string]any{"scopes": []any{"books:read"}})
	require.Equal(t, 201, k.Status)
	id := int64(k.data()["id"].(float64))
	old := k.data()["key"].(string)
	require.Regexp(t, `^wsk_live_[0-9A-Za-z]{40}$`, old)
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", old, nil).Status) // now cached

	rot := h.adminDo(t, "POST", "/keys/"+itoa(id)+"/rotate", nil)
	require.Equal(t, 201, rot.Status)
	newKey := rot.data()["key"].(string)
	require.NotEqual(t, old, newKey)
	require.Equal(t, float64(id), rot.data()["id"])
	require.Equal(t, []any{"books:read"}, rot.data()["scopes"])
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", old, nil).Status, "rotated key must fail at once")
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", newKey, nil).Status)

	rev := h.adminDo(t, "DELETE", "/keys/"+itoa(id), nil)
	require.Equal(t, 200, rev.Status)
	require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", newKey, nil).Status, "revoked key must fail at once")
	require.Equal(t, 404, h.adminDo(t, "DELETE", "/keys/"+itoa(id), nil).Status)
}

func TestPlanChangeTakesEffectAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "free", "live", "*")
	r := h.do(t, "GET", "/api/v1/me", key, nil)
	require.Equal(t, "free", r.data()["workspace"].(map[string]any)["plan"])
	up := h.adminDo(t, "PUT", "/workspaces/"+itoa(ws), map[string]any{"plan": "enterprise"})
	require.Equal(t, 200, up.Status)
	require.Equal(t, "enterprise", up.data()["plan"])
	r = h.do(t, "GET", "/api/v1/me", key, nil)
	require.Equal(t, "enterprise", r.data()["workspace"].(map[string]any)["plan"])
}

func TestPlanGate(t *testing.T) {
	t.Parallel()
	// The table-level gate: an operation with a minimum plan refuses lower plans with 403.
	op := &api.Operation{ID: "x", Plan: actors.PlanCompany}
	for plan, want := range map[string]bool{"free": false, "pro": false, "company": true, "enterprise": true} {
		p := &api.Principal{Key: &storage.APIKey{Scopes: []string{"*"}}, Workspace: &storage.Workspace{Plan: plan}}
		err := api.Authorize(op, p)
		if want {
			require.Nil(t, err, plan)
		} else {
			require.NotNil(t, err, plan)
			require.Equal(t, 403, err.Status)
			require.Equal(t, api.TypePlanRequired, err.Type)
		}
	}

	// Over HTTP: the published-book limit of the free plan.
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "free", "live", "*")
	limit := actors.Plans["free"].PublishedBooks
	for i := 0; i < limit; i++ {
		h.konva(t, key, "pub", "publish")
	}
	r := h.do(t, "POST", "/api/v1/books/konva", key, konvaBody("one too many", "publish", 1))
	require.Equal(t, 403, r.Status, "%s", r.Body)
	require.Equal(t, api.TypePlanRequired, r.errType())
	draft := h.konva(t, key, "draft is fine", "draft")
	r = h.do(t, "PUT", "/api/v1/books/"+draft, key, map[string]any{"status": "publish"})
	require.Equal(t, 403, r.Status)
	r = h.do(t, "PUT", "/api/v1/books/"+draft, key, map[string]any{"status": "schedule", "published_date": "2031-01-01T00:00:00Z"})
	require.Equal(t, 403, r.Status, "scheduled books count toward the limit")
	// Upgrading lifts it.
	require.Equal(t, 200, h.adminDo(t, "PUT", "/workspaces/"+itoa(ws), map[string]any{"plan": "company"}).Status)
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+draft, key, map[string]any{"status": "publish"}).Status)
}
