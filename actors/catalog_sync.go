package actors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/bytedance/sonic"

	"flipbook/errs"
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
	// DeleteCatalogItem → *storage.CatalogItem (the removed item); errs.ErrNotFound.
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
	s.tell(s.catalogSync, &syncQueued{ref: ref})
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
	case actor.Started, resumeQueues:
		refs, err := v.s.Store.SyncQueue()
		if err != nil {
			v.s.opts.Logger.Error("catalog sync: read queue", "err", err)
			return
		}
		if _, started := c.Message().(actor.Started); started {
			v.removeOrphanInputs(refs)
		}
		for i := range refs {
			if v.s.owns(refs[i].Tenant.Workspace) {
				v.route(c, &syncQueued{ref: refs[i]}) // a job its worker knows is not queued twice
			}
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

// removeOrphanInputs deletes input files no unfinished job names: written by a request that
// was cut short before its job was committed, or left by a job that ended just before a crash.
// It runs before any request is served.
func (v *catalogSup) removeOrphanInputs(refs []storage.SyncRef) {
	files, err := v.s.Store.SyncInputFiles()
	if err != nil || len(files) == 0 {
		return
	}
	keep := map[string]bool{}
	for _, r := range refs {
		if j, err := v.s.Store.SyncJob(r.Tenant, r.Catalog, r.Job); err == nil && j.InputFile != "" {
			keep[j.InputFile] = true
		}
	}
	for _, f := range files {
		if !keep[f] {
			v.s.Store.RemoveLocalSyncInput(strings.TrimSuffix(f, ".tmp"))
			_ = os.Remove(filepath.Join(v.s.Store.SyncInputDir(), f))
		}
	}
}

func (v *catalogSup) route(c *actor.Context, m catalogMsg) {
	ref := m.catalogRef()
	ch, ok := v.children[ref]
	if !ok {
		id := strconv.FormatInt(ref.t.Workspace, 10) + "-" + ref.t.Mode.String() + "-" + strconv.FormatInt(ref.id, 10) + "-" + RandomString(6)
		ch = &child{pid: c.SpawnChild(newCatalogWorker(v.s, ref), "catalog", actor.WithID(id),
			actor.WithInboxSize(defaultInboxSize), v.s.middleware("catalog"))}
		v.children[ref] = ch
	}
	ch.sent++
	v.s.tellFrom(ch.pid, &routedCatalog{msg: m}, c.Sender())
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
		w.s.tellFrom(c.Parent(), &catalogIdle{ref: w.ref, pid: c.PID(), processed: w.processed}, c.PID())
		return
	}
	w.stepping = true
	w.s.tellFrom(c.PID(), &syncStep{}, c.PID())
}

// step runs one chunk of the current job, starting the next job first when none is running.
func (w *catalogWorker) step() error {
	if w.job == nil {
		if started, err := w.startJob(); !started {
			return err
		}
	}
	st, t := w.s.Store, w.ref.t
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
	done, err := w.runChunk(b, cat, state, j, now)
	if err != nil {
		b.Close()
		return err
	}
	j.UpdatedAt = now
	if err := w.writeProgress(b, j, state, done, now); err != nil {
		b.Close()
		return err
	}
	// A step's items and the job's progress commit together, so a step need not be synced: a
	// crash loses whole steps (the WAL is a sequence), which the job then applies again. The
	// last step is synced before the job reads as finished.
	commit := b.CommitNoSync
	if done {
		commit = b.Commit
	}
	if err := commit(); err != nil {
		return err
	}
	if done {
		w.endJob(j)
	}
	return nil
}

// startJob makes the job at the head of the queue the running one, with its input. It reports
// false when there is none to run (the queue is empty, or its head is gone or finished and is
// dropped) or on an error.
func (w *catalogWorker) startJob() (bool, error) {
	if len(w.queue) == 0 {
		return false, nil
	}
	j, err := w.s.Store.SyncJob(w.ref.t, w.ref.id, w.queue[0])
	if errors.Is(err, errs.ErrNotFound) || err == nil && j.Finished() {
		delete(w.known, w.queue[0])
		w.queue = w.queue[1:]
		return false, nil
	}
	if err != nil {
		return false, err
	}
	input, err := w.jobInput(j)
	if err != nil {
		return false, err
	}
	w.job, w.input = j, input
	return true, nil
}

