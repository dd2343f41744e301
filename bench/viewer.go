package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"flipbook/actors"
)

// ViewerOptions configure the viewer scenario.
type ViewerOptions struct {
	Rounds int       // rounds, each measuring every view on both services in turns; the lowest figure is kept (3)
	PDF    string    // the book's PDF; "" for pdfcpu's CenterOfWhy.pdf from the Go module cache
	Log    io.Writer // the services' logs (nil: discarded)
	// Before is a flipbook executable built from an earlier commit (the viewer as it was before
	// issue 29), measured as a third service and taken as the baseline of the targets; "": the
	// baseline is this build with --no-renditions.
	Before string
}

// Targets of the viewer scenario (issue 29).
const (
	// TargetViewerPhoneFewer: bytes transferred to show the first page on a phone without
	// renditions ÷ with them.
	TargetViewerPhoneFewer = 3.0
	// TargetViewerPhoneKiB: bytes transferred to show the first page on a phone, with
	// renditions, in KiB (issue 29's Lighthouse budget).
	TargetViewerPhoneKiB = 200
)

// viewerView is one way of opening the book: a screen, a network and the page of the URL's
// fragment.
type viewerView struct {
	name   string
	mobile bool
	w, h   int64
	scale  float64
	net    viewerLink
	page   int   // the fragment's page (#page=N); 0 for none
	shown  []int // the pages on show once the book is open
}

// viewerLink is the network a view is throttled to (Chromium's network emulation).
type viewerLink struct {
	name     string
	latency  float64 // ms added to each request
	down, up float64 // bytes/s
}

// The networks of Lighthouse's mobile and desktop profiles (slow 4G: 150 ms, 1.6 Mbit/s down,
// 750 kbit/s up; desktop: 40 ms, 10 Mbit/s), so the time to the first image depends on the
// bytes, as it does for a reader, and not only on this machine's loopback and CPU.
var (
	viewerSlow4G  = viewerLink{"slow 4G (150 ms, 1.6 Mbit/s)", 150, 1.6384e6 / 8, 750e3 / 8}
	viewerDesktop = viewerLink{"desktop link (40 ms, 10 Mbit/s)", 40, 10.24e6 / 8, 10.24e6 / 8}
)

// viewerViews are the views measured: the cover and page 2 on a phone (one page at a time),
// the cover and the spread of pages 2-3 on a desktop.
var viewerViews = []viewerView{
	{"phone 390x844 @3x, cover", true, 390, 844, 3, viewerSlow4G, 0, []int{1}},
	{"phone 390x844 @3x, #page=2", true, 390, 844, 3, viewerSlow4G, 2, []int{2}},
	{"desktop 1400x900 @1x, cover", false, 1400, 900, 1, viewerDesktop, 0, []int{1}},
	{"desktop 1400x900 @1x, #page=2 (spread 2-3)", false, 1400, 900, 1, viewerDesktop, 2, []int{2, 3}},
}

// viewerFigures are the measurements of one view: bytes are what Chromium received
// (Network.loadingFinished encodedDataLength: HTML, scripts, styles, images, with headers).
type viewerFigures struct {
	Bytes      int64         // transferred when the images of the pages on show had loaded
	ImageBytes int64         // of which images
	Requests   int           // requests finished by then
	Later      int64         // transferred one second later (what the viewer loads ahead)
	FirstImage time.Duration // navigation start to the first image of a page on show loaded
	AllImages  time.Duration // navigation start to the last image of the pages on show loaded
}

// lowest keeps the lowest of each figure of f and g (zero in f: not measured yet).
func (f viewerFigures) lowest(g viewerFigures) viewerFigures {
	if f.Bytes == 0 {
		return g
	}
	if g.Bytes < f.Bytes {
		f.Bytes, f.ImageBytes, f.Requests = g.Bytes, g.ImageBytes, g.Requests
	}
	f.Later = min(f.Later, g.Later)
	f.FirstImage = min(f.FirstImage, g.FirstImage)
	f.AllImages = min(f.AllImages, g.AllImages)
	return f
}

// viewerSide is one service measured: before (--no-renditions) or after (renditions).
type viewerSide struct {
	label string
	c     *child
	rid   string
	pages int
	best  []viewerFigures // by viewerViews
}

