package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// Catalog statuses.
const (
	CatalogActive   = "active"
	CatalogArchived = "archived"
)

// Sync job types and statuses (docs/CATALOGS.md).
const (
	SyncCreate       = "create"       // the initial import of POST /catalogs
	SyncUpdate       = "update"       // POST /catalogs naming a catalog that exists (source + external_id)
	SyncPurge        = "purge"        // internal: removes the items of a deleted catalog
	SyncBulkUpsert   = "bulk_upsert"  // POST /catalogs/{catalog}/items:bulk-upsert
	SyncAvailability = "availability" // PATCH /catalogs/{catalog}/items/availability

	SyncQueued              = "queued"
	SyncRunning             = "running"
	SyncCompleted           = "completed"
	SyncCompletedWithErrors = "completed_with_errors"
	SyncFailed              = "failed"
	SyncCancelled           = "cancelled"
)

// Catalog is a product catalog (spec §2.5). Its sync state (last sync, item count) is kept in a
// record of its own (CatalogState), written by the catalog's sync worker, so the workspace
// actor (which writes this record) and the worker never overwrite each other.
type Catalog struct {
	ID          int64           `json:"id"`
	Workspace   int64           `json:"workspace_id"`
	Mode        Mode            `json:"mode"`
	Name        string          `json:"name"`
	Source      string          `json:"source"`
	ExternalID  *string         `json:"external_id"`
	SourceURL   *string         `json:"source_url"`
	Status      string          `json:"status"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	TemplateKey *string         `json:"template_key"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	ArchivedAt  *time.Time      `json:"archived_at,omitempty"`
}

// Tenant of the catalog.
func (c *Catalog) Tenant() Tenant { return Tenant{Workspace: c.Workspace, Mode: c.Mode} }

// CatalogState is what the sync worker records about a catalog.
type CatalogState struct {
	Items          int64      `json:"items"`
	LastSyncedAt   *time.Time `json:"last_synced_at"`
	LastSyncStatus *string    `json:"last_sync_status"`
	LastSyncError  *string    `json:"last_sync_error"`
	LastJobID      int64      `json:"last_job_id"`
}

// CatalogItem is one product (or variant) of a catalog (spec §2.5).
type CatalogItem struct {
	ID                       int64           `json:"id"`
	CatalogID                int64           `json:"catalog_id"`
	Workspace                int64           `json:"workspace_id"`
	Source                   string          `json:"source"`
	ExternalItemKey          string          `json:"external_item_key"`
	ExternalProductID        string          `json:"external_product_id"`
	ExternalVariantID        *string         `json:"external_variant_id"`
	SKU                      *string         `json:"sku"`
	Title                    *string         `json:"title"`
	Status                   *string         `json:"status"`
	ProductType              *string         `json:"product_type"`
	Price                    *string         `json:"price"`
	RegularPrice             *string         `json:"regular_price"`
	SalePrice                *string         `json:"sale_price"`
	Currency                 *string         `json:"currency"`
	Image                    *string         `json:"image"`
	URL                      *string         `json:"url"`
	Description              *string         `json:"description"`
	ShortDescription         *string         `json:"short_description"`
	StockStatus              *string         `json:"stock_status"`
	Gallery                  json.RawMessage `json:"gallery"`
	Categories               json.RawMessage `json:"categories"`
	Payload                  json.RawMessage `json:"payload"`
	RawPayload               json.RawMessage `json:"raw_payload"`
	Availability             json.RawMessage `json:"availability"`
	StockQuantity            *int64          `json:"stock_quantity"`
	Available                *bool           `json:"available"`
	LastSyncedAt             *time.Time      `json:"last_synced_at"`
	LastAvailabilitySyncedAt *time.Time      `json:"last_availability_synced_at"`
	LastSyncStatus           *string         `json:"last_sync_status"`
	LastSyncError            *string         `json:"last_sync_error"`
	CreatedAt                time.Time       `json:"created_at"`
	UpdatedAt                time.Time       `json:"updated_at"`
}

// SyncError is one item a sync job could not apply.
type SyncError struct {
	Index             int     `json:"index"` // position in the request's items
	ExternalProductID string  `json:"external_product_id"`
	ExternalVariantID *string `json:"external_variant_id"`
	ItemID            *int64  `json:"item_id"`
	Code              string  `json:"code"`
	Message           string  `json:"message"`
}

