package main

// Catalog sync jobs across real process kills (docs/CATALOGS.md; actors/catalog_sync.go). A job
// runs in steps of actors.SyncChunk items, each one synced Pebble commit holding the items and
// the job's progress, so a job cut short by SIGKILL resumes after its last committed step and
// applies every item exactly once. The child server (TestMain in conversion_kill_test.go
// re-executes the test binary as `flipbook serve`) lives five times on one data dir:
//
//  1. creates a catalog, takes the first half of the bulk upserts and is SIGKILLed right after
//     the last 202 (its job, at least, unfinished);
//  2. takes the second half and is SIGKILLed as soon as a job is seen running;
//  3. finishes every job; the test checks each job completed exactly once, the item count, every
//     item once with its last written title, and (stopped) the store's items and match entries;
//  4. deletes the catalog and is SIGKILLed right after the 200 (its purge unfinished);
//  5. finishes the purge: the catalog and its items are gone from the API, a catalog created with
//     the same source and external id is a new, empty one, and (stopped) the store has no item,
//     match entry or queued job of the deleted catalog left.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/errs"
	"flipbook/internal/testutil"
	"flipbook/storage"
)

const (
	catKillRequests = 20  // bulk upserts
	catKillItems    = 500 // entries per request (the most one request may carry)
	catKillUpdates  = 100 // entries of each later request that update items of earlier ones
	catKillSource   = "woocommerce"
	catKillExternal = "kill-shop"
)

// catKillEntry is one entry of a bulk upsert.
type catKillEntry struct{ pid, vid, title string }

func (e catKillEntry) key() string {
	if e.vid == "" {
		return e.pid
	}
	return e.pid + ":" + e.vid
}

func (e catKillEntry) body() map[string]any {
	m := map[string]any{"external_product_id": e.pid, "title": e.title, "price": "9.99", "currency": "EUR",
		"url": "https://shop.example/p/" + url.PathEscape(e.key())}
	if e.vid != "" {
		m["external_variant_id"] = e.vid
	}
	return m
}

// catKillPlan builds the requests: the first has catKillItems new items, each later one
// catKillItems-catKillUpdates new items and catKillUpdates updates of items of earlier requests,
// shuffled. Every fifth new item is a variant of the product before it (another item: items
// are matched on product and variant id).
func catKillPlan(rng *rand.Rand) [][]catKillEntry {
	var known []catKillEntry // one entry per key, as first written
	seen := map[string]bool{}
	next := 0
	newEntry := func() catKillEntry {
		n := next
		next++
		if n%5 == 4 {
			return catKillEntry{pid: fmt.Sprintf("prod-%05d", n-1), vid: fmt.Sprintf("var-%d", n)}
		}
		return catKillEntry{pid: fmt.Sprintf("prod-%05d", n)}
	}
	reqs := make([][]catKillEntry, catKillRequests)
	for r := range reqs {
		fresh := catKillItems
		if r > 0 {
			fresh -= catKillUpdates
		}
		var list []catKillEntry
		for range fresh {
			list = append(list, newEntry())
		}
		if r > 0 {
			for _, i := range rng.Perm(len(known))[:catKillUpdates] {
				list = append(list, known[i])
			}
		}
		rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		for i := range list {
			list[i].title = fmt.Sprintf("r%02d %s", r, list[i].key())
		}
		// known grows with this request's new items (after its updates were chosen).
		for _, e := range list {
			if !seen[e.key()] {
				known = append(known, e)
				seen[e.key()] = true
			}
		}
		reqs[r] = list
	}
	return reqs
}

// catKillJobStates reads the jobs' records from the store of a stopped server: how many had
// finished, were cut between two steps, or had not started.
func catKillJobStates(t *testing.T, st *storage.Store, tn storage.Tenant, catalog int64, jobs []int64) (finished, mid, waiting int, desc string) {
	t.Helper()
	var b strings.Builder
	for _, id := range jobs {
		j, err := st.SyncJob(tn, catalog, id)
		require.NoError(t, err, "job %d", id)
		switch {
		case j.Finished():
			finished++
		case j.Processed > 0:
			mid++
		default:
			waiting++
		}
		fmt.Fprintf(&b, " %d:%s(%d/%d)", id, j.Status, j.Processed, j.Total)
	}
	return finished, mid, waiting, b.String()
}

