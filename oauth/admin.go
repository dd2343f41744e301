package oauth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"

	"flipbook/errs"
)

// Administration of a workspace's OAuth clients and grants (the admin API, docs/OAUTH.md
// "Administration"): the grants are found through the wgrant index (workspace → request id),
// the client-credentials clients registered with the workspace's keys through wclient.

// ClientInfo is a client as the admin listing shows it: one holding grants in the workspace,
// or a client-credentials client registered with one of the workspace's keys.
type ClientInfo struct {
	ID         string
	Name       string
	URI        string
	Source     string // dcr, cimd, key; "" when the client's record is gone
	GrantTypes []string
	AuthMethod string
	CreatedAt  time.Time // zero when unknown
	// Registered: a client-credentials client registered with an API key of this workspace
	// (revoking the client deletes it); KeyID, Mode and Scopes are that key's.
	Registered bool
	KeyID      int64
	Mode       string
	Scopes     []string
	// Grants counts its grants in the workspace; ActiveGrants those whose tokens would still
	// be accepted.
	Grants       int
	ActiveGrants int
}

// GrantInfo is a grant (a request id: an authorization approved with a key, with its refresh
// family, or a client-credentials token) as the admin listing shows it.
type GrantInfo struct {
	ID         string
	ClientID   string
	ClientName string
	KeyID      int64
	Mode       string
	Scopes     []string
	Audience   []string // the resources the grant's tokens are for
	CreatedAt  time.Time
	// Active: the grant still has an unexpired, unrevoked access or refresh token and the key
	// that approved it is neither revoked nor rotated. ExpiresAt is the latest expiry of its
	// live tokens (zero when none is live).
	Active    bool
	ExpiresAt time.Time
}

// workspaceGrants reads the grant records of a workspace (wgrant index).
func (s *Server) workspaceGrants(ws int64) ([]grantRecord, error) {
	var ids []string
	if err := s.st.OAuthList(kindWGrant, itoa(ws)+"/", func(id string, _ []byte) bool {
		if _, rid, ok := strings.Cut(id, "/"); ok && rid != "" {
			ids = append(ids, rid)
		}
		return true
	}); err != nil {
		return nil, err
	}
	out := make([]grantRecord, 0, len(ids))
	for _, id := range ids {
		var g grantRecord
		if err := s.st.OAuthGet(kindGrant, id, &g); err != nil {
			if errors.Is(err, errs.ErrNotFound) {
				continue
			}
			return nil, err
		}
		if g.Workspace == ws {
			out = append(out, g)
		}
	}
	return out, nil
}

// liveUntil is the latest expiry of a grant's live (unexpired, unrevoked) tokens, zero when
// none is live, and the session of one of them.
func (s *Server) liveUntil(requestID string, now time.Time) (time.Time, *Session, error) {
	entries, err := s.store.grantEntries(requestID)
	if err != nil {
		return time.Time{}, nil, err
	}
	var until time.Time
	var sess *Session
	for _, e := range entries {
		var tt fosite.TokenType
		switch e[0] {
		case kindAccess:
			tt = fosite.AccessToken
		case kindRefresh:
			tt = fosite.RefreshToken
		default:
			continue
		}
		var sr storedRequest
		if err := s.st.OAuthGet(e[0], e[1], &sr); err != nil {
			if errors.Is(err, errs.ErrNotFound) {
				continue
			}
			return time.Time{}, nil, err
		}
		if !sr.Active || sr.Session == nil {
			continue
		}
		exp := sr.Session.GetExpiresAt(tt)
		if exp.IsZero() { // no recorded expiry: the lifespan from when it was requested
			ttl := s.o.RefreshTTL
			if tt == fosite.AccessToken {
				ttl = s.o.AccessTTL
			}
			exp = sr.RequestedAt.Add(ttl)
		}
		if exp.After(now) && exp.After(until) {
			until, sess = exp, sr.Session
		}
	}
	return until, sess, nil
}

// grantInfo completes a grant record for the listing.
func (s *Server) grantInfo(g *grantRecord, now time.Time) (GrantInfo, error) {
	gi := GrantInfo{ID: g.ID, ClientID: g.ClientID, KeyID: g.KeyID, Mode: g.Mode,
		Scopes: g.Scopes, Audience: g.Audience, CreatedAt: g.CreatedAt}
	if c := s.storedClient(g.ClientID); c != nil {
		gi.ClientName = c.Name
	}
	until, sess, err := s.liveUntil(g.ID, now)
	if err != nil {
		return gi, err
	}
	// A live token whose key was revoked or rotated is refused all the same.
	if !until.IsZero() && s.checkKey(sess) == nil {
		gi.Active, gi.ExpiresAt = true, until
	}
	return gi, nil
}

