package main

// A real process kill (SIGKILL) during a conversion: the test binary re-executes itself as a
// flipbook server (TestMain below), the test kills it while it renders a large PDF, starts a
// new one on the same data dir, and checks the batch completes with exactly one book.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// childEnv makes the test binary run `flipbook <args>` instead of the tests.
const childEnv = "FLIPBOOK_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "flipbook:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childServer is a flipbook server in its own process.
type childServer struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	base           string
	exited         chan struct{}
}

var listeningRE = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// startChild starts `flipbook serve` in a child process and waits until it listens.
func startChild(t *testing.T, args ...string) *childServer {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	c := &childServer{stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd = exec.Command(exe, append([]string{"serve"}, args...)...)
	env := []string{childEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLIPBOOK_") { // the real environment must not configure the child
			env = append(env, kv)
		}
	}
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
	testutil.Eventually(t, startTimeout, 10*time.Millisecond, func() error {
		select {
		case <-c.exited:
			t.Fatalf("the child server exited: %v\nstdout:\n%s\nstderr:\n%s", c.cmd.ProcessState, c.stdout.String(), c.stderr.String())
		default:
		}
		out := c.stdout.String()
		m := listeningRE.FindStringSubmatch(out)
		if m == nil {
			return fmt.Errorf("the child server does not listen yet\nstdout:\n%s\nstderr:\n%s", out, c.stderr.String())
		}
		c.base = m[1]
		return nil
	})
	return c
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *childServer) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed child did not exit")
	}
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "killed by SIGKILL: %v", c.cmd.ProcessState)
}

// stop asks the child to shut down (SIGTERM) and expects a clean exit.
func (c *childServer) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-c.exited:
	case <-time.After(startTimeout):
		t.Fatal("the child did not stop on SIGTERM")
	}
	require.True(t, c.cmd.ProcessState.Success(), "clean exit: %v\nstderr:\n%s", c.cmd.ProcessState, c.stderr.String())
}

// bigPDF has n pages of text and a filled rectangle.
func bigPDF(t *testing.T, n int) []byte {
	t.Helper()
	f := fpdf.New("P", "pt", "A4", "")
	f.SetFont("Helvetica", "", 14)
	for i := 1; i <= n; i++ {
		f.AddPage()
		f.SetXY(72, 72)
		f.Write(16, fmt.Sprintf("Page %d of %d.", i, n))
		f.SetFillColor(20+(i*31)%200, 120, 180)
		f.Rect(72, 140, 300, 300, "F")
	}
	var buf bytes.Buffer
	require.NoError(t, f.Output(&buf))
	return buf.Bytes()
}