// catKillWAL is the size of the Pebble WAL files of the data dir.
func catKillWAL(t *testing.T, dir string) int64 {
	logs, err := filepath.Glob(filepath.Join(dir, "state", "*.log"))
	require.NoError(t, err)
	var n int64
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func openKillStore(t *testing.T, dir string) *storage.Store {
	t.Helper()
	st, err := storage.Open(dir, storage.Options{CacheBytes: 8 << 20})
	require.NoError(t, err)
	return st
}

// catKillListItems lists every item of a catalog through the API (pages of 200).
func catKillListItems(t *testing.T, base, key string, catalog int64) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for page := 0; ; page++ {
		u := fmt.Sprintf("%s/api/v1/catalogs/%d/items?limit=200", base, catalog)
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		r := call(t, "GET", u, key, nil)
		require.Equal(t, 200, r.status, "%s", r.raw)
		list, _ := r.json["data"].([]any)
		require.LessOrEqual(t, len(list), 200)
		for _, x := range list {
			out = append(out, x.(map[string]any))
		}
		meta := r.json["meta"].(map[string]any)
		next, _ := meta["next_cursor"].(string)
		if next == "" {
			require.Equal(t, false, meta["has_more"])
			return out
		}
		require.Len(t, list, 200, "a page before the last is full")
		cursor = next
		require.Less(t, page, 1000, "the cursor walk ends")
	}
}

func catKillJob(t *testing.T, base, key string, catalog, job int64) map[string]any {
	t.Helper()
	r := call(t, "GET", fmt.Sprintf("%s/api/v1/catalogs/%d/sync-jobs/%d", base, catalog, job), key, nil)
	require.Equal(t, 200, r.status, "%s", r.raw)
	return r.data()["sync_job"].(map[string]any)
}

func catKillFinished(j map[string]any) bool {
	return j["status"] != "queued" && j["status"] != "running"
}

// catKillJobFinished is a condition for testutil.Eventually: the catalog's sync job finished.
func catKillJobFinished(t *testing.T, base, key string, catalog, job int64) func() error {
	return func() error {
		if j := catKillJob(t, base, key, catalog, job); !catKillFinished(j) {
			return fmt.Errorf("catalog %d's sync job %d has not finished: %v", catalog, job, j)
		}
		return nil
	}
}