// SyncJob is a catalog sync job (spec §2.5, §3.5).
type SyncJob struct {
	ID         int64       `json:"id"`
	CatalogID  int64       `json:"catalog_id"`
	Workspace  int64       `json:"workspace_id"`
	Mode       Mode        `json:"mode"`
	Type       string      `json:"type"`
	Status     string      `json:"status"`
	Total      int         `json:"total"`
	Processed  int         `json:"processed"`
	Accepted   int         `json:"accepted"`
	Failed     int         `json:"failed"`
	Errors     []SyncError `json:"errors"`
	SnapshotAt *time.Time  `json:"snapshot_at,omitempty"`
	Reason     string      `json:"reason,omitempty"`     // why a job failed or was cancelled
	InputFile  string      `json:"input_file,omitempty"` // the accepted items (WriteSyncInput); "" for none
	CreatedAt  time.Time   `json:"created_at"`
	UpdatedAt  time.Time   `json:"updated_at"`
	StartedAt  *time.Time  `json:"started_at"`
	FinishedAt *time.Time  `json:"finished_at"`
}

// Tenant of the job.
func (j *SyncJob) Tenant() Tenant { return Tenant{Workspace: j.Workspace, Mode: j.Mode} }

// Finished reports whether the job has ended.
func (j *SyncJob) Finished() bool {
	return j.Status != SyncQueued && j.Status != SyncRunning
}

// SyncRef is an entry of the durable sync queue (the job id is also its queue position).
type SyncRef struct {
	Tenant  Tenant
	Catalog int64
	Job     int64
}

// Keys:
//
//	t/<tenant>/cat/<id>                        Catalog
//	t/<tenant>/catst/<id>                      CatalogState
//	t/<tenant>/catx/<source> 0 <external id>   catalog id (create with a known source + external_id updates)
//	t/<tenant>/ci/<catalog><item id>           CatalogItem
//	t/<tenant>/cik/<catalog><item key>         item id (matching on external product + variant id)
//	t/<tenant>/sj/<catalog><job id>            SyncJob
//	t/<tenant>/sjin/<job id>                   the job's items as accepted (deleted when it ends)
//	g/catq/<job id>                            sync queue: <tenant><catalog> of each unfinished job
func catalogKey(t Tenant, id int64) []byte { return cat(t.prefix(), []byte("cat/"), u64(uint64(id))) }
func catalogStateKey(t Tenant, id int64) []byte {
	return cat(t.prefix(), []byte("catst/"), u64(uint64(id)))
}
func catalogExtKey(t Tenant, source, ext string) []byte {
	return cat(t.prefix(), []byte("catx/"+source), []byte{0}, []byte(ext))
}
func itemPrefix(t Tenant, catalog int64) []byte {
	return cat(t.prefix(), []byte("ci/"), u64(uint64(catalog)))
}
func itemKey(t Tenant, catalog, id int64) []byte { return cat(itemPrefix(t, catalog), u64(uint64(id))) }
func itemMatchPrefix(t Tenant, catalog int64) []byte {
	return cat(t.prefix(), []byte("cik/"), u64(uint64(catalog)))
}
func itemMatchKey(t Tenant, catalog int64, key string) []byte {
	return cat(itemMatchPrefix(t, catalog), []byte(key))
}
func syncJobKey(t Tenant, catalog, id int64) []byte {
	return cat(t.prefix(), []byte("sj/"), u64(uint64(catalog)), u64(uint64(id)))
}
func syncInputKey(t Tenant, id int64) []byte {
	return cat(t.prefix(), []byte("sjin/"), u64(uint64(id)))
}

const syncQueuePrefix = "g/catq/"

func syncQueueKey(job int64) []byte { return cat([]byte(syncQueuePrefix), u64(uint64(job))) }

// ItemKey is the match key of an item: its product id, and its variant id when it has one.
func ItemKey(productID string, variantID *string) string {
	if variantID == nil || *variantID == "" {
		return productID
	}
	return productID + "\x00" + *variantID
}

// DisplayItemKey is an item's external_item_key: "<product id>" or "<product id>:<variant id>".
func DisplayItemKey(productID string, variantID *string) string {
	if variantID == nil || *variantID == "" {
		return productID
	}
	return productID + ":" + *variantID
}

