package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ory/fosite"

	"flipbook/errs"
	"flipbook/storage"
)

// Record kinds under g/oauth/ (storage/oauth.go).
const (
	kindClient  = "client"  // registered clients (dynamic registration, admin, client credentials)
	kindCIMD    = "cimd"    // fetched client metadata documents (cache)
	kindCode    = "code"    // authorization codes
	kindAccess  = "at"      // access tokens
	kindRefresh = "rt"      // refresh tokens
	kindPKCE    = "pkce"    // PKCE requests
	kindReq     = "req"     // index: <request id>/<kind>/<signature>
	kindGrant   = "grant"   // a grant (request id) and what it holds
	kindCGrant  = "cgrant"  // index: <client id>/<request id>
	kindKGrant  = "kgrant"  // index: <key id>/<request id>
	kindWGrant  = "wgrant"  // index: <workspace>/<request id>
	kindWClient = "wclient" // index: <workspace>/<client id>
	kindEnded   = "ended"   // grants an admin revoke ended (request id → when): no token is issued under them again
	kindUsed    = "cused"   // clients that obtained an authorization code or a token (the purge keeps them)
)

// Session is what a grant carries: whose key approved it (workspace, mode, key id and the
// key's hash prefix, so a rotated or revoked key ends its tokens) and the expiries.
type Session struct {
	Workspace int64                          `json:"workspace"`
	Mode      string                         `json:"mode"`
	KeyID     int64                          `json:"key_id"`
	KeyHash   string                         `json:"key_hash"`
	Subject   string                         `json:"subject"`
	ExpiresAt map[fosite.TokenType]time.Time `json:"expires_at"`
	Extra     map[string]any                 `json:"extra,omitempty"`
	_         struct{}                       `json:"-"`
}

func newSession() *Session { return &Session{ExpiresAt: map[fosite.TokenType]time.Time{}} }

func (s *Session) SetExpiresAt(key fosite.TokenType, exp time.Time) {
	if s.ExpiresAt == nil {
		s.ExpiresAt = map[fosite.TokenType]time.Time{}
	}
	s.ExpiresAt[key] = exp
}

func (s *Session) GetExpiresAt(key fosite.TokenType) time.Time {
	if s.ExpiresAt == nil {
		return time.Time{}
	}
	return s.ExpiresAt[key]
}

func (s *Session) GetUsername() string { return s.Subject }
func (s *Session) GetSubject() string  { return s.Subject }

func (s *Session) Clone() fosite.Session {
	c := *s
	c.ExpiresAt = make(map[fosite.TokenType]time.Time, len(s.ExpiresAt))
	for k, v := range s.ExpiresAt {
		c.ExpiresAt[k] = v
	}
	return &c
}

// storedRequest is a fosite request as stored.
type storedRequest struct {
	ID                string     `json:"id"`
	RequestedAt       time.Time  `json:"requested_at"`
	ClientID          string     `json:"client_id"`
	RequestedScope    []string   `json:"requested_scope"`
	GrantedScope      []string   `json:"granted_scope"`
	RequestedAudience []string   `json:"requested_audience"`
	GrantedAudience   []string   `json:"granted_audience"`
	Form              url.Values `json:"form"`
	Session           *Session   `json:"session"`
	Active            bool       `json:"active"`
	AccessSig         string     `json:"access_sig,omitempty"` // refresh tokens: the access token issued with it
}

// grantRecord lists a grant's tokens' expiry, for the admin listing.
type grantRecord struct {
	ID        string    `json:"id"`
	ClientID  string    `json:"client_id"`
	Workspace int64     `json:"workspace"`
	Mode      string    `json:"mode"`
	KeyID     int64     `json:"key_id"`
	Scopes    []string  `json:"scopes"`
	Audience  []string  `json:"audience"`
	CreatedAt time.Time `json:"created_at"`
}

