package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/actors"
	"flipbook/storage"
)

// CatalogOptions configure the catalog scenario. Zero values mean the defaults.
type CatalogOptions struct {
	// Items are upserted per pass (default 100,000), PerRequest to a request (default 500, the
	// most POST items:bulk-upsert takes), InFlight requests at a time (default 8).
	Items, PerRequest, InFlight int
	// SkipUpdates leaves out the second pass (the same items again: every one an update).
	SkipUpdates bool
	// Books are seeded into the workspace and changed by bulk settings batches of PerBatch
	// books (defaults 10,000 and 1,000, the most a batch takes); all batches are posted at once.
	Books, PerBatch int
	// Timeout bounds the wait for a part's jobs or batches (default max(2 minutes, 1 s per
	// 1,000 items or books)).
	Timeout time.Duration
	// RSSEvery is how often the service's resident memory is sampled (default 100 ms); Settle
	// how long the service idles after a part before its "after" sample (default 3 s).
	RSSEvery, Settle time.Duration
	// ChildArgs are extra `flipbook serve` flags; ChildProfile writes a CPU profile of the
	// service (the whole run) to this file.
	ChildArgs    []string
	ChildProfile string
	// Log receives the service's log (default: discarded).
	Log io.Writer
}

// Targets of the catalog scenario (issue: catalog and bulk settings throughput).
const (
	TargetCatalogItemsPerSec = 20_000 // items/s from the first bulk-upsert request to the last job finished
	TargetBulkBooksPerSec    = 5_000  // books/s from the first batch posted to the last batch finished
	TargetCatalogRSSGrowth   = 1.2    // RSS peak of a part's last third within this factor of its first third's
)

// rawBookWriters is the concurrency of the raw book baseline: the service runs 4 batches at
// once (actors' bulkRunning), each with BulkInFlight items in flight.
const rawBookWriters = 4 * actors.BulkInFlight

