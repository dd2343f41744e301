package oauth

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ory/fosite"
	"github.com/stretchr/testify/require"

	"flipbook/errs"
	"flipbook/storage"
)

func testRequest(id string) *fosite.Request {
	return &fosite.Request{ID: id, RequestedAt: time.Now().UTC(), Client: &fosite.DefaultClient{ID: "client-1"},
		GrantedScope: fosite.Arguments{"books:read"}, Form: map[string][]string{},
		Session: &Session{Workspace: 7, Mode: "live", KeyID: 3, ExpiresAt: map[fosite.TokenType]time.Time{}}}
}

// activeTokens counts the access tokens and active refresh tokens of a grant.
func activeTokens(t *testing.T, s *Store, id string) int {
	t.Helper()
	entries, err := s.grantEntries(id)
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		var sr storedRequest
		if err := s.st.OAuthGet(e[0], e[1], &sr); err != nil {
			require.ErrorIs(t, err, errs.ErrNotFound)
			continue
		}
		if e[0] == kindAccess || (e[0] == kindRefresh && sr.Active) {
			n++
		}
	}
	return n
}

// An admin revoke ends a grant for good: tokens a refresh in flight tries to issue under it
// afterwards are refused, and the grant record is not recreated; other grants are untouched.
func TestRevokedGrantStaysEnded(t *testing.T) {
	t.Parallel()
	st, err := storage.Open(t.TempDir(), storage.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s := &Store{st: st}
	ctx := context.Background()

	require.NoError(t, s.CreateAccessTokenSession(ctx, "at-1", testRequest("grant-1")))
	require.NoError(t, s.CreateRefreshTokenSession(ctx, "rt-1", "at-1", testRequest("grant-1")))
	var g grantRecord
	require.NoError(t, st.OAuthGet(kindGrant, "grant-1", &g))
	require.Equal(t, 2, activeTokens(t, s, "grant-1"))

	require.NoError(t, s.RevokeGrant(ctx, "grant-1"))
	require.Zero(t, activeTokens(t, s, "grant-1"))
	// What a refresh that read rt-1 before the revoke does next.
	err = s.CreateAccessTokenSession(ctx, "at-2", testRequest("grant-1"))
	require.True(t, errors.Is(err, fosite.ErrInactiveToken), "%v", err)
	err = s.CreateRefreshTokenSession(ctx, "rt-2", "at-2", testRequest("grant-1"))
	require.True(t, errors.Is(err, fosite.ErrInactiveToken), "%v", err)
	require.Zero(t, activeTokens(t, s, "grant-1"))
	require.ErrorIs(t, st.OAuthGet(kindGrant, "grant-1", &g), errs.ErrNotFound, "the grant record is not recreated")

	require.NoError(t, s.CreateAccessTokenSession(ctx, "at-3", testRequest("grant-2")), "another grant")

	// Refreshes racing a revoke: whatever the order, nothing of the grant is left afterwards.
	for round := 0; round < 20; round++ {
		id := "race-" + strconv.Itoa(round)
		require.NoError(t, s.CreateRefreshTokenSession(ctx, id+"-rt", "", testRequest(id)))
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				sig := id + "-at-" + strconv.Itoa(i)
				if err := s.CreateAccessTokenSession(ctx, sig, testRequest(id)); err == nil {
					_ = s.CreateRefreshTokenSession(ctx, sig+"-rt", sig, testRequest(id))
				}
			}(i)
		}
		require.NoError(t, s.RevokeGrant(ctx, id))
		wg.Wait()
		require.Zero(t, activeTokens(t, s, id), "round %d", round)
		require.ErrorIs(t, st.OAuthGet(kindGrant, id, &g), errs.ErrNotFound, "round %d", round)
	}
}

func expiringRequest(id string, tt fosite.TokenType, exp time.Time) *fosite.Request {
	r := testRequest(id)
	r.Session.(*Session).ExpiresAt[tt] = exp
	return r
}

// Purge removes grants whose every record expired (records, index entries, grant record and its
// indexes) and keeps live ones, revoked grants whose refresh tokens could still be presented
// (with their ended marker), and young markers.
func TestPurgeExpiredGrants(t *testing.T) {
	t.Parallel()
	st, err := storage.Open(t.TempDir(), storage.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s := &Store{st: st}
	ctx := context.Background()
	now := time.Now()
	past, future := now.Add(-3*time.Hour), now.Add(time.Hour)

	require.NoError(t, s.CreateAccessTokenSession(ctx, "at-old", expiringRequest("cc-old", fosite.AccessToken, past)))
	require.NoError(t, s.CreateAccessTokenSession(ctx, "at-new", expiringRequest("cc-new", fosite.AccessToken, future)))
	require.NoError(t, s.CreateRefreshTokenSession(ctx, "rt-rev", "", expiringRequest("revoked", fosite.RefreshToken, future)))
	require.NoError(t, s.RevokeGrant(ctx, "revoked"))
	require.NoError(t, s.CreateAuthorizeCodeSession(ctx, "code-old", expiringRequest("code-only", fosite.AuthorizeCode, past)))
	old := st.NewOAuthBatch()
	require.NoError(t, old.Put(kindEnded, "long-gone", now.Add(-40*24*time.Hour)))
	require.NoError(t, old.Commit())

	n, err := s.purge(now.Add(-time.Hour), now.Add(-30*24*time.Hour), time.Hour, 30*24*time.Hour)
	require.NoError(t, err)
	require.Equal(t, 2, n, "cc-old and code-only")

	var g grantRecord
	var sr storedRequest
	var at time.Time
	require.ErrorIs(t, st.OAuthGet(kindGrant, "cc-old", &g), errs.ErrNotFound)
	require.ErrorIs(t, st.OAuthGet(kindAccess, "at-old", &sr), errs.ErrNotFound)
	require.ErrorIs(t, st.OAuthGet(kindCode, "code-old", &sr), errs.ErrNotFound)
	for _, idx := range []struct{ kind, prefix string }{{kindReq, "cc-old/"}, {kindReq, "code-only/"},
		{kindCGrant, "client-1/cc-old"}, {kindKGrant, "3/cc-old"}, {kindWGrant, "7/cc-old"}} {
		found := false
		require.NoError(t, st.OAuthList(idx.kind, idx.prefix, func(string, []byte) bool { found = true; return false }))
		require.False(t, found, "%s/%s left", idx.kind, idx.prefix)
	}
	require.ErrorIs(t, st.OAuthGet(kindEnded, "long-gone", &at), errs.ErrNotFound)

	require.NoError(t, st.OAuthGet(kindGrant, "cc-new", &g), "a live grant stays")
	require.NoError(t, st.OAuthGet(kindAccess, "at-new", &sr))
	require.NoError(t, st.OAuthGet(kindRefresh, "rt-rev", &sr), "a revoked grant's unexpired refresh token stays")
	require.NoError(t, st.OAuthGet(kindEnded, "revoked", &at), "and its ended marker")
	err = s.CreateAccessTokenSession(ctx, "at-late", testRequest("revoked"))
	require.True(t, errors.Is(err, fosite.ErrInactiveToken), "%v", err)

	// A second purge finds nothing more.
	n, err = s.purge(now.Add(-time.Hour), now.Add(-30*24*time.Hour), time.Hour, 30*24*time.Hour)
	require.NoError(t, err)
	require.Zero(t, n)
}