func uploadPDF(t *testing.T, base, key, name string, data []byte) *reply {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	fw, err := w.CreateFormFile("files[]", name)
	require.NoError(t, err)
	_, err = fw.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	req, err := http.NewRequest("POST", base+"/api/v1/books", &body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", w.FormDataContentType())
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	return decodeReply(t, res)
}

// rendererRuns is a condition for testutil.Eventually: a pdftoppm process works under dir.
func rendererRuns(dir, what string) func() error {
	return func() error {
		if len(renderers(dir)) == 0 {
			return fmt.Errorf("%s: no pdftoppm process works under %s", what, dir)
		}
		return nil
	}
}

// renderers lists the pids of pdftoppm processes working under dir.
func renderers(dir string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || len(cmd) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if filepath.Base(args[0]) == "pdftoppm" && strings.Contains(string(cmd), dir) {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}

func TestKillDuringConversion(t *testing.T) {
	for _, tool := range []string{"pdfinfo", "pdftoppm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("poppler-utils (%s) is not installed; CI installs it", tool)
		}
	}
	const pages = 600
	dir := t.TempDir()
	args := []string{"--data", dir, "--addr", "127.0.0.1:0", "--conversion-workers", "1",
		"--admin-token", "adm_kill_test", "--page-long-edge", "800",
		"--rate-limit-endpoint", "0", "--rate-limit-workspace", "0"} // the test polls
	t.Cleanup(func() { // renderers a killed server left behind, if any
		for _, pid := range renderers(dir) {
			var n int
			if _, err := fmt.Sscan(pid, &n); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
	})

	first := startChild(t, args...)
	var key string // printed after the address startChild waited for
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, keyWritten(&key, first.stdout))

	up := uploadPDF(t, first.base, key, "big.pdf", bigPDF(t, pages))
	require.Equal(t, 202, up.status, "%s", up.raw)
	batch := up.data()["batch_id"].(string)
	rid := up.data()["book_ids"].([]any)[0].(string)
	batchURL := first.base + "/api/v1/batches/" + batch
	testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if st := call(t, "GET", batchURL, key, nil).data()["status"]; st != "processing" {
			return fmt.Errorf("the batch is %v, want processing", st)
		}
		return nil
	})
	work := filepath.Join(dir, "work", batch)
	testutil.Eventually(t, 30*time.Second, 10*time.Millisecond, rendererRuns(work, "a renderer is working on the batch"))
	// A second upload waits behind the first (one worker); its 202 means it is on disk.
	up2 := uploadPDF(t, first.base, key, "small.pdf", bigPDF(t, 3))
	require.Equal(t, 202, up2.status, "%s", up2.raw)
	batch2 := up2.data()["batch_id"].(string)
	rid2 := up2.data()["book_ids"].([]any)[0].(string)
	require.Equal(t, "queued", call(t, "GET", first.base+"/api/v1/batches/"+batch2, key, nil).data()["status"])
	testutil.Eventually(t, 30*time.Second, 10*time.Millisecond, rendererRuns(work, "still converting the first batch at the kill"))

	first.kill(t)
	t.Logf("renderers still running after the kill: %v", renderers(work))

	second := startChild(t, args...)
	require.NotContains(t, second.stdout.String(), "First start", "not a first start")
	batchURL = second.base + "/api/v1/batches/" + batch
	var b map[string]any
	testutil.Eventually(t, 120*time.Second, 50*time.Millisecond, func() error {
		r := call(t, "GET", batchURL, key, nil)
		require.Equal(t, 200, r.status, "%s\nstderr:\n%s", r.raw, second.stderr.String())
		b = r.data()
		if b["status"] == "queued" || b["status"] == "processing" {
			return fmt.Errorf("the batch is still %v after the restart", b["status"])
		}
		return nil
	})
	files := b["files"].([]any)
	require.Len(t, files, 1)
	f := files[0].(map[string]any)
	require.Equal(t, "completed", b["status"], "error: %v\nstderr:\n%s", f["error"], second.stderr.String())
	require.Equal(t, rid, f["book_id"])
	require.EqualValues(t, pages, f["page_count"])

	var b2 map[string]any
	testutil.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		b2 = call(t, "GET", second.base+"/api/v1/batches/"+batch2, key, nil).data()
		if b2["status"] != "completed" && b2["status"] != "failed" {
			return fmt.Errorf("the queued batch is %v after the restart, want completed or failed", b2["status"])
		}
		return nil
	})
	require.Equal(t, "completed", b2["status"], "%v", b2["files"])

	list := call(t, "GET", second.base+"/api/v1/books?limit=100", key, nil)
	require.Equal(t, 200, list.status)
	books := list.json["data"].([]any)
	require.Len(t, books, 2, "exactly one book per batch")
	byID := map[string]map[string]any{}
	for _, x := range books {
		m := x.(map[string]any)
		byID[m["random_id"].(string)] = m
	}
	require.Contains(t, byID, rid2)
	require.EqualValues(t, 3, byID[rid2]["page_count"])
	book := byID[rid]
	require.NotNil(t, book, "the book keeps the random_id of the 202")
	require.Equal(t, batch, book["batch_id"])
	require.Equal(t, "ready", book["page_images_status"])
	require.EqualValues(t, pages, book["page_count"])

	// The book's folder holds its pages, a thumbnail and the PDF: nothing twice, nothing left
	// over from the killed attempt; the scratch and upload folders are gone.
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", rid))
	require.NoError(t, err)
	require.Len(t, entries, pages+2)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), "."), "temporary file %s left", e.Name())
	}
	_, err = os.Stat(work)
	require.True(t, os.IsNotExist(err), "work folder removed")
	_, err = os.Stat(filepath.Join(dir, "uploads", batch))
	require.True(t, os.IsNotExist(err), "upload folder removed")
	res, err := client.Get(book["thumbnail_url"].(string))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)

	second.stop(t)
}