func TestCatalogSyncKill(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	plan := catKillPlan(rng)

	dir := t.TempDir()
	args := []string{"--data", dir, "--addr", "127.0.0.1:0", "--admin-token", "adm_catalog_kill",
		"--rate-limit-endpoint", "0", "--rate-limit-workspace", "0"} // the test polls
	var children []*childServer
	start := func() *childServer {
		t.Helper()
		c := startChild(t, args...)
		children = append(children, c)
		return c
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, c := range children {
			out := c.stderr.String()
			if len(out) > 4000 {
				out = "..." + out[len(out)-4000:]
			}
			t.Logf("life %d stderr:\n%s", i+1, out)
		}
	})

	// Life 1.
	child := start()
	var key string // printed after the address startChild waited for
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, keyWritten(&key, child.stdout))
	me := call(t, "GET", child.base+"/api/v1/me", key, nil)
	require.Equal(t, 200, me.status, "%s", me.raw)
	tn := storage.Tenant{Workspace: int64(me.data()["workspace"].(map[string]any)["id"].(float64)), Mode: storage.ModeLive}
	if me.data()["mode"] == "test" {
		tn.Mode = storage.ModeTest
	}
	cr := call(t, "POST", child.base+"/api/v1/catalogs", key, map[string]any{
		"name": "Kill shop", "source": catKillSource, "external_id": catKillExternal, "source_url": "https://shop.example/"})
	require.Equal(t, 202, cr.status, "%s", cr.raw)
	catalog := int64(cr.data()["catalog"].(map[string]any)["id"].(float64))
	createJob := int64(cr.data()["sync_job"].(map[string]any)["id"].(float64))

	jobs := make([]int64, catKillRequests) // the sync job of each request
	post := func(r int) {
		t.Helper()
		items := make([]any, len(plan[r]))
		for i, e := range plan[r] {
			items[i] = e.body()
		}
		res := call(t, "POST", fmt.Sprintf("%s/api/v1/catalogs/%d/items:bulk-upsert", child.base, catalog), key, map[string]any{"items": items})
		require.Equal(t, 202, res.status, "request %d: %s", r, res.raw)
		require.Equal(t, fmt.Sprint(catKillItems), res.data()["summary"].(map[string]any)["total_items"])
		j := res.data()["sync_job"].(map[string]any)
		require.Equal(t, "bulk_upsert", j["type"])
		jobs[r] = int64(j["id"].(float64))
	}
	// afterKill reports the jobs' states in the store of the killed server.
	afterKill := func(life int, upTo int) (mid, unfinished int) {
		t.Helper()
		st := openKillStore(t, dir)
		defer func() { require.NoError(t, st.Close()) }()
		finished, mid, waiting, desc := catKillJobStates(t, st, tn, catalog, jobs[:upTo])
		queue, err := st.SyncQueue()
		require.NoError(t, err)
		require.Len(t, queue, mid+waiting, "one queue entry per unfinished job")
		t.Logf("life %d killed: %d jobs finished, %d cut between steps, %d not started:%s", life, finished, mid, waiting, desc)
		return mid, mid + waiting
	}

	half := catKillRequests / 2
	t0 := time.Now()
	for r := 0; r < half; r++ {
		post(r)
	}
	child.kill(t) // right after the last 202: at least that job is unfinished
	t.Logf("life 1: %d requests posted in %s", half, time.Since(t0))
	mid1, unfinished := afterKill(1, half)
	require.Positive(t, unfinished, "the kill came while jobs were queued or running")

	// Life 2: the rest, killed while a job runs.
	child = start()
	t0 = time.Now()
	for r := half; r < catKillRequests; r++ {
		post(r)
	}
	t.Logf("life 2: %d requests posted in %s", catKillRequests-half, time.Since(t0))
	sawRunning := false
	testutil.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		for _, id := range jobs {
			j := catKillJob(t, child.base, key, catalog, id)
			if j["status"] == "running" {
				sawRunning = true
				return nil
			}
			if j["status"] == "queued" { // its predecessor finished; poll again until this one runs
				return fmt.Errorf("no sync job runs: job %d is queued behind finished ones", id)
			}
		}
		return nil // everything finished before a job was seen running
	})
	child.kill(t)
	mid2, unfinished := afterKill(2, catKillRequests)
	t.Logf("life 2: saw a job running before the kill: %v; %d unfinished at the kill", sawRunning, unfinished)
	if mid1+mid2 == 0 {
		t.Logf("note: neither kill cut a job between two of its steps this time (only queued jobs were resumed)")
	}

	// Life 3: every job finishes, each exactly once.
	child = start()
	require.NotContains(t, child.stdout.String(), "First start", "not a first start")
	testutil.Eventually(t, 120*time.Second, 50*time.Millisecond, func() error {
		for _, id := range append([]int64{createJob}, jobs...) {
			if err := catKillJobFinished(t, child.base, key, catalog, id)(); err != nil {
				return fmt.Errorf("not every sync job finished after the restarts: %w", err)
			}
		}
		return nil
	})

	// What each key should hold: the title of the last job (in job order) that wrote it.
	type want struct {
		entry catKillEntry
		job   int64
	}
	expected := map[string]want{}
	for r, list := range plan {
		for _, e := range list {
			if w, ok := expected[e.key()]; !ok || jobs[r] > w.job {
				expected[e.key()] = want{e, jobs[r]}
			}
		}
	}
	require.Len(t, expected, catKillItems+(catKillRequests-1)*(catKillItems-catKillUpdates))

	for r, id := range jobs {
		j := catKillJob(t, child.base, key, catalog, id)
		p := j["progress"].(map[string]any)
		require.Equal(t, "completed", j["status"], "request %d: %v", r, j)
		require.EqualValues(t, catKillItems, p["total"], "request %d", r)
		require.EqualValues(t, catKillItems, p["processed"], "request %d: every item processed once", r)
		require.EqualValues(t, catKillItems, p["accepted"], "request %d: every item applied once", r)
		require.EqualValues(t, 0, p["failed"], "request %d", r)
		require.Empty(t, j["errors"], "request %d", r)
		require.NotNil(t, j["started_at"], "request %d", r)
		require.NotNil(t, j["finished_at"], "request %d", r)
	}
	g := call(t, "GET", fmt.Sprintf("%s/api/v1/catalogs/%d", child.base, catalog), key, nil)
	require.Equal(t, 200, g.status, "%s", g.raw)
	c := g.data()["catalog"].(map[string]any)
	require.EqualValues(t, len(expected), c["items_count"])
	require.Equal(t, "completed", c["last_sync_status"])

	items := catKillListItems(t, child.base, key, catalog)
	require.Len(t, items, len(expected), "every item listed once")
	idOf := map[string]int64{}
	ids := map[int64]bool{}
	for i, it := range items {
		k := it["external_item_key"].(string)
		id := int64(it["id"].(float64))
		_, dup := idOf[k]
		require.False(t, dup, "item %s listed twice", k)
		require.False(t, ids[id], "item id %d listed twice", id)
		if i > 0 {
			require.Less(t, id, int64(items[i-1]["id"].(float64)), "newest first")
		}
		idOf[k], ids[id] = id, true
		w, ok := expected[k]
		require.True(t, ok, "item %s was never sent", k)
		require.Equal(t, w.entry.title, it["title"], "item %s holds the last title written", k)
		require.Equal(t, w.entry.pid, it["external_product_id"], "item %s", k)
		if w.entry.vid == "" {
			require.Nil(t, it["external_variant_id"], "item %s", k)
		} else {
			require.Equal(t, w.entry.vid, it["external_variant_id"], "item %s", k)
		}
		require.Equal(t, catKillSource, it["source"])
		require.EqualValues(t, catalog, it["catalog_id"])
	}
	child.stop(t)

	// The store agrees: one item record and one match entry per key, no job left queued and no
	// job input kept.
	func() {
		st := openKillStore(t, dir)
		defer func() { require.NoError(t, st.Close()) }()
		stored, err := st.CatalogItemIDs(tn, catalog, 10*len(expected))
		require.NoError(t, err)
		require.Len(t, stored, len(expected))
		for _, id := range stored {
			require.True(t, ids[id], "stored item %d is listed", id)
		}
		for k, w := range expected {
			var vid *string
			if w.entry.vid != "" {
				vid = &w.entry.vid
			}
			id, err := st.CatalogItemID(tn, catalog, storage.ItemKey(w.entry.pid, vid))
			require.NoError(t, err, "match entry of %s", k)
			require.Equal(t, idOf[k], id, "match entry of %s", k)
		}
		queue, err := st.SyncQueue()
		require.NoError(t, err)
		require.Empty(t, queue)
		for _, id := range append([]int64{createJob}, jobs...) {
			_, err := st.SyncInput(tn, id)
			require.ErrorIs(t, err, errs.ErrNotFound, "job %d's input is removed when it ends", id)
			j, err := st.SyncJob(tn, catalog, id)
			require.NoError(t, err)
			if j.InputFile != "" {
				_, err = st.ReadSyncInput(j.InputFile)
				require.ErrorIs(t, err, errs.ErrNotFound, "job %d's input file is removed when it ends", id)
			}
		}
		files, err := st.SyncInputFiles()
		require.NoError(t, err)
		require.Empty(t, files, "no input file is left behind")
	}()

	// Life 4: delete the catalog; the kill comes while its items are being purged.
	child = start()
	d := call(t, "DELETE", fmt.Sprintf("%s/api/v1/catalogs/%d", child.base, catalog), key, nil)
	require.Equal(t, 200, d.status, "%s", d.raw)
	// The purge is internal; its steps show as Pebble WAL writes (each deletes thousands of keys,
	// some 60 KB). Kill once the WAL grew by about one step, or after a while regardless.
	wal0 := catKillWAL(t, dir)
	if err := testutil.Poll(5*time.Second, 2*time.Millisecond, func() error {
		if grown := catKillWAL(t, dir) - wal0; grown < 40_000 {
			return fmt.Errorf("the WAL grew by %d bytes since the delete", grown)
		}
		return nil
	}); err != nil {
		t.Logf("killing the purge regardless: %v", err)
	}
	child.kill(t)
	require.Equal(t, "archived", d.data()["catalog"].(map[string]any)["status"])
	func() {
		st := openKillStore(t, dir)
		defer func() { require.NoError(t, st.Close()) }()
		left, err := st.CatalogItemIDs(tn, catalog, 10*len(expected))
		require.NoError(t, err)
		queue, err := st.SyncQueue()
		require.NoError(t, err)
		cat, err := st.Catalog(tn, catalog)
		require.NoError(t, err)
		require.Equal(t, storage.CatalogArchived, cat.Status, "the archive was committed before the 200")
		t.Logf("life 4 killed: %d of %d items not purged yet, %d jobs queued", len(left), len(expected), len(queue))
		if len(left) == 0 {
			t.Logf("note: the purge finished before the kill this time")
		} else {
			require.Len(t, queue, 1, "the purge job is queued")
			require.Equal(t, catalog, queue[0].Catalog)
		}
	}()

	// Life 5: the catalog stays gone; the purge resumes.
	child = start()
	base := fmt.Sprintf("%s/api/v1/catalogs/%d", child.base, catalog)
	for _, u := range []string{base, base + "/items", fmt.Sprintf("%s/sync-jobs/%d", base, jobs[0])} {
		r := call(t, "GET", u, key, nil)
		require.Equal(t, 404, r.status, "GET %s: %s", u, r.raw)
	}
	r := call(t, "DELETE", base, key, nil)
	require.Equal(t, 404, r.status, "%s", r.raw)
	r = call(t, "POST", base+"/items:bulk-upsert", key, map[string]any{"items": []any{plan[0][0].body()}})
	require.Equal(t, 404, r.status, "%s", r.raw)
	l := call(t, "GET", child.base+"/api/v1/catalogs?limit=200", key, nil)
	require.Equal(t, 200, l.status)
	require.Empty(t, l.json["data"], "no catalog listed")
	// The same source and external id now make a new catalog, empty.
	re := call(t, "POST", child.base+"/api/v1/catalogs", key, map[string]any{
		"name": "Kill shop again", "source": catKillSource, "external_id": catKillExternal})
	require.Equal(t, 202, re.status, "%s", re.raw)
	nc := re.data()["catalog"].(map[string]any)
	newID := int64(nc["id"].(float64))
	require.NotEqual(t, catalog, newID, "a new catalog, not the deleted one")
	require.EqualValues(t, 0, nc["items_count"])
	require.Equal(t, "create", re.data()["sync_job"].(map[string]any)["type"])
	newJob := int64(re.data()["sync_job"].(map[string]any)["id"].(float64))
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, catKillJobFinished(t, child.base, key, newID, newJob))
	require.Empty(t, catKillListItems(t, child.base, key, newID))
	g = call(t, "GET", fmt.Sprintf("%s/api/v1/catalogs/%d", child.base, newID), key, nil)
	require.EqualValues(t, 0, g.data()["catalog"].(map[string]any)["items_count"])

	// The purge is internal (no API shows it), and the store can only be read with the server
	// stopped: stop it, look, and give the purge another life while it is unfinished.
	for attempt := 1; ; attempt++ {
		child.stop(t)
		st := openKillStore(t, dir)
		left, err := st.CatalogItemIDs(tn, catalog, 10*len(expected))
		require.NoError(t, err)
		queue, err := st.SyncQueue()
		require.NoError(t, err)
		if len(left) == 0 && len(queue) == 0 {
			// Nothing of the deleted catalog's items is left: no record, no match entry.
			for k, w := range expected {
				var vid *string
				if w.entry.vid != "" {
					vid = &w.entry.vid
				}
				_, err := st.CatalogItemID(tn, catalog, storage.ItemKey(w.entry.pid, vid))
				require.True(t, errors.Is(err, errs.ErrNotFound), "match entry of %s left: %v", k, err)
			}
			for _, id := range idOf {
				_, err := st.CatalogItem(tn, catalog, id)
				require.ErrorIs(t, err, errs.ErrNotFound)
			}
			cat, err := st.Catalog(tn, catalog)
			require.NoError(t, err)
			require.Equal(t, storage.CatalogArchived, cat.Status)
			ext, err := st.CatalogByExternal(tn, catKillSource, catKillExternal)
			require.NoError(t, err)
			require.Equal(t, newID, ext, "source + external id name the new catalog")
			state, err := st.CatalogState(tn, catalog)
			require.NoError(t, err)
			require.Zero(t, state.Items)
			require.NoError(t, st.Close())
			t.Logf("the purge finished in life %d", 4+attempt)
			break
		}
		require.NoError(t, st.Close())
		require.Less(t, attempt, 10, "the purge does not finish: %d items left, %d jobs queued", len(left), len(queue))
		t.Logf("purge unfinished at the stop of life %d: %d items left", 4+attempt, len(left))
		child = start()
		time.Sleep(time.Duration(attempt) * 500 * time.Millisecond) // sleep: the purge gets a while in this life; nothing to poll: it is internal and the store is read only with the server stopped
	}
	names := make([]string, 0, len(idOf))
	for k := range idOf {
		names = append(names, k)
	}
	sort.Strings(names)
	t.Logf("%d requests, %d distinct items (%s .. %s), %d lives", catKillRequests, len(expected), names[0], names[len(names)-1], len(children))
}