// Viewer measures what a reader's browser downloads to show a published book (a real PDF with
// text and photographs) and how soon the first page image shows, in Chromium through chromedp:
// on a phone and on a desktop, the cover and page 2, each in a fresh browser context (empty
// cache). The baseline is the same service started with --no-renditions (one 1600-px JPEG a
// page), measured in turns with the service as built over the rounds; the lowest of each
// figure is kept.
func Viewer(ctx context.Context, o ViewerOptions, out io.Writer) (*Report, error) {
	rep, _, err := runViewer(ctx, o, out)
	return rep, err
}

// runViewer is Viewer, also returning the sides measured (the test checks their figures).
func runViewer(ctx context.Context, o ViewerOptions, out io.Writer) (*Report, []*viewerSide, error) {
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	exe, err := chromiumPath()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "flipbook-bench-viewer-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	pdf, about, err := viewerPDF(o.PDF, dir)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "  book: %s\n", about)
	sides, err := viewerServices(ctx, dir, pdf, o, out)
	for _, s := range sides {
		defer s.c.stop()
	}
	if err != nil {
		return nil, nil, err
	}
	browser, closeBrowser, err := startViewerBrowser(exe, filepath.Join(dir, "chromium"))
	if err != nil {
		return nil, nil, err
	}
	defer closeBrowser()
	for r := 0; r < o.Rounds; r++ {
		order := sides
		if r%2 == 1 { // the order reversed every other round
			order = make([]*viewerSide, len(sides))
			for i, s := range sides {
				order[len(sides)-1-i] = s
			}
		}
		for _, s := range order {
			var round []string
			for i, v := range viewerViews {
				f, err := measureView(browser, s.c.base, s.rid, s.pages, v)
				if err != nil {
					return nil, nil, fmt.Errorf("viewer: %s, %s, round %d: %w", s.label, v.name, r+1, err)
				}
				s.best[i] = s.best[i].lowest(f)
				round = append(round, fmt.Sprintf("%s B %s", thousands(float64(f.Bytes)), ms(f.FirstImage)))
			}
			fmt.Fprintf(out, "    round %d, %s: %s\n", r+1, s.label, strings.Join(round, "; "))
		}
	}
	rep := &Report{Scenario: "viewer"}
	viewerPrint(rep, sides, out)
	return rep, sides, nil
}

// viewerServices starts the services and publishes the book on each: before (--no-renditions)
// and after (renditions, once every page has them), or, when `flipbook serve` has no
// --no-renditions flag, the service as built alone.
func viewerServices(ctx context.Context, dir, pdf string, o ViewerOptions, out io.Writer) ([]*viewerSide, error) {
	log := &lockedWriter{w: o.Log} // the children's logs are copied by a goroutine each
	type spec struct {
		label string
		exe   string // "": this build
		args  []string
		wait  bool // wait for every page's renditions
	}
	specs := []spec{{"before", "", []string{"--no-renditions"}, false}, {"after", "", nil, true}}
	if o.Before != "" {
		specs = append([]spec{{"earlier", o.Before, nil, false}}, specs...)
		specs[1].label = "norend"
	}
	if !serveHasFlag(ctx, "no-renditions") {
		fmt.Fprintln(out, "  flipbook serve has no --no-renditions flag: the service as built is measured alone (before, unless its pages have a srcset), with no before/after comparison")
		specs = []spec{{"before", "", nil, false}}
	}
	var sides []*viewerSide
	for i, sp := range specs {
		token := "adm_bench_" + actors.RandomString(24)
		args := append([]string{"--admin-token", token, "--rate-limit-collect", "0"}, sp.args...)
		c, err := startChildExe(ctx, sp.exe, filepath.Join(dir, "data-"+strconv.Itoa(i)), true, log, args...)
		if err != nil {
			return sides, err
		}
		s := &viewerSide{label: sp.label, c: c, best: make([]viewerFigures, len(viewerViews))}
		sides = append(sides, s)
		start := time.Now()
		adm := &adminClient{base: c.base + "/admin/v1", token: token}
		_, key, err := benchWorkspace(ctx, adm, "bench viewer", "company")
		if err != nil {
			return sides, err
		}
		api := &apiClient{base: c.base + "/api/v1", token: key}
		if s.rid, err = uploadPublish(ctx, api, pdf); err != nil {
			return sides, err
		}
		converted := time.Since(start)
		pages, err := viewerReady(ctx, c.base, s.rid, sp.wait)
		if err != nil {
			return sides, fmt.Errorf("viewer, %s: %w", sp.label, err)
		}
		s.pages = len(pages)
		with := 0
		for _, p := range pages {
			if p.Srcset != "" {
				with++
			}
		}
		if len(specs) == 1 && with > 0 {
			s.label = "after" // the service as built has renditions, but no baseline to compare with
		}
		cmd := "flipbook serve"
		if sp.exe != "" {
			cmd = sp.exe + " serve"
		}
		fmt.Fprintf(out, "  %-7s %s: %d pages converted and published in %s, ready in %s; pages with srcset: %d of %d\n",
			sp.label, strings.Join(append([]string{cmd}, sp.args...), " "), s.pages, converted.Round(time.Millisecond),
			time.Since(start).Round(time.Millisecond), with, s.pages)
	}
	return sides, nil
}

