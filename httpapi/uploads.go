package httpapi

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"flipbook/actors"
	"flipbook/actors/convert"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

// DefaultMaxUploadBytes is the largest file POST /books accepts (422 above it).
const DefaultMaxUploadBytes = 200 << 20

// uploadBook is POST /books: one multipart file, stored and queued by acceptUpload.
func (s *bookService) UploadBook(r *api.Request, in *api.BookUpload) (*api.Data[api.UploadAccepted], error) {
	files := in.Files
	if len(files) != 1 {
		return nil, api.FieldError("files", "send exactly one file per request")
	}
	fh := files[0]
	src, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer src.Close()
	u, b, err := s.acceptUpload(r.Auth.Tenant, "files.0", src, fh.Size, fh.Filename, uploadOptions{
		OriginalFilename: in.OriginalFilename, Status: in.Status, AutoLinks: in.AutoLinks,
	})
	if err != nil {
		return nil, err
	}
	return &api.Data[api.UploadAccepted]{Status: 202, Data: api.UploadAccepted{
		BatchID: u.ID, Status: u.Status, BookIDs: []string{b.RandomID},
	}}, nil
}

// uploadOptions are the settings an upload carries besides its file.
type uploadOptions struct {
	OriginalFilename string
	Status           string // draft or publish ("" = draft)
	AutoLinks        bool
}

// acceptUpload is the entry point of conversion for a file from any source (a multipart part,
// base64 content of an MCP call): it stores the file durably, recognises its type from its
// content, and creates its book (page images "processing") and its batch in one commit. field
// names the parameter in validation errors.
func (s *bookService) acceptUpload(t storage.Tenant, field string, src io.Reader, size int64, filename string, o uploadOptions) (*storage.Upload, *storage.Book, error) {
	switch {
	case size == 0:
		return nil, nil, api.FieldError(field, "is empty")
	case size > int64(s.maxUploadBytes):
		return nil, nil, api.FieldError(field, fmt.Sprintf("is larger than the upload limit of %d MB", s.maxUploadBytes>>20))
	}
	batchID := actors.RandomString(20)
	stored := false
	defer func() {
		if !stored {
			_ = s.Store.RemoveBatchFiles(batchID)
		}
	}()
	path := actors.UploadPath(s.Store, batchID, 0)
	if err := saveUpload(src, path); err != nil {
		return nil, nil, err
	}
	kind, err := convert.Sniff(path, filename)
	if errors.Is(err, convert.ErrUnsupported) {
		return nil, nil, api.FieldError(field, err.Error())
	}
	if err != nil {
		return nil, nil, err
	}
	// A converter whose programs are not installed fails the upload now, saying which (not a
	// vague conversion failure later).
	if err := convert.CanConvert(kind); err != nil {
		return nil, nil, &api.Error{Status: 503, Type: api.TypeUnavailable, Message: err.Error()}
	}
	// Cluster mode: in the object store too before it is acknowledged (another node may
	// convert it after a takeover).
	if err := s.Store.StashUpload(batchID); err != nil {
		return nil, nil, err
	}
	name := o.OriginalFilename
	if name == "" {
		name = truncateRunes(filepath.Base(filename), 255)
	}
	title := strings.TrimSpace(strings.TrimSuffix(name, filepath.Ext(name)))
	if title == "" || title == "." {
		title = "Untitled"
	}
	b := newBook(title, "upload", o.Status)
	b.PageImagesStatus = storage.PagesProcessing
	b.BatchID = &batchID
	b.Extra.AutoLinksEnabled = o.AutoLinks
	u := &storage.Upload{ID: batchID, AutoLinks: o.AutoLinks, Files: []storage.UploadFile{{
		Name: name, Kind: kind, Size: size, BookID: b.RandomID, Status: storage.BatchQueued,
	}}}
	u, err = s.Actors.CreateUpload(t, u, []*storage.Book{b})
	if err != nil {
		return nil, nil, err
	}
	stored = true
	return u, b, nil
}

