package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"flipbook/actors"
	"flipbook/actors/convert"
	"flipbook/storage"
)

// DefaultMaxUploadBytes is the largest file POST /books accepts (422 above it).
const DefaultMaxUploadBytes = 200 << 20

// uploadBook stores one uploaded file durably, recognises its type from its content, and
// creates its book (page images "processing") and its batch in one commit before answering 202.
func (s *Service) uploadBook(r *Request) (*Result, error) {
	files := r.Params["files"].([]*multipart.FileHeader)
	if len(files) != 1 {
		return nil, fieldError("files", "send exactly one file per request")
	}
	fh := files[0]
	switch {
	case fh.Size == 0:
		return nil, fieldError("files.0", "is empty")
	case fh.Size > int64(s.cfg.MaxUploadBytes):
		return nil, fieldError("files.0", fmt.Sprintf("is larger than the upload limit of %d MB", s.cfg.MaxUploadBytes>>20))
	}
	batchID := actors.RandomString(20)
	stored := false
	defer func() {
		if !stored {
			_ = s.Store.RemoveBatchFiles(batchID)
		}
	}()
	path := actors.UploadPath(s.Store, batchID, 0)
	if err := saveUpload(fh, path); err != nil {
		return nil, err
	}
	kind, err := convert.Sniff(path, fh.Filename)
	if errors.Is(err, convert.ErrUnsupported) {
		return nil, fieldError("files.0", err.Error())
	}
	if err != nil {
		return nil, err
	}
	name := r.Str("original_filename")
	if name == "" {
		name = truncateRunes(filepath.Base(fh.Filename), 255)
	}
	title := strings.TrimSpace(strings.TrimSuffix(name, filepath.Ext(name)))
	if title == "" {
		title = "Untitled"
	}
	b := newBook(title, "upload", r.Str("status"))
	b.PageImagesStatus = storage.PagesProcessing
	b.BatchID = &batchID
	auto, _ := r.Params["auto_links_enabled"].(bool)
	b.Extra.AutoLinksEnabled = auto
	u := &storage.Upload{ID: batchID, AutoLinks: auto, Files: []storage.UploadFile{{
		Name: name, Kind: kind, Size: fh.Size, BookID: b.RandomID, Status: storage.BatchQueued,
	}}}
	if _, err := s.Actors.CreateUpload(r.Auth.Tenant, u, []*storage.Book{b}); err != nil {
		return nil, err
	}
	stored = true
	return &Result{Status: 202, Data: map[string]any{
		"batch_id": batchID, "status": storage.BatchQueued, "book_ids": []string{b.RandomID},
	}}, nil
}

// saveUpload copies a multipart file to path and syncs it (and its folder) to disk.
func saveUpload(fh *multipart.FileHeader, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	src, err := fh.Open()
	if err != nil {
		return err
	}
	defer src.Close()
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

// Batch wire types.

type progressJSON struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Pending   int `json:"pending"`
	Failed    int `json:"failed"`
}

type batchFileJSON struct {
	Name   string  `json:"name"`
	Kind   string  `json:"kind"`
	Size   int64   `json:"size"`
	BookID string  `json:"book_id"`
	Status string  `json:"status"`
	Pages  int     `json:"page_count"`
	Error  *string `json:"error"`
}

type batchJSON struct {
	ID          string            `json:"id"`
	BatchID     string            `json:"batch_id"`
	Status      string            `json:"status"`
	Progress    progressJSON      `json:"progress"`
	Files       []batchFileJSON   `json:"files"`
	Books       []json.RawMessage `json:"books"`
	CreatedAt   *string           `json:"created_at"`
	StartedAt   *string           `json:"started_at"`
	FinishedAt  *string           `json:"finished_at"`
	CancelledAt *string           `json:"cancelled_at"`
}

// batchWire renders a batch; with books, the Book objects it produced (those still existing).
func (s *Service) batchWire(u *storage.Upload, books bool) *batchJSON {
	out := &batchJSON{ID: u.ID, BatchID: u.ID, Status: u.Status, Files: []batchFileJSON{}, Books: []json.RawMessage{},
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
		fj := batchFileJSON{Name: f.Name, Kind: f.Kind, Size: f.Size, BookID: f.BookID, Status: f.Status, Pages: f.Pages}
		if f.Error != "" {
			e := f.Error
			fj.Error = &e
		}
		out.Files = append(out.Files, fj)
		if books {
			if b, err := s.Store.GetBook(u.Tenant(), f.BookID); err == nil {
				out.Books = append(out.Books, s.bookWire(b))
			}
		}
	}
	return out
}

func (s *Service) loadUpload(r *Request) (*storage.Upload, error) {
	u, err := s.Store.Upload(r.Auth.Tenant, r.Str("batchId"))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errNotFound("batch")
	}
	return u, err
}

func (s *Service) getBatch(r *Request) (*Result, error) {
	u, err := s.loadUpload(r)
	if err != nil {
		return nil, err
	}
	return &Result{Data: s.batchWire(u, true)}, nil
}

func (s *Service) uploadStatus(r *Request) (*Result, error) {
	u, err := s.loadUpload(r)
	if err != nil {
		return nil, err
	}
	return &Result{Data: s.batchWire(u, false)}, nil
}

// MaxActiveListed bounds the batches listed by the active-upload status.
const MaxActiveListed = 200

func (s *Service) activeUploads(r *Request) (*Result, error) {
	list, err := s.Store.ActiveUploads(r.Auth.Tenant, MaxActiveListed)
	if err != nil {
		return nil, err
	}
	state := "idle"
	batches := make([]*batchJSON, 0, len(list))
	for _, u := range list {
		if u.Status == storage.BatchProcessing {
			state = "processing"
		} else if state == "idle" {
			state = "queued"
		}
		batches = append(batches, s.batchWire(u, false))
	}
	return &Result{Data: map[string]any{"state": state, "batches": batches}}, nil
}

func (s *Service) cancelBatch(r *Request) (*Result, error) {
	u, err := s.Actors.CancelUpload(r.Auth.Tenant, r.Str("batchId"))
	switch {
	case errors.Is(err, actors.ErrNotFound):
		return nil, errNotFound("batch")
	case errors.Is(err, actors.ErrConflict):
		return nil, &Error{Status: 409, Type: TypeConflict, Message: "the batch has already finished; only a queued or converting batch can be cancelled"}
	case err != nil:
		return nil, err
	}
	return &Result{Data: s.batchWire(u, true)}, nil
}
