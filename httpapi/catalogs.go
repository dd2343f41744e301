package httpapi

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"flipbook/actors"
	"flipbook/actors/convert"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

// Catalogs and templates (spec §2.5, §3.5, §4.8; docs/CATALOGS.md). Writes go to the workspace
// actor (catalog records, job creation) and the catalog sync supervisor (items); reads come
// straight from Pebble.

// catalogService runs the catalog operations (spec §4.8): catalogs and items in the store,
// changed through the actors' catalog sync; renders become books.
type catalogService struct {
	links
	Store   *storage.Store
	Actors  *actors.System
	cursors *cursors
	log     *slog.Logger
}

// catalogJSON is spec §2.5's catalog with its item count and last sync.
func (s *catalogService) catalogJSON(c *storage.Catalog) (api.Catalog, error) {
	st, err := s.Store.CatalogState(c.Tenant(), c.ID)
	if err != nil {
		return api.Catalog{}, err
	}
	out := api.Catalog{ID: c.ID, WorkspaceID: c.Workspace, Name: c.Name, Source: c.Source, ExternalID: c.ExternalID,
		SourceURL: c.SourceURL, Status: c.Status, Metadata: api.ArrayOrNull(c.Metadata), TemplateKey: c.TemplateKey, ItemsCount: st.Items,
		LastSyncedAt: fmtTimePtr(st.LastSyncedAt), LastSyncStatus: st.LastSyncStatus, LastSyncError: st.LastSyncError,
		CreatedAt: fmtTime(c.CreatedAt), UpdatedAt: fmtTime(c.UpdatedAt)}
	if c.Status == storage.CatalogArchived {
		out.ItemsCount = 0
	}
	return out, nil
}

// catalogItemWire is spec §2.5's catalog item: the stored item with its times rendered as
// every timestamp of the API is (TimeFormat) and absent JSON values as null.
func catalogItemWire(it *storage.CatalogItem) api.CatalogItem {
	return api.CatalogItem{ID: it.ID, CatalogID: it.CatalogID, Workspace: it.Workspace, Source: it.Source,
		ExternalItemKey: it.ExternalItemKey, ExternalProductID: it.ExternalProductID, ExternalVariantID: it.ExternalVariantID,
		SKU: it.SKU, Title: it.Title, Status: it.Status, ProductType: it.ProductType, Price: it.Price,
		RegularPrice: it.RegularPrice, SalePrice: it.SalePrice, Currency: it.Currency, Image: it.Image, URL: it.URL,
		Description: it.Description, ShortDescription: it.ShortDescription, StockStatus: it.StockStatus,
		StockQuantity: it.StockQuantity, Available: it.Available, LastSyncStatus: it.LastSyncStatus,
		LastSyncError: it.LastSyncError, Gallery: api.ArrayOrNull(it.Gallery), Categories: api.ArrayOrNull(it.Categories),
		Payload: api.ArrayOrNull(it.Payload), RawPayload: api.ArrayOrNull(it.RawPayload),
		Availability: api.ArrayOrNull(it.Availability), LastSyncedAt: fmtTimePtr(it.LastSyncedAt),
		LastAvailabilitySyncedAt: fmtTimePtr(it.LastAvailabilitySyncedAt), CreatedAt: fmtTime(it.CreatedAt),
		UpdatedAt: fmtTime(it.UpdatedAt)}
}

// syncJobWire is spec §2.5's sync job.
func syncJobWire(j *storage.SyncJob) api.SyncJob {
	out := api.SyncJob{ID: j.ID, CatalogID: j.CatalogID, Type: j.Type, Status: j.Status,
		Progress: api.SyncProgress{Total: j.Total, Processed: j.Processed, Accepted: j.Accepted, Failed: j.Failed},
		Errors:   orEmpty(j.Errors), SnapshotAt: fmtTimePtr(j.SnapshotAt), StartedAt: fmtTimePtr(j.StartedAt),
		FinishedAt: fmtTimePtr(j.FinishedAt), CreatedAt: fmtTime(j.CreatedAt), UpdatedAt: fmtTime(j.UpdatedAt)}
	if j.Reason != "" {
		out.Reason = &j.Reason
	}
	return out
}