// uploadPublish uploads pdf, waits until its batch has completed and publishes the book; it
// returns the book's random id.
func uploadPublish(ctx context.Context, api *apiClient, pdf string) (string, error) {
	data, err := os.ReadFile(pdf)
	if err != nil {
		return "", err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("files[]", filepath.Base(pdf))
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequestWithContext(ctx, "POST", api.base+"/books", &body)
	req.Header.Set("Authorization", "Bearer "+api.token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var up struct {
		Data struct {
			BatchID string   `json:"batch_id"`
			BookIDs []string `json:"book_ids"`
		} `json:"data"`
	}
	if err := doJSON(req, 202, &up); err != nil {
		return "", err
	}
	if len(up.Data.BookIDs) != 1 {
		return "", fmt.Errorf("upload: %d books, want 1", len(up.Data.BookIDs))
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var b struct {
			Data struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		if err := api.do(ctx, "GET", "/batches/"+up.Data.BatchID, nil, 200, &b); err != nil {
			return "", err
		}
		if b.Data.Status == "completed" {
			break
		}
		if b.Data.Status == "failed" || b.Data.Status == "cancelled" || time.Now().After(deadline) {
			return "", fmt.Errorf("upload: batch %s %s", up.Data.BatchID, b.Data.Status)
		}
		if err := viewerPause(ctx, 50*time.Millisecond); err != nil {
			return "", err
		}
	}
	rid := up.Data.BookIDs[0]
	return rid, api.do(ctx, "PUT", "/books/"+rid, map[string]any{"status": "publish"}, 200, &struct{}{})
}

// viewerPage is a page of the viewer's configuration.
type viewerPage struct {
	URL    string `json:"url"`
	Srcset string `json:"srcset"`
}

var viewerConfigRe = regexp.MustCompile(`(?s)<script id="config" type="application/json">(.*?)</script>`)

// viewerConfigPages reads the pages of the viewer's configuration from /view/{rid}.
func viewerConfigPages(ctx context.Context, base, rid string) ([]viewerPage, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/view/"+rid, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	html, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("GET /view/%s: status %d", rid, res.StatusCode)
	}
	m := viewerConfigRe.FindSubmatch(html)
	if m == nil {
		return nil, fmt.Errorf("GET /view/%s: no viewer configuration in the page", rid)
	}
	var cfg struct {
		Pages []viewerPage `json:"pages"`
	}
	if err := json.Unmarshal(m[1], &cfg); err != nil {
		return nil, fmt.Errorf("GET /view/%s: configuration: %w", rid, err)
	}
	return cfg.Pages, nil
}

// viewerReady waits until the viewer lists the book's pages and, with renditions, until each
// page has a srcset (its WebP renditions exist), for up to two minutes.
func viewerReady(ctx context.Context, base, rid string, renditions bool) ([]viewerPage, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pages, err := viewerConfigPages(ctx, base, rid)
		if err != nil {
			return nil, err
		}
		missing := 0
		for _, p := range pages {
			if p.Srcset == "" {
				missing++
			}
		}
		if len(pages) > 0 && (!renditions || missing == 0) {
			return pages, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("renditions not ready after 2 minutes: %d of %d pages without srcset (is vipsthumbnail installed?)", missing, len(pages))
		}
		if err := viewerPause(ctx, 250*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// viewerPause waits d, or less if ctx ends.
func viewerPause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// serveExe is the program startChild runs as `flipbook serve`.
func serveExe() (string, error) {
	if exe := os.Getenv("FLIPBOOK_BENCH_SERVE"); exe != "" {
		return exe, nil
	}
	return os.Executable()
}

// serveHasFlag reports whether `flipbook serve --help` lists the flag name.
func serveHasFlag(ctx context.Context, name string) bool {
	exe, err := serveExe()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	help, _ := exec.CommandContext(ctx, exe, "serve", "--help").CombinedOutput() // --help exits non-zero
	return regexp.MustCompile(`(?m)^\s*--?` + regexp.QuoteMeta(name) + `(\s|=|$)`).Match(help)
}

// chromiumPath is the Chromium to drive: FLIPBOOK_CHROMIUM, else chromium on the system.
func chromiumPath() (string, error) {
	for _, p := range []string{os.Getenv("FLIPBOOK_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("viewer: chromium is not installed (apt-get install -y chromium; make test-deps does it)")
}

// viewerPDF is the book's PDF and a line about it: path if given, else pdfcpu's test document
// CenterOfWhy.pdf (25 pages of text and photographs) from the Go module cache, else pages of
// text and a picture written by WritePDF in dir.
func viewerPDF(path, dir string) (string, string, error) {
	if path != "" {
		return path, path, nil
	}
	var roots []string
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		roots = append(roots, strings.TrimSpace(string(out)))
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, os.Getenv("GOMODCACHE"), filepath.Join(home, "go", "pkg", "mod"))
	}
	for _, root := range roots {
		if root == "" {
			continue
		}
		found, _ := filepath.Glob(filepath.Join(root, "github.com", "pdfcpu", "pdfcpu@*", "pkg", "testdata", "CenterOfWhy.pdf"))
		if len(found) > 0 {
			sort.Strings(found)
			return found[len(found)-1], "CenterOfWhy.pdf (pdfcpu's test data: text and photographs), " + found[len(found)-1], nil
		}
	}
	p := filepath.Join(dir, "brochure.pdf")
	if err := WritePDF(p, 24); err != nil {
		return "", "", err
	}
	return p, "24 generated pages of text and a picture (pdfcpu's CenterOfWhy.pdf not found in the Go module cache)", nil
}

// startViewerBrowser starts headless Chromium with its profile in dir; the function returned
// closes it.
func startViewerBrowser(exe, dir string) (context.Context, func(), error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(dir), chromedp.WindowSize(1400, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	closeAll := func() {
		cancel()
		cancelA() // waits for the process
		_ = os.RemoveAll(dir)
	}
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		closeAll()
		return nil, nil, fmt.Errorf("viewer: start chromium: %w", err)
	}
	return ctx, closeAll, nil
}

// viewerLoadsJS runs in the page before its own scripts: it records, for each page, when its
// first image loaded (performance.now(), from the start of the navigation) and from where. An
// inlined placeholder (a data: or blob: URL) does not count as the page's image.
const viewerLoadsJS = `(function () {
  var loads = {};
  window.__benchLoads = loads;
  document.addEventListener("load", function (e) {
    var img = e.target;
    if (!img || img.tagName !== "IMG" || !img.closest) return;
    var p = img.closest(".page[data-n]");
    var src = img.currentSrc || img.src || "";
    if (!p || !src || /^(data|blob):/.test(src) || !(img.naturalWidth > 0)) return;
    if (!loads[p.dataset.n]) loads[p.dataset.n] = { t: performance.now(), src: src };
  }, true);
})();`

// viewerNet counts what a tab received, from the browser's network events (data: URLs, such
// as the pages' inlined placeholders, are not counted: their bytes came with the page).
type viewerNet struct {
	mu       sync.Mutex
	kind     map[network.RequestID]network.ResourceType
	url      map[network.RequestID]string
	finished []viewerLoad
}

// viewerLoad is one response received in full.
type viewerLoad struct {
	url   string
	kind  network.ResourceType
	bytes int64
	at    float64 // the browser's monotonic clock, seconds
}

func (n *viewerNet) event(ev any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		n.url[e.RequestID], n.kind[e.RequestID] = e.Request.URL, e.Type
	case *network.EventLoadingFinished:
		if strings.HasPrefix(n.url[e.RequestID], "data:") { // inlined in the page: nothing transferred
			return
		}
		var at float64
		if e.Timestamp != nil {
			at = float64(e.Timestamp.Time().UnixNano()) / 1e9
		}
		n.finished = append(n.finished, viewerLoad{url: n.url[e.RequestID], kind: n.kind[e.RequestID], bytes: int64(e.EncodedDataLength), at: at})
	}
}

// upTo sums the responses received up to the moment the last of urls was received; ok is false
// while one of them is not received yet.
func (n *viewerNet) upTo(urls []string) (total, images int64, requests int, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	last := 0.0
	for _, u := range urls {
		seen := false
		for _, l := range n.finished {
			if l.url == u {
				seen, last = true, max(last, l.at)
				break
			}
		}
		if !seen {
			return 0, 0, 0, false
		}
	}
	for _, l := range n.finished {
		if l.at <= last {
			total += l.bytes
			requests++
			if l.kind == network.ResourceTypeImage {
				images += l.bytes
			}
		}
	}
	return total, images, requests, true
}

// total is everything received so far.
func (n *viewerNet) total() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var t int64
	for _, l := range n.finished {
		t += l.bytes
	}
	return t
}

// viewerTab opens a tab in a new browser context of browser (its own empty cache, cookies and
// connections); the function returned closes both. (chromedp.WithNewBrowserContext asks for a
// tab without a window, which headless Chromium 156 refuses: "no browser is open".)
func viewerTab(browser context.Context) (context.Context, func(), error) {
	var bc cdp.BrowserContextID
	var tid target.ID
	err := chromedp.Run(browser, chromedp.ActionFunc(func(ctx context.Context) error {
		on := cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser)
		var err error
		if bc, err = target.CreateBrowserContext().WithDisposeOnDetach(true).Do(on); err != nil {
			return err
		}
		tid, err = target.CreateTarget("about:blank").WithBrowserContextID(bc).WithNewWindow(true).Do(on)
		return err
	}))
	if err != nil {
		return nil, nil, fmt.Errorf("open a tab in a new browser context: %w", err)
	}
	tab, cancel := chromedp.NewContext(browser, chromedp.WithTargetID(tid))
	return tab, func() {
		cancel() // closes the tab
		_ = chromedp.Run(browser, chromedp.ActionFunc(func(ctx context.Context) error {
			return target.DisposeBrowserContext(bc).Do(cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser))
		}))
	}, nil
}

