package mcp

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/storage"
)

// The SDK path authenticates once: verify takes the caller Serve authenticated (carried in the
// request's context) instead of authenticating the token again. The server here has no
// Caller, so a second authentication would fail the test.
func TestVerifyTakesServeCaller(t *testing.T) {
	t.Parallel()
	s := &Server{}
	p := &api.Principal{Tenant: storage.Tenant{Workspace: 7, Mode: storage.ModeLive},
		Key: &storage.APIKey{Scopes: []string{"books:read"}}}
	ctx := context.WithValue(context.Background(), authenticatedKey{}, p)
	info, err := s.verify(ctx, "fb_live_anything", httptest.NewRequest("POST", "/mcp/public-api", nil))
	require.NoError(t, err)
	require.Same(t, p, info.Extra[principalKey])
	require.Equal(t, []string{"books:read"}, info.Scopes)
	require.Equal(t, "7/"+storage.ModeLive.String(), info.UserID)
}