func (o *CatalogOptions) defaults() {
	if o.Items <= 0 {
		o.Items = 100_000
	}
	if o.PerRequest <= 0 {
		o.PerRequest = 500
	}
	if o.InFlight <= 0 {
		o.InFlight = 8
	}
	if o.Books <= 0 {
		o.Books = 10_000
	}
	if o.PerBatch <= 0 {
		o.PerBatch = 1000
	}
	if o.Timeout <= 0 {
		o.Timeout = max(2*time.Minute, time.Duration(max(o.Items, o.Books)/1000)*time.Second)
	}
	if o.RSSEvery <= 0 {
		o.RSSEvery = 100 * time.Millisecond
	}
	if o.Settle <= 0 {
		o.Settle = 3 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Catalog measures two bulk write paths of the service, each against a `flipbook serve` child
// process (so its memory and CPU are its own) and beside a raw baseline measured in the same
// run: the same records written straight into a Pebble store of this process through the
// storage package, in synced commits of the service's unit of work, before and after the
// service's part (the faster round is the baseline, as in the ingest scenario).
//
//   - Items: a custom catalog is created, then Items products (about 600 bytes of JSON each)
//     are posted to POST /catalogs/{catalog}/items:bulk-upsert, PerRequest a request with
//     InFlight requests at a time, and each request's sync job is polled until it finished:
//     items/s is Items over the time from the first request to the last job seen finished.
//     A second pass upserts the same items again (every one an update). Every job must have
//     completed with accepted == total, and the catalog must count Items items. Raw: the same
//     item records in synced commits of actors.SyncChunk items, one after the other (a
//     catalog's worker applies its jobs in such steps).
//   - Books: the workspace holds Books books (written straight to the store before the service
//     starts, as the rest scenario seeds them); their settings_revision is read through GET
//     /books, then Books/PerBatch batches are posted to POST /books/bulk-settings/batches at
//     once and polled until finished: books/s is Books over the time from the first post to
//     the last batch seen finished. Every batch must have completed with every item
//     succeeded, and every book's settings_revision must have moved. Raw: each book read,
//     changed and written back in a synced commit of its own (as a book actor applies an
//     item), from rawBookWriters goroutines (the items the service has in flight).
//
// The service's RSS is sampled every RSSEvery: flat when the peak of each timed part after the
// create pass (which warms the service up) has a last third whose peak is at most
// TargetCatalogRSSGrowth times its first third's (the webhooks scenario's rule); every part's
// before, thirds, peak and after-settle figures are printed, with where the memory is.
func Catalog(ctx context.Context, o CatalogOptions, out io.Writer) (*Report, error) {
	o.defaults()
	dir, err := os.MkdirTemp("", "flipbook-bench-catalog-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")

	// The workspace and its books, written by an in-process service that is then shut down.
	t0 := time.Now()
	svc, _, err := startService(data, nil)
	if err != nil {
		return nil, err
	}
	key, _, ids, err := seedWorkspace(svc, "bench catalog", o.Books)
	if err == nil {
		err = svc.Store.Settle()
	}
	if serr := svc.Shutdown(context.Background()); err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: seeding: %w", err)
	}
	fmt.Fprintf(out, "  seeded a workspace with %s books in %s\n", thousands(float64(len(ids))), time.Since(t0).Round(time.Millisecond))

	token := "adm_bench_" + actors.RandomString(24)
	args := append([]string{"--admin-token", token}, o.ChildArgs...)
	if o.ChildProfile != "" {
		args = append(args, "--cpuprofile", o.ChildProfile)
	}
	c, err := startChildOn(ctx, data, false, o.Log, args...)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			c.stop()
		}
	}()
	pid := c.cmd.Process.Pid
	api := &apiClient{base: c.base + "/api/v1", token: key}
	adm := &adminClient{base: c.base + "/admin/v1", token: token}
	mon := newRSSMonitor(pid, o.RSSEvery)
	defer mon.stop()

	// Items.
	passes := []*catPass{}
	entries := make([]catEntry, o.Items)
	for i := range entries {
		entries[i] = newCatEntry(i, 0)
	}
	bodies, perItem := catBodies(entries, o.PerRequest)
	fmt.Fprintf(out, "  items: %s per pass in %d requests of %d (%s bytes of JSON per item), %d requests in flight\n",
		thousands(float64(o.Items)), len(bodies), o.PerRequest, thousands(perItem), o.InFlight)
	raw1, err := rawCatalogItems(filepath.Join(dir, "raw-items-1"), entries, actors.SyncChunk)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "  raw: item records in synced commits of %d, before   %s items/s\n", actors.SyncChunk, thousands(rate(o.Items, raw1)))

	catID, err := catCreate(ctx, api, "bench catalog")
	if err != nil {
		return nil, err
	}
	time.Sleep(300 * time.Millisecond) // the service settles after setup
	rep := &Report{Scenario: "catalog"}
	p1, err := catRunPass(ctx, c, api, adm, mon, catID, "create", bodies, o, out)
	if err != nil {
		return nil, err
	}
	passes = append(passes, p1)
	if !o.SkipUpdates {
		// Two update passes: the first reads every item for the first time (Pebble's block cache
		// fills, up to its configured size), the second is the steady state memory is judged on.
		for gen, name := range []string{"update", "second update"} {
			for i := range entries {
				entries[i] = newCatEntry(i, gen+1)
			}
			bodies, _ = catBodies(entries, o.PerRequest)
			p2, err := catRunPass(ctx, c, api, adm, mon, catID, name, bodies, o, out)
			if err != nil {
				return nil, err
			}
			passes = append(passes, p2)
		}
	}
	bodies = nil
	raw2, err := rawCatalogItems(filepath.Join(dir, "raw-items-2"), entries, actors.SyncChunk)
	if err != nil {
		return nil, err
	}
	rawItems := rate(o.Items, min(raw1, raw2))
	fmt.Fprintf(out, "  raw: item records in synced commits of %d, after    %s items/s\n", actors.SyncChunk, thousands(rate(o.Items, raw2)))
	for _, p := range passes {
		p.print(out, rawItems, "item")
		rep.Failed = append(rep.Failed, p.failures...)
	}
	// The target is the scenario: 100,000 items bulk-upserted into a catalog (the
	// create pass). The update pass (the same items again) is reported beside it.
	items := passes[0]

	// Books.
	rawb1, err := rawBookSettings(filepath.Join(dir, "raw-books-1"), o.Books, rawBookWriters)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "  raw: book records read, changed and written back, a synced commit each, %d writers, before   %s books/s\n",
		rawBookWriters, thousands(rate(o.Books, rawb1)))
	bk, err := catRunBooks(ctx, api, adm, mon, ids, o, out)
	if err != nil {
		return nil, err
	}
	var rawBooks float64
	if bk != nil {
		rawb2, err := rawBookSettings(filepath.Join(dir, "raw-books-2"), o.Books, rawBookWriters)
		if err != nil {
			return nil, err
		}
		rawBooks = rate(o.Books, min(rawb1, rawb2))
		fmt.Fprintf(out, "  raw: book records read, changed and written back, a synced commit each, %d writers, after    %s books/s\n",
			rawBookWriters, thousands(rate(o.Books, rawb2)))
		bk.print(out, rawBooks, "book")
		rep.Failed = append(rep.Failed, bk.failures...)
	}
	mon.stop()
	fmt.Fprintf(out, "  service RSS over the run: start %d MB, max %d MB, end %d MB\n", mon.first()>>20, mon.max()>>20, treeRSS(pid)>>20)
	c.stop()
	stopped = true

	rep.checkValue(out, fmt.Sprintf("items/s, bulk upsert to every sync job finished (%s)", items.name),
		items.rate(), ">=", TargetCatalogItemsPerSec, "")
	for _, p := range passes[1:] {
		fmt.Fprintf(out, "  items/s of the %s (not judged): %.0f, %.2fx of the %s\n", p.name, p.rate(),
			p.rate()/items.rate(), items.name)
	}
	fmt.Fprintf(out, "  items/s / raw synced item writes (the faster raw round): %.2fx\n", items.rate()/rawItems)
	if bk != nil {
		rep.checkValue(out, "books/s, bulk settings batches posted to every batch finished", bk.rate(), ">=", TargetBulkBooksPerSec, "")
		fmt.Fprintf(out, "  books/s / raw synced book rewrites (the faster raw round): %.2fx\n", bk.rate()/rawBooks)
	} else {
		rep.Failed = append(rep.Failed, "catalog: bulk settings not measured (the API is not in this build)")
	}
	// The create pass and the first update warm a fresh service up (Pebble's memtables, then its
	// block cache fill, as the ingest scenario's warm-up does), so memory is judged on the parts
	// after them: the second update and the bulk settings (with SkipUpdates, on the create pass).
	judged := []*catPass{passes[len(passes)-1]}
	if bk != nil {
		judged = append(judged, bk)
	}
	worst, worstName := 0.0, ""
	for _, p := range judged {
		if g, ok := p.rssGrowth(); ok && g > worst {
			worst, worstName = g, p.name
		}
	}
	if worstName != "" {
		rep.checkValue(out, "RSS peak of a part's last third / first third ("+worstName+", the highest)", worst, "<=", TargetCatalogRSSGrowth, "x")
	} else {
		fmt.Fprintln(out, "  (parts too short for three RSS samples: memory not judged)")
	}
	return rep, nil
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// catEntry is one product of a bulk upsert (spec §4.8's product fields).
type catEntry struct {
	ExternalProductID string   `json:"external_product_id"`
	ExternalVariantID *string  `json:"external_variant_id,omitempty"`
	SKU               string   `json:"sku"`
	Title             string   `json:"title"`
	Price             string   `json:"price"`
	RegularPrice      string   `json:"regular_price"`
	SalePrice         *string  `json:"sale_price"`
	Currency          string   `json:"currency"`
	Image             string   `json:"image"`
	URL               string   `json:"url"`
	Description       string   `json:"description"`
	ShortDescription  string   `json:"short_description"`
	StockStatus       string   `json:"stock_status"`
	Categories        []string `json:"categories"`
	StockQuantity     int64    `json:"stock_quantity"`
	Available         bool     `json:"available"`
}