// jobInput reads and decodes a job's input items (none when it has no input).
func (w *catalogWorker) jobInput(j *storage.SyncJob) ([]map[string]json.RawMessage, error) {
	st := w.s.Store
	var raw []byte
	var err error
	if j.InputFile != "" {
		raw, err = st.ReadSyncInput(j.InputFile)
	} else {
		raw, err = st.SyncInput(w.ref.t, j.ID) // inputs stored in Pebble before they were files
	}
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	var input []map[string]json.RawMessage
	if len(raw) > 0 {
		if err := inputJSON.Unmarshal(raw, &input); err != nil {
			return nil, fmt.Errorf("job %d: input: %w", j.ID, err)
		}
	}
	return input, nil
}

// runChunk writes one chunk of the running job j to b: a purge deletes up to 4*SyncChunk
// items, a job of an archived catalog is cancelled, and a sync applies the next SyncChunk
// input items. It reports whether the job has nothing left to do. On an error the caller
// closes b.
func (w *catalogWorker) runChunk(b *storage.Batch, cat *storage.Catalog, state *storage.CatalogState, j *storage.SyncJob, now time.Time) (bool, error) {
	st, t := w.s.Store, w.ref.t
	switch {
	case j.Type == storage.SyncPurge:
		ids, err := st.CatalogItemIDs(t, w.ref.id, 4*SyncChunk)
		if err != nil {
			return false, err
		}
		items, err := st.CatalogItemsGet(t, w.ref.id, ids)
		if err != nil {
			return false, err
		}
		for _, it := range items {
			if it != nil {
				b.DeleteCatalogItem(t, it)
			}
		}
		state.Items = 0
		return len(ids) < 4*SyncChunk, nil
	case cat.Status == storage.CatalogArchived:
		j.Status, j.Reason = storage.SyncCancelled, "the catalog was deleted"
		return true, nil
	default:
		end := min(j.Processed+SyncChunk, len(w.input))
		if err := w.apply(b, cat, state, j, j.Processed, end, now); err != nil {
			return false, err
		}
		j.Processed = end
		return end >= len(w.input), nil
	}
}

// writeProgress writes the job (ended when done, with its final status) and the catalog's
// sync state to b. On an error the caller closes b.
func (w *catalogWorker) writeProgress(b *storage.Batch, j *storage.SyncJob, state *storage.CatalogState, done bool, now time.Time) error {
	if done {
		w.finish(j, state, now)
		if err := b.EndSyncJob(j); err != nil {
			return err
		}
	} else if err := b.PutSyncJob(j); err != nil {
		return err
	}
	return b.PutCatalogState(w.ref.t, w.ref.id, state)
}

