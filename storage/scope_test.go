package storage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every key family is scoped as cluster mode's changelog needs: a workspace's own keys and the
// global keys carrying its tenant to its workspace, queue entries to their id, partition keys
// to their partition, the rest global.
func TestScopeOf(t *testing.T) {
	t.Parallel()
	tn := Tenant{Workspace: 77, Mode: ModeTest}
	at := time.Unix(1_800_000_000, 0)
	ws := Scope{Kind: ScopeWorkspace, Workspace: 77}
	for name, c := range map[string]struct {
		key  []byte
		want Scope
	}{
		"book":           {bookKey(tn, "rid1"), ws},
		"pages":          {pagesKey(tn, "rid1"), ws},
		"idempotency":    {idemKey(tn, "k"), ws},
		"webhook lane":   {WebhookLane{Tenant: tn, Sub: 5}.QueueKey(at, 9), ws},
		"timer":          {dueKey(at.UnixNano(), tn, "rid1"), ws},
		"idem expiry":    {idemExpKey(at, tn, "k"), ws},
		"conversion q":   {convQueueKey(41), Scope{Kind: ScopeID, ID: 41}},
		"bulk q":         {bulkQueueKey(42), Scope{Kind: ScopeID, ID: 42}},
		"catalog sync q": {syncQueueKey(43), Scope{Kind: ScopeID, ID: 43}},
		"partition seq":  {partSeqKey(300, "book"), Scope{Kind: ScopePartition, Partition: 300}},
		"workspace":      {workspaceKey(77), Scope{}},
		"workspace slug": {workspaceSlugKey("s"), Scope{}},
		"api key":        {apiKeyKey([]byte("hash")), Scope{}},
		"api key id":     {apiKeyIDKey(3), Scope{}},
		"book lookup":    {bookLookupKey("rid1"), Scope{}},
		"slug":           {tlSlugKey("spring"), Scope{}},
		"oauth":          {oauthKey("client", "c1"), Scope{}},
		"meta":           {metaKey("cursor_secret"), Scope{}},
		"sequence":       {seqKey("book"), Scope{}},
		"short":          {[]byte("t/"), Scope{}},
	} {
		require.Equal(t, c.want, ScopeOf(c.key), name)
	}
}