// formKeep are the request form values worth keeping (no secrets: client_secret, code_verifier
// and codes are never stored).
var formKeep = []string{"redirect_uri", "code_challenge", "code_challenge_method", "resource", "state"}

func toStored(r fosite.Requester) *storedRequest {
	sess, _ := r.GetSession().(*Session)
	f := url.Values{}
	for _, k := range formKeep {
		if v := r.GetRequestForm().Get(k); v != "" {
			f.Set(k, v)
		}
	}
	return &storedRequest{ID: r.GetID(), RequestedAt: r.GetRequestedAt(), ClientID: r.GetClient().GetID(),
		RequestedScope: r.GetRequestedScopes(), GrantedScope: r.GetGrantedScopes(),
		RequestedAudience: r.GetRequestedAudience(), GrantedAudience: r.GetGrantedAudience(),
		Form: f, Session: sess, Active: true}
}

// Store is fosite's storage on Pebble.
type Store struct {
	st      *storage.Store
	clients *clients
	// scopes is every scope of the server (Options.Scopes and "*"): what a client registered
	// for all of them is given.
	scopes []string
	// onRevoke is called after tokens were revoked or deleted (the API's credential cache
	// forgets them).
	onRevoke       func()
	onRevokeShared func() // Options.OnRevokeShared
	// grantMu orders token creation against RevokeGrant: a refresh that read its refresh token
	// before an admin revoke must not issue tokens (and recreate the grant) after it.
	grantMu sync.Mutex
}

// errGrantEnded refuses tokens under a grant an admin revoke ended.
var errGrantEnded = fosite.ErrInactiveToken.WithHint("The grant was revoked.")

// fromStored rebuilds a stored request. Its client is looked up without any network I/O
// (clients.stored): verifying a token never waits for a metadata document.
func (s *Store) fromStored(_ context.Context, sr *storedRequest) (*fosite.Request, error) {
	cl, err := s.clients.stored(sr.ClientID)
	if err != nil {
		return nil, err
	}
	c := cl.fositeClient(s.clients.resources, s.scopes)
	sess := sr.Session
	if sess == nil {
		sess = newSession()
	}
	return &fosite.Request{ID: sr.ID, RequestedAt: sr.RequestedAt, Client: c,
		RequestedScope: sr.RequestedScope, GrantedScope: sr.GrantedScope,
		RequestedAudience: sr.RequestedAudience, GrantedAudience: sr.GrantedAudience,
		Form: sr.Form, Session: sess}, nil
}

func (s *Store) get(ctx context.Context, kind, sig string) (*fosite.Request, *storedRequest, error) {
	var sr storedRequest
	if err := s.st.OAuthGet(kind, sig, &sr); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return nil, nil, fosite.ErrNotFound
		}
		return nil, nil, err
	}
	r, err := s.fromStored(ctx, &sr)
	return r, &sr, err
}

// create stores a request under kind/sig and indexes it by its grant.
func (s *Store) create(kind, sig string, r fosite.Requester, accessSig string) error {
	sr := toStored(r)
	sr.AccessSig = accessSig
	if kind == kindAccess || kind == kindRefresh {
		s.grantMu.Lock()
		defer s.grantMu.Unlock()
		var at time.Time
		switch err := s.st.OAuthGet(kindEnded, sr.ID, &at); {
		case err == nil:
			return errGrantEnded
		case !errors.Is(err, errs.ErrNotFound):
			return err
		}
	}
	b := s.st.NewOAuthBatch()
	if err := b.Put(kind, sig, sr); err != nil {
		b.Close()
		return err
	}
	b.Mark(kindReq, sr.ID+"/"+kind+"/"+sig)
	b.Mark(kindUsed, sr.ClientID)
	if kind == kindAccess || kind == kindRefresh {
		if err := s.recordGrant(b, sr); err != nil {
			b.Close()
			return err
		}
	}
	return b.Commit()
}