// storedClient is a client as stored, without fetching anything: a registered client, or the
// cached metadata document of a CIMD client; nil when neither is there.
func (s *Server) storedClient(id string) *Client {
	kind := kindClient
	if isCIMD(id) {
		kind = kindCIMD
	}
	var c Client
	if err := s.st.OAuthGet(kind, id, &c); err != nil {
		return nil
	}
	return &c
}

// WorkspaceGrants lists the workspace's grants, newest first.
func (s *Server) WorkspaceGrants(ws int64) ([]GrantInfo, error) {
	grants, err := s.workspaceGrants(ws)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]GrantInfo, 0, len(grants))
	for i := range grants {
		gi, err := s.grantInfo(&grants[i], now)
		if err != nil {
			return nil, err
		}
		out = append(out, gi)
	}
	slices.SortStableFunc(out, func(a, b GrantInfo) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// registeredClients are the ids of the client-credentials clients registered with the
// workspace's keys (wclient index).
func (s *Server) registeredClients(ws int64) ([]string, error) {
	var ids []string
	err := s.st.OAuthList(kindWClient, itoa(ws)+"/", func(id string, _ []byte) bool {
		if _, cid, ok := strings.Cut(id, "/"); ok && cid != "" {
			ids = append(ids, cid)
		}
		return true
	})
	return ids, err
}

// WorkspaceClients lists the clients holding grants in the workspace and the
// client-credentials clients registered with its keys, by client id.
func (s *Server) WorkspaceClients(ws int64) ([]ClientInfo, error) {
	grants, err := s.WorkspaceGrants(ws)
	if err != nil {
		return nil, err
	}
	byID := map[string]*ClientInfo{}
	get := func(id string) *ClientInfo {
		if ci := byID[id]; ci != nil {
			return ci
		}
		ci := &ClientInfo{ID: id}
		if c := s.storedClient(id); c != nil {
			ci.Name, ci.URI, ci.Source, ci.GrantTypes, ci.AuthMethod, ci.CreatedAt =
				c.Name, c.URI, c.Source, c.GrantTypes, c.AuthMethod, c.CreatedAt
			if c.Source == "key" && c.Workspace == ws {
				ci.Registered, ci.KeyID, ci.Mode, ci.Scopes = true, c.KeyID, c.Mode, c.Scopes
			}
		}
		byID[id] = ci
		return ci
	}
	for _, g := range grants {
		ci := get(g.ClientID)
		ci.Grants++
		if g.Active {
			ci.ActiveGrants++
		}
	}
	reg, err := s.registeredClients(ws)
	if err != nil {
		return nil, err
	}
	for _, id := range reg {
		if ci := get(id); !ci.Registered && ci.Grants == 0 {
			delete(byID, id) // a stale index entry: the client is gone
		}
	}
	out := make([]ClientInfo, 0, len(byID))
	for _, ci := range byID {
		out = append(out, *ci)
	}
	slices.SortFunc(out, func(a, b ClientInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// RevokeClient ends every grant of the client in the workspace (Store.RevokeGrant: on the next
// request its tokens are refused, its refresh tokens spent); a client-credentials client
// registered with a key of the workspace is deleted as well (it can get no new token). Other
// clients (registered without credentials, or metadata documents) are not the workspace's to
// delete: they may be approved again. errs.ErrNotFound when the client has no grant in the
// workspace and is not registered with it.
func (s *Server) RevokeClient(ws int64, clientID string) (int, error) {
	ctx := context.Background()
	registered := false
	if c := s.storedClient(clientID); c != nil && !isCIMD(clientID) && c.Source == "key" && c.Workspace == ws {
		registered = true
		// Deleted first, so no token can be issued to it while its grants are revoked.
		b := s.st.NewOAuthBatch()
		b.Delete(kindClient, clientID)
		b.Delete(kindWClient, itoa(ws)+"/"+clientID)
		b.Delete(kindUsed, clientID)
		if err := b.Commit(); err != nil {
			return 0, err
		}
	}
	grants, err := s.workspaceGrants(ws)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, g := range grants {
		if g.ClientID != clientID {
			continue
		}
		if err := s.store.RevokeGrant(ctx, g.ID); err != nil {
			return n, err
		}
		n++
	}
	if n == 0 && !registered {
		return 0, errs.ErrNotFound
	}
	s.store.revokedShared() // the deleted client's cached tokens too, on every node
	return n, nil
}

// RevokeGrantIn ends one grant of the workspace (Store.RevokeGrant); errs.ErrNotFound when the grant
// is not the workspace's.
func (s *Server) RevokeGrantIn(ws int64, grantID string) error {
	if grantID == "" || strings.Contains(grantID, "/") {
		return errs.ErrNotFound
	}
	var g grantRecord
	if err := s.st.OAuthGet(kindGrant, grantID, &g); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return errs.ErrNotFound
		}
		return err
	}
	if g.Workspace != ws {
		return errs.ErrNotFound
	}
	if err := s.store.RevokeGrant(context.Background(), grantID); err != nil {
		return err
	}
	s.store.revokedShared()
	return nil
}