var (
	catAdjectives = []string{"Classic", "Organic", "Merino", "Vintage", "Compact", "Premium", "Everyday", "Lightweight", "Handmade", "Recycled"}
	catNouns      = []string{"Crew Sweater", "Espresso Grinder", "Trail Backpack", "Linen Shirt", "Desk Lamp", "Chef's Knife", "Yoga Mat", "Ceramic Mug", "Rain Jacket", "Wool Scarf"}
	catColours    = []string{"Forest Green", "Charcoal", "Sand", "Navy", "Terracotta", "Off-White"}
	catSizes      = []string{"XS", "S", "M", "L"}
	catCategories = []string{"Clothing", "Kitchen", "Outdoor", "Home", "Accessories", "Sale", "New In", "Gifts"}
)

// newCatEntry is item i of a pass (pass 1 changes the prices, the stock and the sale). The
// first half of the items are simple products; the second half are 4 variants of a product
// each, so items match on product id alone and on product and variant id.
func newCatEntry(i, pass int) catEntry {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	adj, noun := catAdjectives[r.IntN(len(catAdjectives))], catNouns[r.IntN(len(catNouns))]
	colour := catColours[r.IntN(len(catColours))]
	e := catEntry{Currency: "EUR", Available: true, StockStatus: "instock"}
	prod := i
	if i%2 == 1 {
		prod = i / 8 * 8 // 4 odd items share a product
		v := strconv.Itoa(i)
		e.ExternalVariantID = &v
		e.Title = fmt.Sprintf("%s %s, %s, size %s", adj, noun, colour, catSizes[(i/2)%4])
	} else {
		e.Title = fmt.Sprintf("%s %s, %s", adj, noun, colour)
	}
	e.ExternalProductID = "prod-" + strconv.Itoa(prod)
	e.SKU = fmt.Sprintf("SKU-%07d-%02d", prod, i%100)
	cents := 900 + r.IntN(20000)
	if pass > 0 {
		cents += 100
	}
	e.RegularPrice = fmt.Sprintf("%d.%02d", cents/100, cents%100)
	e.Price = e.RegularPrice
	if (i+pass)%3 == 0 {
		sale := cents * 8 / 10
		s := fmt.Sprintf("%d.%02d", sale/100, sale%100)
		e.SalePrice, e.Price = &s, s
	}
	slug := strings.ToLower(strings.NewReplacer(" ", "-", "'", "", ",", "").Replace(adj + " " + noun))
	e.Image = fmt.Sprintf("https://cdn.example-shop.com/images/products/%07d/%s-main.jpg", prod, slug)
	e.URL = fmt.Sprintf("https://www.example-shop.com/products/%s-%d", slug, prod)
	if e.ExternalVariantID != nil {
		e.URL += "?variant=" + *e.ExternalVariantID
	}
	e.ShortDescription = fmt.Sprintf("%s %s in %s.", adj, strings.ToLower(noun), strings.ToLower(colour))
	e.Description = fmt.Sprintf("Our %s %s is made to last: chosen materials and honest workmanship. "+
		"Free returns within 30 days. Colour: %s.",
		strings.ToLower(adj), strings.ToLower(noun), strings.ToLower(colour))
	e.Categories = []string{catCategories[r.IntN(len(catCategories))], catCategories[r.IntN(len(catCategories))]}
	e.StockQuantity = int64(r.IntN(500))
	if pass > 0 {
		e.StockQuantity = (e.StockQuantity + 17) % 500
	}
	if e.StockQuantity == 0 {
		e.StockStatus, e.Available = "outofstock", false
	}
	return e
}

