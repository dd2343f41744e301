package storage

import (
	"bytes"
	"encoding/binary"
)

// What a state key belongs to, for cluster mode's changelog (issue 26): the partition of a
// workspace holds its tenant keys and the global keys that carry the tenant (webhook lanes,
// timers, idempotency expiries), the queue entries keyed by an id (an id from NextIDIn names
// its partition: id mod N), and its own "p/" keys (id sequences); every other key (workspaces,
// key hashes, lookups, slugs, OAuth, meta, the one-node sequences) is global.

// ScopeKind says what a key belongs to.
type ScopeKind uint8

const (
	ScopeGlobal    ScopeKind = iota // every node holds it
	ScopeWorkspace                  // Scope.Workspace's partition
	ScopeID                         // Scope.ID's partition (id mod N)
	ScopePartition                  // Scope.Partition
)

// Scope is what a key belongs to.
type Scope struct {
	Kind      ScopeKind
	Workspace int64
	ID        int64
	Partition int
}

// keys that carry a tenant after a fixed part: prefix, bytes before the tenant.
var tenantAt = []struct {
	prefix string
	skip   int
}{
	{whQueuePrefix, 0}, // g/whq/<tenant><sub>...
	{duePrefix, 8},     // g/due/<at><tenant><rid>
	{idemExpPrefix, 8}, // g/idemexp/<at><tenant><key>
}

// keys of queue entries named by an id (from NextIDIn in cluster mode).
var idKeyed = []string{convQueuePrefix, bulkQueuePrefix, syncQueuePrefix}

// ScopeOf is what key belongs to.
func ScopeOf(key []byte) Scope {
	switch {
	case len(key) >= 2+tenantLen+1 && key[0] == 't' && key[1] == '/' && key[2+tenantLen] == '/':
		return Scope{Kind: ScopeWorkspace, Workspace: int64(binary.BigEndian.Uint64(key[2:10]))}
	case len(key) >= 5 && key[0] == 'p' && key[1] == '/' && key[4] == '/':
		return Scope{Kind: ScopePartition, Partition: int(key[2])<<8 | int(key[3])}
	}
	for _, t := range tenantAt {
		if bytes.HasPrefix(key, []byte(t.prefix)) && len(key) >= len(t.prefix)+t.skip+tenantLen {
			at := len(t.prefix) + t.skip
			if tn, ok := tenantFromBytes(key[at : at+tenantLen]); ok {
				return Scope{Kind: ScopeWorkspace, Workspace: tn.Workspace}
			}
		}
	}
	for _, p := range idKeyed {
		if bytes.HasPrefix(key, []byte(p)) && len(key) >= len(p)+8 {
			return Scope{Kind: ScopeID, ID: int64(binary.BigEndian.Uint64(key[len(p) : len(p)+8]))}
		}
	}
	return Scope{Kind: ScopeGlobal}
}
