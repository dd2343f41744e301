package httpapi

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The third-party clients under clients/ (package.json, installed by make test-deps with npm ci)
// run against a harness's real listener: the clients MCP hosts and API users run, not ours.

// clientsDir is the repository's clients/ directory, with its node_modules installed.
func clientsDir(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "clients"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "node")); err != nil {
		tb.Fatalf("the test clients are not installed (%v): run make test-deps (scripts/clients.sh: npm ci in clients/)", err)
	}
	return dir
}

// nodeBin is Node 22 from the npm package node@22 (clients/node_modules/.bin/node).
func nodeBin(tb testing.TB) string {
	return filepath.Join(clientsDir(tb), "node_modules", ".bin", "node")
}

// runNode runs Node 22 with args in clients/ (a script path relative to clients/, or a package
// bin under node_modules/.bin), with env added to the test's environment, and returns its
// stdout and stderr. It fails the test when the process exits non-zero, unless allowFail.
func runNode(tb testing.TB, timeout time.Duration, env []string, allowFail bool, args ...string) (stdout, stderr string, err error) {
	tb.Helper()
	dir := clientsDir(tb)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin(tb), args...)
	cmd.Dir = dir
	// Node 22 first on PATH: tools that spawn "node" themselves get the same one.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil && !allowFail {
		tb.Fatalf("node %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, tail(out.String(), 8000), tail(errb.String(), 8000))
	}
	return out.String(), errb.String(), err
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
