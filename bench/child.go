package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is the service running as its own process (`flipbook serve`), so its memory can be
// measured apart from the harness.
type child struct {
	cmd  *exec.Cmd
	base string
	key  string
}

var (
	listenRe  = regexp.MustCompile(`listening on (http://[0-9.:]+)`)
	keyRe     = regexp.MustCompile(`wsk_test_[0-9A-Za-z]+`)
	keyFileRe = regexp.MustCompile(`API key written to (\S+) \(`)
)

// startChild starts `<this executable> serve` on a free port with data in dir and returns once
// it has printed its address and first-start key.
func startChild(ctx context.Context, dir string, extra ...string) (*child, error) {
	return startChildLog(ctx, dir, io.Discard, extra...)
}

// startChildLog is startChild with the service's log (its stderr) written to stderr.
func startChildLog(ctx context.Context, dir string, stderr io.Writer, extra ...string) (*child, error) {
	return startChildOn(ctx, dir, true, stderr, extra...)
}

// startChildOn is startChildLog; without needKey it does not wait for a first-start key (a
// data directory that already has workspaces prints none).
func startChildOn(ctx context.Context, dir string, needKey bool, stderr io.Writer, extra ...string) (*child, error) {
	// FLIPBOOK_BENCH_SERVE runs another build of the service (an earlier commit, to compare).
	return startChildExe(ctx, os.Getenv("FLIPBOOK_BENCH_SERVE"), dir, needKey, stderr, extra...)
}

// startChildExe is startChildOn running the flipbook executable exe ("": this one).
func startChildExe(ctx context.Context, exe, dir string, needKey bool, stderr io.Writer, extra ...string) (*child, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dir,
		"--rate-limit-workspace", "0", "--rate-limit-endpoint", "0", "--rate-limit-unauthenticated", "0"}, extra...)
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(60 * time.Second)
	for c.base == "" || (needKey && c.key == "") {
		select {
		case l, ok := <-lines:
			if !ok {
				return nil, fmt.Errorf("the service exited before it was ready")
			}
			if m := listenRe.FindStringSubmatch(l); m != nil {
				c.base = m[1]
			}
			if m := keyFileRe.FindStringSubmatch(l); m != nil && c.key == "" {
				if b, err := os.ReadFile(m[1]); err == nil { // the first start's key (never printed)
					c.key = keyRe.FindString(string(b))
				}
			} else if k := keyRe.FindString(l); k != "" && c.key == "" {
				c.key = k // a build before 2026-11-27 printed it (FLIPBOOK_BENCH_SERVE)
			}
		case <-deadline:
			c.stop()
			return nil, fmt.Errorf("the service did not start in time")
		}
	}
	go func() {
		for range lines { // keep draining stdout
		}
	}()
	return c, nil
}

func (c *child) stop() {
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}

// treeRSS is the resident memory of pid and all its descendants, in bytes.
func treeRSS(pid int) int64 {
	children := map[int][]int{}
	rss := map[int]int64{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... ; comm may contain spaces: split after the last ')'.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 22 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pages, _ := strconv.ParseInt(f[21], 10, 64)
		children[ppid] = append(children[ppid], p)
		rss[p] = pages * int64(os.Getpagesize())
	}
	var total int64
	var walk func(int)
	walk = func(p int) {
		total += rss[p]
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return total
}

// procCPU is the CPU time (user + system) pid has used so far.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux everywhere).
const clockTicks = 100

// peakRSS is the peak resident memory (VmHWM) of one process, in bytes.
func peakRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
