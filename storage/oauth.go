package storage

import (
	"github.com/cockroachdb/pebble/v2"
)

// OAuth records (package oauth): clients, authorization codes, access and refresh tokens and
// PKCE requests, stored by kind under g/oauth/<kind>/<id> (tokens by their signature: the token
// itself is never stored). A grant's records are indexed by request id under
// g/oauth/req/<request id>/<kind>/<id>, so a grant (a refresh-token family) is revoked as a
// whole, and by client under g/oauth/cgrant/<client>/<request id>.

func oauthKey(kind, id string) []byte { return []byte("g/oauth/" + kind + "/" + id) }

// OAuthGet reads an OAuth record.
func (s *Store) OAuthGet(kind, id string, out any) error { return s.getJSON(oauthKey(kind, id), out) }

// OAuthList decodes every record of a kind whose id starts with prefix (in key order), calling
// fn with the id (without the kind) and the raw value; fn returns false to stop.
func (s *Store) OAuthList(kind, prefix string, fn func(id string, value []byte) bool) error {
	p := oauthKey(kind, prefix)
	base := len(oauthKey(kind, ""))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(string(it.Key()[base:]), it.Value()) {
			break
		}
	}
	return it.Error()
}

// OAuthBatch is a set of OAuth writes committed together (synced).
type OAuthBatch struct{ b *Batch }

// NewOAuthBatch starts a batch of OAuth writes.
func (s *Store) NewOAuthBatch() *OAuthBatch { return &OAuthBatch{b: s.NewBatch()} }

// Put writes a record.
func (o *OAuthBatch) Put(kind, id string, v any) error { return o.b.setJSON(oauthKey(kind, id), v) }

// Mark writes an empty index entry.
func (o *OAuthBatch) Mark(kind, id string) { o.b.set(oauthKey(kind, id), nil) }

// Delete removes a record or an index entry.
func (o *OAuthBatch) Delete(kind, id string) { o.b.del(oauthKey(kind, id)) }

// Commit applies the batch durably.
func (o *OAuthBatch) Commit() error { return o.b.Commit() }

// Close releases an uncommitted batch.
func (o *OAuthBatch) Close() { o.b.Close() }