// endJob forgets the job j, committed as finished, and its input, and takes it off the queue.
func (w *catalogWorker) endJob(j *storage.SyncJob) {
	w.s.Store.RemoveSyncInput(j.InputFile)
	delete(w.known, j.ID)
	w.job, w.input = nil, nil
	if len(w.queue) > 0 {
		w.queue = w.queue[1:]
	}
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

// itemResult is what applying one key's entries of a step produced.
type itemResult struct {
	item     *storage.CatalogItem // nil: nothing to write
	data     []byte               // the item's record
	accepted int
	errs     []storage.SyncError
	failed   int
}

// apply applies items [from, to) of the running job. Entries are grouped by item (match key);
// the groups are applied in parallel (reads, decoding and encoding are most of a step's work),
// each group's entries in request order, and the records are written to b in the order of
// each group's first entry.
func (w *catalogWorker) apply(b *storage.Batch, cat *storage.Catalog, state *storage.CatalogState, j *storage.SyncJob, from, to int, now time.Time) error {
	type group struct {
		key  string
		idx  []int
		pid  string
		vid  *string
		item *storage.CatalogItem
		full bool // a new item the catalog has no room for
		res  itemResult
	}
	byKey := map[string]*group{}
	var groups []*group
	for i := from; i < to; i++ {
		in := w.input[i]
		pid, vid := rawString(in["external_product_id"]), rawStringPtr(in["external_variant_id"])
		key := storage.ItemKey(pid, vid)
		g := byKey[key]
		if g == nil {
			g = &group{key: key, pid: pid, vid: vid}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	groupErrs := make([]error, len(groups))
	parallel := func(fn func(n int) error) {
		par := min(len(groups), max(1, runtime.GOMAXPROCS(0)))
		var next atomic.Int64
		var wg sync.WaitGroup
		for range par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := int(next.Add(1)) - 1; n < len(groups); n = int(next.Add(1)) - 1 {
					if err := fn(n); err != nil {
						groupErrs[n] = err
					}
				}
			}()
		}
		wg.Wait()
	}
	// 1. Find the existing items (in parallel).
	parallel(func(n int) error {
		var err error
		groups[n].item, err = w.lookup(groups[n].key)
		return err
	})
	if err := errors.Join(groupErrs...); err != nil {
		return err
	}
	// 2. New items get their ids in request order (lists are newest first by id).
	if j.Type != storage.SyncAvailability {
		for _, g := range groups {
			if g.item != nil {
				continue
			}
			if state.Items >= w.s.opts.MaxCatalogItems {
				g.full = true
				continue
			}
			id, err := w.s.Store.NextIDFor(cat.Workspace, "catitem")
			if err != nil {
				return err
			}
			t := w.ref.t
			g.item = &storage.CatalogItem{ID: id, CatalogID: w.ref.id, Workspace: t.Workspace, Source: cat.Source,
				ExternalItemKey: storage.DisplayItemKey(g.pid, g.vid), ExternalProductID: g.pid, ExternalVariantID: g.vid,
				CreatedAt: now}
			state.Items++
		}
	}
	// 3. Apply the entries and encode the records (in parallel).
	parallel(func(n int) error {
		g := groups[n]
		var err error
		g.res, err = w.applyGroup(j, g.item, g.full, g.pid, g.vid, g.idx, now)
		return err
	})
	if err := errors.Join(groupErrs...); err != nil {
		return err
	}
	var failures []storage.SyncError
	for _, g := range groups {
		if g.res.item != nil {
			b.PutCatalogItemRaw(w.ref.t, g.res.item, g.res.data)
		}
		j.Accepted += g.res.accepted
		j.Failed += g.res.failed
		failures = append(failures, g.res.errs...)
	}
	sort.Slice(failures, func(a, b int) bool { return failures[a].Index < failures[b].Index })
	for _, e := range failures {
		if len(j.Errors) < MaxSyncErrors {
			j.Errors = append(j.Errors, e)
		}
	}
	return nil
}

// lookup reads the item with a match key (nil when the catalog has none).
func (w *catalogWorker) lookup(key string) (*storage.CatalogItem, error) {
	st, t := w.s.Store, w.ref.t
	id, err := st.CatalogItemID(t, w.ref.id, key)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	item, err := st.CatalogItem(t, w.ref.id, id)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, nil
	}
	return item, err
}

// applyGroup applies the entries idx (all for one item, in request order) of the running job
// to item (nil: the catalog has no such item; full: it had no room to create it).
func (w *catalogWorker) applyGroup(j *storage.SyncJob, item *storage.CatalogItem, full bool, pid string, vid *string,
	idx []int, now time.Time) (res itemResult, err error) {
	for _, i := range idx {
		in := w.input[i]
		fail := func(code, msg string) {
			res.failed++
			e := storage.SyncError{Index: i, ExternalProductID: pid, ExternalVariantID: vid, Code: code, Message: msg}
			if item != nil {
				id := item.ID
				e.ItemID = &id
			}
			res.errs = append(res.errs, e)
		}
		switch {
		case j.Type == storage.SyncAvailability && item == nil:
			fail("item_not_found", fmt.Sprintf("no item with external_product_id %q%s in this catalog", pid, variantText(vid)))
			continue
		case j.Type == storage.SyncAvailability:
			snap := now
			if j.SnapshotAt != nil {
				snap = *j.SnapshotAt
				if item.LastAvailabilitySyncedAt != nil && item.LastAvailabilitySyncedAt.After(snap) {
					fail("stale_snapshot", fmt.Sprintf("the item's availability is from %s, newer than snapshot_at %s",
						item.LastAvailabilitySyncedAt.Format(time.RFC3339), snap.Format(time.RFC3339)))
					continue
				}
			}
			applyAvailability(item, in)
			item.LastAvailabilitySyncedAt = &snap
		case full || item == nil:
			fail("catalog_full", fmt.Sprintf("the catalog already holds %d items, the most one catalog may hold", w.s.opts.MaxCatalogItems))
			continue
		default:
			applyProduct(item, in)
			item.LastSyncedAt = &now
		}
		ok := storage.SyncCompleted
		item.LastSyncStatus, item.LastSyncError, item.UpdatedAt = &ok, nil, now
		res.accepted++
		res.item = item
	}
	if res.item != nil {
		if res.data, err = storage.EncodeRecord(res.item); err != nil {
			return res, err
		}
	}
	return res, nil
}

