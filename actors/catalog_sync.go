package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/storage"
)

// The catalog sync supervisor runs sync jobs (docs/CATALOGS.md). Jobs wait in a durable queue
// (g/catq/, written with the job by the workspace actor); the supervisor routes each to the
// worker actor of its catalog, spawned on demand and stopped when it has nothing left. A worker
// runs its catalog's jobs in creation order, SyncChunk items per step: one step writes the
// items, the job's progress and the catalog's sync state in one synced commit, so a job cut
// short by kill -9 resumes after its last committed step and applies every item exactly once.
// Steps are messages the worker sends itself, so a DELETE of an item is served between steps.

// SyncChunk is the number of items one step of a sync job applies.
const SyncChunk = 250

// MaxSyncErrors bounds the per-item errors a job records (every item is still counted).
const MaxSyncErrors = 1000

type (
	syncQueued struct{ ref storage.SyncRef }
	syncStep   struct{}
	// DeleteCatalogItem → *storage.CatalogItem (the removed item); ErrNotFound.
	DeleteCatalogItem struct {
		Tenant  storage.Tenant
		Catalog int64
		Item    int64
	}
	catalogMsg interface{ catalogRef() catalogRef }
	catalogRef struct {
		t  storage.Tenant
		id int64
	}
	routedCatalog struct{ msg catalogMsg }
	catalogIdle   struct {
		ref       catalogRef
		pid       *actor.PID
		processed uint64
	}
)

func (m *syncQueued) catalogRef() catalogRef { return catalogRef{m.ref.Tenant, m.ref.Catalog} }
func (m *DeleteCatalogItem) catalogRef() catalogRef {
	return catalogRef{m.Tenant, m.Catalog}
}

// syncQueued tells the supervisor of a new job.
func (s *System) syncQueued(ref storage.SyncRef) {
	s.Engine.Send(s.catalogSync, &syncQueued{ref: ref})
}

type catalogSup struct {
	s        *System
	children map[catalogRef]*child
}

func newCatalogSup(s *System) actor.Producer {
	return func() actor.Receiver { return &catalogSup{s: s, children: map[catalogRef]*child{}} }
}

func (v *catalogSup) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Stopped:
	case actor.Started:
		refs, err := v.s.Store.SyncQueue()
		if err != nil {
			v.s.opts.Logger.Error("catalog sync: read queue", "err", err)
			return
		}
		for i := range refs {
			v.route(c, &syncQueued{ref: refs[i]})
		}
	case catalogMsg:
		v.route(c, m)
	case *catalogIdle:
		if ch, ok := v.children[m.ref]; ok && ch.pid.Equals(m.pid) && ch.sent == m.processed {
			delete(v.children, m.ref)
			c.Engine().Poison(ch.pid)
		}
	}
}

func (v *catalogSup) route(c *actor.Context, m catalogMsg) {
	ref := m.catalogRef()
	ch, ok := v.children[ref]
	if !ok {
		id := strconv.FormatInt(ref.t.Workspace, 10) + "-" + ref.t.Mode.String() + "-" + strconv.FormatInt(ref.id, 10) + "-" + RandomString(6)
		ch = &child{pid: c.SpawnChild(newCatalogWorker(v.s, ref), "catalog", actor.WithID(id),
			actor.WithInboxSize(defaultInboxSize), actor.WithMiddleware(v.s.recoverMW))}
		v.children[ref] = ch
	}
	ch.sent++
	c.Engine().SendWithSender(ch.pid, &routedCatalog{msg: m}, c.Sender())
}

// catalogWorker runs the jobs of one catalog and owns its items and sync state.
type catalogWorker struct {
	s         *System
	ref       catalogRef
	queue     []int64 // job ids, oldest first
	known     map[int64]bool
	processed uint64
	stepping  bool

	job   *storage.SyncJob // the running job
	input []map[string]json.RawMessage
}

func newCatalogWorker(s *System, ref catalogRef) actor.Producer {
	return func() actor.Receiver { return &catalogWorker{s: s, ref: ref, known: map[int64]bool{}} }
}