// saveUpload copies src to path and syncs it (and its folder) to disk.
func saveUpload(src io.Reader, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// batchWire renders a batch with the Book objects it produced (those still existing): the same
// object in every form (GET /batches/{id}, the upload status, the active uploads, a cancel), so
// a client polling the upload status gets the finished book without another call (docs/DECISIONS.md).
func (s *bookService) batchWire(u *storage.Upload) api.Batch {
	out := api.Batch{ID: u.ID, BatchID: u.ID, Status: u.Status, Files: []api.BatchFile{}, Books: []api.Raw[api.Book]{},
		CreatedAt: fmtTime(u.CreatedAt), StartedAt: fmtTimePtr(u.StartedAt), FinishedAt: fmtTimePtr(u.FinishedAt),
		CancelledAt: fmtTimePtr(u.CancelledAt)}
	for _, f := range u.Files {
		out.Progress.Total++
		switch f.Status {
		case storage.BatchCompleted:
			out.Progress.Completed++
		case storage.BatchFailed:
			out.Progress.Failed++
		case storage.BatchQueued, storage.BatchProcessing:
			out.Progress.Pending++
		}
		fj := api.BatchFile{Name: f.Name, Kind: f.Kind, Size: f.Size, BookID: f.BookID, Status: f.Status, Pages: f.Pages}
		if f.Error != "" {
			e := f.Error
			fj.Error = &e
		}
		out.Files = append(out.Files, fj)
		if f.BookID == "" {
			continue
		}
		if b, err := s.Store.GetBook(u.Tenant(), f.BookID); err == nil {
			out.Books = append(out.Books, api.Raw[api.Book](s.bookWire(b)))
		}
	}
	return out
}

func (s *bookService) loadUpload(r *api.Request, id string) (*storage.Upload, error) {
	u, err := s.Store.Upload(r.Auth.Tenant, id)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("batch")
	}
	return u, err
}

func (s *bookService) GetBatch(r *api.Request, in *api.BatchPath) (*api.Data[api.Batch], error) {
	u, err := s.loadUpload(r, in.BatchID)
	if err != nil {
		return nil, err
	}
	return api.OK(s.batchWire(u)), nil
}

func (s *bookService) UploadStatus(r *api.Request, in *api.BatchPath) (*api.Data[api.Batch], error) {
	u, err := s.loadUpload(r, in.BatchID)
	if err != nil {
		return nil, err
	}
	return api.OK(s.batchWire(u)), nil
}

// MaxActiveListed bounds the batches listed by the active-upload status.
const MaxActiveListed = 200

func (s *bookService) ActiveUploads(r *api.Request) (*api.Data[api.ActiveUploads], error) {
	list, err := s.Store.ActiveUploads(r.Auth.Tenant, MaxActiveListed)
	if err != nil {
		return nil, err
	}
	state := "idle"
	batches := make([]api.Batch, 0, len(list))
	for _, u := range list {
		if u.Status == storage.BatchProcessing {
			state = "processing"
		} else if state == "idle" {
			state = "queued"
		}
		batches = append(batches, s.batchWire(u))
	}
	return api.OK(api.ActiveUploads{State: state, Batches: batches}), nil
}

func (s *bookService) CancelBatch(r *api.Request, in *api.BatchPath) (*api.Data[api.Batch], error) {
	u, err := s.Actors.CancelUpload(r.Auth.Tenant, in.BatchID)
	switch {
	case errors.Is(err, errs.ErrNotFound):
		return nil, api.ErrNotFound("batch")
	case errors.Is(err, errs.ErrConflict):
		return nil, &api.Error{Status: 409, Type: api.TypeConflict, Message: "the batch has already finished; only a queued or converting batch can be cancelled"}
	case err != nil:
		return nil, err
	}
	return api.OK(s.batchWire(u)), nil
}