// catBodies are the bulk-upsert request bodies of entries, per items each, and the mean JSON
// size of an item.
func catBodies(entries []catEntry, per int) ([][]byte, float64) {
	var bodies [][]byte
	size := 0
	for from := 0; from < len(entries); from += per {
		b, _ := json.Marshal(map[string]any{"items": entries[from:min(from+per, len(entries))]})
		bodies = append(bodies, b)
		size += len(b) - len(`{"items":[]}`)
	}
	return bodies, float64(size) / float64(max(len(entries), 1))
}

// rawItem is the record the service stores for entry e (as the sync worker builds it).
func rawItem(id, catalog int64, t storage.Tenant, e *catEntry, now time.Time) *storage.CatalogItem {
	s := func(v string) *string { return &v }
	cats, _ := json.Marshal(e.Categories)
	q, avail, ok := e.StockQuantity, e.Available, storage.SyncCompleted
	return &storage.CatalogItem{ID: id, CatalogID: catalog, Workspace: t.Workspace, Source: "custom",
		ExternalItemKey: storage.DisplayItemKey(e.ExternalProductID, e.ExternalVariantID), ExternalProductID: e.ExternalProductID,
		ExternalVariantID: e.ExternalVariantID, SKU: s(e.SKU), Title: s(e.Title), Price: s(e.Price), RegularPrice: s(e.RegularPrice),
		SalePrice: e.SalePrice, Currency: s(e.Currency), Image: s(e.Image), URL: s(e.URL), Description: s(e.Description),
		ShortDescription: s(e.ShortDescription), StockStatus: s(e.StockStatus), Categories: cats, StockQuantity: &q,
		Available: &avail, LastSyncedAt: &now, LastSyncStatus: &ok, CreatedAt: now, UpdatedAt: now}
}

// rawCatalogItems writes entries' item records into a new store under dir in synced commits of
// chunk items, one after the other, and returns the time taken (building the records
// included, opening and closing the store not).
func rawCatalogItems(dir string, entries []catEntry, chunk int) (time.Duration, error) {
	st, err := storage.Open(dir, storage.Options{})
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	t := storage.Tenant{Workspace: 1, Mode: storage.ModeLive}
	start := time.Now()
	for from := 0; from < len(entries); from += chunk {
		b := st.NewBatch()
		now := time.Now().UTC()
		for i := from; i < min(from+chunk, len(entries)); i++ {
			if err := b.PutCatalogItem(t, rawItem(int64(i+1), 1, t, &entries[i], now)); err != nil {
				b.Close()
				st.Close()
				return 0, err
			}
		}
		if err := b.Commit(); err != nil {
			st.Close()
			return 0, err
		}
	}
	d := time.Since(start)
	return d, st.Close()
}