func (w *catalogWorker) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized, actor.Started, actor.Stopped:
	case *routedCatalog:
		w.processed++
		switch m := m.msg.(type) {
		case *syncQueued:
			if !w.known[m.ref.Job] {
				w.known[m.ref.Job] = true
				w.queue = append(w.queue, m.ref.Job)
			}
		case *DeleteCatalogItem:
			c.Respond(result(w.deleteItem(m.Item)))
		}
		w.kick(c)
	case *syncStep:
		w.stepping = false
		if err := w.step(); err != nil {
			// A storage error: the job stays queued and runs again from its last committed step
			// at the next start; this worker gives it up for now.
			w.s.opts.Logger.Error("catalog sync: step", "catalog", w.ref.id, "err", err)
			w.job, w.input = nil, nil
			if len(w.queue) > 0 {
				w.queue = w.queue[1:]
			}
		}
		w.kick(c)
	}
}

// kick schedules the next step, or reports the worker idle when it has nothing to do.
func (w *catalogWorker) kick(c *actor.Context) {
	if w.stepping {
		return
	}
	if w.job == nil && len(w.queue) == 0 {
		c.Send(c.Parent(), &catalogIdle{ref: w.ref, pid: c.PID(), processed: w.processed})
		return
	}
	w.stepping = true
	c.Send(c.PID(), &syncStep{})
}

// step runs one chunk of the current job, starting the next job first when none is running.
func (w *catalogWorker) step() error {
	st, t := w.s.Store, w.ref.t
	if w.job == nil {
		if len(w.queue) == 0 {
			return nil
		}
		j, err := st.SyncJob(t, w.ref.id, w.queue[0])
		if errors.Is(err, storage.ErrNotFound) || err == nil && j.Finished() {
			delete(w.known, w.queue[0])
			w.queue = w.queue[1:]
			return nil
		}
		if err != nil {
			return err
		}
		raw, err := st.SyncInput(t, j.ID)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		var input []map[string]json.RawMessage
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &input); err != nil {
				return fmt.Errorf("job %d: input: %w", j.ID, err)
			}
		}
		w.job, w.input = j, input
	}
	j := w.job
	cat, err := st.Catalog(t, w.ref.id)
	if err != nil {
		return err
	}
	state, err := st.CatalogState(t, w.ref.id)
	if err != nil {
		return err
	}
	now := w.s.now()
	if j.Status == storage.SyncQueued {
		j.Status, j.StartedAt = storage.SyncRunning, &now
	}
	b := st.NewBatch()
	done := false
	switch {
	case j.Type == storage.SyncPurge:
		ids, err := st.CatalogItemIDs(t, w.ref.id, 4*SyncChunk)
		if err != nil {
			b.Close()
			return err
		}
		items, err := st.CatalogItemsGet(t, w.ref.id, ids)
		if err != nil {
			b.Close()
			return err
		}
		for _, it := range items {
			if it != nil {
				b.DeleteCatalogItem(t, it)
			}
		}
		state.Items = 0
		done = len(ids) < 4*SyncChunk
	case cat.Status == storage.CatalogArchived:
		j.Status, j.Reason = storage.SyncCancelled, "the catalog was deleted"
		done = true
	default:
		end := min(j.Processed+SyncChunk, len(w.input))
		if err := w.apply(b, cat, state, j, j.Processed, end, now); err != nil {
			b.Close()
			return err
		}
		j.Processed = end
		done = end >= len(w.input)
	}
	j.UpdatedAt = now
	if done {
		w.finish(j, state, now)
		if err := b.EndSyncJob(j); err != nil {
			b.Close()
			return err
		}
	} else if err := b.PutSyncJob(j); err != nil {
		b.Close()
		return err
	}
	if err := b.PutCatalogState(t, w.ref.id, state); err != nil {
		b.Close()
		return err
	}
	if err := b.Commit(); err != nil {
		return err
	}
	if done {
		delete(w.known, j.ID)
		w.job, w.input = nil, nil
		if len(w.queue) > 0 {
			w.queue = w.queue[1:]
		}
	}
	return nil
}

