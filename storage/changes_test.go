package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// recorder is a ChangeSink that keeps what it is given (copies), or refuses.
type recorder struct {
	muts   []Mutation
	refuse error
}

func (r *recorder) Changes(muts []Mutation) ([]Mutation, func(), error) {
	if r.refuse != nil {
		return nil, nil, r.refuse
	}
	for _, m := range muts {
		r.muts = append(r.muts, Mutation{Key: append([]byte(nil), m.Key...), Value: append([]byte(nil), m.Value...), Delete: m.Delete})
	}
	return nil, nil, nil
}

// dump is every key and value of the store.
func dump(t *testing.T, s *Store) map[string]string {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{})
	require.NoError(t, err)
	defer it.Close()
	out := map[string]string{}
	for it.First(); it.Valid(); it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	return out
}

// Every write path reaches the sink before Pebble: replaying what the sink was given into an
// empty store gives the same state (batches with sets, deletes and range deletes, the id
// sequences, webhook health, idempotency records, workspaces); a sink's error refuses the write.
func TestChangeSinkSeesEveryWrite(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	s, err := Open(t.TempDir(), Options{CacheBytes: 8 << 20, Changes: rec})
	require.NoError(t, err)
	tn := Tenant{Workspace: 7, Mode: ModeLive}

	for i := 0; i < 3; i++ {
		_, err := s.NextID("books")
		require.NoError(t, err)
	}
	require.NoError(t, s.PutWorkspace(&Workspace{ID: 7, Name: "Seven", Slug: "seven", Plan: "company"}, ""))
	b := s.NewBatch()
	for i := 0; i < 5; i++ {
		b.set(cat(tn.prefix(), []byte(fmt.Sprintf("emb/r1/%d", i))), []byte("x"))
	}
	b.set(cat(tn.prefix(), []byte("marker")), nil) // an empty value is a value, not a deletion
	require.NoError(t, b.Commit())
	b = s.NewBatch()
	b.set(cat(tn.prefix(), []byte("emb/r1/9")), []byte("set in the batch that deletes the range"))
	p := cat(tn.prefix(), []byte("emb/r1/"))
	_ = b.b.DeleteRange(p, prefixEnd(p), nil)
	b.set(cat(tn.prefix(), []byte("emb/r2/0")), []byte("outside the range"))
	b.del(cat(tn.prefix(), []byte("nothing-there")))
	require.NoError(t, b.CommitNoSync())
	require.NoError(t, s.SetWebhookHealth(tn, 3, WebhookHealth{LastSuccess: time.Unix(1, 0).UTC()}))
	require.NoError(t, s.PutIdem(tn, "idem-1", &IdemEntry{Status: 201, Body: []byte("{}"), CreatedAt: time.Unix(2, 0).UTC()}))

	// A refusing sink: the write is not applied.
	before := dump(t, s)
	rec.refuse = errors.New("not the owner")
	b = s.NewBatch()
	b.set(cat(tn.prefix(), []byte("refused")), []byte("x"))
	require.ErrorContains(t, b.Commit(), "not the owner")
	require.Equal(t, before, dump(t, s))
	rec.refuse = nil

	replica := openStore(t)
	require.NoError(t, replica.ApplyChanges(rec.muts))
	got, want := dump(t, replica), dump(t, s)
	require.Equal(t, want, got)
	require.Contains(t, want, string(cat(tn.prefix(), []byte("marker"))))
	require.NotContains(t, want, string(cat(tn.prefix(), []byte("emb/r1/9"))))
	require.Contains(t, want, string(cat(tn.prefix(), []byte("emb/r2/0"))))
	require.NoError(t, s.Close()) // the sequences' exact marks go through the sink too
	require.NoError(t, replica.ApplyChanges(rec.muts))
	s2, err := Open(s.dir, Options{})
	require.NoError(t, err)
	defer s2.Close()
	require.Equal(t, dump(t, s2), dump(t, replica))
}

// A partition's ids (cluster mode): k×n + p, increasing, never another partition's, and never
// reused after a restart.
func TestNextIDIn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	seen := map[int64]bool{}
	for p := 0; p < 4; p++ {
		last := int64(0)
		for i := 0; i < 5; i++ {
			id, err := s.NextIDIn(p, 4, "book")
			require.NoError(t, err)
			require.EqualValues(t, p, id%4)
			require.Greater(t, id, last)
			require.False(t, seen[id])
			seen[id], last = true, id
		}
	}
	_, err = s.NextIDIn(4, 4, "book")
	require.Error(t, err)
	require.NoError(t, s.Close())
	s, err = Open(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	id, err := s.NextIDIn(2, 4, "book")
	require.NoError(t, err)
	require.False(t, seen[id], "not reused after a restart")
	require.EqualValues(t, 2, id%4)
}