func (s *Store) recordGrant(b *storage.OAuthBatch, sr *storedRequest) error {
	if sr.Session == nil {
		return nil
	}
	g := grantRecord{ID: sr.ID, ClientID: sr.ClientID, Workspace: sr.Session.Workspace, Mode: sr.Session.Mode,
		KeyID: sr.Session.KeyID, Scopes: sr.GrantedScope, Audience: sr.GrantedAudience, CreatedAt: sr.RequestedAt}
	if err := b.Put(kindGrant, sr.ID, g); err != nil {
		return err
	}
	b.Mark(kindCGrant, sr.ClientID+"/"+sr.ID)
	b.Mark(kindKGrant, itoa(sr.Session.KeyID)+"/"+sr.ID)
	b.Mark(kindWGrant, itoa(sr.Session.Workspace)+"/"+sr.ID)
	return nil
}

func (s *Store) delete(kind, sig string) error {
	b := s.st.NewOAuthBatch()
	b.Delete(kind, sig)
	return b.Commit()
}

// Authorization codes.

func (s *Store) CreateAuthorizeCodeSession(_ context.Context, sig string, r fosite.Requester) error {
	return s.create(kindCode, sig, r, "")
}

func (s *Store) GetAuthorizeCodeSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	r, sr, err := s.get(ctx, kindCode, sig)
	if err != nil {
		return nil, err
	}
	if !sr.Active {
		return r, fosite.ErrInvalidatedAuthorizeCode
	}
	return r, nil
}

func (s *Store) InvalidateAuthorizeCodeSession(ctx context.Context, sig string) error {
	var sr storedRequest
	if err := s.st.OAuthGet(kindCode, sig, &sr); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return fosite.ErrNotFound
		}
		return err
	}
	sr.Active = false
	b := s.st.NewOAuthBatch()
	if err := b.Put(kindCode, sig, &sr); err != nil {
		b.Close()
		return err
	}
	return b.Commit()
}

// Access tokens.

func (s *Store) CreateAccessTokenSession(_ context.Context, sig string, r fosite.Requester) error {
	return s.create(kindAccess, sig, r, "")
}

func (s *Store) GetAccessTokenSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	r, _, err := s.get(ctx, kindAccess, sig)
	return r, err
}

func (s *Store) DeleteAccessTokenSession(_ context.Context, sig string) error {
	err := s.delete(kindAccess, sig)
	s.revoked()
	return err
}

// Refresh tokens.

func (s *Store) CreateRefreshTokenSession(_ context.Context, sig, accessSig string, r fosite.Requester) error {
	return s.create(kindRefresh, sig, r, accessSig)
}

func (s *Store) GetRefreshTokenSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	r, sr, err := s.get(ctx, kindRefresh, sig)
	if err != nil {
		return nil, err
	}
	if !sr.Active {
		return r, fosite.ErrInactiveToken
	}
	return r, nil
}

func (s *Store) DeleteRefreshTokenSession(_ context.Context, sig string) error {
	return s.delete(kindRefresh, sig)
}

// RotateRefreshToken marks the grant's refresh tokens spent and deletes its access tokens (a
// refresh issues new ones under the same request id; presenting a spent one again revokes the
// whole family: fosite calls RevokeRefreshToken and RevokeAccessToken).
func (s *Store) RotateRefreshToken(ctx context.Context, requestID, _ string) error {
	if err := s.RevokeRefreshToken(ctx, requestID); err != nil {
		return err
	}
	return s.revokeAccess(requestID, false)
}

// grantEntries lists the kind/sig entries of a request id.
func (s *Store) grantEntries(requestID string) ([][2]string, error) {
	var out [][2]string
	err := s.st.OAuthList(kindReq, requestID+"/", func(id string, _ []byte) bool {
		rest := strings.TrimPrefix(id, requestID+"/")
		kind, sig, ok := strings.Cut(rest, "/")
		if ok {
			out = append(out, [2]string{kind, sig})
		}
		return true
	})
	return out, err
}

