package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The OAuth endpoints anyone can call are limited per IP by --rate-limit-unauthenticated:
// registrations and authorization requests (oauth.Options.RateLimit); the redirect URIs of a
// registration are bounded.
func TestOAuthRegistrationRateLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.RateUnauthenticated = 3 })
	body := func(i int) map[string]any {
		return map[string]any{"client_name": "x" + itoa(int64(i)), "redirect_uris": []string{"https://app.example/cb"}}
	}
	var id string
	for i := 0; i < 3; i++ {
		r := h.do(t, "POST", "/oauth/register", "", body(i))
		require.Equal(t, 201, r.Status, "%s", r.Body)
		id, _ = r.JSON["client_id"].(string)
	}
	r := h.do(t, "POST", "/oauth/register", "", body(3))
	require.Equal(t, 429, r.Status, "%s", r.Body)
	require.Equal(t, "too_many_requests", r.JSON["error"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, "3", r.Header.Get("RateLimit-Limit"))
	// The same metadata registered again (hosts register on every connection) is the same
	// client, answered over the limit: nothing new is stored.
	for i := 0; i < 5; i++ {
		r = h.do(t, "POST", "/oauth/register", "", body(2))
		require.Equal(t, 201, r.Status, "%s", r.Body)
		require.Equal(t, id, r.JSON["client_id"])
	}

	// Authorization requests have a budget of their own.
	authURL := h.base + "/oauth/authorize?response_type=code&client_id=" + id +
		"&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&state=state-limit-1&code_challenge_method=S256" +
		"&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	for i := 0; i < 4; i++ {
		res, err := noRedirect.Get(authURL)
		require.NoError(t, err)
		res.Body.Close()
		want := http.StatusOK
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		require.Equal(t, want, res.StatusCode, "authorization request %d", i+1)
	}
}

func TestOAuthRegistrationRedirectBounds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	many := make([]string, 11)
	for i := range many {
		many[i] = "https://app.example/cb" + strings.Repeat("x", i)
	}
	r := h.do(t, "POST", "/oauth/register", "", map[string]any{"redirect_uris": many})
	require.Equal(t, 400, r.Status, "%s", r.Body)
	require.Equal(t, "invalid_redirect_uri", r.JSON["error"])
	r = h.do(t, "POST", "/oauth/register", "", map[string]any{"redirect_uris": []string{"https://app.example/" + strings.Repeat("x", 2048)}})
	require.Equal(t, 400, r.Status, "%s", r.Body)
	require.Equal(t, "invalid_redirect_uri", r.JSON["error"])
	r = h.do(t, "POST", "/oauth/register", "", map[string]any{"redirect_uris": many[:10]})
	require.Equal(t, 201, r.Status, "%s", r.Body)
}
