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

// bookJSON is the Book of spec §2.1: exactly these fields, plus settings_revision.
type bookJSON struct {
	ID                int64            `json:"id"`
	RandomID          string           `json:"random_id"`
	BatchID           *string          `json:"batch_id"`
	ExternalCatalogID *int64           `json:"external_catalog_id"`
	Name              string           `json:"name"`
	Description       *string          `json:"description"`
	Status            *string          `json:"status"`
	PageCount         int              `json:"page_count"`
	PageImagesStatus  string           `json:"page_images_status"`
	PreviewURL        *string          `json:"preview_url"`
	ThumbnailURL      *string          `json:"thumbnail_url"`
	EmbedCode         *string          `json:"embed_code"`
	PublishedDate     *string          `json:"published_date"`
	ExpiresAt         *string          `json:"expires_at"`
	BillingExpiresAt  *string          `json:"billing_expires_at"`
	CreatedAt         *string          `json:"created_at"`
	UpdatedAt         *string          `json:"updated_at"`
	Settings          storage.Settings `json:"settings"`
	// SettingsRevision changes with every change of PUT /books/{book} or a bulk settings item
	// (spec §4.1: the revision bulk settings batches expect).
	SettingsRevision string `json:"settings_revision"`
}

func (s *Service) bookJSON(b *storage.Book) *bookJSON {
	preview := s.previewURL(b.RandomID)
	embed := fmt.Sprintf(`<iframe src="%s" width="100%%" height="600" style="border:0" allow="fullscreen" allowfullscreen title="%s"></iframe>`,
		html.EscapeString(preview), html.EscapeString(b.Name))
	status := b.Status
	out := &bookJSON{
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
func (s *Service) bookWire(b *storage.Book) json.RawMessage {
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

// listMeta is the pagination meta of cursor-paginated lists.
type listMeta struct {
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
	Limit      int     `json:"limit"`
}

// Book list defaults.
const (
	DefaultBookLimit = api.DefaultBookLimit
	// NameScanBudget bounds the index entries one filter[name] page examines; the page may then
	// hold fewer rows than limit, with has_more and a cursor to go on.
	NameScanBudget = 5000
)

func (s *Service) ListBooks(r *api.Request) (*api.Result, error) {
	q := storage.BookQuery{Limit: DefaultBookLimit, Sort: storage.SortCreated, Desc: true, ScanBudget: NameScanBudget}
	if n, ok := r.Int("limit"); ok {
		q.Limit = int(n)
	}
	sort := r.Str("sort")
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
	q.Status = r.Str("filter[status]")
	q.NameFilter = r.Str("filter[name]")
	t := r.Auth.Tenant
	binding := fmt.Sprintf("books|%d|%c|%s|%s|%s", t.Workspace, t.Mode, sort, q.Status, q.NameFilter)
	if c := r.Str("cursor"); c != "" {
		after, err := s.cursors.decode(binding, c)
		if err != nil {
			return nil, api.FieldError("cursor", "is not a cursor issued for this query; use meta.next_cursor of the previous page with the same filters and sort")
		}
		q.After = after
	}
	page, err := s.Store.ListBooks(t, q)
	if err != nil {
		return nil, err
	}
	data := make([]json.RawMessage, len(page.Books))
	for i, b := range page.Books {
		data[i] = s.bookWire(b)
	}
	meta := listMeta{HasMore: page.HasMore, Limit: q.Limit}
	if page.HasMore {
		c := s.cursors.encode(binding, page.Last)
		meta.NextCursor = &c
	}
	return &api.Result{Data: data, Meta: meta}, nil
}

// loadBook reads a book of the caller's tenant; other tenants' books are not found.
func (s *Service) loadBook(r *api.Request) (*storage.Book, error) { return s.bookOf(r, r.Str("book")) }

// bookOf is the caller's book rid (a 404 when the workspace has none such).
func (s *Service) bookOf(r *api.Request, rid string) (*storage.Book, error) {
	b, err := s.Store.GetBook(r.Auth.Tenant, rid)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("book")
	}
	return b, err
}

func (s *Service) GetBook(r *api.Request, in *api.BookPath) (*api.Result, error) {
	b, err := s.bookOf(r, in.Book)
	if err != nil {
		return nil, err
	}
	return &api.Result{Data: s.bookWire(b)}, nil
}

func (s *Service) UpdateBook(r *api.Request) (*api.Result, error) {
	if _, err := s.loadBook(r); err != nil { // 404 without spawning an actor for unknown ids
		return nil, err
	}
	b, err := s.Actors.UpdateBook(r.Auth.Tenant, r.Str("book"), bookPatch(r))
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("book")
	}
	if err != nil {
		return nil, err
	}
	return &api.Result{Data: s.bookWire(b)}, nil
}

func (s *Service) DeleteBook(r *api.Request, in *api.BookPath) (*api.Result, error) {
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
	return &api.Result{Data: map[string]string{"message": "The flipbook was deleted."},
		Meta: map[string]any{"book_id": b.RandomID}}, nil
}

func optStr(r *api.Request, name string) actors.Opt[string] {
	v, ok := r.Params[name]
	if !ok {
		return actors.Opt[string]{}
	}
	if v == nil {
		return actors.Opt[string]{Set: true, Null: true}
	}
	return actors.Val(v.(string))
}

func optBool(r *api.Request, name string) actors.Opt[bool] {
	if v, ok := r.Params[name].(bool); ok {
		return actors.Val(v)
	}
	return actors.Opt[bool]{}
}

func optTime(r *api.Request, name string) actors.Opt[time.Time] {
	v, ok := r.Params[name]
	if !ok {
		return actors.Opt[time.Time]{}
	}
	if v == nil {
		return actors.Opt[time.Time]{Set: true, Null: true}
	}
	return actors.Val(v.(time.Time))
}

func bookPatch(r *api.Request) *actors.BookPatch {
	return &actors.BookPatch{
		Status:                  r.Str("status"),
		Title:                   optStr(r, "title"),
		Description:             optStr(r, "description"),
		Slug:                    optStr(r, "slug"),
		PublishedDate:           optTime(r, "published_date"),
		ExpiresAt:               optTime(r, "expires_at"),
		AccessibilityEnabled:    optBool(r, "accessibility_enabled"),
		AllowFullscreen:         optBool(r, "allow_fullscreen"),
		AutoLinksEnabled:        optBool(r, "auto_links_enabled"),
		CopyrightEnabled:        optBool(r, "copyright_enabled"),
		DownloadablePDF:         optBool(r, "downloadable_pdf"),
		FlipSound:               optBool(r, "flip_sound"),
		MadeWithBadgeEnabled:    optBool(r, "made_with_badge_enabled"),
		OpenFullscreenByDefault: optBool(r, "open_fullscreen_by_default"),
		ShareSocialMedia:        optBool(r, "share_social_media"),
		AnimationType:           optStr(r, "animation_type"),
		MobileAnimationType:     optStr(r, "mobile_animation_type"),
		Background:              optStr(r, "background"),
		ImageDisplay:            optStr(r, "image_display"),
		MagicLinkMessage:        optStr(r, "magic_link_message"),
		MagicLinkErrorMessage:   optStr(r, "magic_link_error_message"),
		PDFPassword:             optStr(r, "pdf_password"),
		PDFPrivacyStatus:        optStr(r, "pdf_privacy_status"),
		Watermark:               optStr(r, "watermark"),
	}
}
