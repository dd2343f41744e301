package httpapi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"flipbook/ingest"
	"flipbook/internal/testutil"
)

// chromium finds the browser for browser tests: Debian's chromium, which make test (make
// test-deps) and .ci/run install. Without it a browser test fails, with the line that installs it;
// FLIPBOOK_SKIP_BROWSER_TESTS=1 skips the browser tests instead. FLIPBOOK_CHROMIUM names another
// binary.
func chromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("FLIPBOOK_SKIP_BROWSER_TESTS") == "1" {
		t.Skip("FLIPBOOK_SKIP_BROWSER_TESTS=1: browser tests skipped")
	}
	for _, p := range []string{os.Getenv("FLIPBOOK_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: apt-get install -y chromium (make test-deps does it), " +
		"or set FLIPBOOK_SKIP_BROWSER_TESTS=1 to skip the browser tests")
	return ""
}

// artifactDir is where browser tests leave screenshots (FLIPBOOK_ARTIFACTS, default
// testartifacts/ at the repository root).
func artifactDir(t *testing.T) string {
	dir := os.Getenv("FLIPBOOK_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "testartifacts")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// startBrowser starts headless Chromium (exe, from chromium(t)) with a w×h window and returns
// its first tab, which ends after timeout. Call it after newHarness: the browser is closed first
// at cleanup, so the service does not wait on its connections. Chromium's helpers may still
// write to the profile after it exited (chromedp says so too): the directory is removed at the
// end without failing the test.
func startBrowser(t *testing.T, exe string, w, h int, timeout time.Duration) context.Context {
	dir, err := os.MkdirTemp("", "flipbook-chromium-")
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(dir), chromedp.WindowSize(w, h))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelT()
		cancel()
		cancelA() // waits for the process
		_ = testutil.Poll(time.Second, 20*time.Millisecond, func() error { return os.RemoveAll(dir) })
	})
	require.NoError(t, chromedp.Run(ctx)) // starts the browser
	return ctx
}

// TestViewerInBrowser opens a gated flipbook in headless Chromium, passes the email gate, turns
// pages with the keyboard (the counter names both pages of a spread), and checks the reader
// events the viewer posted.
func TestViewerInBrowser(t *testing.T) {
	exe := chromium(t)
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	r := h.do(t, "POST", "/api/v1/books/konva", key, konvaBody("Browser test", "publish", 6))
	require.Equal(t, 201, r.Status)
	rid := r.data()["random_id"].(string)
	require.Equal(t, 201, h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "reader@example.com"}).Status)
	// The book's gate texts and watermark.
	up := h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "watermark": "CONFIDENTIAL",
		"magic_link_message": "Partners only: use your work address.", "magic_link_error_message": "Ask sales@acme.example for access."})
	require.Equal(t, 200, up.Status, "%s", up.Body)

	ctx := startBrowser(t, exe, 1280, 900, 90*time.Second)

	var info, gateText, refusal string
	var marks []string
	var shot []byte
	err := chromedp.Run(ctx,
		chromedp.Navigate(h.base+"/view/"+rid),
		chromedp.WaitVisible("#gate", chromedp.ByID),
		chromedp.Text("#gate-message", &gateText, chromedp.ByID),
		chromedp.SendKeys("#gate-email", "eve@evil.example", chromedp.ByID),
		chromedp.Click("#gate button", chromedp.ByQuery),
		chromedp.WaitVisible("#gate-error", chromedp.ByID),
		chromedp.Text("#gate-error", &refusal, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("gate-email").value = ""`, nil),
		chromedp.SendKeys("#gate-email", "Reader@Example.com", chromedp.ByID),
		chromedp.Click("#gate button", chromedp.ByQuery),       // what a reader does (form.submit() would skip the handler)
		chromedp.WaitVisible(".stf__parent", chromedp.ByQuery), // page-flip has rendered the book
		chromedp.Text("#pageinfo", &info, chromedp.ByID),
	)
	require.NoError(t, err)
	require.Equal(t, "Partners only: use your work address.", gateText)
	require.Equal(t, "Ask sales@acme.example for access.", refusal, "the book's refusal text")
	require.Equal(t, "1 / 6", info)
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(
		`Array.from(document.querySelectorAll(".page .wm")).map(function (e) { return e.textContent; })`, &marks)))
	require.Len(t, marks, 6, "a watermark on every page")
	require.Equal(t, "CONFIDENTIAL", marks[0])
	// Turn pages with the keyboard, waiting for each flip to land.
	for _, want := range []string{"2–3 / 6", "4–5 / 6"} {
		require.NoError(t, chromedp.Run(ctx, chromedp.KeyEvent(kb.ArrowRight)))
		deadline := time.Now().Add(10 * time.Second)
		for info != want && time.Now().Before(deadline) {
			require.NoError(t, chromedp.Run(ctx, chromedp.Sleep(50*time.Millisecond), chromedp.Text("#pageinfo", &info, chromedp.ByID)))
		}
		require.Equal(t, want, info)
	}
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`window.flipbook.flush(false)`, nil),
		chromedp.FullScreenshot(&shot, 80),
	))
	out := filepath.Join(artifactDir(t), "viewer-"+rid+".png")
	require.NoError(t, os.WriteFile(out, shot, 0o644))
	t.Logf("screenshot: %s", out)

	// The events the viewer posted are in the log, identified by the gate.
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
		seen := map[string]int{}
		for _, e := range h.logged(t) {
			if e.BookID == rid && (e.ViewerEmail == "reader@example.com") {
				seen[e.Type]++
			}
		}
		if seen[ingest.AccessRequested] != 1 || seen[ingest.AccessGranted] != 1 ||
			seen[ingest.SessionStarted] != 1 || seen[ingest.PageSegmentCompleted] < 2 {
			return fmt.Errorf("not yet the access, session and page events from the browser (one access request, grant and session start, two page segments): %v", seen)
		}
		return nil
	})
	var pages []int32
	for _, e := range h.logged(t) {
		if e.Type == ingest.PageSegmentCompleted {
			require.Greater(t, e.ActiveMs, int64(0))
			pages = append(pages, e.PageNumber)
		}
	}
	require.Contains(t, pages, int32(1), "the first page's time is recorded when the reader turns")
}
