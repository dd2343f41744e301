package httpapi

// Serving the viewer fast (issue 29, docs/VIEWER.md "Assets and caching"): its scripts and
// styles minified, precompressed and kept a year under content-hashed names; its HTML pages
// compressed as they are sent.

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"flipbook/httpapi/viewer"
	"flipbook/storage"
)

// Cache lifetimes of the viewer's assets: a hashed name's bytes never change, so browsers and
// caches keep it a year without asking; a plain name (viewer.js, from a page cached before the
// names were hashed) or a hash of another deployment gets today's file, revalidated after 5
// minutes (the ETag makes that a 304).
const (
	cacheAssetHashed = "public, max-age=31536000, immutable"
	cacheAssetPlain  = "public, max-age=300"
)

// Compression of HTML as it is sent: pages under minCompressHTML bytes are sent as they are (a
// packet either way); brotli at level 5 and gzip at 6 compress a viewer page of 30 KB in about
// a millisecond.
const (
	minCompressHTML  = 1024
	brotliLevelHTML  = 5
	gzipLevelHTML    = 6
	encodingBrotli   = "br"
	encodingGzip     = "gzip"
	headerVary       = "Vary"
	varyOnEncoding   = "Accept-Encoding"
	headerContentEnc = "Content-Encoding"
)

// prepareViewerAssets minifies and compresses the viewer's assets in the background at
// start-up, so the first reader does not wait for it (about 0.2 s of one core).
func prepareViewerAssets() { go viewer.Assets() }

// viewerAsset is GET /viewer/assets/{name}: a script or style of the viewer, minified, in the
// best encoding the request accepts (brotli, gzip, or none).
func (s *Service) viewerAsset(ctx *fasthttp.RequestCtx) {
	name, _ := ctx.UserValue("name").(string)
	if !storage.ValidName(name) {
		ctx.SetStatusCode(404)
		return
	}
	a, current := viewer.Assets().Lookup(name)
	if a == nil {
		ctx.SetStatusCode(404)
		return
	}
	h := &ctx.Response.Header
	if current {
		h.Set("Cache-Control", cacheAssetHashed)
	} else {
		h.Set("Cache-Control", cacheAssetPlain)
	}
	etag := `W/"` + a.Hash + `"` // weak: the same for every encoding of the file
	h.Set("ETag", etag)
	h.Set(headerVary, varyOnEncoding)
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentType(a.ContentType)
	if inm := ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 && bytes.Contains(inm, []byte(`"`+a.Hash+`"`)) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	body, enc := a.Body, ""
	ae := ctx.Request.Header.Peek("Accept-Encoding")
	switch {
	case a.Brotli != nil && acceptsEncoding(ae, encodingBrotli):
		body, enc = a.Brotli, encodingBrotli
	case a.Gzip != nil && acceptsEncoding(ae, encodingGzip):
		body, enc = a.Gzip, encodingGzip
	}
	if enc != "" {
		h.Set(headerContentEnc, enc)
	}
	ctx.Response.SetBodyRaw(body) // shared and never changed: not copied
}

// acceptsEncoding reports whether an Accept-Encoding header allows coding: named, or covered by
// "*", with a q-value above 0 (RFC 9110 §12.5.3).
func acceptsEncoding(header []byte, coding string) bool {
	star := false
	for part := range strings.SplitSeq(string(header), ",") {
		tok, params, _ := strings.Cut(part, ";")
		tok = strings.ToLower(strings.TrimSpace(tok))
		if tok != coding && tok != "*" {
			continue
		}
		ok := qAboveZero(params)
		if tok == coding {
			return ok
		}
		star = ok
	}
	return star
}

// qAboveZero reads the q parameter of an Accept-Encoding element: true when it is absent or
// above 0.
func qAboveZero(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err != nil || q > 0 // a malformed q is ignored
		}
	}
	return true
}

// compressHTML wraps a handler of HTML pages or JSON (the viewer's text and search): an answer
// of text/html or application/json of at least minCompressHTML bytes is compressed with
// brotli or gzip when the request accepts it (images and other bodies are left alone). A
// strong ETag becomes weak: the compressed bytes differ from those it names, and the
// handler's If-None-Match check still finds it.
func compressHTML(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		next(ctx)
		compressHTMLBody(ctx)
	}
}

func compressHTMLBody(ctx *fasthttp.RequestCtx) {
	r := &ctx.Response
	h := &r.Header
	ct := h.ContentType()
	if r.IsBodyStream() || len(h.ContentEncoding()) > 0 ||
		!bytes.HasPrefix(ct, []byte("text/html")) && !bytes.HasPrefix(ct, []byte("application/json")) {
		return
	}
	body := r.Body()
	if len(body) < minCompressHTML {
		return
	}
	// The answer now depends on Accept-Encoding, compressed or not: caches must know.
	if v := h.Peek(headerVary); len(v) > 0 {
		h.Set(headerVary, string(v)+", "+varyOnEncoding)
	} else {
		h.Set(headerVary, varyOnEncoding)
	}
	ae := ctx.Request.Header.Peek("Accept-Encoding")
	var out []byte
	var enc string
	switch {
	case acceptsEncoding(ae, encodingBrotli):
		out, enc = fasthttp.AppendBrotliBytesLevel(nil, body, brotliLevelHTML), encodingBrotli
	case acceptsEncoding(ae, encodingGzip):
		out, enc = fasthttp.AppendGzipBytesLevel(nil, body, gzipLevelHTML), encodingGzip
	default:
		return
	}
	r.SetBodyRaw(out)
	h.Set(headerContentEnc, enc)
	if et := h.Peek("ETag"); len(et) > 0 && et[0] == '"' {
		h.Set("ETag", "W/"+string(et))
	}
}

// serveFavicon is GET /favicon.ico: the service's icon, which browsers ask for on any page
// that names none (a 404 there is an error in the console).
func (s *Service) serveFavicon(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentType("image/x-icon")
	ctx.Response.SetBodyRaw(viewer.Favicon())
}
