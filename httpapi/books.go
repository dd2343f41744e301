package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"time"

	"flipbook/actors"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

// TimeFormat is how timestamps are written: RFC 3339, UTC, microseconds.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

func fmtTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(TimeFormat)
	return &s
}

func fmtTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	return fmtTime(*t)
}

// links builds the public URLs answers carry (Config.PublicURL) and the books' wire JSON:
// every domain that answers with a book or a link embeds one.
type links struct{ publicURL string }

func (s links) previewURL(rid string) string { return s.publicURL + "/view/" + rid }
func (s links) fileURL(rid, name string) string {
	return s.publicURL + "/files/" + rid + "/" + name
}

func (s links) bookJSON(b *storage.Book) *api.Book {
	preview := s.previewURL(b.RandomID)
	embed := fmt.Sprintf(`<iframe src="%s" width="100%%" height="600" style="border:0" allow="fullscreen" allowfullscreen title="%s"></iframe>`,
		html.EscapeString(preview), html.EscapeString(b.Name))
	status := b.Status
	out := &api.Book{
		ID: b.ID, RandomID: b.RandomID, BatchID: b.BatchID, ExternalCatalogID: b.ExternalCatalogID,
		Name: b.Name, Description: b.Description, Status: &status, PageCount: b.PageCount,
		PageImagesStatus: b.PageImagesStatus, PreviewURL: &preview, EmbedCode: &embed,
		PublishedDate: fmtTimePtr(b.PublishedDate), ExpiresAt: fmtTimePtr(b.ExpiresAt),
		BillingExpiresAt: fmtTimePtr(b.BillingExpiresAt),
		CreatedAt:        fmtTime(b.CreatedAt), UpdatedAt: fmtTime(b.UpdatedAt), Settings: b.Settings,
		SettingsRevision: b.SettingsRevision(),
	}
	if b.Thumbnail != "" {
		u := s.fileURL(b.RandomID, b.Thumbnail)
		out.ThumbnailURL = &u
	}
	return out
}

// bookWire is the encoded wire JSON of a book, computed once per stored record version.
func (s links) bookWire(b *storage.Book) json.RawMessage {
	render := func() any {
		out, err := respJSON.Marshal(s.bookJSON(b))
		if err != nil {
			panic(err) // plain structs of strings, numbers and bools always encode
		}
		return json.RawMessage(out)
	}
	if b.Memo == nil {
		return render().(json.RawMessage)
	}
	return b.Memo.Get(render).(json.RawMessage)
}

// Book list defaults.
const (
	DefaultBookLimit = api.DefaultBookLimit
	// NameScanBudget bounds the index entries one filter[name] page examines; the page may then
	// hold fewer rows than limit, with has_more and a cursor to go on.
	NameScanBudget = 5000
)

// bookService runs the book operations (spec §4.1): books, uploads and their batches, editor
// books and books from templates, in the store and the blob store, created and changed
// through the actors (which convert uploads).
type bookService struct {
	links
	Store          *storage.Store
	Actors         *actors.System
	cursors        *cursors
	maxUploadBytes int  // Config.MaxUploadBytes
	allowPrivate   bool // Config.AllowPrivateTargets: the SSRF guard's policy for template images
	noRenditions   bool // Config.NoRenditions: the pages' renditions are not offered
	noText         bool // Config.NoPageText: template books keep no text either
}

func (s *bookService) ListBooks(r *api.Request, in *api.BookList) (*api.Reply[[]api.Raw[api.Book], api.CursorMeta], error) {
	q := storage.BookQuery{Limit: DefaultBookLimit, Sort: storage.SortCreated, Desc: true, ScanBudget: NameScanBudget}
	if in.Limit > 0 {
		q.Limit = int(in.Limit)
	}
	sort := in.Sort
	if sort == "" {
		sort = "-created_at"
	}
	field := sort
	if field[0] == '-' {
		field = field[1:]
	}
	q.Desc = sort[0] == '-'
	q.Sort = map[string]byte{"created_at": storage.SortCreated, "updated_at": storage.SortUpdated,
		"name": storage.SortName, "status": storage.SortStatus}[field]
	q.Status, q.NameFilter = in.Status, in.Name
	t := r.Auth.Tenant
	binding := fmt.Sprintf("books|%d|%c|%s|%s|%s", t.Workspace, t.Mode, sort, q.Status, q.NameFilter)
	if in.Cursor != "" {
		after, err := s.cursors.decode(binding, in.Cursor)
		if err != nil {
			return nil, api.FieldError("cursor", "is not a cursor issued for this query; use meta.next_cursor of the previous page with the same filters and sort")
		}
		q.After = after
	}
	page, err := s.Store.ListBooks(t, q)
	if err != nil {
		return nil, err
	}
	data := make([]api.Raw[api.Book], len(page.Books))
	for i, b := range page.Books {
		data[i] = api.Raw[api.Book](s.bookWire(b))
	}
	meta := api.CursorMeta{HasMore: page.HasMore, Limit: q.Limit}
	if page.HasMore {
		c := s.cursors.encode(binding, page.Last)
		meta.NextCursor = &c
	}
	return api.With(data, meta), nil
}

// bookOf is the caller's book rid (a 404 when the workspace has none such).
func (s *bookService) bookOf(r *api.Request, rid string) (*storage.Book, error) {
	return tenantBook(s.Store, r, rid)
}

// tenantBook is the caller's book rid in st (a 404 when the workspace has none such).
func tenantBook(st *storage.Store, r *api.Request, rid string) (*storage.Book, error) {
	b, err := st.GetBook(r.Auth.Tenant, rid)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("book")
	}
	return b, err
}

func (s *bookService) GetBook(r *api.Request, in *api.BookPath) (*api.Data[api.Raw[api.Book]], error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	return api.OK(api.Raw[api.Book](s.bookWire(b))), nil
}

func (s *bookService) UpdateBook(r *api.Request, in *api.BookUpdate) (*api.Data[api.Raw[api.Book]], error) {
	if _, err := s.bookOf(r, in.Book); err != nil { // 404 without spawning an actor for unknown ids
		return nil, err
	}
	b, err := s.Actors.UpdateBook(r.Auth.Tenant, in.Book, in.Patch())
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("book")
	}
	if err != nil {
		return nil, err
	}
	return api.OK(api.Raw[api.Book](s.bookWire(b))), nil
}

func (s *bookService) DeleteBook(r *api.Request, in *api.BookPath) (*api.Reply[api.BookDeleted, api.BookDeletedMeta], error) {
	if _, err := s.bookOf(r, in.Book); err != nil {
		return nil, err
	}
	b, err := s.Actors.DeleteBook(r.Auth.Tenant, in.Book)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("book")
	}
	if err != nil {
		return nil, err
	}
	return api.With(api.BookDeleted{Message: "The flipbook was deleted."}, api.BookDeletedMeta{BookID: b.RandomID}), nil
}
