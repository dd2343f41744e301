package httpapi

// The viewer's download of a book's source PDF, whole or cut to the pages on show (issue 29,
// docs/VIEWER.md "Zoom, thumbnails, share, download and print").

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/valyala/fasthttp"

	"flipbook/actors/convert"
	"flipbook/api"
	"flipbook/storage"
)

// Download modes of a book (the spec's downloadable_pdf values, bulk settings).
const (
	DownloadFull   = "full"   // the whole PDF, or any range of its pages
	DownloadSingle = "single" // one page at a time
	DownloadSpread = "spread" // the pages on show: one page, or two side by side
)

// Bounds of a cut download.
const (
	downloadTimeout = 60 * time.Second // pdfseparate + pdfunite of one request
	downloadSlotsN  = 2                // cuts at a time (poppler is CPU and disk bound)
)

// downloadSlots bounds the cuts that run at once; a request waits for a slot within its timeout.
var downloadSlots = make(chan struct{}, downloadSlotsN)

// downloadMode is how readers may download a book's PDF now: DownloadFull, DownloadSingle or
// DownloadSpread, or "" when they may not (downloads off, or the book has no source PDF).
// settings.downloadable on with no mode stored (PUT's boolean) is full.
func downloadMode(b *storage.Book) string {
	if b.Document == "" || !b.Settings.Downloadable {
		return ""
	}
	switch b.Extra.DownloadMode {
	case DownloadSingle, DownloadSpread:
		return b.Extra.DownloadMode
	}
	return DownloadFull
}

// errDownloadOff answers a download of a book whose PDF readers may not download.
var errDownloadOff = &api.Error{Status: 404, Type: api.TypeNotFound, Message: "this flipbook's PDF cannot be downloaded"}

