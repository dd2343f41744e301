package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// validBodies are valid request bodies for the operations with a {book} path value.
var validBodies = map[string]any{
	"books.update":         map[string]any{"status": "draft", "title": "hijacked"},
	"embed_domains.create": map[string]any{"domain": "evil.example"},
	"tracked_links.create": map[string]any{"name": "hijack"},
}

// validQueries are valid query strings for the operations with a {book} path value that need
// one (validation comes before the book is looked up, as for bodies).
var validQueries = map[string]string{
	"books.search": "?q=page",
}

func TestOtherWorkspacesBooksAreNotFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	keyA := h.workspace(t, "company", "live")
	keyB := h.workspace(t, "enterprise", "live")
	ridB := h.konva(t, keyB, "B's book", "publish")
	embB := h.do(t, "POST", "/api/v1/books/"+ridB+"/embed-domains", keyB, map[string]any{"domain": "b.example"})
	require.Equal(t, 200, embB.Status)

	// Every operation of the table with a {book} path value.
	n := 0
	for _, op := range h.svc.Operations() {
		if op.Internal || !strings.Contains(op.Path, "{book}") { // public reader routes are not tenant-scoped
			continue
		}
		n++
		path := strings.NewReplacer("{book}", ridB, "{embedDomain}", embB.data()["id"].(string)).Replace(op.Base + op.Path)
		path += validQueries[op.ID]
		r := h.do(t, op.Method, path, keyA, validBodies[op.ID])
		require.Equal(t, 404, r.Status, "%s %s: %s", op.Method, op.Path, r.Body)
		require.Equal(t, api.TypeNotFound, r.errType())
	}
	require.GreaterOrEqual(t, n, 8)
	// Operations naming a book in the body.
	r := h.do(t, "POST", "/api/v1/subscribers", keyA, map[string]any{"book_id": ridB, "email": "a@b.example"})
	require.Equal(t, 422, r.Status)
	require.Contains(t, r.details(), "book_id")

	// B's book is untouched and B still sees it; A's list does not hold it.
	r = h.do(t, "GET", "/api/v1/books/"+ridB, keyB, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "B's book", r.data()["name"])
	require.Len(t, h.do(t, "GET", "/api/v1/books/"+ridB+"/embed-domains", keyB, nil).list(), 1)
	require.Empty(t, h.do(t, "GET", "/api/v1/books", keyA, nil).list())
	// A's idempotency keys do not collide with B's.
	ka := h.do(t, "POST", "/api/v1/books/konva", keyA, konvaBody("a", "", 1), "Idempotency-Key", "same")
	kb := h.do(t, "POST", "/api/v1/books/konva", keyB, konvaBody("b", "", 1), "Idempotency-Key", "same")
	require.Equal(t, 201, ka.Status)
	require.Equal(t, 201, kb.Status)
	require.Empty(t, kb.Header.Get("X-Idempotent-Replay"))
}

func TestLiveKeyNeverSeesTestBooks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	live, ws := h.workspaceKey(t, "company", "live", "*")
	test := h.key(t, ws, "test", "*")
	testRid := h.konva(t, test, "sandbox", "publish")
	liveRid := h.konva(t, live, "production", "publish")

	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+testRid, live, nil).Status)
	require.Equal(t, 404, h.do(t, "PUT", "/api/v1/books/"+testRid, live, map[string]any{"status": "draft"}).Status)
	require.Equal(t, 404, h.do(t, "DELETE", "/api/v1/books/"+testRid, live, nil).Status)
	require.Equal(t, 404, h.do(t, "GET", "/api/v1/books/"+liveRid, test, nil).Status)
	for _, q := range []string{"", "?filter[status]=publish", "?sort=name", "?filter[name]=PRODUC"} {
		l := h.do(t, "GET", "/api/v1/books"+q, live, nil).list()
		require.Len(t, l, 1, q)
		require.Equal(t, liveRid, l[0].(map[string]any)["random_id"])
	}
	require.Equal(t, "test", h.do(t, "GET", "/api/v1/me", test, nil).data()["mode"])
}

func TestDataSurvivesRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "pro", "live", "*")
	rid := h.konva(t, key, "durable", "draft")
	upd := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "title": "durable v2", "background": "#fff"})
	require.Equal(t, 200, upd.Status)
	idem := h.do(t, "POST", "/api/v1/books/konva", key, konvaBody("once", "", 1), "Idempotency-Key", "k-restart")
	require.Equal(t, 201, idem.Status)
	thumb := upd.data()["thumbnail_url"].(string)
	l1 := h.do(t, "GET", "/api/v1/books?limit=1", key, nil)
	require.NotNil(t, l1.meta()["next_cursor"])

	h.restart(t)

	r := h.do(t, "GET", "/api/v1/books/"+rid, key, nil)
	require.Equal(t, 200, r.Status, "the key and the book survive")
	require.Equal(t, upd.data(), r.data())
	rep := h.do(t, "POST", "/api/v1/books/konva", key, konvaBody("once", "", 1), "Idempotency-Key", "k-restart")
	require.Equal(t, "true", rep.Header.Get("X-Idempotent-Replay"))
	require.Equal(t, idem.Body, rep.Body)
	// Cursors stay valid across restarts (the signing secret is persisted).
	l2 := h.do(t, "GET", "/api/v1/books?limit=1&cursor="+l1.meta()["next_cursor"].(string), key, nil)
	require.Equal(t, 200, l2.Status, "%s", l2.Body)
	// Ids keep increasing.
	rid3 := h.konva(t, key, "after restart", "draft")
	r3 := h.do(t, "GET", "/api/v1/books/"+rid3, key, nil)
	require.Greater(t, r3.data()["id"].(float64), r.data()["id"].(float64))
	// Files too.
	res, err := http.Get(thumb)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, 200, h.adminDo(t, "PUT", "/workspaces/"+itoa(ws), map[string]any{"plan": "company"}).Status)
}
