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

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// bulkJSON is spec §4.1's bulk batch object.
func bulkJSON(b *storage.BulkBatch, items []*storage.BulkItem) api.BulkBatch {
	out := api.BulkBatch{ID: b.ID, Status: b.Status, CreatedAt: fmtTime(b.CreatedAt), StartedAt: fmtTimePtr(b.StartedAt),
		FinishedAt: fmtTimePtr(b.FinishedAt), CancelledAt: fmtTimePtr(b.CancelledAt),
		Items: make([]api.BulkItem, len(items)), RetryOfBatchID: strOrNil(b.RetryOf), Settings: map[string]any{}}
	for k, v := range b.Settings {
		switch k {
		case "eod_enabled", "eod_lists": // kept by batches stored before they were left out
		case "pdf_password": // whether one is set: a batch stored before sealing has it in the clear
			if pw, ok := v.(string); ok || v == nil {
				v = pw != ""
			}
			out.Settings[k] = v
		default:
			out.Settings[k] = v
		}
	}
	c := &out.Progress.Counts
	for i, it := range items {
		j := api.BulkItem{BookID: it.BookID, SettingsRevision: it.Expected, Status: it.Status,
			NewSettingsRevision: strOrNil(it.NewRevision), CurrentSettingsRevision: strOrNil(it.CurrentRevision),
			FinishedAt: fmtTimePtr(it.FinishedAt)}
		if it.ErrorCode != "" {
			j.Error = &api.BulkItemError{Code: it.ErrorCode, Message: it.ErrorMessage}
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

func (s *bulkService) CreateBulkSettings(r *api.Request, in *api.BulkSettingsCreate) (*api.Reply[api.BulkBatch, api.BulkAcceptedMeta], error) {
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
	return &api.Reply[api.BulkBatch, api.BulkAcceptedMeta]{Status: 202, Data: bulkJSON(view.Batch, view.Items),
		Meta: &api.BulkAcceptedMeta{}}, nil
}

func (s *bulkService) GetBulkSettings(r *api.Request, in *api.BulkBatchPath) (*api.Data[api.BulkBatch], error) {
	b, items, err := s.Store.BulkBatchView(r.Auth.Tenant, in.Batch)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("bulk settings batch")
	}
	if err != nil {
		return nil, err
	}
	return api.OK(bulkJSON(b, items)), nil
}

func (s *bulkService) CancelBulkSettings(r *api.Request, in *api.BulkBatchPath) (*api.Data[api.BulkBatch], error) {
	view, err := s.Actors.CancelBulk(r.Auth.Tenant, in.Batch)
	if err != nil {
		return nil, bulkErr(err)
	}
	return api.OK(bulkJSON(view.Batch, view.Items)), nil
}

func (s *bulkService) RetryBulkSettings(r *api.Request, in *api.BulkBatchPath) (*api.Reply[api.BulkBatch, api.BulkAcceptedMeta], error) {
	view, err := s.Actors.RetryBulk(r.Auth.Tenant, in.Batch)
	if err != nil {
		return nil, bulkErr(err)
	}
	return &api.Reply[api.BulkBatch, api.BulkAcceptedMeta]{Status: 202, Data: bulkJSON(view.Batch, view.Items),
		Meta: &api.BulkAcceptedMeta{}}, nil
}

// bookBulkSettings is every key of the bulk settings object as the book has it: the values a
// batch would set. pdf_password says whether one is set (it is never returned); eod_lists are
// the first entries of the access list (addresses and domains).
func (s *bulkService) bookBulkSettings(b *storage.Book) (api.BulkBookSettings, error) {
	entries, err := s.Store.BookAccessEntries(b.Tenant(), b.RandomID, api.MaxSummaryAccessList)
	if err != nil {
		return api.BulkBookSettings{}, err
	}
	download := "false"
	if b.Settings.Downloadable {
		download = b.Extra.DownloadMode
		if download == "" {
			download = "full"
		}
	}
	st, x := &b.Settings, &b.Extra
	return api.BulkBookSettings{
		AllowFullscreen:         st.FullscreenEnabled,
		AnimationType:           st.AnimationType,
		MobileAnimationType:     st.MobileAnimationType,
		Background:              st.Background,
		CopyrightEnabled:        st.CopyrightEnabled,
		Description:             b.Description,
		DownloadablePDF:         download,
		EODEnabled:              st.EODEnabled,
		EODLists:                entries,
		FlipSound:               st.SoundEnabled,
		ImageDisplay:            st.ImageDisplay,
		MadeWithBadgeEnabled:    x.MadeWithBadgeEnabled,
		MagicLinkErrorMessage:   x.MagicLinkErrorMessage,
		MagicLinkMessage:        x.MagicLinkMessage,
		OpenFullscreenByDefault: x.OpenFullscreenByDefault,
		PDFPassword:             len(x.PDFPasswordHash) > 0,
		PDFPrivacyStatus:        st.Privacy,
		ShareSocialMedia:        st.ShareSocialMedia,
		Title:                   b.Name,
		Watermark:               x.Watermark,
	}, nil
}

func (s *bulkService) BulkSettingsSummary(r *api.Request, in *api.BulkSettingsSummary) (*api.Reply[api.BulkSummary, api.BulkSummaryMeta], error) {
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
	books := make([]api.BulkSummaryBook, len(ids))
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
		books[i] = api.BulkSummaryBook{ID: b.RandomID, Name: b.Name, SettingsRevision: b.SettingsRevision(), Settings: set}
	}
	settings, err := compareBulkSettings(books)
	if err != nil {
		return nil, err
	}
	return api.With(api.BulkSummary{Books: books, Settings: settings}, api.BulkSummaryMeta{Count: len(books)}), nil
}

// compareBulkSettings sorts the keys of the books' settings into those every book has alike
// (common: the value) and the others (differing: the distinct values, in the order of the
// books). Values are compared by their JSON, and answered as that JSON.
func compareBulkSettings(books []api.BulkSummaryBook) (api.BulkSummarySettings, error) {
	out := api.BulkSummarySettings{Common: map[string]any{}, Differing: map[string]any{}}
	sets := make([]map[string]json.RawMessage, len(books))
	for i := range books {
		enc, err := respJSON.Marshal(books[i].Settings)
		if err == nil {
			err = json.Unmarshal(enc, &sets[i])
		}
		if err != nil {
			return out, err
		}
	}
	for _, k := range bulkSettingKeys() {
		var values []json.RawMessage
		seen := map[string]bool{}
		for _, set := range sets {
			if !seen[string(set[k])] {
				seen[string(set[k])] = true
				values = append(values, set[k])
			}
		}
		if len(values) == 1 {
			out.Common[k] = values[0]
		} else {
			out.Differing[k] = values
		}
	}
	return out, nil
}