// viewDownload is GET /view/{book}/download?pages=N[-M]: the book's source PDF (no pages: the
// whole file, only when downloads are full), or pages N to M of it, cut from the source with
// poppler. It applies the rules of the page images (readerBook: published, not expired, billing
// not lapsed, a gated book's reader token) and the book's download mode: single allows one page,
// spread two consecutive pages at most, full anything.
func (s *Service) viewDownload(ctx *fasthttp.RequestCtx) {
	now := time.Now().UTC()
	b, cache, denied := s.readerBook(ctx, now)
	if denied != nil {
		s.readerDenied(ctx, denied)
		return
	}
	mode := downloadMode(b)
	if mode == "" || b.PageImagesStatus != storage.PagesReady {
		s.readerDenied(ctx, errDownloadOff)
		return
	}
	from, to, bad := downloadRange(ctx.QueryArgs(), b.PageCount)
	if bad != nil {
		s.readerDenied(ctx, bad)
		return
	}
	if e := downloadAllowed(mode, from, to); e != nil {
		s.readerDenied(ctx, e)
		return
	}
	if cache == readerTextCache {
		cache = cachePublicDoc
	} else {
		cache = cachePrivateDoc
	}
	base := strings.TrimSuffix(b.Document, filepath.Ext(b.Document))
	etag, suffix := `"`+base+`"`, ""
	if from > 0 {
		etag = fmt.Sprintf(`"%s-p%d-%d"`, base, from, to)
		suffix = " p" + strconv.Itoa(from)
		if to > from {
			suffix += "-" + strconv.Itoa(to)
		}
	}
	h := &ctx.Response.Header
	h.Set("Cache-Control", cache)
	h.Set("ETag", etag)
	h.Set("Vary", "X-Reader-Token")
	h.Set("X-Content-Type-Options", "nosniff")
	setNoIndex(ctx)
	if inm := ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 && strings.Contains(string(inm), etag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	body, size, err := s.downloadBody(b, from, to)
	if err != nil {
		h.Set("Cache-Control", "no-store")
		h.Del("ETag")
		var refused *api.Error
		if errors.As(err, &refused) {
			s.writeError(ctx, refused)
			return
		}
		s.log.Error("download", "book", b.RandomID, "pages", fmt.Sprint(from, "-", to), "err", err)
		s.writeError(ctx, api.ErrInternal())
		return
	}
	h.SetContentType("application/pdf")
	h.Set("Content-Disposition", attachmentName(b.Name, suffix))
	ctx.SetBodyStream(body, int(size))
}

// downloadRange reads ?pages=N or N-M (1 ≤ N ≤ M ≤ pages); no pages is 0, 0 (the whole file).
func downloadRange(args *fasthttp.Args, pages int) (from, to int, bad *api.Error) {
	v := string(args.Peek("pages"))
	if v == "" {
		return 0, 0, nil
	}
	a, z, two := strings.Cut(v, "-")
	if !two {
		z = a
	}
	from, err1 := strconv.Atoi(a)
	to, err2 := strconv.Atoi(z)
	if err1 != nil || err2 != nil || from < 1 || to < from || len(v) > 24 {
		return 0, 0, api.FieldError("pages", "must be a page number or a range N-M of page numbers (from 1)")
	}
	if to > pages {
		return 0, 0, api.FieldError("pages", "the flipbook has "+strconv.Itoa(pages)+" pages")
	}
	return from, to, nil
}

// downloadAllowed refuses what the book's download mode does not allow: the whole file unless
// full, more than one page when single, more than two when spread.
func downloadAllowed(mode string, from, to int) *api.Error {
	deny := func(msg string) *api.Error { return &api.Error{Status: 403, Type: TypeAccessDenied, Message: msg} }
	switch {
	case mode == DownloadFull:
		return nil
	case from == 0:
		return deny("this flipbook's PDF can be downloaded only page by page (pages=N)")
	case mode == DownloadSingle && to > from:
		return deny("this flipbook's PDF can be downloaded one page at a time")
	case mode == DownloadSpread && to > from+1:
		return deny("this flipbook's PDF can be downloaded at most two facing pages at a time")
	}
	return nil
}

// downloadBody is the PDF to send: the stored source (from 0), or pages from..to cut from it in
// a temporary directory that is removed when the body is closed (after it was sent).
func (s *Service) downloadBody(b *storage.Book, from, to int) (io.ReadCloser, int64, error) {
	if from == 0 {
		return s.Store.Blobs.Open(b.RandomID, b.Document)
	}
	ctx, cancel := context.WithTimeout(context.Background(), downloadTimeout)
	defer cancel()
	select {
	case downloadSlots <- struct{}{}:
		defer func() { <-downloadSlots }()
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	dir, err := os.MkdirTemp("", "flipbook-download-")
	if err != nil {
		return nil, 0, err
	}
	out, err := s.cutPages(ctx, b, dir, from, to)
	if err == nil {
		var f *os.File
		if f, err = os.Open(out); err == nil {
			st, _ := f.Stat()
			return &tempBody{File: f, dir: dir}, st.Size(), nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, 0, err
}

// cutPages writes pages from..to of the book's source PDF to a file in dir and returns its path:
// pdfcpu cuts them (convert.CutPDF: shared objects once). A PDF pdfcpu cannot read is cut by
// poppler, which copies the shared objects into every page: only for one or two pages (single
// and spread downloads), a range of more is refused rather than multiplied.
func (s *Service) cutPages(ctx context.Context, b *storage.Book, dir string, from, to int) (string, error) {
	src, local := s.Store.Blobs.Path(b.RandomID, b.Document)
	if !local { // an object store: a local copy first
		src = filepath.Join(dir, "source.pdf")
		if err := s.copyBlob(b, src); err != nil {
			return "", err
		}
	}
	out := filepath.Join(dir, "out.pdf")
	err := convert.CutPDF(src, out, from, to)
	if err == nil {
		return out, nil
	}
	if to-from > 1 {
		s.log.Warn("download: pdfcpu could not cut the pages", "book", b.RandomID, "err", err)
		return "", &api.Error{Status: 422, Type: api.TypeValidation,
			Message: "these pages cannot be cut from this flipbook's PDF; download it whole or a page at a time"}
	}
	pattern := filepath.Join(dir, "p-%d.pdf")
	if err := runPoppler(ctx, "pdfseparate", "-f", strconv.Itoa(from), "-l", strconv.Itoa(to), src, pattern); err != nil {
		return "", err
	}
	if from == to {
		return fmt.Sprintf(pattern, from), nil
	}
	args := make([]string, 0, to-from+2)
	for n := from; n <= to; n++ {
		args = append(args, fmt.Sprintf(pattern, n))
	}
	if err := runPoppler(ctx, "pdfunite", append(args, out)...); err != nil {
		return "", err
	}
	return out, nil
}

// copyBlob copies the book's stored source PDF to path.
func (s *Service) copyBlob(b *storage.Book, path string) error {
	r, _, err := s.Store.Blobs.Open(b.RandomID, b.Document)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runPoppler runs a poppler tool, killed when ctx ends; its error output is in the error.
func runPoppler(ctx context.Context, name string, args ...string) error {
	cmd := execCommand(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		if len(out) > 512 {
			out = out[:512]
		}
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// tempBody is a cut PDF being sent; closing it removes its temporary directory.
type tempBody struct {
	*os.File
	dir string
}

// Close closes the file and removes the directory it was cut in.
func (t *tempBody) Close() error {
	err := t.File.Close()
	if e := os.RemoveAll(t.dir); err == nil {
		err = e
	}
	return err
}

// attachmentName is the Content-Disposition of a download named after the book ("<name><suffix>.pdf"):
// an ASCII filename with anything a file system or the header could choke on replaced, and the
// name in UTF-8 as filename* (RFC 6266) when it has other letters.
func attachmentName(book, suffix string) string {
	name := strings.Join(strings.FieldsFunc(book, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`"\/:*?<>|`, r) || r == unicode.ReplacementChar
	}), " ")
	if r := []rune(name); len(r) > 100 {
		name = strings.TrimSpace(string(r[:100]))
	}
	name = strings.Trim(name, ". ")
	if name == "" {
		name = "flipbook"
	}
	name += suffix + ".pdf"
	ascii := []rune(name)
	plain := true
	for i, r := range ascii {
		if r > 126 {
			ascii[i], plain = '_', false
		}
	}
	cd := `attachment; filename="` + string(ascii) + `"`
	if !plain {
		cd += "; filename*=UTF-8''" + rfc5987(name)
	}
	return cd
}

// rfc5987 percent-encodes a UTF-8 value for an extended header parameter (filename*): letters,
// digits and -._~ as they are, every other byte as %XX.
func rfc5987(v string) string {
	var sb strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			sb.WriteByte(c)
			continue
		}
		fmt.Fprintf(&sb, "%%%02X", c)
	}
	return sb.String()
}

// execCommand is a command in its own process group, the whole group killed when ctx ends.
func execCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
