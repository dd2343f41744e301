package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/actors"
	"flipbook/httpapi"
	"flipbook/storage"
)

// RestOptions configure the rest scenario.
type RestOptions struct {
	Books      int // books in the large workspace
	SmallBooks int // books in the small workspace (list baseline)
	Conns      int
	Warmup     time.Duration
	Duration   time.Duration
	// SkipList leaves out the list loads (for profiling the get path).
	SkipList bool
}

// Targets of the rest scenario (issue 15; the foundation issue set 0.5 and 1.5).
const (
	TargetGetVsBare   = 0.7 // GET /books/{book} req/s at least this share of the bare handler's
	TargetListVsSmall = 0.9 // list req/s with Books at least this share of its req/s with SmallBooks
	TargetListP99Grow = 1.5 // list p99 with Books within this factor of the p99 with SmallBooks
)

// Rest measures authenticated GET /books/{book} and GET /books?limit=50 against a workspace of
// opts.Books books, beside a bare fasthttp handler serving a book-sized JSON body in the same
// run, and the list's p99 against a workspace of opts.SmallBooks books.
func Rest(ctx context.Context, opts RestOptions, out io.Writer) (*Report, error) {
	dir, err := os.MkdirTemp("", "flipbook-bench-rest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	svc, cfg, err := startService(dir, nil)
	if err != nil {
		return nil, err
	}
	defer svc.Shutdown(context.Background())

	fmt.Fprintf(out, "rest: seeding %d + %d books...\n", opts.Books, opts.SmallBooks)
	t0 := time.Now()
	bigKey, _, bigIDs, err := seedWorkspace(svc, "bench-large", opts.Books)
	if err != nil {
		return nil, err
	}
	smallKey, _, _, err := seedWorkspace(svc, "bench-small", opts.SmallBooks)
	if err != nil {
		return nil, err
	}
	if err := svc.Store.Settle(); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "rest: seeded and compacted in %s\n", time.Since(t0).Round(time.Millisecond))

	// The baseline: a bare fasthttp handler answering with a stored book's JSON.
	sample := fetch(cfg.Addr, "/api/v1/books/"+bigIDs[0], bigKey)
	bareLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	bare := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(sample)
	}}
	go bare.Serve(bareLn)
	defer bare.Shutdown()

	load := func(addr string, req func(w, n int, r *fasthttp.Request)) Stats {
		return Load{Addr: addr, Conns: opts.Conns, Warmup: opts.Warmup, Duration: opts.Duration,
			Request: req, Check: status200}.Run(ctx)
	}
	// Request parts are built before the loads: the load generator shares the two cores with
	// the service, and what it spends per request is not what is measured.
	bigAuth, smallAuth := "Bearer "+bigKey, "Bearer "+smallKey
	auth := func(r *fasthttp.Request, value string) { r.Header.Set("Authorization", value) }
	bookURIs := bookPaths(bigIDs)

	rep := &Report{Scenario: "rest"}
	bareSt := load(bareLn.Addr().String(), func(w, n int, r *fasthttp.Request) { r.SetRequestURI("/bare") })
	rep.line(out, "bare fasthttp handler      ", bareSt)
	getSt := load(cfg.Addr, func(w, n int, r *fasthttp.Request) {
		r.SetRequestURI(bookURIs[rand.IntN(len(bookURIs))])
		auth(r, bigAuth)
	})
	rep.line(out, fmt.Sprintf("GET /books/{book} (%s)   ", count(opts.Books)), getSt)
	if opts.SkipList {
		return rep, nil
	}
	listBig := load(cfg.Addr, func(w, n int, r *fasthttp.Request) {
		r.SetRequestURI("/api/v1/books?limit=50")
		auth(r, bigAuth)
	})
	rep.line(out, fmt.Sprintf("GET /books?limit=50 (%s) ", count(opts.Books)), listBig)
	listSmall := load(cfg.Addr, func(w, n int, r *fasthttp.Request) {
		r.SetRequestURI("/api/v1/books?limit=50")
		auth(r, smallAuth)
	})
	rep.line(out, fmt.Sprintf("GET /books?limit=50 (%s)   ", count(opts.SmallBooks)), listSmall)

	for _, st := range []Stats{bareSt, getSt, listBig, listSmall} {
		if st.Errors > 0 || st.Requests == 0 {
			return nil, fmt.Errorf("rest: load had %d errors of %d requests: %v", st.Errors, st.Requests+st.Errors, st.FirstErr)
		}
	}
	rep.check(out, "GET /books/{book} req/s vs bare handler", getSt.RPS()/bareSt.RPS(), ">=", TargetGetVsBare)
	rep.check(out, fmt.Sprintf("list req/s %s books vs %s books", count(opts.Books), count(opts.SmallBooks)),
		listBig.RPS()/listSmall.RPS(), ">=", TargetListVsSmall)
	rep.check(out, fmt.Sprintf("list p99 %s books vs %s books", count(opts.Books), count(opts.SmallBooks)),
		float64(listBig.P99)/float64(listSmall.P99), "<=", TargetListP99Grow)
	return rep, nil
}

