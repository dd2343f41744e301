package oauth

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/ory/fosite"

	"flipbook/errs"
)

// Purge removes what is left of grants nothing can use any more, so OAuth records do not
// pile up (a server-to-server client takes a new client-credentials token, a grant of its own,
// every hour): a request id whose every record (access and refresh tokens, authorization
// code, PKCE request) expired before now-PurgeGrace loses its records, their index entries,
// its grant record and that record's indexes. A revoked grant's refresh tokens keep their
// expiry, so its ended marker (RevokeGrant) stays as long as one of them could be presented;
// markers older than the refresh-token lifetime go too. Runs from the service's housekeeping.
//
// It also removes clients nobody uses (purgeClients): dynamically registered clients older than
// Options.UnusedClientTTL that never obtained an authorization code or a token, and cached
// metadata documents fetched longer ago than that whose client holds no grant. Their number is
// logged; grants is the number of grants removed.
func (s *Server) Purge(now time.Time) (grants int, err error) {
	grants, err = s.store.purge(now.Add(-PurgeGrace), now.Add(-s.o.RefreshTTL-PurgeGrace), s.o.AccessTTL, s.o.RefreshTTL)
	if err != nil {
		return grants, err
	}
	dcr, docs, err := s.store.purgeClients(now.Add(-s.o.UnusedClientTTL))
	if dcr+docs > 0 {
		s.o.Logger.Info("purged unused OAuth clients", "registered", dcr, "metadata_documents", docs)
	}
	return grants, err
}

// PurgeGrace is how long after its last expiry a grant's records stay.
const PurgeGrace = time.Hour

// purgeBatch is the number of request ids removed per commit.
const purgeBatch = 200

type reqGroup struct {
	id      string
	entries [][2]string // kind, signature
	live    bool
}

func (s *Store) purge(cutoff, endedBefore time.Time, accessTTL, refreshTTL time.Duration) (int, error) {
	var dead []reqGroup
	cur := reqGroup{}
	var readErr error
	flush := func() {
		if cur.id != "" && !cur.live {
			dead = append(dead, cur)
		}
	}
	err := s.st.OAuthList(kindReq, "", func(key string, _ []byte) bool {
		id, rest, _ := strings.Cut(key, "/")
		if id != cur.id {
			flush()
			cur = reqGroup{id: id}
		}
		kind, sig, ok := strings.Cut(rest, "/")
		if !ok {
			return true
		}
		cur.entries = append(cur.entries, [2]string{kind, sig})
		if !cur.live {
			live, err := s.entryLive(kind, sig, cutoff, accessTTL, refreshTTL)
			if err != nil {
				readErr = err
				return false
			}
			cur.live = live
		}
		return true
	})
	flush()
	if err == nil {
		err = readErr
	}
	if err != nil {
		return 0, err
	}
	for i := 0; i < len(dead); i += purgeBatch {
		if err := s.removeGroups(dead[i:min(i+purgeBatch, len(dead))]); err != nil {
			return i, err
		}
	}
	var ended []string
	if err := s.st.OAuthList(kindEnded, "", func(id string, v []byte) bool {
		var at time.Time
		if json.Unmarshal(v, &at) == nil && at.Before(endedBefore) {
			ended = append(ended, id)
		}
		return true
	}); err != nil {
		return len(dead), err
	}
	if len(ended) > 0 {
		b := s.st.NewOAuthBatch()
		for _, id := range ended {
			b.Delete(kindEnded, id)
		}
		if err := b.Commit(); err != nil {
			return len(dead), err
		}
	}
	return len(dead), nil
}

// entryLive reports whether a record of a request id expires after cutoff (a record already
// gone is not live).
func (s *Store) entryLive(kind, sig string, cutoff time.Time, accessTTL, refreshTTL time.Duration) (bool, error) {
	var sr storedRequest
	if err := s.st.OAuthGet(kind, sig, &sr); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	tt, ttl := fosite.AuthorizeCode, accessTTL // codes and PKCE requests live minutes
	switch kind {
	case kindAccess:
		tt = fosite.AccessToken
	case kindRefresh:
		tt, ttl = fosite.RefreshToken, refreshTTL
	}
	var exp time.Time
	if sr.Session != nil {
		exp = sr.Session.GetExpiresAt(tt)
	}
	if exp.IsZero() { // no recorded expiry: the lifespan from when it was requested
		exp = sr.RequestedAt.Add(ttl)
	}
	return exp.After(cutoff), nil
}