// measureView opens the book in a new browser context of browser (an empty cache) with v's
// screen, waits until the images of the pages on show have loaded and measures.
func measureView(browser context.Context, base, rid string, pages int, v viewerView) (viewerFigures, error) {
	var f viewerFigures
	tab, cancel, err := viewerTab(browser)
	if err != nil {
		return f, err
	}
	defer cancel()
	tab, cancelT := context.WithTimeout(tab, 90*time.Second)
	defer cancelT()
	n := &viewerNet{kind: map[network.RequestID]network.ResourceType{}, url: map[network.RequestID]string{}}
	chromedp.ListenTarget(tab, n.event)
	screen := chromedp.EmulateViewport(v.w, v.h, chromedp.EmulateScale(v.scale))
	if v.mobile {
		screen = chromedp.EmulateViewport(v.w, v.h, chromedp.EmulateScale(v.scale), chromedp.EmulateMobile,
			chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	url := base + "/view/" + rid
	if v.page > 0 {
		url += "#page=" + strconv.Itoa(v.page)
	}
	err = chromedp.Run(tab, screen, network.EmulateNetworkConditions(false, v.net.latency, v.net.down, v.net.up),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(viewerLoadsJS).Do(ctx)
			return err
		}), chromedp.Navigate(url))
	if err != nil {
		return f, err
	}
	counter := strconv.Itoa(v.shown[0])
	if len(v.shown) > 1 {
		counter += "\u2013" + strconv.Itoa(v.shown[len(v.shown)-1])
	}
	counter += " / " + strconv.Itoa(pages)
	var st struct {
		Info  string `json:"info"`
		Loads map[string]struct {
			T   float64 `json:"t"`
			Src string  `json:"src"`
		} `json:"loads"`
	}
	for {
		if err := chromedp.Run(tab, chromedp.Evaluate(`({info: (document.getElementById("pageinfo") || {}).textContent || "",
			loads: window.__benchLoads || {}})`, &st)); err != nil {
			return f, fmt.Errorf("page counter %q, images loaded %v: %w", st.Info, st.Loads, err)
		}
		var urls []string
		f.FirstImage, f.AllImages = 0, 0
		for _, p := range v.shown {
			if l, ok := st.Loads[strconv.Itoa(p)]; ok {
				urls = append(urls, l.Src)
				d := time.Duration(l.T * float64(time.Millisecond))
				if len(urls) == 1 || d < f.FirstImage {
					f.FirstImage = d
				}
				f.AllImages = max(f.AllImages, d)
			}
		}
		if st.Info == counter && len(urls) == len(v.shown) {
			if f.Bytes, f.ImageBytes, f.Requests, _ = n.upTo(urls); f.Bytes > 0 {
				break
			}
		}
		if err := viewerPause(tab, 20*time.Millisecond); err != nil {
			return f, fmt.Errorf("page counter %q (want %q), images loaded %v: %w", st.Info, counter, st.Loads, err)
		}
	}
	if err := viewerPause(tab, time.Second); err != nil { // what the viewer loads ahead meanwhile
		return f, err
	}
	f.Later = n.total()
	return f, nil
}

