package httpapi

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

var contentTypes = map[string]string{
	".jpg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp",
	".pdf": "application/pdf",
}

// serveFile serves a book's stored file. Names are content hashes, so a URL's bytes never change:
// the ETag is the name and the response is cacheable forever.
func (s *Service) serveFile(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.Set("X-Request-Id", s.requestID(ctx))
	rid, _ := ctx.UserValue("book").(string)
	name, _ := ctx.UserValue("name").(string)
	path, ok := s.Store.Blobs.Path(rid, name)
	if !ok {
		s.writeError(ctx, errNotFound("file"))
		return
	}
	f, err := os.Open(path)
	if err != nil {
		s.writeError(ctx, errNotFound("file"))
		return
	}
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		f.Close()
		s.writeError(ctx, errNotFound("file"))
		return
	}
	etag := `"` + strings.TrimSuffix(name, filepath.Ext(name)) + `"`
	h := &ctx.Response.Header
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	if ct, ok := contentTypes[filepath.Ext(name)]; ok {
		h.SetContentType(ct)
	} else {
		h.SetContentType("application/octet-stream")
	}
	if inm := ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 && strings.Contains(string(inm), etag) {
		f.Close()
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	if ctx.IsHead() {
		f.Close()
		h.Set("Content-Length", strconv.FormatInt(st.Size(), 10))
		return
	}
	ctx.SetBodyStream(f, int(st.Size()))
}