// Catalog reads a catalog (archived ones too: callers decide).
func (s *Store) Catalog(t Tenant, id int64) (*Catalog, error) {
	var c Catalog
	if err := s.getJSON(catalogKey(t, id), &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// CatalogState reads a catalog's sync state (zero when it has none yet).
func (s *Store) CatalogState(t Tenant, id int64) (*CatalogState, error) {
	var st CatalogState
	if err := s.getJSON(catalogStateKey(t, id), &st); err != nil && !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	return &st, nil
}

// CatalogByExternal finds the active catalog with source and external id.
func (s *Store) CatalogByExternal(t Tenant, source, ext string) (int64, error) {
	v, err := s.get(catalogExtKey(t, source, ext))
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, errors.New("storage: corrupt catalog index entry")
	}
	return int64(beUint64(v)), nil
}

// Catalogs lists a tenant's catalogs, newest first, archived ones excluded, starting below
// before (0: from the newest), at most limit (0: all).
func (s *Store) Catalogs(t Tenant, before int64, limit int) ([]*Catalog, error) {
	p := cat(t.prefix(), []byte("cat/"))
	upper := prefixEnd(p)
	if before > 0 {
		upper = catalogKey(t, before)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := []*Catalog{}
	for ok := it.Last(); ok && (limit <= 0 || len(out) < limit); ok = it.Prev() {
		var c Catalog
		if err := codec.Unmarshal(it.Value(), &c); err != nil {
			return nil, err
		}
		if c.Status != CatalogArchived {
			out = append(out, &c)
		}
	}
	return out, it.Error()
}

// PutCatalog writes a catalog record and its external-id index entry (removed once archived).
func (b *Batch) PutCatalog(c *Catalog) error {
	t := c.Tenant()
	if c.ExternalID != nil {
		k := catalogExtKey(t, c.Source, *c.ExternalID)
		if c.Status == CatalogArchived {
			b.del(k)
		} else {
			b.set(k, u64(uint64(c.ID)))
		}
	}
	return b.setJSON(catalogKey(t, c.ID), c)
}

// PutCatalogState writes a catalog's sync state.
func (b *Batch) PutCatalogState(t Tenant, id int64, st *CatalogState) error {
	return b.setJSON(catalogStateKey(t, id), st)
}

// CatalogItem reads one item of a catalog.
func (s *Store) CatalogItem(t Tenant, catalog, id int64) (*CatalogItem, error) {
	var it CatalogItem
	if err := s.getJSON(itemKey(t, catalog, id), &it); err != nil {
		return nil, err
	}
	return &it, nil
}

// CatalogItemID resolves an item's match key.
func (s *Store) CatalogItemID(t Tenant, catalog int64, key string) (int64, error) {
	v, err := s.get(itemMatchKey(t, catalog, key))
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, errors.New("storage: corrupt item index entry")
	}
	return int64(beUint64(v)), nil
}

// CatalogItems lists a catalog's items, newest first, below before (0: from the newest), at
// most limit.
func (s *Store) CatalogItems(t Tenant, catalog, before int64, limit int) ([]*CatalogItem, error) {
	p := itemPrefix(t, catalog)
	upper := prefixEnd(p)
	if before > 0 {
		upper = itemKey(t, catalog, before)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := []*CatalogItem{}
	for ok := it.Last(); ok && (limit <= 0 || len(out) < limit); ok = it.Prev() {
		var ci CatalogItem
		if err := codec.Unmarshal(it.Value(), &ci); err != nil {
			return nil, err
		}
		out = append(out, &ci)
	}
	return out, it.Error()
}

// CatalogItemIDs lists up to limit item ids of a catalog in id order (purging an archived
// catalog goes through them in chunks).
func (s *Store) CatalogItemIDs(t Tenant, catalog int64, limit int) ([]int64, error) {
	p := itemPrefix(t, catalog)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []int64
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		k := it.Key()
		out = append(out, int64(beUint64(k[len(k)-8:])))
	}
	return out, it.Error()
}

// PutCatalogItem writes an item and its match entry.
func (b *Batch) PutCatalogItem(t Tenant, it *CatalogItem) error {
	b.set(itemMatchKey(t, it.CatalogID, ItemKey(it.ExternalProductID, it.ExternalVariantID)), u64(uint64(it.ID)))
	return b.setJSON(itemKey(t, it.CatalogID, it.ID), it)
}

// EncodeRecord is the stored form of a record (for PutCatalogItemRaw: encoding off the writer's
// goroutine).
func EncodeRecord(v any) ([]byte, error) { return codec.Marshal(v) }

// PutCatalogItemRaw writes an item already encoded with EncodeRecord, and its match entry.
func (b *Batch) PutCatalogItemRaw(t Tenant, it *CatalogItem, data []byte) {
	b.set(itemMatchKey(t, it.CatalogID, ItemKey(it.ExternalProductID, it.ExternalVariantID)), u64(uint64(it.ID)))
	b.set(itemKey(t, it.CatalogID, it.ID), data)
}

// DeleteCatalogItem removes an item and its match entry.
func (b *Batch) DeleteCatalogItem(t Tenant, it *CatalogItem) {
	b.del(itemMatchKey(t, it.CatalogID, ItemKey(it.ExternalProductID, it.ExternalVariantID)))
	b.del(itemKey(t, it.CatalogID, it.ID))
}

// SyncJob reads a job of a catalog.
func (s *Store) SyncJob(t Tenant, catalog, id int64) (*SyncJob, error) {
	var j SyncJob
	if err := s.getJSON(syncJobKey(t, catalog, id), &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// SyncInput reads the items a job was created with (raw JSON array).
func (s *Store) SyncInput(t Tenant, id int64) ([]byte, error) { return s.get(syncInputKey(t, id)) }

// PutSyncJob writes a job record.
func (b *Batch) PutSyncJob(j *SyncJob) error {
	return b.setJSON(syncJobKey(j.Tenant(), j.CatalogID, j.ID), j)
}

// QueueSyncJob writes a new job and its queue entry (its input, if any, is the file
// j.InputFile, written before).
func (b *Batch) QueueSyncJob(j *SyncJob) error {
	t := j.Tenant()
	b.set(syncQueueKey(j.ID), cat(t.bytes(), u64(uint64(j.CatalogID))))
	return b.PutSyncJob(j)
}

// EndSyncJob writes a finished job and removes its input and queue entry.
func (b *Batch) EndSyncJob(j *SyncJob) error {
	b.del(syncInputKey(j.Tenant(), j.ID))
	b.del(syncQueueKey(j.ID))
	return b.PutSyncJob(j)
}

// SyncQueue lists the unfinished jobs in creation order.
func (s *Store) SyncQueue() ([]SyncRef, error) {
	p := []byte(syncQueuePrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []SyncRef
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != len(p)+8 || len(v) != tenantLen+8 {
			continue
		}
		t, ok := tenantFromBytes(v[:tenantLen])
		if !ok {
			continue
		}
		out = append(out, SyncRef{Tenant: t, Catalog: int64(beUint64(v[tenantLen:])), Job: int64(beUint64(k[len(p):]))})
	}
	return out, it.Error()
}

// CatalogItemsGet reads many items of a catalog at once (nil for ids not found).
func (s *Store) CatalogItemsGet(t Tenant, catalog int64, ids []int64) ([]*CatalogItem, error) {
	out := make([]*CatalogItem, len(ids))
	for i, id := range ids {
		it, err := s.CatalogItem(t, catalog, id)
		if errors.Is(err, errs.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = it
	}
	return out, nil
}

// Sync job inputs are files (<data>/sync-inputs/<name>), not Pebble values: a job's items are
// read once and deleted when it ends, and as values they would be flushed and compacted with
// everything else (a fifth of the service's CPU during a large sync).

// SyncInputDir is the folder of sync job inputs.
func (s *Store) SyncInputDir() string { return filepath.Join(s.dir, "sync-inputs") }

// WriteSyncInput stores a job's input durably (synced, then renamed into place).
func (s *Store) WriteSyncInput(name string, data []byte) error {
	if !ValidName(name) {
		return errors.New("storage: bad sync input name")
	}
	dir := s.SyncInputDir()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	if s.Blobs.remote != nil {
		if err := s.Blobs.remote.putSyncInput(name, data); err != nil {
			return fmt.Errorf("storage: keep sync input in the object store: %w", err)
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadSyncInput reads a job's input file.
func (s *Store) ReadSyncInput(name string) ([]byte, error) {
	if !ValidName(name) {
		return nil, errs.ErrNotFound
	}
	data, err := os.ReadFile(filepath.Join(s.SyncInputDir(), name))
	if errors.Is(err, os.ErrNotExist) && s.Blobs.remote != nil {
		return s.Blobs.remote.getSyncInput(name) // a job taken over from another node
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, errs.ErrNotFound
	}
	return data, err
}

// RemoveSyncInput deletes a job's input file.
func (s *Store) RemoveSyncInput(name string) {
	if ValidName(name) {
		_ = os.Remove(filepath.Join(s.SyncInputDir(), name))
		if s.Blobs.remote != nil {
			s.Blobs.remote.removeSyncInput(name)
		}
	}
}

// RemoveLocalSyncInput deletes a job's input file from this node only (its object store copy
// may be another node's to read: cluster mode).
func (s *Store) RemoveLocalSyncInput(name string) {
	if ValidName(name) {
		_ = os.Remove(filepath.Join(s.SyncInputDir(), name))
	}
}

// SyncInputFiles lists the input files present (to remove those no unfinished job names).
func (s *Store) SyncInputFiles() ([]string, error) {
	ents, err := os.ReadDir(s.SyncInputDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out, nil
}