func variantText(vid *string) string {
	if vid == nil {
		return ""
	}
	return fmt.Sprintf(" and external_variant_id %q", *vid)
}

// productStrings and productArrays are the product fields of an upsert entry.
var (
	productStrings = []struct {
		name string
		f    func(*storage.CatalogItem) **string
	}{
		{"sku", func(it *storage.CatalogItem) **string { return &it.SKU }},
		{"title", func(it *storage.CatalogItem) **string { return &it.Title }},
		{"status", func(it *storage.CatalogItem) **string { return &it.Status }},
		{"product_type", func(it *storage.CatalogItem) **string { return &it.ProductType }},
		{"price", func(it *storage.CatalogItem) **string { return &it.Price }},
		{"regular_price", func(it *storage.CatalogItem) **string { return &it.RegularPrice }},
		{"sale_price", func(it *storage.CatalogItem) **string { return &it.SalePrice }},
		{"currency", func(it *storage.CatalogItem) **string { return &it.Currency }},
		{"image", func(it *storage.CatalogItem) **string { return &it.Image }},
		{"url", func(it *storage.CatalogItem) **string { return &it.URL }},
		{"description", func(it *storage.CatalogItem) **string { return &it.Description }},
		{"short_description", func(it *storage.CatalogItem) **string { return &it.ShortDescription }},
		{"stock_status", func(it *storage.CatalogItem) **string { return &it.StockStatus }},
	}
	productArrays = []struct {
		name string
		f    func(*storage.CatalogItem) *json.RawMessage
	}{
		{"gallery", func(it *storage.CatalogItem) *json.RawMessage { return &it.Gallery }},
		{"categories", func(it *storage.CatalogItem) *json.RawMessage { return &it.Categories }},
		{"payload", func(it *storage.CatalogItem) *json.RawMessage { return &it.Payload }},
		{"raw_payload", func(it *storage.CatalogItem) *json.RawMessage { return &it.RawPayload }},
		{"availability", func(it *storage.CatalogItem) *json.RawMessage { return &it.Availability }},
	}
)

// applyProduct sets the product fields given in an upsert entry (null clears one; absent keeps
// it).
func applyProduct(it *storage.CatalogItem, in map[string]json.RawMessage) {
	for _, f := range productStrings {
		if v, ok := in[f.name]; ok {
			*f.f(it) = rawStringPtr(v)
		}
	}
	for _, f := range productArrays {
		if v, ok := in[f.name]; ok {
			*f.f(it) = rawOrNil(v)
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
		return nil, errs.ErrNotFound
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

// inputJSON decodes job inputs (written by CatalogInput, so valid JSON).
var inputJSON = sonic.Config{CopyString: true}.Froze()

func rawString(v json.RawMessage) string {
	if p := rawStringPtr(v); p != nil {
		return *p
	}
	return ""
}

// rawStringPtr decodes a JSON string (nil for null); strings without escapes, the common case,
// are taken as they are.
func rawStringPtr(v json.RawMessage) *string {
	if rawIsNull(v) {
		return nil
	}
	if n := len(v); n >= 2 && v[0] == '"' && v[n-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		s := string(v[1 : n-1])
		return &s
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
