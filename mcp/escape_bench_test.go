package mcp

import (
	"strings"
	"testing"
)

func BenchmarkAppendEscaped(b *testing.B) {
	text := []byte(`{"data":` + strings.Repeat(`{"id":1234,"random_id":"abcdefgh","name":"A book name","status":"published","page_count":12,"settings":{"downloadable":true}}`, 8) + `}`)
	out := make([]byte, 0, 4096)
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		out = appendEscaped(out[:0], text)
	}
}