// removeGroups deletes dead request ids' records in one commit, serialized against token
// creation and RevokeGrant.
func (s *Store) removeGroups(groups []reqGroup) error {
	s.grantMu.Lock()
	defer s.grantMu.Unlock()
	b := s.st.NewOAuthBatch()
	for _, g := range groups {
		for _, e := range g.entries {
			b.Delete(e[0], e[1])
			b.Delete(kindReq, g.id+"/"+e[0]+"/"+e[1])
		}
		var gr grantRecord
		switch err := s.st.OAuthGet(kindGrant, g.id, &gr); {
		case err == nil:
			b.Delete(kindCGrant, gr.ClientID+"/"+g.id)
			b.Delete(kindKGrant, itoa(gr.KeyID)+"/"+g.id)
			b.Delete(kindWGrant, itoa(gr.Workspace)+"/"+g.id)
			b.Delete(kindGrant, g.id)
		case !errors.Is(err, errs.ErrNotFound):
			b.Close()
			return err
		}
	}
	return b.Commit()
}

// purgeClients removes dynamically registered public clients created before `before` that
// never obtained an authorization code or a token (no kindUsed marker, no grant), and cached
// metadata documents fetched before `before` whose client holds no grant (a cache: the
// document is fetched again when it is next used). Client-credentials clients (registered with
// an API key) are the workspace's and stay until revoked.
func (s *Store) purgeClients(before time.Time) (dcr, docs int, err error) {
	var regs, cached []string
	var entry struct {
		Source       string    `json:"source"`
		CreatedAt    time.Time `json:"created_at"`
		FetchedAt    time.Time `json:"fetched_at"`
		RegisteredAt time.Time `json:"registered_at"`
	}
	if err := s.st.OAuthList(kindClient, "", func(id string, v []byte) bool {
		entry.Source, entry.CreatedAt, entry.RegisteredAt = "", time.Time{}, time.Time{}
		if json.Unmarshal(v, &entry) == nil && entry.Source == "dcr" && !entry.CreatedAt.IsZero() && entry.CreatedAt.Before(before) &&
			entry.RegisteredAt.Before(before) {
			regs = append(regs, id)
		}
		return true
	}); err != nil {
		return 0, 0, err
	}
	if err := s.st.OAuthList(kindCIMD, "", func(id string, v []byte) bool {
		entry.FetchedAt = time.Time{}
		if json.Unmarshal(v, &entry) == nil && entry.FetchedAt.Before(before) {
			cached = append(cached, id)
		}
		return true
	}); err != nil {
		return 0, 0, err
	}
	var delRegs, delDocs []string
	for _, id := range regs {
		used, err := s.clientUsed(id, true)
		if err != nil {
			return 0, 0, err
		}
		if !used {
			delRegs = append(delRegs, id)
		}
	}
	for _, id := range cached {
		used, err := s.clientUsed(id, false)
		if err != nil {
			return 0, 0, err
		}
		if !used {
			delDocs = append(delDocs, id)
		}
	}
	for _, batch := range []struct {
		kind string
		ids  []string
	}{{kindClient, delRegs}, {kindCIMD, delDocs}} {
		for i := 0; i < len(batch.ids); i += purgeBatch {
			b := s.st.NewOAuthBatch()
			for _, id := range batch.ids[i:min(i+purgeBatch, len(batch.ids))] {
				b.Delete(batch.kind, id)
			}
			if err := b.Commit(); err != nil {
				return dcr, docs, err
			}
			if batch.kind == kindClient {
				dcr += min(purgeBatch, len(batch.ids)-i)
			} else {
				docs += min(purgeBatch, len(batch.ids)-i)
			}
		}
	}
	return dcr, docs, nil
}

// clientUsed reports whether a client holds a grant (cgrant index) or, with marker, ever
// obtained a code or a token (kindUsed).
func (s *Store) clientUsed(id string, marker bool) (bool, error) {
	found := false
	if marker { // an empty index entry: listed, not read
		if err := s.st.OAuthList(kindUsed, id, func(k string, _ []byte) bool {
			found = k == id
			return !found
		}); err != nil || found {
			return found, err
		}
	}
	err := s.st.OAuthList(kindCGrant, id+"/", func(string, []byte) bool { found = true; return false })
	return found, err
}
