package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"maps"
	"mime/multipart"
	"slices"
	"sync"

	"github.com/valyala/fasthttp"

	"flipbook/storage"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

// inflight tracks idempotency keys whose first request is still running (409 for a second).
type inflight struct {
	mu sync.Mutex
	m  map[idemRef]struct{}
}

type idemRef struct {
	t   storage.Tenant
	key string
}

func (f *inflight) begin(r idemRef) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[idemRef]struct{}{}
	}
	if _, busy := f.m[r]; busy {
		return false
	}
	f.m[r] = struct{}{}
	return true
}

func (f *inflight) end(r idemRef) {
	f.mu.Lock()
	delete(f.m, r)
	f.mu.Unlock()
}

// requestFingerprint identifies "the same request": operation, path and body. A multipart body
// is fingerprinted by its content (fields, file names and file bytes), not its bytes on the
// wire: clients choose a new random boundary for every attempt, so a retry of the same upload
// would otherwise never match.
func requestFingerprint(ctx *fasthttp.RequestCtx, op *Operation) []byte {
	h := sha256.New()
	h.Write([]byte(op.ID))
	h.Write([]byte{0})
	h.Write(ctx.Path())
	h.Write([]byte{0})
	if op.Multipart && bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("multipart/form-data")) {
		if form, err := ctx.MultipartForm(); err == nil {
			hashForm(h, form)
			return h.Sum(nil)
		}
	}
	h.Write(ctx.PostBody())
	return h.Sum(nil)
}

func hashForm(h hash.Hash, form *multipart.Form) {
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, k := range slices.Sorted(maps.Keys(form.Value)) {
		field("v:" + k)
		for _, v := range form.Value[k] {
			field(v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(form.File)) {
		field("f:" + k)
		for _, fh := range form.File[k] {
			field(fh.Filename)
			fsum := sha256.New()
			if f, err := fh.Open(); err == nil {
				_, _ = io.Copy(fsum, f)
				f.Close()
			}
			field(string(fsum.Sum(nil)))
		}
	}
}
