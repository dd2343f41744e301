package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/oauth2/clientcredentials"

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
	// AuthRounds is how many pairs of rounds (default 10) GET /books/{book} is measured in with
	// the API key and with an OAuth access token, and beside the bare handler: each side gets
	// Duration in all, Duration/AuthRounds a round.
	AuthRounds int
}

// rounds is AuthRounds or its default.
func (o RestOptions) rounds() int {
	if o.AuthRounds <= 0 {
		return 10
	}
	return o.AuthRounds
}

// Targets of the rest scenario (issue 15; the foundation issue set 0.5 and 1.5).
const (
	TargetGetVsBare   = 0.75 // GET /books/{book} req/s at least this share of the bare handler's (issue 27; 0.7 before)
	TargetListVsSmall = 0.9  // list req/s with Books at least this share of its req/s with SmallBooks
	TargetListP99Grow = 1.5  // list p99 with Books within this factor of the p99 with SmallBooks
	TargetTokenVsKey  = 0.95 // GET /books/{book} req/s with an OAuth access token at least this share of the key's
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
	if getSt.Errors > 0 || getSt.Requests == 0 {
		return nil, fmt.Errorf("rest: GET had %d errors of %d requests: %v", getSt.Errors, getSt.Requests+getSt.Errors, getSt.FirstErr)
	}
	// The ratio the target is on: the two loads in alternating rounds (the cold pass above reads
	// books the cache may not hold yet, and the machine changes between two long loads).
	rounds := opts.rounds()
	short := func(addr string, req func(w, n int, r *fasthttp.Request)) func() Stats {
		return func() Stats {
			return Load{Addr: addr, Conns: opts.Conns, Warmup: opts.Warmup / time.Duration(rounds),
				Duration: opts.Duration / time.Duration(rounds), Request: req, Check: status200}.Run(ctx)
		}
	}
	fmt.Fprintf(out, "  GET vs bare handler: %d rounds of each, alternating\n", rounds)
	vsBare, err := alternate(rounds, [2]string{"bare", "GET"}, out,
		short(bareLn.Addr().String(), func(w, n int, r *fasthttp.Request) { r.SetRequestURI("/bare") }),
		short(cfg.Addr, func(w, n int, r *fasthttp.Request) {
			r.SetRequestURI(bookURIs[rand.IntN(len(bookURIs))])
			auth(r, bigAuth)
		}))
	if err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	rep.line(out, fmt.Sprintf("bare fasthttp handler, %d rounds ", rounds), vsBare.a)
	rep.line(out, fmt.Sprintf("GET /books/{book} (%s), %d rounds", count(opts.Books), rounds), vsBare.b)
	fmt.Fprintln(out, vsBare.summary("GET / bare"))
	fmt.Fprintf(out, "  (the cold pass alone: GET / bare %.3fx)\n", getSt.RPS()/bareSt.RPS())
	keySt, tokSt, err := restKeyVsToken(ctx, rep, opts, svc, cfg.Addr, bigKey, bigIDs, out)
	if err != nil {
		return nil, err
	}
	if opts.SkipList {
		rep.check(out, "GET /books/{book} req/s vs bare handler (median of alternating rounds)", vsBare.median(), ">=", TargetGetVsBare)
		rep.check(out, "GET /books/{book} req/s, OAuth access token vs API key", tokSt.RPS()/keySt.RPS(), ">=", TargetTokenVsKey)
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
	rep.check(out, "GET /books/{book} req/s vs bare handler (median of alternating rounds)", vsBare.median(), ">=", TargetGetVsBare)
	rep.check(out, "GET /books/{book} req/s, OAuth access token vs API key", tokSt.RPS()/keySt.RPS(), ">=", TargetTokenVsKey)
	rep.check(out, fmt.Sprintf("list req/s %s books vs %s books", count(opts.Books), count(opts.SmallBooks)),
		listBig.RPS()/listSmall.RPS(), ">=", TargetListVsSmall)
	rep.check(out, fmt.Sprintf("list p99 %s books vs %s books", count(opts.Books), count(opts.SmallBooks)),
		float64(listBig.P99)/float64(listSmall.P99), "<=", TargetListP99Grow)
	return rep, nil
}

// restKeyVsToken measures GET /books/{book} on ids with the API key and with an OAuth access
// token of that key (client credentials, issued for the REST API before the measurement) in
// alternating rounds, key-token then token-key, so drift and the neighbours' load hit both
// alike; the two figures are the sums of their rounds. Both sides send the same requests (the
// book's id as X-Request-Id, which the service echoes) and check every answer the same way:
// 200 and the book asked for.
func restKeyVsToken(ctx context.Context, rep *Report, opts RestOptions, svc *httpapi.Service, addr, key string, ids []string, out io.Writer) (keySt, tokSt Stats, err error) {
	token, err := clientCredentialsToken(ctx, addr, key)
	if err != nil {
		return keySt, tokSt, fmt.Errorf("rest: OAuth access token: %w", err)
	}
	// The token answers like the key before anything is measured (and is cached from here on,
	// as the key is).
	if a, b := fetch(addr, "/api/v1/books/"+ids[0], key), fetch(addr, "/api/v1/books/"+ids[0], token); !bytes.Equal(a, b) {
		return keySt, tokSt, fmt.Errorf("rest: the token's answer differs from the key's: %.200s vs %.200s", b, a)
	}
	rounds := opts.rounds()
	paths := bookPaths(ids)
	keyAuth, tokAuth := "Bearer "+key, "Bearer "+token
	t0 := time.Now()
	if err := warmBooks(svc, paths, keyAuth); err != nil {
		return keySt, tokSt, err
	}
	fmt.Fprintf(out, "  key vs OAuth token: every book read once in %s, then %d rounds of each\n", time.Since(t0).Round(time.Millisecond), rounds)
	// Beside req/s, the process's CPU time per request (service and load generator, warm-up
	// included): what the credential costs, less exposed than req/s to the other processes on
	// the machine (they still slow each request down through caches and the scheduler).
	// sent[w*8] counts worker w's requests (padded: no sharing).
	sent := make([]int64, opts.Conns*8)
	var cpu [2]time.Duration
	var reqs [2]int64
	load := func(side int, auth string) Stats {
		clear(sent)
		c0 := selfCPU()
		st := Load{Addr: addr, Conns: opts.Conns, Warmup: opts.Warmup / time.Duration(rounds),
			Duration: opts.Duration / time.Duration(rounds), Check: rightBook,
			Request: func(w, n int, r *fasthttp.Request) {
				sent[w*8] = int64(n + 1)
				i := rand.IntN(len(paths))
				r.SetRequestURI(paths[i])
				r.Header.Set("Authorization", auth)
				r.Header.Set("X-Request-Id", ids[i])
			}}.Run(ctx)
		cpu[side] += selfCPU() - c0
		for w := 0; w < opts.Conns; w++ {
			reqs[side] += sent[w*8]
		}
		return st
	}
	const keySide, tokSide = 0, 1
	var keys, toks []Stats
	var ratios []float64
	for i := 0; i < rounds; i++ {
		var k, t Stats
		if i%2 == 0 {
			k = load(keySide, keyAuth)
			t = load(tokSide, tokAuth)
		} else {
			t = load(tokSide, tokAuth)
			k = load(keySide, keyAuth)
		}
		for _, st := range []Stats{k, t} {
			if st.Errors > 0 || st.Requests == 0 {
				return keySt, tokSt, fmt.Errorf("rest: key/token round %d had %d errors of %d requests: %v", i+1, st.Errors, st.Requests+st.Errors, st.FirstErr)
			}
		}
		keys, toks, ratios = append(keys, k), append(toks, t), append(ratios, t.RPS()/k.RPS())
		first := "key first"
		if i%2 == 1 {
			first = "token first"
		}
		fmt.Fprintf(out, "    round %d (%s): key %.0f req/s, token %.0f req/s: %.3fx\n", i+1, first, k.RPS(), t.RPS(), t.RPS()/k.RPS())
	}
	keySt, tokSt = sumStats(keys), sumStats(toks)
	rep.line(out, fmt.Sprintf("GET /books/{book} (%s), API key, %d rounds   ", count(len(ids)), rounds), keySt)
	rep.line(out, fmt.Sprintf("GET /books/{book} (%s), OAuth token, %d rounds", count(len(ids)), rounds), tokSt)
	slices.Sort(ratios)
	fmt.Fprintf(out, "  token / key: %.3fx over the sums, median of the rounds %.3fx, rounds %.3f-%.3fx (p50/p99 above: medians of the rounds)\n",
		tokSt.RPS()/keySt.RPS(), median(ratios), ratios[0], ratios[len(ratios)-1])
	perReq := func(side int) float64 { return float64(cpu[side].Microseconds()) / float64(max(reqs[side], 1)) }
	fmt.Fprintf(out, "  process CPU per request (service + load generator): key %.1f µs, token %.1f µs: token / key %.3fx\n",
		perReq(keySide), perReq(tokSide), perReq(tokSide)/perReq(keySide))
	return keySt, tokSt, nil
}

// selfCPU is the CPU time (user + system) this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// warmBooks reads every book once through the service's handler (in process, one worker a
// core), so the rounds after it all read from the book cache (it holds about 128k books): a
// book's first read decodes it from Pebble, and on a busy machine the GET load before does not
// reach every book, which would make the first round pay for the rest.
func warmBooks(svc *httpapi.Service, paths []string, auth string) error {
	handler := svc.Handler()
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var rc fasthttp.RequestCtx
			for i := w; i < len(paths); i += workers {
				rc.Request.Reset()
				rc.Response.Reset()
				rc.Request.SetRequestURI(paths[i])
				rc.Request.Header.Set("Authorization", auth)
				handler(&rc)
				if rc.Response.StatusCode() != 200 {
					errs[w] = fmt.Errorf("rest: warming %s: status %d: %.200s", paths[i], rc.Response.StatusCode(), rc.Response.Body())
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sumStats pools rounds of one load: requests, errors and time summed, p50 and p99 the
// medians of the rounds'.
func sumStats(rounds []Stats) Stats {
	var s Stats
	var p50, p99 []float64
	for _, r := range rounds {
		s.Requests += r.Requests
		s.Errors += r.Errors
		s.Elapsed += r.Elapsed
		if s.FirstErr == nil {
			s.FirstErr = r.FirstErr
		}
		p50, p99 = append(p50, float64(r.P50)), append(p99, float64(r.P99))
	}
	slices.Sort(p50)
	slices.Sort(p99)
	s.P50, s.P99 = time.Duration(median(p50)), time.Duration(median(p99))
	return s
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// rightBook accepts a 200 whose body is the book named by the echoed X-Request-Id: it begins
// {"data":{"id":<n>,"random_id":"<that id>". It looks at a few bytes only (the load generator
// shares the cores).
func rightBook(resp *fasthttp.Response) error {
	id, b := resp.Header.Peek("X-Request-Id"), resp.Body()
	head := b[:min(len(b), 64)]
	i := bytes.Index(head, []byte(`,"random_id":"`)) + len(`,"random_id":"`)
	if resp.StatusCode() != 200 || len(id) == 0 || !bytes.HasPrefix(b, []byte(`{"data":{"id":`)) ||
		i < len(`,"random_id":"`) || !bytes.HasPrefix(b[i:], id) || len(b) <= i+len(id) || b[i+len(id)] != '"' {
		return fmt.Errorf("not book %q: status %d: %.200s", id, resp.StatusCode(), b)
	}
	return nil
}

// clientCredentialsToken registers a client-credentials client acting for key and returns an
// access token it is issued for the REST API (docs/OAUTH.md).
func clientCredentialsToken(ctx context.Context, addr, key string) (string, error) {
	base := "http://" + addr
	body, _ := json.Marshal(map[string]any{"client_name": "bench", "grant_types": []string{"client_credentials"}})
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/oauth/register", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 201 || json.Unmarshal(raw, &reg) != nil || reg.ClientSecret == "" {
		return "", fmt.Errorf("register: status %d: %.200s", res.StatusCode, raw)
	}
	cc := clientcredentials.Config{ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, TokenURL: base + "/oauth/token",
		EndpointParams: url.Values{"resource": {base + httpapi.APIBase}}}
	tok, err := cc.Token(ctx)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(tok.AccessToken, "ory_at_") {
		return "", fmt.Errorf("not an access token: %.20q", tok.AccessToken)
	}
	return tok.AccessToken, nil
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
