package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"flipbook/actors"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

// Bulk settings batches and the settings summary (spec §3.4, §4.1, §4.1.1; docs/DECISIONS.md
// "Bulk settings"). Batches run in the bulk supervisor (actors/bulk.go); reads come from Pebble.

type bulkErrorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type bulkItemJSON struct {
	BookID                  string         `json:"book_id"`
	SettingsRevision        string         `json:"settings_revision"`
	Status                  string         `json:"status"`
	Error                   *bulkErrorJSON `json:"error"`
	NewSettingsRevision     *string        `json:"new_settings_revision"`
	CurrentSettingsRevision *string        `json:"current_settings_revision"`
	FinishedAt              *string        `json:"finished_at"`
}

type bulkCountsJSON struct {
	Pending   int `json:"pending"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

type bulkProgressJSON struct {
	Finished string         `json:"finished"` // a count, as the spec types it: a string
	Percent  int            `json:"percent"`
	Total    int            `json:"total"`
	Counts   bulkCountsJSON `json:"counts"`
}

// bulkBatchJSON is spec §4.1's bulk batch object.
type bulkBatchJSON struct {
	ID             string           `json:"id"`
	Status         string           `json:"status"`
	CreatedAt      *string          `json:"created_at"`
	StartedAt      *string          `json:"started_at"`
	FinishedAt     *string          `json:"finished_at"`
	CancelledAt    *string          `json:"cancelled_at"`
	Items          []bulkItemJSON   `json:"items"`
	Progress       bulkProgressJSON `json:"progress"`
	RetryOfBatchID *string          `json:"retry_of_batch_id"`
	Settings       map[string]any   `json:"settings"`
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func bulkJSON(b *storage.BulkBatch, items []*storage.BulkItem) *bulkBatchJSON {
	out := &bulkBatchJSON{ID: b.ID, Status: b.Status, CreatedAt: fmtTime(b.CreatedAt), StartedAt: fmtTimePtr(b.StartedAt),
		FinishedAt: fmtTimePtr(b.FinishedAt), CancelledAt: fmtTimePtr(b.CancelledAt),
		Items: make([]bulkItemJSON, len(items)), RetryOfBatchID: strOrNil(b.RetryOf), Settings: b.Settings}
	if out.Settings == nil {
		out.Settings = map[string]any{}
	}
	c := &out.Progress.Counts
	for i, it := range items {
		j := bulkItemJSON{BookID: it.BookID, SettingsRevision: it.Expected, Status: it.Status,
			NewSettingsRevision: strOrNil(it.NewRevision), CurrentSettingsRevision: strOrNil(it.CurrentRevision),
			FinishedAt: fmtTimePtr(it.FinishedAt)}
		if it.ErrorCode != "" {
			j.Error = &bulkErrorJSON{Code: it.ErrorCode, Message: it.ErrorMessage}
		}
		out.Items[i] = j
		switch it.Status {
		case storage.ItemPending:
			c.Pending++
		case storage.ItemSucceeded:
			c.Succeeded++
		case storage.ItemFailed:
			c.Failed++
		case storage.ItemCancelled:
			c.Cancelled++
		}
	}
	p := &out.Progress
	p.Total = len(items)
	finished := c.Succeeded + c.Failed + c.Cancelled
	p.Finished = strconv.Itoa(finished)
	if p.Total > 0 {
		p.Percent = finished * 100 / p.Total
	}
	return out
}

// bulkErr maps the supervisor's refusals to API errors.
func bulkErr(err error) error {
	var ce *actors.ConflictError
	switch {
	case errors.As(err, &ce):
		return &api.Error{Status: 409, Type: api.TypeConflict, Message: ce.Message}
	case errors.Is(err, errs.ErrNotFound):
		return api.ErrNotFound("bulk settings batch")
	}
	return err
}

// bulkSettingKeys are the keys of the bulk settings object (spec §4.1.1).
func bulkSettingKeys() []string {
	ps := api.BulkSettingsParams()
	out := make([]string, len(ps))
	for i := range ps {
		out[i] = ps[i].Name
	}
	return out
}

// bulkService runs the bulk settings operations (spec §4.1): batches in the store, run by the
// actors' bulk supervisor.
type bulkService struct {
	Store  *storage.Store
	Actors *actors.System
}

func (s *bulkService) CreateBulkSettings(r *api.Request, in *api.BulkSettingsCreate) (*api.Result, error) {
	t := r.Auth.Tenant
	settings := in.Settings
	v := api.Validation{}
	if len(settings) == 0 { // settings is required: present
		v.Add("settings", "must set at least one of: "+strings.Join(bulkSettingKeys(), ", "))
	}
	seen := make(map[string]int, len(in.Books))
	items := make([]storage.BulkItem, 0, len(in.Books))
	for i, book := range in.Books {
		id, rev := book.ID, book.SettingsRevision
		field := fmt.Sprintf("books.%d.id", i)
		if first, dup := seen[id]; dup {
			v.Add(field, fmt.Sprintf("repeats books.%d.id: a book may appear once in a batch", first))
			continue
		}
		seen[id] = i
		if _, err := s.Store.GetBook(t, id); err != nil {
			if !errors.Is(err, errs.ErrNotFound) {
				return nil, err
			}
			v.Add(field, "no such book: "+id)
			continue
		}
		items = append(items, storage.BulkItem{BookID: id, Expected: rev})
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	view, err := s.Actors.CreateBulk(t, items, settings)
	if err != nil {
		return nil, bulkErr(err)
	}
	return &api.Result{Status: 202, Data: bulkJSON(view.Batch, view.Items), Meta: map[string]any{}}, nil
}

func (s *bulkService) GetBulkSettings(r *api.Request, in *api.BulkBatchPath) (*api.Result, error) {
	b, items, err := s.Store.BulkBatchView(r.Auth.Tenant, in.Batch)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("bulk settings batch")
	}
	if err != nil {
		return nil, err
	}
	return &api.Result{Data: bulkJSON(b, items)}, nil
}

func (s *bulkService) CancelBulkSettings(r *api.Request, in *api.BulkBatchPath) (*api.Result, error) {
	view, err := s.Actors.CancelBulk(r.Auth.Tenant, in.Batch)
	if err != nil {
		return nil, bulkErr(err)
	}
	return &api.Result{Data: bulkJSON(view.Batch, view.Items)}, nil
}

func (s *bulkService) RetryBulkSettings(r *api.Request, in *api.BulkBatchPath) (*api.Result, error) {
	view, err := s.Actors.RetryBulk(r.Auth.Tenant, in.Batch)
	if err != nil {
		return nil, bulkErr(err)
	}
	return &api.Result{Status: 202, Data: bulkJSON(view.Batch, view.Items), Meta: map[string]any{}}, nil
}

// bookBulkSettings is every key of the bulk settings object as the book has it: the values a
// batch would set. pdf_password says whether one is set (it is never returned); eod_lists are
// the first entries of the access list (addresses and domains).
func (s *bulkService) bookBulkSettings(b *storage.Book) (map[string]any, error) {
	entries, err := s.Store.BookAccessEntries(b.Tenant(), b.RandomID, api.MaxSummaryAccessList)
	if err != nil {
		return nil, err
	}
	download := "false"
	if b.Settings.Downloadable {
		download = b.Extra.DownloadMode
		if download == "" {
			download = "full"
		}
	}
	st, x := &b.Settings, &b.Extra
	return map[string]any{
		"allow_fullscreen":           st.FullscreenEnabled,
		"animation_type":             st.AnimationType,
		"mobile_animation_type":      st.MobileAnimationType,
		"background":                 st.Background,
		"copyright_enabled":          st.CopyrightEnabled,
		"description":                b.Description,
		"downloadable_pdf":           download,
		"eod_enabled":                st.EODEnabled,
		"eod_lists":                  entries,
		"flip_sound":                 st.SoundEnabled,
		"image_display":              st.ImageDisplay,
		"made_with_badge_enabled":    x.MadeWithBadgeEnabled,
		"magic_link_error_message":   x.MagicLinkErrorMessage,
		"magic_link_message":         x.MagicLinkMessage,
		"open_fullscreen_by_default": x.OpenFullscreenByDefault,
		"pdf_password":               len(x.PDFPasswordHash) > 0,
		"pdf_privacy_status":         st.Privacy,
		"share_social_media":         st.ShareSocialMedia,
		"title":                      b.Name,
		"watermark":                  x.Watermark,
	}, nil
}

type bulkSummaryBook struct {
	ID               string         `json:"id"`
	Name             string         `json:"name"`
	SettingsRevision string         `json:"settings_revision"`
	Settings         map[string]any `json:"settings"`
}

func (s *bulkService) BulkSettingsSummary(r *api.Request, in *api.BulkSettingsSummary) (*api.Result, error) {
	t := r.Auth.Tenant
	ids := in.BookIDs
	v := api.Validation{}
	seen := make(map[string]int, len(ids))
	for i, id := range ids {
		if first, dup := seen[id]; dup {
			v.Add(fmt.Sprintf("book_ids.%d", i), fmt.Sprintf("repeats book_ids.%d", first))
			continue
		}
		seen[id] = i
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	books := make([]bulkSummaryBook, len(ids))
	for i, id := range ids {
		b, err := s.Store.GetBook(t, id)
		if errors.Is(err, errs.ErrNotFound) {
			return nil, api.ErrNotFound("book " + id)
		}
		if err != nil {
			return nil, err
		}
		set, err := s.bookBulkSettings(b)
		if err != nil {
			return nil, err
		}
		books[i] = bulkSummaryBook{ID: b.RandomID, Name: b.Name, SettingsRevision: b.SettingsRevision(), Settings: set}
	}
	// Values are compared by their JSON: a key is common when every book has the same.
	common, differing := map[string]any{}, map[string]any{}
	for _, k := range bulkSettingKeys() {
		var values []any
		encs := map[string]bool{}
		for _, b := range books {
			enc, err := json.Marshal(b.Settings[k])
			if err != nil {
				return nil, err
			}
			if !encs[string(enc)] {
				encs[string(enc)] = true
				values = append(values, b.Settings[k])
			}
		}
		if len(values) == 1 {
			common[k] = values[0]
		} else {
			differing[k] = values
		}
	}
	return &api.Result{Data: map[string]any{"books": books, "settings": map[string]any{"common": common, "differing": differing}},
		Meta: map[string]any{"count": len(books)}}, nil
}
