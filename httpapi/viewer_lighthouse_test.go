package httpapi

// Lighthouse in make test (issue 29, docs/VIEWER.md "Lighthouse in make test"): Lighthouse
// 12.2.3 (clients/package.json) runs clients/lighthouse-viewer.mjs on a published book with
// photographs and text, every reader tool on, with the mobile and the desktop profile, and the
// test fails naming every target the viewer misses.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// The targets of issue 29, on both profiles unless said.
const (
	// lhMinPerformance is the least performance score, the best of up to lhRuns runs (timing
	// wobbles on a busy machine; the other targets are met by every run).
	lhMinPerformance = 97
	lhRuns           = 3
	// lhMaxFirstSpreadBytes bounds the bytes a phone downloads to show the first spread (mobile
	// profile only): the transfer size of the requests started by the largest contentful paint
	// the browser observed (the first page's image on show). Not every request until the trace
	// ends: the viewer fetches the next pages once idle, and whether that falls inside the trace
	// depends on how long the trace runs.
	lhMaxFirstSpreadBytes = 200 << 10
)

// lhPerfectCategories must score exactly 100.
var lhPerfectCategories = []string{"accessibility", "best-practices", "seo"}

// lhMustPass are the audits the issue names (compression, cache lifetime, next-gen formats,
// image sizes, console errors, meta description): each scores 1 or does not apply.
var lhMustPass = []string{"uses-text-compression", "uses-long-cache-ttl", "modern-image-formats",
	"uses-responsive-images", "errors-in-console", "meta-description"}

// lhProfiles are Lighthouse's mobile (default) and desktop configurations.
var lhProfiles = []string{"mobile", "desktop"}

// lhAudit is one audit of a run, as lighthouse-viewer.mjs summarises it.
type lhAudit struct {
	Score        *float64
	Mode         string
	Display      string
	Value        float64
	SavingsBytes int64
	SavingsMs    int64
	Error        string
	Missing      bool
}

// lhRun is the summary of one Lighthouse run.
type lhRun struct {
	Profile      string
	Run          int
	Seconds      float64
	Lighthouse   string
	UserAgent    string
	FinalURL     string
	RuntimeError string
	Warnings     []string
	Scores       map[string]*int
	Metrics      map[string]lhAudit
	Audits       map[string]lhAudit
	Failing      []struct {
		Category, ID, Title, Display string
		Score                        *float64
	}
	Requests []struct {
		Start             int64 // ms from the page's request
		BeforeFirstSpread bool  // started by the observed largest contentful paint
		Type              string
		Status            int
		Transfer, Size    int64
		URL               string
	}
	TransferBytes    int64  // every request until the trace ended
	FirstSpreadBytes *int64 // the requests started by the observed largest contentful paint
	FirstSpreadMs    *int64 // the observed largest contentful paint (nil: none)
	TraceEndMs       *int64
}

