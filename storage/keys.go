package storage

import (
	"encoding/binary"
	"strings"
)

// Key layout. Global keys start with "g/"; tenant keys with "t/" + workspace id (8 bytes, big
// endian) + mode byte ('l' live, 't' test) + "/". Integers in keys are big-endian so byte order
// is numeric order.
//
//	g/meta/<name>                      service metadata (cursor secret, admin token hash)
//	g/seq/<name>                       sequence high-water marks
//	g/ws/<ws>                          Workspace
//	g/wsslug/<slug>                    workspace id by slug
//	g/key/<sha256(key)>                APIKey (the key itself is never stored)
//	g/keyid/<id>                       sha256 of the key with that id
//	g/book/<random_id>                 tenant of a book (public routes resolve a book by it)
//	g/due/<unix nanos><tenant><rid>    a book with a timed transition (schedule, expiry)
//	t/<tenant>/book/<random_id>        Book
//	t/<tenant>/pages/<random_id>       []Page of a book
//	t/<tenant>/text/<random_id>/<page> PageText of a page (uint32; pagetext.go)
//	t/<tenant>/bi/<filter>/<sort>/<k>  book index: filter is "*" or a status, sort one of c,u,n,s
//	t/<tenant>/idem/<key>              stored idempotent response
//	t/<tenant>/sub/, bsub/, emb/, embh/, tl/  access lists, embed domains, tracked links (access.go)
//	t/<tenant>/brand                   Brand (brand.go)
//	g/tlslug/<slug>                    a tracked link by its public slug
//	t/<tenant>/upload/<batch id>       Upload (conversion batch)
//	t/<tenant>/upact/<batch id>        present while the batch is queued or processing
//	g/convq/<seq>                      conversion queue: tenant + batch id, in upload order
//	g/idemexp/<unix nanos><tenant><k>  expiry index of idempotent responses
//	t/<tenant>/wh/, whd/, whn/, whh/     webhook subscriptions, deliveries, counts, health (webhooks.go)
//	g/whq/<tenant><sub><class><due><id> webhook delivery queue; p/<partition>/whpos the dispatcher's log position

// Mode is the key mode: live or test data of a workspace.
type Mode byte

const (
	ModeLive Mode = 'l'
	ModeTest Mode = 't'
)

func (m Mode) String() string {
	if m == ModeTest {
		return "test"
	}
	return "live"
}

// ParseMode reads "live" or "test".
func ParseMode(s string) (Mode, bool) {
	switch s {
	case "live":
		return ModeLive, true
	case "test":
		return ModeTest, true
	}
	return 0, false
}

// Tenant is the storage tenant: a workspace in one mode.
type Tenant struct {
	Workspace int64
	Mode      Mode
}

const tenantLen = 9

func (t Tenant) bytes() []byte {
	b := make([]byte, tenantLen)
	binary.BigEndian.PutUint64(b, uint64(t.Workspace))
	b[8] = byte(t.Mode)
	return b
}

func tenantFromBytes(b []byte) (Tenant, bool) {
	if len(b) != tenantLen || (b[8] != byte(ModeLive) && b[8] != byte(ModeTest)) {
		return Tenant{}, false
	}
	return Tenant{Workspace: int64(binary.BigEndian.Uint64(b)), Mode: Mode(b[8])}, true
}

func (t Tenant) prefix() []byte {
	k := make([]byte, 0, 2+tenantLen+1+32)
	k = append(k, "t/"...)
	k = append(k, t.bytes()...)
	return append(k, '/')
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func cat(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func metaKey(name string) []byte          { return []byte("g/meta/" + name) }
func seqKey(name string) []byte           { return []byte("g/seq/" + name) }
func workspaceKey(id int64) []byte        { return cat([]byte("g/ws/"), u64(uint64(id))) }
func workspaceSlugKey(slug string) []byte { return []byte("g/wsslug/" + slug) }
func apiKeyKey(hash []byte) []byte        { return cat([]byte("g/key/"), hash) }
func apiKeyIDKey(id int64) []byte         { return cat([]byte("g/keyid/"), u64(uint64(id))) }
func bookLookupKey(rid string) []byte     { return []byte("g/book/" + rid) }
func bookKey(t Tenant, rid string) []byte {
	return appendBookKey(make([]byte, 0, 2+tenantLen+6+len(rid)), t, rid)
}

// appendBookKey appends bookKey(t, rid) to dst (a read builds it in a stack buffer).
func appendBookKey(dst []byte, t Tenant, rid string) []byte {
	dst = append(dst, "t/"...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.Workspace))
	dst = append(dst, byte(t.Mode), '/')
	dst = append(dst, "book/"...)
	return append(dst, rid...)
}
func pagesKey(t Tenant, rid string) []byte {
	return cat(t.prefix(), []byte("pages/"), []byte(rid))
}
func idemKey(t Tenant, key string) []byte { return cat(t.prefix(), []byte("idem/"), []byte(key)) }

const duePrefix = "g/due/"

func dueKey(at int64, t Tenant, rid string) []byte {
	return cat([]byte(duePrefix), u64(uint64(at)), t.bytes(), []byte(rid))
}

// prefixEnd returns the smallest key greater than every key with the prefix.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// escapeOrdered encodes s so that byte order of the encodings is the byte order of the strings
// and the encoding is self-terminating: 0x00 becomes 0x00 0xff, and 0x00 0x01 ends it.
func escapeOrdered(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			dst = append(dst, 0, 0xff)
			continue
		}
		dst = append(dst, s[i])
	}
	return append(dst, 0, 1)
}

// foldName is the sort form of a book name: case-folded.
func foldName(s string) string { return strings.ToLower(s) }

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