// syncSummary is spec §2.5's bulk upsert / availability summary at acceptance: every item of
// the request is accepted for the job (a request with an invalid item is a 422 as a whole);
// the job's progress and errors tell what each item became.
func syncSummary(j *storage.SyncJob) api.SyncSummary {
	return api.SyncSummary{AcceptedItems: strconv.Itoa(j.Total), FailedItems: "0", TotalItems: strconv.Itoa(j.Total),
		Status: j.Status, Errors: []string{}}
}

// activeCatalog reads the caller's catalog named by the path (404 when absent or deleted).
func (s *catalogService) activeCatalog(r *api.Request, id int64) (*storage.Catalog, error) {
	c, err := s.Store.Catalog(r.Auth.Tenant, id)
	if errors.Is(err, errs.ErrNotFound) || err == nil && c.Status == storage.CatalogArchived {
		return nil, api.ErrNotFound("catalog")
	}
	return c, err
}

// catalogLimit is a list's page size: the limit asked for, else the default.
func catalogLimit(p *api.CatalogPage) int {
	if p.Limit != nil {
		return int(*p.Limit)
	}
	return api.DefaultCatalogLimit
}

func (s *catalogService) ListCatalogs(r *api.Request, in *api.CatalogList) (*api.Reply[[]api.Catalog, api.CursorMeta], error) {
	limit := catalogLimit(&in.CatalogPage)
	t := r.Auth.Tenant
	binding := "cat/" + strconv.FormatInt(t.Workspace, 10) + t.Mode.String()
	var before int64
	if c := in.Cursor; c != "" {
		payload, err := s.cursors.decode(binding, c)
		if err != nil || len(payload) != 8 {
			return nil, api.FieldError("cursor", "is not a cursor of this list")
		}
		before = int64(binary.BigEndian.Uint64(payload))
	}
	list, err := s.Store.Catalogs(t, before, limit+1)
	if err != nil {
		return nil, err
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	data := make([]api.Catalog, len(list))
	for i, c := range list {
		if data[i], err = s.catalogJSON(c); err != nil {
			return nil, err
		}
	}
	var next *string
	if more {
		c := s.cursors.encode(binding, binary.BigEndian.AppendUint64(nil, uint64(list[len(list)-1].ID)))
		next = &c
	}
	return api.With(data, api.CursorMeta{NextCursor: next, HasMore: more, Limit: limit}), nil
}

// CreateCatalog is catalogs.create. The items are the validated product entries (template and
// styling fields were refused by validation: Param.Refuse), stored as given.
func (s *catalogService) CreateCatalog(r *api.Request, in *api.CatalogCreate) (*api.Reply[api.CatalogCreated, api.CatalogCreatedMeta], error) {
	v := api.Validation{}
	items := in.Items
	var tplKey *string
	if in.TemplateKey.Set && !in.TemplateKey.Null {
		k := in.TemplateKey.V
		if _, ok := templateByKey(k); !ok {
			v.Add("template_key", "does not name a product template (GET /templates lists them)")
		}
		tplKey = &k
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	source := in.Source
	if source == "" {
		source = "custom"
	}
	c := &storage.Catalog{Name: strings.TrimSpace(in.Name), Source: source, TemplateKey: tplKey,
		ExternalID: in.ExternalID}
	if c.Name == "" {
		return nil, api.FieldError("name", "must not be blank")
	}
	if in.SourceURL.Set && !in.SourceURL.Null {
		u := in.SourceURL.V
		c.SourceURL = &u
	}
	if in.Metadata.Set && !in.Metadata.Null {
		data, err := json.Marshal(in.Metadata.V)
		if err != nil {
			return nil, err
		}
		c.Metadata = data
	}
	input, err := s.syncInput(items)
	if err != nil {
		return nil, err
	}
	given := map[string]bool{"name": true, "source_url": in.SourceURL.Set, "metadata": in.Metadata.Set,
		"template_key": in.TemplateKey.Set}
	res, err := s.Actors.CreateCatalog(r.Auth.Tenant, &actors.CreateCatalog{Catalog: c, Given: given, InputFile: input, Total: len(items)})
	if err != nil {
		s.Store.RemoveSyncInput(input)
		return nil, err
	}
	cj, err := s.catalogJSON(res.Catalog)
	if err != nil {
		return nil, err
	}
	return &api.Reply[api.CatalogCreated, api.CatalogCreatedMeta]{Status: 202,
		Data: api.CatalogCreated{Catalog: cj, SyncJob: syncJobWire(res.Job)},
		Meta: &api.CatalogCreatedMeta{Updated: res.Updated}}, nil
}

func (s *catalogService) GetCatalog(r *api.Request, in *api.CatalogPath) (*api.Data[api.CatalogOne], error) {
	c, err := s.activeCatalog(r, in.Catalog)
	if err != nil {
		return nil, err
	}
	cj, err := s.catalogJSON(c)
	if err != nil {
		return nil, err
	}
	return api.OK(api.CatalogOne{Catalog: cj}), nil
}

func (s *catalogService) DeleteCatalog(r *api.Request, in *api.CatalogPath) (*api.Data[api.CatalogOne], error) {
	c, err := s.Actors.ArchiveCatalog(r.Auth.Tenant, in.Catalog)
	if err != nil {
		return nil, notFoundAs(err, "catalog")
	}
	cj, err := s.catalogJSON(c)
	if err != nil {
		return nil, err
	}
	return api.OK(api.CatalogOne{Catalog: cj}), nil
}

func (s *catalogService) ListCatalogItems(r *api.Request, in *api.CatalogItemList) (*api.Reply[[]api.CatalogItem, api.CatalogItemsMeta], error) {
	c, err := s.activeCatalog(r, in.Catalog)
	if err != nil {
		return nil, err
	}
	limit := catalogLimit(&in.CatalogPage)
	t := r.Auth.Tenant
	binding := "ci/" + strconv.FormatInt(t.Workspace, 10) + t.Mode.String() + "/" + strconv.FormatInt(c.ID, 10)
	var before int64
	if cur := in.Cursor; cur != "" {
		payload, err := s.cursors.decode(binding, cur)
		if err != nil || len(payload) != 8 {
			return nil, api.FieldError("cursor", "is not a cursor of this list")
		}
		before = int64(binary.BigEndian.Uint64(payload))
	}
	list, err := s.Store.CatalogItems(t, c.ID, before, limit+1)
	if err != nil {
		return nil, err
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	var next *string
	if more {
		cur := s.cursors.encode(binding, binary.BigEndian.AppendUint64(nil, uint64(list[len(list)-1].ID)))
		next = &cur
	}
	data := make([]api.CatalogItem, len(list))
	for i, it := range list {
		data[i] = catalogItemWire(it)
	}
	return api.With(data, api.CatalogItemsMeta{NextCursor: next, HasMore: more, Limit: limit, CatalogID: c.ID}), nil
}

func (s *catalogService) queueSync(r *api.Request, catalog int64, typ string, items []map[string]any, snapshot *time.Time) (*api.Reply[api.SyncQueued, api.CatalogIDMeta], error) {
	c, err := s.activeCatalog(r, catalog)
	if err != nil {
		return nil, err
	}
	input, err := s.syncInput(items)
	if err != nil {
		return nil, err
	}
	j, err := s.Actors.QueueSync(r.Auth.Tenant, &actors.QueueSync{Catalog: c.ID, Type: typ, InputFile: input,
		Total: len(items), SnapshotAt: snapshot})
	if err != nil {
		s.Store.RemoveSyncInput(input)
		return nil, notFoundAs(err, "catalog")
	}
	return &api.Reply[api.SyncQueued, api.CatalogIDMeta]{Status: 202,
		Data: api.SyncQueued{Summary: syncSummary(j), SyncJob: syncJobWire(j)}, Meta: &api.CatalogIDMeta{CatalogID: c.ID}}, nil
}

// syncInput stores a job's accepted items durably and returns the file's name ("" for none).
func (s *catalogService) syncInput(items []map[string]any) (string, error) {
	if len(items) == 0 {
		return "", nil
	}
	data, err := actors.CatalogInput(items)
	if err != nil {
		return "", err
	}
	name := actors.RandomString(20)
	if err := s.Store.WriteSyncInput(name, data); err != nil {
		return "", err
	}
	return name, nil
}

// BulkUpsertItems is catalogs.bulk_upsert: the validated product entries (template and styling
// fields were refused by validation: Param.Refuse), stored as given for the sync job.
func (s *catalogService) BulkUpsertItems(r *api.Request, in *api.CatalogBulkUpsert) (*api.Reply[api.SyncQueued, api.CatalogIDMeta], error) {
	return s.queueSync(r, in.Catalog, storage.SyncBulkUpsert, in.Items, nil)
}

func (s *catalogService) UpdateItemAvailability(r *api.Request, in *api.CatalogAvailability) (*api.Reply[api.SyncQueued, api.CatalogIDMeta], error) {
	var snap *time.Time
	if in.SnapshotAt != nil {
		t := in.SnapshotAt.UTC()
		snap = &t
	}
	return s.queueSync(r, in.Catalog, storage.SyncAvailability, in.Items, snap)
}

func (s *catalogService) DeleteCatalogItem(r *api.Request, in *api.CatalogItemDelete) (*api.Reply[api.CatalogItemDeleted, api.CatalogItemDeletedMeta], error) {
	c, err := s.activeCatalog(r, in.Catalog)
	if err != nil {
		return nil, err
	}
	it, err := s.Actors.DeleteCatalogItem(r.Auth.Tenant, c.ID, in.Item)
	if err != nil {
		return nil, notFoundAs(err, "catalog item")
	}
	return api.With(api.CatalogItemDeleted{Message: "The catalog item was deleted."},
		api.CatalogItemDeletedMeta{CatalogID: c.ID, ItemID: it.ID}), nil
}

func (s *catalogService) GetSyncJob(r *api.Request, in *api.SyncJobPath) (*api.Data[api.SyncJobOne], error) {
	c, err := s.activeCatalog(r, in.Catalog)
	if err != nil {
		return nil, err
	}
	j, err := s.Store.SyncJob(r.Auth.Tenant, c.ID, in.SyncJob)
	if errors.Is(err, errs.ErrNotFound) || err == nil && j.Type == storage.SyncPurge {
		return nil, api.ErrNotFound("sync job")
	}
	if err != nil {
		return nil, err
	}
	return api.OK(api.SyncJobOne{SyncJob: syncJobWire(j)}), nil
}

// templateByKey finds a product template by key or decimal id.
func templateByKey(k string) (convert.Template, bool) {
	for _, t := range convert.Templates() {
		if t.Type == convert.TemplateProduct && (t.Key == k || strconv.FormatInt(t.ID, 10) == k) {
			return t, true
		}
	}
	return convert.Template{}, false
}

// renderItems resolves the items of a render, in the order given. A reference is an external
// item key: a product id (an item without variant), or "<product id>:<variant id>" (every
// colon is tried as the separator, so ids may contain colons); failing that, a decimal item
// id. Product ids win over item ids, since shops number their products too.
func (s *catalogService) renderItems(t storage.Tenant, catalog int64, refs []string) ([]convert.Item, string, error) {
	out := make([]convert.Item, 0, len(refs))
	currency := ""
	for _, ref := range refs {
		it, err := s.findItem(t, catalog, ref)
		if errors.Is(err, errs.ErrNotFound) {
			return nil, "", api.ErrNotFound(fmt.Sprintf("catalog item %q", ref))
		}
		if err != nil {
			return nil, "", err
		}
		if currency == "" && it.Currency != nil {
			currency = *it.Currency
		}
		out = append(out, productItem(it))
	}
	return out, currency, nil
}

// findItem resolves one render reference (see renderItems).
func (s *catalogService) findItem(t storage.Tenant, catalog int64, ref string) (*storage.CatalogItem, error) {
	byKey := func(pid string, vid *string) (*storage.CatalogItem, error) {
		id, err := s.Store.CatalogItemID(t, catalog, storage.ItemKey(pid, vid))
		if err != nil {
			return nil, err
		}
		return s.Store.CatalogItem(t, catalog, id)
	}
	it, err := byKey(ref, nil)
	for i := 0; errors.Is(err, errs.ErrNotFound) && i < len(ref); i++ {
		if ref[i] == ':' && i > 0 && i < len(ref)-1 {
			vid := ref[i+1:]
			it, err = byKey(ref[:i], &vid)
		}
	}
	if errors.Is(err, errs.ErrNotFound) {
		if id, perr := strconv.ParseInt(ref, 10, 64); perr == nil && id > 0 {
			return s.Store.CatalogItem(t, catalog, id)
		}
	}
	return it, err
}

// productItem is the template form of a catalog item.
func productItem(it *storage.CatalogItem) convert.Item {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	strs := func(raw json.RawMessage) []string {
		var out []string
		_ = json.Unmarshal(raw, &out)
		return out
	}
	stock := str(it.StockStatus)
	if it.Available != nil && !*it.Available {
		stock = "outofstock"
	} else if stock == "" && it.Available != nil {
		stock = "instock"
	}
	return convert.Item{ID: strconv.FormatInt(it.ID, 10), Title: str(it.Title), Categories: strs(it.Categories),
		Currency: str(it.Currency), Description: str(it.Description), Gallery: strs(it.Gallery), Image: str(it.Image),
		Price: str(it.Price), RegularPrice: str(it.RegularPrice), SalePrice: str(it.SalePrice),
		ShortDescription: str(it.ShortDescription), SKU: str(it.SKU), StockStatus: stock, Type: str(it.ProductType),
		URL: str(it.URL)}
}

// renderCover is the cover page a render asked for (trimmed; empty when absent).
func renderCover(in *api.RenderCover) convert.Cover {
	if in == nil {
		return convert.Cover{}
	}
	trim := func(p *string) string { return strings.TrimSpace(deref(p)) }
	return convert.Cover{Title: trim(in.Title), Description: trim(in.Description), Website: trim(in.Website)}
}

func (s *catalogService) RenderCatalog(r *api.Request, in *api.CatalogRender) (*api.Reply[api.CatalogRendered, api.CatalogRenderedMeta], error) {
	c, err := s.activeCatalog(r, in.Catalog)
	if err != nil {
		return nil, err
	}
	tpl, _ := convert.DefaultTemplate(convert.TemplateProduct)
	if c.TemplateKey != nil {
		if t, ok := templateByKey(*c.TemplateKey); ok {
			tpl = t
		}
	}
	if in.TemplateID != nil {
		t, found := convert.TemplateByID(*in.TemplateID)
		switch {
		case !found:
			return nil, api.FieldError("template_id", "does not name a template (GET /templates lists them)")
		case t.Type != convert.TemplateProduct:
			return nil, api.FieldError("template_id", fmt.Sprintf("names a %s template; a catalog renders with a product template", t.Type))
		}
		tpl = t
	}
	items, currency, err := s.renderItems(r.Auth.Tenant, c.ID, in.Items)
	if err != nil {
		return nil, err
	}
	doc := convert.CatalogDoc{TemplateID: tpl.ID, Currency: currency, Items: items, Cover: renderCover(in.Cover)}
	if doc.Cover.Title == "" {
		doc.Cover.Title = c.Name
	}
	title := strings.TrimSpace(deref(in.Title))
	if title == "" {
		title = doc.Cover.Title
	}
	doc.Title = truncateRunes(title, 255)
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}

	batchID := actors.RandomString(20)
	stored := false
	defer func() {
		if !stored {
			_ = s.Store.RemoveBatchFiles(batchID)
		}
	}()
	if err := saveUpload(strings.NewReader(string(data)), actors.UploadPath(s.Store, batchID, 0)); err != nil {
		return nil, err
	}
	if err := s.Store.StashUpload(batchID); err != nil {
		return nil, err
	}
	b := newBook(doc.Title, "catalog:"+c.Source, in.Status)
	b.PageImagesStatus = storage.PagesProcessing
	b.BatchID = &batchID
	catID := c.ID
	b.ExternalCatalogID = &catID
	b.Extra.AutoLinksEnabled = true // the product links; settings.auto_links_enabled false hides them
	applySettings(b, in.Settings)
	u := &storage.Upload{ID: batchID, Files: []storage.UploadFile{{
		Name: fmt.Sprintf("catalog-%d.json", c.ID), Kind: convert.KindCatalog, Size: int64(len(data)),
		BookID: b.RandomID, Status: storage.BatchQueued,
	}}}
	if _, err := s.Actors.CreateUpload(r.Auth.Tenant, u, []*storage.Book{b}); err != nil {
		return nil, err
	}
	stored = true
	created, err := s.Store.GetBook(r.Auth.Tenant, b.RandomID)
	if err != nil {
		return nil, err
	}
	return &api.Reply[api.CatalogRendered, api.CatalogRenderedMeta]{Status: 202,
		Data: api.CatalogRendered{Book: api.Raw[api.Book](s.bookWire(created)), BatchID: batchID,
			TemplateID: strconv.FormatInt(tpl.ID, 10)},
		Meta: &api.CatalogRenderedMeta{CatalogID: c.ID, Items: len(items)}}, nil
}