// TestViewerLighthouse publishes pdfcpu's CenterOfWhy.pdf (25 pages of text and photographs)
// with every reader tool on and holds the viewer to issue 29's Lighthouse targets.
func TestViewerLighthouse(t *testing.T) {
	exe := chromium(t)
	dir := lighthouseClients(t)
	pdf := photoBookPDF(t)
	h := newHarness(t, func(c *Config) { c.PageLongEdge = 1600 })
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "CenterOfWhy.pdf", pdf)
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	// Every tool a reader can be given: share, download of the whole PDF, full screen, reading
	// mode (accessibility_enabled), links, print (no copy protection), the "made with" badge and
	// the page-turn sound; search, zoom and thumbnails come with every book that has text.
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish",
		"share_social_media": true, "downloadable_pdf": true, "allow_fullscreen": true, "accessibility_enabled": true,
		"auto_links_enabled": true, "copyright_enabled": false, "made_with_badge_enabled": true, "flip_sound": true}).Status)
	view := h.base + "/view/" + rid
	// Lighthouse measures the book as readers find it, with its renditions (made within seconds
	// of the book being ready), not in the moments after its conversion.
	start := time.Now()
	waitSrcSets(t, h, rid)
	t.Logf("the renditions of every page were offered %s after the book was ready", time.Since(start).Round(100*time.Millisecond))
	t.Run("every reader tool shown", func(t *testing.T) { lighthouseToolsShown(t, exe, view) })

	start = time.Now()
	stdout, _, _ := runNode(t, 4*time.Minute, []string{"VIEWER_URL=" + view, "CHROME_PATH=" + exe,
		fmt.Sprintf("LH_RUNS=%d", lhRuns), fmt.Sprintf("LH_MIN_PERFORMANCE=%d", lhMinPerformance),
		"LH_REPORT_DIR=" + artifactDir(t)}, false, "lighthouse-viewer.mjs")
	var out struct{ Runs []lhRun }
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), "%s", tail(stdout, 4000))
	t.Logf("Lighthouse: %d runs in %s (%s, reports in %s)", len(out.Runs), time.Since(start).Round(time.Second),
		filepath.Base(dir)+"/lighthouse-viewer.mjs", artifactDir(t))
	for _, r := range out.Runs {
		t.Log(lighthouseLine(r))
	}
	for _, p := range lhProfiles {
		if best := lighthouseBest(out.Runs, p); best != nil {
			for _, q := range best.Requests {
				mark := " "
				if q.BeforeFirstSpread {
					mark = "*"
				}
				t.Logf("  %s run %d: %s %5d ms %-10s %d %8d B %s", p, best.Run, mark, q.Start, q.Type, q.Status, q.Transfer, q.URL)
			}
		}
	}
	if misses := lighthouseMisses(out.Runs); len(misses) > 0 {
		t.Errorf("the viewer misses %d Lighthouse targets of issue 29:\n  %s", len(misses), strings.Join(misses, "\n  "))
	}
}

// lighthouseClients is clients/ with Lighthouse installed; the test is skipped without it.
func lighthouseClients(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "clients"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "lighthouse", "package.json")); err != nil {
		t.Skipf("Lighthouse is not installed in clients/node_modules (%v): run make test-deps", err)
	}
	return dir
}

// photoBookPDF is pdfcpu's testdata CenterOfWhy.pdf (25 pages of text and photographs, 2.4 MB),
// from the module cache: pdfcpu is a dependency of the conversion (go.mod), so the version
// go.mod names is there on any machine that built the service.
func photoBookPDF(t *testing.T) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command finds pdfcpu's module")
	cmd := exec.Command(goBin, "list", "-m", "-f", "{{.Dir}}", "github.com/pdfcpu/pdfcpu")
	out, err := cmd.Output()
	require.NoError(t, err, "go list -m github.com/pdfcpu/pdfcpu")
	mod := strings.TrimSpace(string(out))
	require.NotEmpty(t, mod, "pdfcpu's module is not in the module cache: go mod download github.com/pdfcpu/pdfcpu")
	pdf, err := os.ReadFile(filepath.Join(mod, "pkg", "testdata", "CenterOfWhy.pdf"))
	require.NoError(t, err)
	return pdf
}

