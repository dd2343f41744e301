package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

// Cursors are opaque to clients: base64url(version, payload, MAC). The MAC (HMAC-SHA256 with a
// per-installation secret, truncated to 16 bytes) covers the payload and the query the cursor
// belongs to (tenant, sort, filters), so a forged cursor, or one reused with other filters, is
// rejected with 422.

const cursorVersion = 1

var errBadCursor = errors.New("bad cursor")

type cursors struct{ key []byte }

func (c *cursors) mac(binding string, payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(binding))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:16]
}

func (c *cursors) encode(binding string, payload []byte) string {
	buf := make([]byte, 0, 1+len(payload)+16)
	buf = append(buf, cursorVersion)
	buf = append(buf, payload...)
	buf = append(buf, c.mac(binding, payload)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

func (c *cursors) decode(binding, s string) ([]byte, error) {
	buf, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(buf) < 1+16 || buf[0] != cursorVersion {
		return nil, errBadCursor
	}
	payload, sum := buf[1:len(buf)-16], buf[len(buf)-16:]
	if !hmac.Equal(sum, c.mac(binding, payload)) {
		return nil, errBadCursor
	}
	return payload, nil
}