// viewerPrint reports each view's figures on each side, the ratios before ÷ after and the
// targets.
func viewerPrint(rep *Report, sides []*viewerSide, out io.Writer) {
	kib := func(b int64) string { return fmt.Sprintf("%s B (%.0f KiB)", thousands(float64(b)), float64(b)/1024) }
	for i, v := range viewerViews {
		fmt.Fprintf(out, "  %s, %s (pages on show: %v)\n", v.name, v.net.name, v.shown)
		for _, s := range sides {
			f := s.best[i]
			fmt.Fprintf(out, "    %-7s to the pages shown %s, images %s, %d requests; 1 s later %s; first page image %s, all on show %s\n",
				s.label, kib(f.Bytes), thousands(float64(f.ImageBytes)), f.Requests, kib(f.Later), ms(f.FirstImage), ms(f.AllImages))
		}
		a := sides[len(sides)-1].best[i]
		for _, bs := range sides[:len(sides)-1] {
			b := bs.best[i]
			fmt.Fprintf(out, "    %s/after: bytes to the pages shown %.2fx fewer, 1 s later %.2fx fewer; first page image %.2fx sooner\n",
				bs.label, float64(b.Bytes)/float64(a.Bytes), float64(b.Later)/float64(a.Later), b.FirstImage.Seconds()/a.FirstImage.Seconds())
		}
	}
	if len(sides) < 2 {
		rep.Failed = append(rep.Failed, "viewer: no before/after (flipbook serve has no --no-renditions flag): the targets are not judged")
		fmt.Fprintln(out, "  [SKIP] no baseline: the targets (phone bytes before/after, KiB on a phone) are not judged")
		return
	}
	// The baseline is the first service: the earlier build when given, else --no-renditions.
	after := sides[len(sides)-1]
	for i, v := range viewerViews[:2] {
		rep.checkValue(out, v.name+": bytes to the page shown, "+sides[0].label+"/after", float64(sides[0].best[i].Bytes)/float64(after.best[i].Bytes), ">=", TargetViewerPhoneFewer, "x")
	}
	rep.checkValue(out, viewerViews[0].name+": bytes to the page shown, after", float64(after.best[0].Bytes)/1024, "<=", TargetViewerPhoneKiB, " KiB")
}

// lockedWriter writes to w one Write at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
