package actors

import (
	"errors"
	"time"

	"flipbook/errs"
	"flipbook/storage"
)

// Catalogs (spec §2.5, §3.5, §4.8). The workspace actor owns catalog records and the
// source + external_id index, and creates sync jobs (record, accepted items and queue entry in
// one commit); the catalog sync supervisor (catalog_sync.go) runs them, one worker actor per
// catalog, which alone writes the catalog's items and sync state.

// Messages of the workspace actor.
type (
	// CreateCatalog → *CatalogCreated. Catalog carries the request's fields; when it has an
	// external id and a catalog with the same source and external id exists, that catalog is
	// updated (only the fields Given lists change) instead. InputFile names the stored JSON
	// array of the initial items ("" for none: storage.WriteSyncInput), Total their count.
	CreateCatalog struct {
		Catalog   *storage.Catalog
		Given     map[string]bool // name, source_url, metadata, template_key
		InputFile string
		Total     int
	}
	// QueueSync → *storage.SyncJob: a bulk upsert or availability job of an active catalog.
	QueueSync struct {
		Catalog    int64
		Type       string
		InputFile  string
		Total      int
		SnapshotAt *time.Time
	}
	// ArchiveCatalog → *storage.Catalog: the catalog becomes archived (gone from the API) and a
	// purge job removes its items; its unfinished jobs are cancelled.
	ArchiveCatalog struct{ ID int64 }
)

// CatalogCreated is the answer to CreateCatalog.
type CatalogCreated struct {
	Catalog *storage.Catalog
	Job     *storage.SyncJob
	Updated bool // an existing catalog was updated
}

// MaxCatalogItems bounds the items of one catalog; items beyond it fail with catalog_full
// (Options.MaxCatalogItems sets another bound).
const MaxCatalogItems = 250_000

func (w *workspace) createCatalog(m *CreateCatalog) (*CatalogCreated, error) {
	st, now, in := w.s.Store, w.s.now(), m.Catalog
	var c *storage.Catalog
	updated := false
	if in.ExternalID != nil {
		id, err := st.CatalogByExternal(w.t, in.Source, *in.ExternalID)
		switch {
		case err == nil:
			if c, err = st.Catalog(w.t, id); err != nil {
				return nil, err
			}
			updated = true
		case !errors.Is(err, errs.ErrNotFound):
			return nil, err
		}
	}
	if c != nil {
		if m.Given["name"] {
			c.Name = in.Name
		}
		if m.Given["source_url"] {
			c.SourceURL = in.SourceURL
		}
		if m.Given["metadata"] {
			c.Metadata = in.Metadata
		}
		if m.Given["template_key"] {
			c.TemplateKey = in.TemplateKey
		}
		c.UpdatedAt = now
	} else {
		id, err := st.NextIDFor(w.t.Workspace, "catalog")
		if err != nil {
			return nil, err
		}
		c = in
		c.ID, c.Workspace, c.Mode, c.Status, c.CreatedAt, c.UpdatedAt = id, w.t.Workspace, w.t.Mode, storage.CatalogActive, now, now
	}
	typ := storage.SyncCreate
	if updated {
		typ = storage.SyncUpdate
	}
	j, err := w.newSyncJob(c.ID, typ, m.Total, nil, now)
	if err != nil {
		return nil, err
	}
	j.InputFile = m.InputFile
	b := st.NewBatch()
	if err := b.PutCatalog(c); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.QueueSyncJob(j); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Commit(); err != nil {
		return nil, err
	}
	w.s.syncQueued(storage.SyncRef{Tenant: w.t, Catalog: c.ID, Job: j.ID})
	return &CatalogCreated{Catalog: c, Job: j, Updated: updated}, nil
}

func (w *workspace) newSyncJob(catalog int64, typ string, total int, snapshot *time.Time, now time.Time) (*storage.SyncJob, error) {
	id, err := w.s.Store.NextIDFor(w.t.Workspace, "syncjob")
	if err != nil {
		return nil, err
	}
	return &storage.SyncJob{ID: id, CatalogID: catalog, Workspace: w.t.Workspace, Mode: w.t.Mode, Type: typ,
		Status: storage.SyncQueued, Total: total, Errors: []storage.SyncError{}, SnapshotAt: snapshot,
		CreatedAt: now, UpdatedAt: now}, nil
}

// activeCatalog reads a catalog that is not archived (errs.ErrNotFound otherwise).
func (w *workspace) activeCatalog(id int64) (*storage.Catalog, error) {
	c, err := w.s.Store.Catalog(w.t, id)
	if err != nil {
		return nil, notFound(err)
	}
	if c.Status == storage.CatalogArchived {
		return nil, errs.ErrNotFound
	}
	return c, nil
}

func (w *workspace) queueSync(m *QueueSync) (*storage.SyncJob, error) {
	if _, err := w.activeCatalog(m.Catalog); err != nil {
		return nil, err
	}
	j, err := w.newSyncJob(m.Catalog, m.Type, m.Total, m.SnapshotAt, w.s.now())
	if err != nil {
		return nil, err
	}
	j.InputFile = m.InputFile
	b := w.s.Store.NewBatch()
	if err := b.QueueSyncJob(j); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Commit(); err != nil {
		return nil, err
	}
	w.s.syncQueued(storage.SyncRef{Tenant: w.t, Catalog: m.Catalog, Job: j.ID})
	return j, nil
}

func (w *workspace) archiveCatalog(m *ArchiveCatalog) (*storage.Catalog, error) {
	c, err := w.activeCatalog(m.ID)
	if err != nil {
		return nil, err
	}
	now := w.s.now()
	c.Status, c.UpdatedAt, c.ArchivedAt = storage.CatalogArchived, now, &now
	j, err := w.newSyncJob(c.ID, storage.SyncPurge, 0, nil, now)
	if err != nil {
		return nil, err
	}
	b := w.s.Store.NewBatch()
	if err := b.PutCatalog(c); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.QueueSyncJob(j); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Commit(); err != nil {
		return nil, err
	}
	w.s.syncQueued(storage.SyncRef{Tenant: w.t, Catalog: c.ID, Job: j.ID})
	return c, nil
}

// Catalog operations, called by the API layers.

// CreateCatalog creates (or, by source and external id, updates) a catalog and queues its
// initial sync job.
func (s *System) CreateCatalog(t storage.Tenant, m *CreateCatalog) (*CatalogCreated, error) {
	return askT[*CatalogCreated](s, s.workspace(t), m)
}

// QueueSync queues a bulk upsert or availability job.
func (s *System) QueueSync(t storage.Tenant, m *QueueSync) (*storage.SyncJob, error) {
	return askT[*storage.SyncJob](s, s.workspace(t), m)
}

// ArchiveCatalog deletes a catalog from the API and purges its items in the background.
func (s *System) ArchiveCatalog(t storage.Tenant, id int64) (*storage.Catalog, error) {
	return askT[*storage.Catalog](s, s.workspace(t), &ArchiveCatalog{ID: id})
}

// DeleteCatalogItem removes one item (ordered with the catalog's sync jobs).
func (s *System) DeleteCatalogItem(t storage.Tenant, catalog, item int64) (*storage.CatalogItem, error) {
	return askT[*storage.CatalogItem](s, s.catalogSync, &DeleteCatalogItem{Tenant: t, Catalog: catalog, Item: item})
}

// CatalogInput is the JSON form of a job's accepted items.
func CatalogInput(items []map[string]any) ([]byte, error) { return inputJSON.Marshal(items) }