// finish sets a job's final status (unless cancelled) and the catalog's last sync.
func (w *catalogWorker) finish(j *storage.SyncJob, state *storage.CatalogState, now time.Time) {
	j.FinishedAt = &now
	if j.Status != storage.SyncCancelled {
		switch {
		case j.Failed == 0:
			j.Status = storage.SyncCompleted
		case j.Failed >= j.Total:
			j.Status = storage.SyncFailed
		default:
			j.Status = storage.SyncCompletedWithErrors
		}
	}
	if j.Type == storage.SyncPurge {
		return
	}
	status := j.Status
	state.LastSyncedAt, state.LastSyncStatus, state.LastJobID = &now, &status, j.ID
	state.LastSyncError = nil
	switch {
	case j.Status == storage.SyncCancelled:
		msg := j.Reason
		state.LastSyncError = &msg
	case len(j.Errors) > 0:
		msg := fmt.Sprintf("%d of %d items failed; first: %s", j.Failed, j.Total, j.Errors[0].Message)
		state.LastSyncError = &msg
	}
}

// apply applies items [from, to) of the running job.
func (w *catalogWorker) apply(b *storage.Batch, cat *storage.Catalog, state *storage.CatalogState, j *storage.SyncJob, from, to int, now time.Time) error {
	st, t := w.s.Store, w.ref.t
	seen := map[string]*storage.CatalogItem{} // items of this step, by match key
	for i := from; i < to; i++ {
		in := w.input[i]
		pid, vid := rawString(in["external_product_id"]), rawStringPtr(in["external_variant_id"])
		key := storage.ItemKey(pid, vid)
		fail := func(code, msg string, item *storage.CatalogItem) {
			j.Failed++
			if len(j.Errors) < MaxSyncErrors {
				e := storage.SyncError{Index: i, ExternalProductID: pid, ExternalVariantID: vid, Code: code, Message: msg}
				if item != nil {
					id := item.ID
					e.ItemID = &id
				}
				j.Errors = append(j.Errors, e)
			}
		}
		item := seen[key]
		if item == nil {
			id, err := st.CatalogItemID(t, w.ref.id, key)
			switch {
			case err == nil:
				if item, err = st.CatalogItem(t, w.ref.id, id); err != nil && !errors.Is(err, storage.ErrNotFound) {
					return err
				}
			case !errors.Is(err, storage.ErrNotFound):
				return err
			}
		}
		if j.Type == storage.SyncAvailability {
			if item == nil {
				fail("item_not_found", fmt.Sprintf("no item with external_product_id %q%s in this catalog", pid, variantText(vid)), nil)
				continue
			}
			snap := now
			if j.SnapshotAt != nil {
				snap = *j.SnapshotAt
				if item.LastAvailabilitySyncedAt != nil && item.LastAvailabilitySyncedAt.After(snap) {
					fail("stale_snapshot", fmt.Sprintf("the item's availability is from %s, newer than snapshot_at %s",
						item.LastAvailabilitySyncedAt.Format(time.RFC3339), snap.Format(time.RFC3339)), item)
					continue
				}
			}
			applyAvailability(item, in)
			item.LastAvailabilitySyncedAt = &snap
		} else {
			if item == nil {
				if state.Items >= MaxCatalogItems {
					fail("catalog_full", fmt.Sprintf("the catalog already holds %d items, the most one catalog may hold", MaxCatalogItems), nil)
					continue
				}
				id, err := st.NextID("catitem")
				if err != nil {
					return err
				}
				item = &storage.CatalogItem{ID: id, CatalogID: w.ref.id, Workspace: t.Workspace, Source: cat.Source,
					ExternalItemKey: storage.DisplayItemKey(pid, vid), ExternalProductID: pid, ExternalVariantID: vid,
					CreatedAt: now}
				state.Items++
			}
			applyProduct(item, in)
			item.LastSyncedAt = &now
		}
		ok := storage.SyncCompleted
		item.LastSyncStatus, item.LastSyncError, item.UpdatedAt = &ok, nil, now
		if err := b.PutCatalogItem(t, item); err != nil {
			return err
		}
		seen[key] = item
		j.Accepted++
	}
	return nil
}