func (s *Store) RevokeRefreshToken(_ context.Context, requestID string) error {
	entries, err := s.grantEntries(requestID)
	if err != nil {
		return err
	}
	b := s.st.NewOAuthBatch()
	n := 0
	for _, e := range entries {
		if e[0] != kindRefresh {
			continue
		}
		var sr storedRequest
		if err := s.st.OAuthGet(kindRefresh, e[1], &sr); err != nil {
			continue
		}
		if sr.Active {
			sr.Active = false
			if err := b.Put(kindRefresh, e[1], &sr); err != nil {
				b.Close()
				return err
			}
			n++
		}
	}
	if n == 0 {
		b.Close()
		return nil
	}
	return b.Commit()
}

func (s *Store) RevokeAccessToken(_ context.Context, requestID string) error {
	return s.revokeAccess(requestID, true)
}

// revokeAccess deletes a grant's access tokens; shared says it is a revocation (not a
// refresh's rotation), which the other nodes of a cluster are told of (onRevokeShared).
func (s *Store) revokeAccess(requestID string, shared bool) error {
	entries, err := s.grantEntries(requestID)
	if err != nil {
		return err
	}
	b := s.st.NewOAuthBatch()
	for _, e := range entries {
		if e[0] == kindAccess {
			b.Delete(kindAccess, e[1])
			b.Delete(kindReq, requestID+"/"+kindAccess+"/"+e[1])
		}
	}
	err = b.Commit()
	s.revoked()
	if shared && s.onRevokeShared != nil {
		s.onRevokeShared()
	}
	return err
}

// RevokeGrant ends a whole grant: its refresh tokens are spent, its access tokens deleted, and
// a marker refuses tokens under it from now on (a refresh in flight cannot revive it). The
// caller tells the other nodes of a cluster (revokedShared) once its operation is done.
func (s *Store) RevokeGrant(ctx context.Context, requestID string) error {
	s.grantMu.Lock()
	defer s.grantMu.Unlock()
	mb := s.st.NewOAuthBatch()
	if err := mb.Put(kindEnded, requestID, time.Now().UTC()); err != nil {
		mb.Close()
		return err
	}
	if err := mb.Commit(); err != nil {
		return err
	}
	if err := s.RevokeRefreshToken(ctx, requestID); err != nil {
		return err
	}
	// The other nodes are told by the admin operation once it is done (revokedShared), not
	// here under grantMu: a node that does not answer would hold every token issued here.
	if err := s.revokeAccess(requestID, false); err != nil {
		return err
	}
	b := s.st.NewOAuthBatch()
	var g grantRecord
	if err := s.st.OAuthGet(kindGrant, requestID, &g); err == nil {
		b.Delete(kindCGrant, g.ClientID+"/"+requestID)
		b.Delete(kindKGrant, itoa(g.KeyID)+"/"+requestID)
		b.Delete(kindWGrant, itoa(g.Workspace)+"/"+requestID)
	}
	b.Delete(kindGrant, requestID)
	return b.Commit()
}

func (s *Store) revoked() {
	if s.onRevoke != nil {
		s.onRevoke()
	}
}

// revokedShared is revoked, and the other nodes of a cluster told (onRevokeShared).
func (s *Store) revokedShared() {
	s.revoked()
	if s.onRevokeShared != nil {
		s.onRevokeShared()
	}
}

// PKCE.

func (s *Store) CreatePKCERequestSession(_ context.Context, sig string, r fosite.Requester) error {
	return s.create(kindPKCE, sig, r, "")
}

func (s *Store) GetPKCERequestSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	r, _, err := s.get(ctx, kindPKCE, sig)
	return r, err
}

func (s *Store) DeletePKCERequestSession(_ context.Context, sig string) error {
	return s.delete(kindPKCE, sig)
}

// Client assertions (JWT client authentication) are not offered; these satisfy the interface.

func (s *Store) ClientAssertionJWTValid(context.Context, string) error { return nil }

func (s *Store) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
