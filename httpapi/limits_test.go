package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/internal/testutil"
)

func TestRateLimits(t *testing.T) {
	t.Parallel()
	t.Run("per endpoint", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) { c.RateEndpoint, c.RateWorkspace = 3, 100 })
		key := h.workspace(t, "company", "live")
		for i := 0; i < 3; i++ {
			r := h.do(t, "GET", "/api/v1/books", key, nil)
			require.Equal(t, 200, r.Status)
			require.Equal(t, "3", r.Header.Get("RateLimit-Limit"))
			require.Equal(t, strconv.Itoa(2-i), r.Header.Get("RateLimit-Remaining"))
		}
		r := h.do(t, "GET", "/api/v1/books", key, nil)
		require.Equal(t, 429, r.Status)
		require.Equal(t, api.TypeTooManyRequests, r.errType())
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		require.NoError(t, err)
		require.True(t, ra >= 1 && ra <= 60, "Retry-After %d", ra)
		// Another operation of the same workspace has its own endpoint budget.
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/me", key, nil).Status)
		// Another workspace is not affected.
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", h.workspace(t, "company", "live"), nil).Status)
	})
	t.Run("per workspace, shared by its keys and modes", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) { c.RateWorkspace, c.RateEndpoint = 4, 100 })
		key, ws := h.workspaceKey(t, "company", "live", "*")
		test := h.key(t, ws, "test", "*")
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", key, nil).Status)
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/me", key, nil).Status)
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", test, nil).Status)
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/me", test, nil).Status)
		r := h.do(t, "GET", "/api/v1/books?limit=2", key, nil)
		require.Equal(t, 429, r.Status)
		require.NotEmpty(t, r.Header.Get("Retry-After"))
	})
	t.Run("unauthenticated per IP", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(c *Config) { c.RateUnauthenticated = 2 })
		require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", "", nil).Status)
		require.Equal(t, 401, h.do(t, "GET", "/api/v1/books", "wsk_live_bad", nil).Status)
		r := h.do(t, "GET", "/api/v1/books", "wsk_live_bad", nil)
		require.Equal(t, 429, r.Status)
		require.NotEmpty(t, r.Header.Get("Retry-After"))
		// Health is neither authenticated nor limited; valid keys are not limited by IP.
		for i := 0; i < 5; i++ {
			require.Equal(t, 200, h.do(t, "GET", "/api/v1/health", "", nil).Status)
		}
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/books", h.workspace(t, "free", "live"), nil).Status)
	})
	t.Run("zero turns limits off", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil) // all zero
		key := h.workspace(t, "company", "live")
		for i := 0; i < 150; i++ {
			require.Equal(t, 200, h.do(t, "GET", "/api/v1/me", key, nil).Status)
		}
	})
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "idem", "draft")
	put := func(body any, k string) *resp {
		return h.do(t, "PUT", "/api/v1/books/"+rid, key, body, "Idempotency-Key", k)
	}

	first := put(map[string]any{"status": "draft", "title": "one"}, "k1")
	require.Equal(t, 200, first.Status)
	require.Empty(t, first.Header.Get("X-Idempotent-Replay"))
	// A change in between: the replay still returns the stored first response.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "draft", "title": "two"}).Status)
	again := put(map[string]any{"status": "draft", "title": "one"}, "k1")
	require.Equal(t, 200, again.Status)
	require.Equal(t, "true", again.Header.Get("X-Idempotent-Replay"))
	require.Equal(t, first.Body, again.Body)
	require.Equal(t, "two", h.do(t, "GET", "/api/v1/books/"+rid, key, nil).data()["name"], "a replay does not execute again")

	// The same key with another body is a 422.
	diff := put(map[string]any{"status": "draft", "title": "three"}, "k1")
	require.Equal(t, 422, diff.Status)
	require.Contains(t, diff.details(), "Idempotency-Key")

	// Failures are not stored: a retry with the same key runs again.
	bad := put(map[string]any{"status": "nope"}, "k2")
	require.Equal(t, 422, bad.Status)
	fixed := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "nope"}, "Idempotency-Key", "k2")
	require.Equal(t, 422, fixed.Status)
	require.Empty(t, fixed.Header.Get("X-Idempotent-Replay"))
	ok := put(map[string]any{"status": "publish"}, "k3")
	require.Equal(t, 200, ok.Status)

	// Keys that are too long are refused.
	require.Equal(t, 422, put(map[string]any{"status": "draft"}, strings.Repeat("k", api.MaxIdempotencyKey+1)).Status)

	// Deleting twice with one key: the second is a replay of the first 200, not a 404.
	d1 := h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil, "Idempotency-Key", "del")
	d2 := h.do(t, "DELETE", "/api/v1/books/"+rid, key, nil, "Idempotency-Key", "del")
	require.Equal(t, 200, d1.Status)
	require.Equal(t, 200, d2.Status)
	require.Equal(t, "true", d2.Header.Get("X-Idempotent-Replay"))
}

func TestIdempotencyConflictWhileInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	body := konvaBody("slow", "", 0)
	// Slow enough that the second request arrives while the first is in flight (it waits for
	// the first to be registered), light enough to finish well within the client's timeout on
	// a loaded 2-core machine under -race.
	imgs := make([]any, 60)
	big := pngBase64(700, 900)
	for i := range imgs {
		imgs[i] = big
	}
	body["page_images"] = imgs
	var wg sync.WaitGroup
	var first *resp
	wg.Add(1)
	go func() {
		defer wg.Done()
		first = h.do(t, "POST", "/api/v1/books/konva", key, body, "Idempotency-Key", "slow-1")
	}()
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
		if !h.svc.caller.InFlight("slow-1") {
			return errors.New("the first request (Idempotency-Key slow-1) is not in flight yet")
		}
		return nil
	})
	second := h.do(t, "POST", "/api/v1/books/konva", key, body, "Idempotency-Key", "slow-1")
	wg.Wait()
	require.Equal(t, 201, first.Status, "%s", first.Body)
	require.Equal(t, 409, second.Status, "%s", second.Body)
	require.Equal(t, api.TypeIdempotencyConflict, second.errType())
	third := h.do(t, "POST", "/api/v1/books/konva", key, body, "Idempotency-Key", "slow-1")
	require.Equal(t, "true", third.Header.Get("X-Idempotent-Replay"))
	require.Len(t, h.do(t, "GET", "/api/v1/books", key, nil).list(), 1, "one book, not two")
}

func TestBodyLimitsAndRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 2 << 20 })
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "b", "draft")

	// Over an operation's JSON cap (1 MiB) and over the server's cap: 413 in the envelope.
	r := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "draft", "description": strings.Repeat("a", api.DefaultMaxJSONBody)})
	require.Equal(t, 413, r.Status)
	require.Equal(t, api.TypePayloadTooLarge, r.errType())
	// Over the server's cap the 413 comes from the headers alone, before the body is read
	// (a client still sending may see the connection close): announce a large body and read.
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /api/v1/books/konva HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", key, 3<<20)
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	require.Equal(t, 413, res.StatusCode)
	require.Contains(t, string(raw), api.TypePayloadTooLarge)
	// The server keeps working.
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/books/"+rid, key, nil).Status)

	r = h.do(t, "GET", "/api/v1/nothing-here", key, nil)
	require.Equal(t, 404, r.Status)
	require.Equal(t, api.TypeNotFound, r.errType())
	r = h.do(t, "PATCH", "/api/v1/books/"+rid, key, nil)
	require.Equal(t, 405, r.Status)
	require.Equal(t, api.TypeMethodNotAllowed, r.errType())
	r = h.do(t, "GET", "/api/v1/books/"+rid+"/", key, nil)
	require.Equal(t, 404, r.Status)
}