func variantText(vid *string) string {
	if vid == nil {
		return ""
	}
	return fmt.Sprintf(" and external_variant_id %q", *vid)
}

// applyProduct sets the product fields given in an upsert entry (null clears one; absent keeps
// it).
func applyProduct(it *storage.CatalogItem, in map[string]json.RawMessage) {
	strs := map[string]**string{
		"sku": &it.SKU, "title": &it.Title, "status": &it.Status, "product_type": &it.ProductType,
		"price": &it.Price, "regular_price": &it.RegularPrice, "sale_price": &it.SalePrice,
		"currency": &it.Currency, "image": &it.Image, "url": &it.URL, "description": &it.Description,
		"short_description": &it.ShortDescription, "stock_status": &it.StockStatus,
	}
	for k, dst := range strs {
		if v, ok := in[k]; ok {
			*dst = rawStringPtr(v)
		}
	}
	raws := map[string]*json.RawMessage{
		"gallery": &it.Gallery, "categories": &it.Categories, "payload": &it.Payload,
		"raw_payload": &it.RawPayload, "availability": &it.Availability,
	}
	for k, dst := range raws {
		if v, ok := in[k]; ok {
			*dst = rawOrNil(v)
		}
	}
	if v, ok := in["stock_quantity"]; ok {
		it.StockQuantity = rawIntPtr(v)
	}
	if v, ok := in["available"]; ok {
		it.Available = rawBoolPtr(v)
	}
}

// applyAvailability sets the availability fields given in an availability entry.
func applyAvailability(it *storage.CatalogItem, in map[string]json.RawMessage) {
	if v, ok := in["available"]; ok {
		it.Available = rawBoolPtr(v)
	}
	if v, ok := in["stock_status"]; ok {
		it.StockStatus = rawStringPtr(v)
	}
	if v, ok := in["stock_quantity"]; ok {
		it.StockQuantity = rawIntPtr(v)
	}
	if v, ok := in["availability"]; ok {
		it.Availability = rawOrNil(v)
	}
}

func (w *catalogWorker) deleteItem(id int64) (*storage.CatalogItem, error) {
	st, t := w.s.Store, w.ref.t
	cat, err := st.Catalog(t, w.ref.id)
	if err != nil {
		return nil, notFound(err)
	}
	if cat.Status == storage.CatalogArchived {
		return nil, ErrNotFound
	}
	it, err := st.CatalogItem(t, w.ref.id, id)
	if err != nil {
		return nil, notFound(err)
	}
	state, err := st.CatalogState(t, w.ref.id)
	if err != nil {
		return nil, err
	}
	if state.Items > 0 {
		state.Items--
	}
	b := st.NewBatch()
	b.DeleteCatalogItem(t, it)
	if err := b.PutCatalogState(t, w.ref.id, state); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Commit(); err != nil {
		return nil, err
	}
	return it, nil
}

func rawIsNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

func rawString(v json.RawMessage) string {
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

func rawStringPtr(v json.RawMessage) *string {
	if rawIsNull(v) {
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return nil
	}
	return &s
}

func rawIntPtr(v json.RawMessage) *int64 {
	if rawIsNull(v) {
		return nil
	}
	var f float64
	if json.Unmarshal(v, &f) != nil {
		return nil
	}
	n := int64(f)
	return &n
}

func rawBoolPtr(v json.RawMessage) *bool {
	if rawIsNull(v) {
		return nil
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		return nil
	}
	return &b
}

func rawOrNil(v json.RawMessage) json.RawMessage {
	if rawIsNull(v) {
		return nil
	}
	return append(json.RawMessage(nil), v...)
}
