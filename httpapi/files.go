package httpapi

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/api"
	"flipbook/storage"
)

var contentTypes = map[string]string{
	".jpg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp",
	".pdf": "application/pdf",
}

// Cache lifetimes of served files. Names are content hashes, so a URL's bytes never change, but
// whether it may be read does (unpublish, gate, download switched off). A public book's page
// images and thumbnail are kept a year by the reader's browser, which does not even revalidate
// them (immutable: issue 29); shared caches (a CDN) keep them an hour and then revalidate (the
// ETag makes that a 304), so unpublishing a book takes effect there within the hour. A gated
// book's files stay private to the reader's browser for an hour.
const (
	cachePublicFile  = "public, max-age=31536000, s-maxage=3600, immutable"
	cachePrivateFile = "private, max-age=3600"
	cachePublicDoc   = "public, no-cache"
	cachePrivateDoc  = "private, no-cache"
	cacheBrandFile   = "public, max-age=31536000, immutable"
)

// fileAccess decides whether a book file may be served now, and how caches may keep it:
//   - the thumbnail is served while the book exists (the API shows it for drafts too);
//   - page images and other files only while the book is publicly reachable (published, not
//     expired, billing not lapsed); a gated book's only with a reader token the access list
//     still covers (header or ?token=), and then privately cached;
//   - the source document only when downloads are on as well, and never kept by a cache without
//     asking (no-cache), so switching downloads off takes effect at once.
func (s *Service) fileAccess(ctx *fasthttp.RequestCtx, rid, name string, now time.Time) (cache string, err *api.Error) {
	if storage.IsBrandFolder(rid) {
		return cacheBrandFile, nil // brand logos are public (shown in every viewer of the tenant)
	}
	b, e := s.bookAnyStatus(rid)
	if e != nil {
		return "", api.ErrNotFound("file")
	}
	if name == b.Thumbnail {
		return cachePublicFile, nil
	}
	if !shownPublicly(b, now) || billingExpired(b, now) {
		return "", api.ErrNotFound("file")
	}
	doc := name == b.Document
	if doc && downloadMode(b) != DownloadFull { // single, spread: cut pages only (download.go)
		return "", api.ErrNotFound("file")
	}
	if !b.Settings.EODEnabled {
		if doc {
			return cachePublicDoc, nil
		}
		return cachePublicFile, nil
	}
	if _, ok, e := s.verifyReader(readerToken(ctx), b, now); e != nil {
		return "", api.ErrInternal()
	} else if !ok {
		return "", errGate
	}
	if doc {
		return cachePrivateDoc, nil
	}
	return cachePrivateFile, nil
}

// serveFile serves a stored file of a book or a tenant's brand, if fileAccess allows it now. The
// ETag is the name (a content hash).
func (s *Service) serveFile(ctx *fasthttp.RequestCtx) {
	rid, _ := ctx.UserValue("book").(string)
	name, _ := ctx.UserValue("name").(string)
	if !storage.ValidName(rid) || !storage.ValidName(name) {
		s.writeError(ctx, api.ErrNotFound("file"))
		return
	}
	cache, denied := s.fileAccess(ctx, rid, name, time.Now().UTC())
	if denied != nil {
		ctx.Response.Header.Set("Cache-Control", "no-store")
		s.writeError(ctx, denied)
		return
	}
	f, size, err := s.Store.Blobs.Open(rid, name) // a local file, or an object (--blob-url)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.log.Error("open stored file", "book", rid, "name", name, "err", err)
		}
		s.writeError(ctx, api.ErrNotFound("file"))
		return
	}
	etag := `"` + strings.TrimSuffix(name, filepath.Ext(name)) + `"`
	h := &ctx.Response.Header
	h.Set("ETag", etag)
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
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
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		return
	}
	ctx.SetBodyStream(f, int(size))
}