// rawBookSettings seeds n books into a new store under dir, then times reading, changing and
// writing back each of them in a synced commit of its own from writers goroutines.
func rawBookSettings(dir string, n, writers int) (time.Duration, error) {
	st, err := storage.Open(dir, storage.Options{})
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	defer st.Close()
	t := storage.Tenant{Workspace: 1, Mode: storage.ModeLive}
	rids := make([]string, n)
	b := st.NewBatch()
	now := time.Now().UTC()
	desc := "A benchmark flipbook with a description of ordinary length."
	for i := range rids {
		bk := &storage.Book{ID: int64(i + 1), RandomID: actors.NewRandomID(), Workspace: t.Workspace, Mode: t.Mode,
			Name: "Catalogue " + strconv.Itoa(i), Description: &desc, Status: storage.StatusDraft, Source: "konva", PageCount: 12,
			PageImagesStatus: storage.PagesReady, CreatedAt: now, UpdatedAt: now,
			Settings: storage.Settings{FullscreenEnabled: true, SoundEnabled: true, ShareSocialMedia: true, AnimationType: "flip"}}
		rids[i] = bk.RandomID
		if err := b.PutBook(nil, bk); err != nil {
			b.Close()
			return 0, err
		}
		if (i+1)%2000 == 0 {
			if err := b.Commit(); err != nil {
				return 0, err
			}
			b = st.NewBatch()
		}
	}
	if err := b.Commit(); err != nil {
		return 0, err
	}
	if err := st.Settle(); err != nil {
		return 0, err
	}
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				old, err := st.GetBook(t, rids[i])
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				nb := *old
				nb.Memo = nil
				nb.Settings.FullscreenEnabled, nb.Settings.AnimationType = false, "slide"
				nb.Settings.SoundEnabled, nb.Settings.ShareSocialMedia = false, false
				nb.UpdatedAt = time.Now().UTC()
				bt := st.NewBatch()
				if err := bt.PutBook(old, &nb); err != nil {
					bt.Close()
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if err := bt.Commit(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	return d, nil
}

// catCreate creates a custom catalog and waits for its (empty) initial sync job.
func catCreate(ctx context.Context, api *apiClient, name string) (int64, error) {
	var r struct {
		Data struct {
			Catalog struct {
				ID int64 `json:"id"`
			} `json:"catalog"`
			SyncJob catJob `json:"sync_job"`
		} `json:"data"`
	}
	if err := api.do(ctx, "POST", "/catalogs", map[string]any{"name": name, "source": "custom"}, 202, &r); err != nil {
		return 0, err
	}
	id := r.Data.Catalog.ID
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := catGetJob(ctx, api, id, r.Data.SyncJob.ID)
		if err != nil {
			return 0, err
		}
		if j.finished() {
			return id, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("catalog %d: its initial sync job is still %s", id, j.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type catJob struct {
	ID       int64  `json:"id"`
	Status   string `json:"status"`
	Progress struct {
		Total     int `json:"total"`
		Processed int `json:"processed"`
		Accepted  int `json:"accepted"`
		Failed    int `json:"failed"`
	} `json:"progress"`
}

func (j *catJob) finished() bool {
	return j.Status != storage.SyncQueued && j.Status != storage.SyncRunning
}

func catGetJob(ctx context.Context, api *apiClient, catalog, job int64) (*catJob, error) {
	var r struct {
		Data struct {
			SyncJob catJob `json:"sync_job"`
		} `json:"data"`
	}
	err := api.do(ctx, "GET", fmt.Sprintf("/catalogs/%d/sync-jobs/%d", catalog, job), nil, 200, &r)
	return &r.Data.SyncJob, err
}

// catPass is what one timed part measured (a pass of bulk upserts, or the bulk settings).
type catPass struct {
	name       string
	unit       string // "items", "books"
	n          int
	start, end time.Time // first request sent, last job or batch seen finished
	postEnd    time.Time // every request answered
	lat        []time.Duration
	cpu        time.Duration // the service's CPU time from start to end
	rssBefore  int64
	rssAfter   int64  // after the settle
	memAfter   string // where the memory is after the settle (GET /admin/v1/memory)
	rss        []whRSS
	detail     []string
	failures   []string
}

func (p *catPass) rate() float64 {
	if !p.end.After(p.start) {
		return 0
	}
	return float64(p.n) / p.end.Sub(p.start).Seconds()
}

// rssThirds are the RSS peaks of the part's thirds; ok is false when a third has no sample.
func (p *catPass) rssThirds() (peaks [3]int64, ok bool) {
	w := p.end.Sub(p.start)
	if w <= 0 {
		return peaks, false
	}
	var seen [3]bool
	for _, s := range p.rss {
		d := s.at.Sub(p.start)
		if d < 0 || d > w {
			continue
		}
		i := min(int(3*d/w), 2)
		peaks[i] = max(peaks[i], s.rss)
		seen[i] = true
	}
	return peaks, seen[0] && seen[1] && seen[2]
}

func (p *catPass) rssGrowth() (float64, bool) {
	t, ok := p.rssThirds()
	if !ok {
		return 0, false
	}
	return float64(t[2]) / float64(t[0]), true
}

func (p *catPass) print(out io.Writer, raw float64, unit string) {
	w := p.end.Sub(p.start)
	fmt.Fprintf(out, "  %s: %s %s in %.2f s: %s %s/s (%.2fx raw); requests answered after %.2f s (p50 %s, p99 %s)\n",
		p.name, thousands(float64(p.n)), p.unit, w.Seconds(), thousands(p.rate()), p.unit, p.rate()/raw,
		p.postEnd.Sub(p.start).Seconds(), ms(pct(p.lat, 50)), ms(pct(p.lat, 99)))
	for _, d := range p.detail {
		fmt.Fprintf(out, "    %s\n", d)
	}
	if w > 0 {
		fmt.Fprintf(out, "    service CPU %.2f cores, %.1f µs per %s\n", p.cpu.Seconds()/w.Seconds(),
			float64(p.cpu.Microseconds())/float64(max(p.n, 1)), unit)
	}
	var peak int64
	for _, s := range p.rss {
		peak = max(peak, s.rss)
	}
	thirds := "n/a (too few samples)"
	if t, ok := p.rssThirds(); ok {
		thirds = fmt.Sprintf("%d / %d / %d MB (last / first %.2fx)", t[0]>>20, t[1]>>20, t[2]>>20, float64(t[2])/float64(t[0]))
	}
	fmt.Fprintf(out, "    service RSS: before %d MB; thirds' peaks %s; max %d MB; after the settle %d MB\n",
		p.rssBefore>>20, thirds, peak>>20, p.rssAfter>>20)
	if p.memAfter != "" {
		fmt.Fprintf(out, "    where the memory is after the settle: %s\n", p.memAfter)
	}
}

// rssMonitor samples a process tree's RSS until stopped.
type rssMonitor struct {
	pidv    int
	mu      sync.Mutex
	samples []whRSS
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func newRSSMonitor(pid int, every time.Duration) *rssMonitor {
	m := &rssMonitor{pidv: pid, done: make(chan struct{})}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			r := treeRSS(pid)
			m.mu.Lock()
			m.samples = append(m.samples, whRSS{at: time.Now(), rss: r})
			m.mu.Unlock()
			select {
			case <-m.done:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *rssMonitor) pid() int { return m.pidv }

func (m *rssMonitor) stop() {
	m.once.Do(func() { close(m.done) })
	m.wg.Wait()
}

// window is the samples from a to b.
func (m *rssMonitor) window(a, b time.Time) []whRSS {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []whRSS
	for _, s := range m.samples {
		if !s.at.Before(a) && !s.at.After(b) {
			out = append(out, s)
		}
	}
	return out
}

func (m *rssMonitor) first() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) == 0 {
		return 0
	}
	return m.samples[0].rss
}

func (m *rssMonitor) max() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var peak int64
	for _, s := range m.samples {
		peak = max(peak, s.rss)
	}
	return peak
}

// catRunPass posts the bodies to the catalog's bulk upsert with o.InFlight requests at a time
// and polls the jobs until every one finished; then it checks them and the catalog's count.
func catRunPass(ctx context.Context, c *child, api, adm *apiClient, mon *rssMonitor, catalog int64, name string,
	bodies [][]byte, o CatalogOptions, out io.Writer) (*catPass, error) {
	pid := c.cmd.Process.Pid
	addr := strings.TrimPrefix(c.base, "http://")
	client := &fasthttp.HostClient{Addr: addr, MaxConns: o.InFlight, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	path := fmt.Sprintf("/api/v1/catalogs/%d/items:bulk-upsert", catalog)
	auth := "Bearer " + api.token
	p := &catPass{name: "items, " + name + " pass", unit: "items", n: o.Items, rssBefore: treeRSS(pid)}

	var mu sync.Mutex // guards jobs, p.lat
	jobs := make([]int64, 0, len(bodies))
	var next atomic.Int64
	var firstErr atomic.Value
	var posting sync.WaitGroup
	p.start = time.Now()
	cpu0 := procCPU(pid)
	for w := 0; w < o.InFlight; w++ {
		posting.Add(1)
		go func() {
			defer posting.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for ctx.Err() == nil && firstErr.Load() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				req.Reset()
				req.SetRequestURI(path)
				req.Header.SetHost(addr)
				req.Header.SetMethod("POST")
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", auth)
				req.SetBodyRaw(bodies[i])
				t0 := time.Now()
				err := client.Do(req, resp)
				d := time.Since(t0)
				var r struct {
					Data struct {
						SyncJob catJob `json:"sync_job"`
					} `json:"data"`
				}
				if err == nil && resp.StatusCode() != 202 {
					err = fmt.Errorf("POST %s: status %d: %.300s", path, resp.StatusCode(), resp.Body())
				}
				if err == nil {
					err = json.Unmarshal(resp.Body(), &r)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				mu.Lock()
				jobs = append(jobs, r.Data.SyncJob.ID)
				p.lat = append(p.lat, d)
				mu.Unlock()
			}
		}()
	}
	postDone := make(chan struct{})
	go func() {
		posting.Wait()
		p.postEnd = time.Now()
		close(postDone)
	}()

	// A catalog's worker runs its jobs in creation (id) order: poll the oldest job not seen
	// finished; when it has finished, the next one at once.
	finished := map[int64]bool{}
	var waiting []int64 // not yet seen finished, ascending
	taken := 0
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	posted := false
	for {
		if !posted {
			select {
			case <-postDone:
				posted = true
			default:
			}
		}
		mu.Lock()
		if len(jobs) > taken {
			waiting = append(waiting, jobs[taken:]...)
			taken = len(jobs)
			slices.Sort(waiting)
		}
		mu.Unlock()
		if err, ok := firstErr.Load().(error); ok {
			posting.Wait()
			return nil, fmt.Errorf("catalog %s: %w", name, err)
		}
		if posted && len(waiting) == 0 {
			break
		}
		if len(waiting) > 0 {
			j, err := catGetJob(ctx, api, catalog, waiting[0])
			if err != nil {
				return nil, err
			}
			if j.finished() {
				finished[waiting[0]] = true
				waiting = waiting[1:]
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("catalog %s: %d of %d sync jobs still unfinished after %s", name, len(waiting)+len(bodies)-taken, len(bodies), o.Timeout)
		case <-progress.C:
			fmt.Fprintf(out, "      %4.0fs: %d of %d sync jobs finished, RSS %d MB\n", time.Since(p.start).Seconds(),
				len(finished), len(bodies), treeRSS(pid)>>20)
		case <-time.After(10 * time.Millisecond):
		}
	}
	p.end = time.Now()
	p.cpu = procCPU(pid) - cpu0
	slices.Sort(p.lat)

	// Checks, after the timing: every job, the catalog's count.
	var bad []string
	accepted := 0
	for _, id := range jobs {
		j, err := catGetJob(ctx, api, catalog, id)
		if err != nil {
			return nil, err
		}
		accepted += j.Progress.Accepted
		if j.Status != storage.SyncCompleted || j.Progress.Accepted != j.Progress.Total || j.Progress.Failed != 0 {
			bad = append(bad, fmt.Sprintf("job %d: %s, %d of %d accepted, %d failed", id, j.Status, j.Progress.Accepted, j.Progress.Total, j.Progress.Failed))
		}
	}
	var cat struct {
		Data struct {
			Catalog struct {
				ItemsCount int64 `json:"items_count"`
			} `json:"catalog"`
		} `json:"data"`
	}
	if err := api.do(ctx, "GET", fmt.Sprintf("/catalogs/%d", catalog), nil, 200, &cat); err != nil {
		return nil, err
	}
	p.detail = append(p.detail, fmt.Sprintf("%d sync jobs: %d completed with every item accepted (%s items accepted); the catalog counts %s items",
		len(jobs), len(jobs)-len(bad), thousands(float64(accepted)), thousands(float64(cat.Data.Catalog.ItemsCount))))
	if len(bad) > 0 {
		p.failures = append(p.failures, fmt.Sprintf("catalog %s: %d sync jobs did not complete every item (first: %s)", name, len(bad), bad[0]))
	}
	if cat.Data.Catalog.ItemsCount != int64(o.Items) {
		p.failures = append(p.failures, fmt.Sprintf("catalog %s: the catalog counts %d items, not %d", name, cat.Data.Catalog.ItemsCount, o.Items))
	}
	time.Sleep(o.Settle)
	p.rssAfter = treeRSS(pid)
	if m, err := adm.memory(ctx); err == nil {
		p.memAfter = m.String()
	}
	p.rss = mon.window(p.start, p.end)
	return p, nil
}

// catBook is a book as GET /books lists it (the fields used here).
type catBook struct {
	RandomID         string `json:"random_id"`
	SettingsRevision string `json:"settings_revision"`
}

// catListBooks reads every book of the workspace through GET /books (200 a page).
func catListBooks(ctx context.Context, api *apiClient) ([]catBook, error) {
	var all []catBook
	cursor := ""
	for {
		path := "/books?limit=200"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var r struct {
			Data []catBook `json:"data"`
			Meta struct {
				NextCursor *string `json:"next_cursor"`
				HasMore    bool    `json:"has_more"`
			} `json:"meta"`
		}
		if err := api.do(ctx, "GET", path, nil, 200, &r); err != nil {
			return nil, err
		}
		all = append(all, r.Data...)
		if !r.Meta.HasMore || r.Meta.NextCursor == nil || len(r.Data) == 0 {
			return all, nil
		}
		cursor = *r.Meta.NextCursor
	}
}

type bulkBatch struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	Progress  struct {
		Finished string `json:"finished"`
		Total    int    `json:"total"`
		Counts   struct {
			Pending   int `json:"pending"`
			Succeeded int `json:"succeeded"`
			Failed    int `json:"failed"`
			Cancelled int `json:"cancelled"`
		} `json:"counts"`
	} `json:"progress"`
}

func (b *bulkBatch) finished() bool { return b.Status != "queued" && b.Status != "running" }

// errNoBulk: the service has no bulk settings API (a build without it).
var errNoBulk = errors.New("the bulk settings API is not in this build")

// catRunBooks reads the books' settings revisions, posts the bulk settings batches at once and
// polls them until every one finished; then it checks them and the books. nil without error:
// the service has no bulk settings API.
func catRunBooks(ctx context.Context, api, adm *apiClient, mon *rssMonitor, ids []string, o CatalogOptions, out io.Writer) (*catPass, error) {
	pid := mon.pid()
	t0 := time.Now()
	books, err := catListBooks(ctx, api)
	if err != nil {
		return nil, err
	}
	listTime := time.Since(t0)
	if len(books) != len(ids) {
		return nil, fmt.Errorf("catalog: GET /books listed %d books, not %d", len(books), len(ids))
	}
	before := map[string]string{}
	for _, b := range books {
		before[b.RandomID] = b.SettingsRevision
	}
	if books[0].SettingsRevision == "" {
		fmt.Fprintf(out, "  books: skipped: GET /books has no settings_revision (%v)\n", errNoBulk)
		return nil, nil
	}
	settings := map[string]any{"allow_fullscreen": false, "animation_type": "slide", "flip_sound": false, "share_social_media": false}
	var bodies [][]byte
	for from := 0; from < len(books); from += o.PerBatch {
		list := make([]map[string]string, 0, o.PerBatch)
		for _, b := range books[from:min(from+o.PerBatch, len(books))] {
			list = append(list, map[string]string{"id": b.RandomID, "settings_revision": b.SettingsRevision})
		}
		body, _ := json.Marshal(map[string]any{"books": list, "settings": settings})
		bodies = append(bodies, body)
	}
	fmt.Fprintf(out, "  books: %s books' settings_revision read through GET /books?limit=200 in %s; %d batches of %d posted at once, settings %v\n",
		thousands(float64(len(books))), listTime.Round(time.Millisecond), len(bodies), o.PerBatch, settingsText(settings))

	p := &catPass{name: "books, bulk settings", unit: "books", n: len(books), rssBefore: treeRSS(pid)}
	batches := make([]bulkBatch, len(bodies))
	lat := make([]time.Duration, len(bodies))
	errs := make([]error, len(bodies))
	var wg sync.WaitGroup
	p.start = time.Now()
	cpu0 := procCPU(pid)
	deadline := p.start.Add(o.Timeout)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var r struct {
					Data bulkBatch `json:"data"`
				}
				t := time.Now()
				err := api.doRaw(ctx, "POST", "/books/bulk-settings/batches", bodies[i], 202, &r)
				lat[i] = time.Since(t)
				var se *statusError
				if errors.As(err, &se) && se.status == 409 && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond) // the workspace's unfinished batches are at their limit
					continue
				}
				if errors.As(err, &se) && se.status == 404 {
					err = errNoBulk
				}
				batches[i], errs[i] = r.Data, err
				return
			}
		}()
	}
	wg.Wait()
	p.postEnd = time.Now()
	for _, err := range errs {
		if errors.Is(err, errNoBulk) {
			fmt.Fprintf(out, "  books: skipped: POST /books/bulk-settings/batches answered 404 (%v)\n", errNoBulk)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("catalog: bulk settings: %w", err)
		}
	}
	p.lat = slices.Clone(lat)
	slices.Sort(p.lat)

	// Batches start in creation order (a few at a time): poll the oldest not seen finished
	// every 50 ms (a batch's answer lists its 1,000 items); when it has finished, the next at once.
	order := make([]int, len(batches))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return batches[order[a]].CreatedAt < batches[order[b]].CreatedAt })
	final := make([]bulkBatch, len(batches))
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	for k := 0; k < len(order); {
		i := order[k]
		var r struct {
			Data bulkBatch `json:"data"`
		}
		if err := api.do(ctx, "GET", "/books/bulk-settings/batches/"+batches[i].ID, nil, 200, &r); err != nil {
			return nil, err
		}
		if r.Data.finished() {
			final[i] = r.Data
			k++
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Until(deadline)):
			return nil, fmt.Errorf("catalog: %d of %d bulk settings batches still unfinished after %s", len(order)-k, len(order), o.Timeout)
		case <-progress.C:
			fmt.Fprintf(out, "      %4.0fs: %d of %d batches finished, RSS %d MB\n", time.Since(p.start).Seconds(), k, len(order), treeRSS(pid)>>20)
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.end = time.Now()
	p.cpu = procCPU(pid) - cpu0

	// Checks, after the timing: every batch, every book's revision.
	var bad []string
	succeeded := 0
	for _, b := range final {
		succeeded += b.Progress.Counts.Succeeded
		if b.Status != "completed" || b.Progress.Counts.Succeeded != b.Progress.Total {
			bad = append(bad, fmt.Sprintf("batch %s: %s, %d of %d succeeded, %d failed", b.ID, b.Status,
				b.Progress.Counts.Succeeded, b.Progress.Total, b.Progress.Counts.Failed))
		}
	}
	after, err := catListBooks(ctx, api)
	if err != nil {
		return nil, err
	}
	unchanged := 0
	for _, b := range after {
		if before[b.RandomID] == b.SettingsRevision {
			unchanged++
		}
	}
	p.detail = append(p.detail, fmt.Sprintf("%d batches: %d completed with every book succeeded (%s books succeeded); %d books kept their settings_revision",
		len(final), len(final)-len(bad), thousands(float64(succeeded)), unchanged))
	if len(bad) > 0 {
		p.failures = append(p.failures, fmt.Sprintf("catalog bulk settings: %d batches did not complete every book (first: %s)", len(bad), bad[0]))
	}
	if unchanged > 0 {
		p.failures = append(p.failures, fmt.Sprintf("catalog bulk settings: %d books kept their settings_revision", unchanged))
	}
	time.Sleep(o.Settle)
	p.rssAfter = treeRSS(pid)
	if m, err := adm.memory(ctx); err == nil {
		p.memAfter = m.String()
	}
	p.rss = mon.window(p.start, p.end)
	return p, nil
}

func settingsText(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// statusError is an answer with an unexpected status.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// doRaw is do with an encoded body; an unexpected status is a *statusError.
func (a *apiClient) doRaw(ctx context.Context, method, path string, body []byte, want int, out any) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(a.base + path)
	req.Header.SetMethod(method)
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(body)
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(time.Minute)
	}
	if err := fasthttp.DoDeadline(req, resp, dl); err != nil {
		return err
	}
	if resp.StatusCode() != want {
		return &statusError{status: resp.StatusCode(), msg: fmt.Sprintf("%s %s: status %d: %.300s", method, path, resp.StatusCode(), bytes.TrimSpace(resp.Body()))}
	}
	return json.Unmarshal(resp.Body(), out)
}