// lighthouseToolsShown checks in Chromium, on a phone, that the page Lighthouse measures shows
// every reader tool, and logs the layout shifts of its loading (the CLS Lighthouse scores; its
// own list of the shifting elements fails on this Chromium, docs/VIEWER.md). The browser is
// closed when the subtest ends, before Lighthouse runs.
func lighthouseToolsShown(t *testing.T, exe, view string) {
	ctx := viewerTab(t, startBrowser(t, exe, 412, 823, 60*time.Second), 412, 823, true)
	require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(lhShiftsJS).Do(ctx)
		return err
	})))
	viewerOpen(t, ctx, view, "1 / 25")
	var hidden []string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`["zoom-out", "zoom-reset", "zoom-in", "thumbs-open",
		"fullscreen", "download", "share", "print", "search-open", "reading"].filter(id => document.getElementById(id).hidden)
		.concat(document.querySelector(".made-with") ? [] : ["made-with"])`, &hidden)))
	require.Empty(t, hidden, "every reader tool is in the page Lighthouse measures")
	var shifts []string
	testutil.Eventually(t, 15*time.Second, 50*time.Millisecond, func() error {
		var done bool
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`[...document.images].every(i => i.complete)`, &done)))
		if !done {
			return fmt.Errorf("page images still loading")
		}
		return nil
	})
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.__shifts`, &shifts)))
	t.Logf("layout shifts on a 412-px phone (Chromium, unthrottled): %d", len(shifts))
	for _, s := range shifts {
		t.Log("  " + s)
	}
}

// lhShiftsJS records the page's layout shifts with the elements that moved.
const lhShiftsJS = `window.__shifts = [];
new PerformanceObserver(l => l.getEntries().forEach(e => {
	const d = n => !n ? "?" : n.nodeName.toLowerCase() + (n.id ? "#" + n.id : "") + (typeof n.className === "string" && n.className ? "." + n.className.trim().split(/\s+/).join(".") : "");
	const r = b => [b.x, b.y, b.width, b.height].map(Math.round).join(",");
	window.__shifts.push(Math.round(e.startTime) + " ms: " + e.value.toFixed(4) + (e.hadRecentInput ? " (after input)" : "") + " " +
		(e.sources || []).map(s => d(s.node) + (s.node && s.node.parentElement ? " in " + d(s.node.parentElement) : "") + " " + r(s.previousRect) + " -> " + r(s.currentRect)).join("; "));
})).observe({type: "layout-shift", buffered: true});`

// lighthouseBest is the profile's run with the best performance score (nil: no run).
func lighthouseBest(runs []lhRun, profile string) *lhRun {
	var best *lhRun
	for i := range runs {
		if r := &runs[i]; r.Profile == profile && (best == nil || lhScore(r, "performance") > lhScore(best, "performance")) {
			best = r
		}
	}
	return best
}

// lhScore is a category's score, -1 when the run has none.
func lhScore(r *lhRun, category string) int {
	if s := r.Scores[category]; s != nil {
		return *s
	}
	return -1
}

// lhTarget is one target: ok, or what the run shows instead.
type lhTarget struct {
	name  string
	check func(r *lhRun) (bool, string)
}

// lighthouseTargets are the targets every run of profile must meet (performance apart).
func lighthouseTargets(profile string) []lhTarget {
	var ts []lhTarget
	for _, c := range lhPerfectCategories {
		ts = append(ts, lhTarget{c + " 100", func(r *lhRun) (bool, string) {
			var why []string
			for _, f := range r.Failing {
				if f.Category == c {
					why = append(why, fmt.Sprintf("%s (%s%s)", f.ID, f.Title, lhSuffix(f.Display)))
				}
			}
			return lhScore(r, c) == 100, fmt.Sprintf("%s %d: %s", c, lhScore(r, c), strings.Join(why, "; "))
		}})
	}
	for _, id := range lhMustPass {
		ts = append(ts, lhTarget{id, func(r *lhRun) (bool, string) {
			a := r.Audits[id]
			ok := !a.Missing && (a.Mode == "notApplicable" || a.Score != nil && *a.Score == 1)
			return ok, "audit " + id + " fails: " + lhAuditText(a)
		}})
	}
	if profile == "mobile" {
		ts = append(ts, lhTarget{"bytes to the first spread", func(r *lhRun) (bool, string) {
			if r.FirstSpreadBytes == nil {
				return false, "no largest contentful paint observed: the bytes to the first spread are not measured"
			}
			return *r.FirstSpreadBytes <= lhMaxFirstSpreadBytes, fmt.Sprintf("%.1f KiB transferred in the requests "+
				"started by the first spread's paint at %d ms (images %.1f KiB), more than %d KiB",
				float64(*r.FirstSpreadBytes)/1024, *r.FirstSpreadMs, float64(lhBytesOf(r, "Image", true))/1024,
				lhMaxFirstSpreadBytes>>10)
		}})
		// Those bytes are the first spread's only if its page image is among them (text painted
		// before the image would end the count early).
		ts = append(ts, lhTarget{"first page image counted", func(r *lhRun) (bool, string) {
			for _, q := range r.Requests {
				if q.BeforeFirstSpread && q.Type == "Image" && q.Status == 200 && strings.HasPrefix(q.URL, "/files/") {
					return true, ""
				}
			}
			return false, "no page image (/files/…) was requested by the largest contentful paint: the bytes to the first spread are not measured"
		}})
	}
	return ts
}

// lighthouseMisses checks the runs against the targets and says every one missed: the best
// performance of a profile's runs, and each other target in every run.
func lighthouseMisses(runs []lhRun) []string {
	var misses []string
	for _, p := range lhProfiles {
		best := lighthouseBest(runs, p)
		if best == nil {
			misses = append(misses, p+": no Lighthouse run")
			continue
		}
		var perf []string
		for _, r := range runs {
			if r.Profile == p {
				perf = append(perf, fmt.Sprint(lhScore(&r, "performance")))
			}
		}
		if lhScore(best, "performance") < lhMinPerformance {
			misses = append(misses, fmt.Sprintf("%s: performance %d < %d (runs: %s); %s", p, lhScore(best, "performance"),
				lhMinPerformance, strings.Join(perf, ", "), lhMetricsText(best)))
		}
		for _, tg := range lighthouseTargets(p) {
			var failed []int
			var first string
			for _, r := range runs {
				if r.Profile != p {
					continue
				}
				if ok, why := tg.check(&r); !ok {
					if failed = append(failed, r.Run); first == "" {
						first = why
					}
				}
			}
			if len(failed) > 0 {
				misses = append(misses, fmt.Sprintf("%s: %s (runs %v)", p, first, failed))
			}
		}
	}
	return misses
}

// lighthouseLine is a run in one line for the test log.
func lighthouseLine(r lhRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s run %d (%.0f s, Lighthouse %s):", r.Profile, r.Run, r.Seconds, r.Lighthouse)
	for _, c := range append([]string{"performance"}, lhPerfectCategories...) {
		fmt.Fprintf(&b, " %s %d", c, lhScore(&r, c))
	}
	fmt.Fprintf(&b, "; %s; %s to the first spread; %.1f KiB in %d requests to the trace's end (images %.1f KiB)",
		lhMetricsText(&r), lhFirstSpreadText(&r), float64(r.TransferBytes)/1024, len(r.Requests),
		float64(lhBytesOf(&r, "Image", false))/1024)
	for _, id := range lhMustPass {
		fmt.Fprintf(&b, "; %s %s", id, lhAuditText(r.Audits[id]))
	}
	if len(r.Failing) > 0 {
		ids := make([]string, 0, len(r.Failing))
		for _, f := range r.Failing {
			ids = append(ids, f.Category+"/"+f.ID)
		}
		fmt.Fprintf(&b, "; failing: %s", strings.Join(ids, ", "))
	}
	if r.RuntimeError != "" {
		fmt.Fprintf(&b, "; runtime error: %s", r.RuntimeError)
	}
	return b.String()
}

// lhMetricsText is the metrics behind the performance score.
func lhMetricsText(r *lhRun) string {
	names := [][2]string{{"first-contentful-paint", "FCP"}, {"largest-contentful-paint", "LCP"},
		{"total-blocking-time", "TBT"}, {"cumulative-layout-shift", "CLS"}, {"speed-index", "SI"}}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n[1]+" "+r.Metrics[n[0]].Display)
	}
	return strings.Join(parts, ", ")
}

// lhAuditText is an audit's score and what it says.
func lhAuditText(a lhAudit) string {
	switch {
	case a.Missing:
		return "missing"
	case a.Mode == "notApplicable":
		return "n/a"
	case a.Error != "":
		return "error: " + a.Error
	}
	s := "score null"
	if a.Score != nil {
		s = fmt.Sprintf("%g", *a.Score)
	}
	if a.SavingsBytes > 0 {
		s += fmt.Sprintf(" (%.0f KiB to save)", float64(a.SavingsBytes)/1024)
	}
	return s + lhSuffix(a.Display)
}

// lhSuffix is ": d", or nothing for an empty d.
func lhSuffix(d string) string {
	if d == "" {
		return ""
	}
	return ": " + d
}

// lhBytesOf is the bytes transferred for the run's requests of a resource type (first: only
// those started by the first spread's paint).
func lhBytesOf(r *lhRun, typ string, first bool) int64 {
	var n int64
	for _, q := range r.Requests {
		if q.Type == typ && (q.BeforeFirstSpread || !first) {
			n += q.Transfer
		}
	}
	return n
}

// lhFirstSpreadText is the bytes to the first spread and when it was painted.
func lhFirstSpreadText(r *lhRun) string {
	if r.FirstSpreadBytes == nil || r.FirstSpreadMs == nil {
		return "no LCP observed"
	}
	n := 0
	for _, q := range r.Requests {
		if q.BeforeFirstSpread {
			n++
		}
	}
	return fmt.Sprintf("%.1f KiB in %d requests by %d ms", float64(*r.FirstSpreadBytes)/1024, n, *r.FirstSpreadMs)
}