// seedWorkspace creates a workspace with a key and n books written straight to the store in
// large batches (the API path is what is measured, not the seeding).
func seedWorkspace(svc *httpapi.Service, name string, n int) (key string, ws int64, ids []string, err error) {
	w, err := svc.Actors.CreateWorkspace(name, actors.PlanEnterprise)
	if err != nil {
		return "", 0, nil, err
	}
	k, err := svc.Actors.CreateKey(w.ID, "bench", []string{"*"}, storage.ModeLive)
	if err != nil {
		return "", 0, nil, err
	}
	t := storage.Tenant{Workspace: w.ID, Mode: storage.ModeLive}
	base := time.Now().Add(-time.Duration(n) * time.Second).UTC()
	statuses := []string{storage.StatusDraft, storage.StatusPublish, storage.StatusSchedule}
	batch := svc.Store.NewBatch()
	for i := 0; i < n; i++ {
		id, err := svc.Store.NextID("book")
		if err != nil {
			return "", 0, nil, err
		}
		at := base.Add(time.Duration(i) * time.Second)
		desc := "A benchmark flipbook with a description of ordinary length."
		b := &storage.Book{
			ID: id, RandomID: actors.NewRandomID(), Workspace: t.Workspace, Mode: t.Mode,
			Name: "Catalogue " + strconv.Itoa(i), Description: &desc, Status: statuses[i%3],
			Source: "konva", PageCount: 12, PageImagesStatus: storage.PagesReady,
			Thumbnail: "0123456789abcdef0123456789abcdef.jpg", CreatedAt: at, UpdatedAt: at,
			Settings: storage.Settings{FullscreenEnabled: true, SoundEnabled: true, ShareSocialMedia: true, AnimationType: "flip"},
		}
		if b.Status != storage.StatusDraft {
			b.PublishedDate = &at
		}
		if b.Status == storage.StatusSchedule {
			future := time.Now().Add(365 * 24 * time.Hour)
			b.PublishedDate = &future
		}
		if err := batch.PutBook(nil, b); err != nil {
			batch.Close()
			return "", 0, nil, err
		}
		ids = append(ids, b.RandomID)
		if (i+1)%2000 == 0 {
			if err := batch.Commit(); err != nil {
				return "", 0, nil, err
			}
			batch = svc.Store.NewBatch()
		}
	}
	return k.Secret, w.ID, ids, batch.Commit()
}

// bookPaths are the GET /books/{book} paths of ids.
func bookPaths(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "/api/v1/books/" + id
	}
	return out
}

func fetch(addr, path, key string) []byte {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + path)
	req.Header.Set("Authorization", "Bearer "+key)
	if err := fasthttp.Do(req, resp); err != nil {
		return []byte(`{"error":"` + err.Error() + `"}`)
	}
	return append([]byte(nil), resp.Body()...)
}

// count writes a book count briefly: 100k, 1k, 500.
func count(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
