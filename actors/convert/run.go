package convert

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Failure is a conversion that cannot succeed, with a reason for the customer.
type Failure struct{ Reason string }

func (f *Failure) Error() string { return f.Reason }

func fail(reason string) error { return &Failure{Reason: reason} }

// IsFailure reports whether err is a Failure (as opposed to an internal error or a cancel).
func IsFailure(err error) bool {
	var f *Failure
	return errors.As(err, &f)
}

// command runs a helper program in its own process group, so cancelling ctx kills it and every
// child it started (soffice starts soffice.bin), and returns its stdout; stderr goes into err.
func command(ctx context.Context, name string, args ...string) ([]byte, error) {
	return runProgram(ctx, nil, 0, nil, name, args...)
}

// cappedCommand is command reading at most limit bytes of stdout: a program printing more is
// killed and errOutputTooLarge returned (pdftotext of a hostile PDF).
func cappedCommand(ctx context.Context, limit int64, name string, args ...string) ([]byte, error) {
	return runProgram(ctx, nil, limit, nil, name, args...)
}

// runProgram runs name in its own process group (killed with it when ctx ends), with the
// process attributes of base if not nil and the environment variables env added to the
// service's, and returns its stdout: all of it, or at most limit
// bytes when limit > 0 (more kills it: errOutputTooLarge). Its stderr (the first
// stderrMax bytes) is in the *toolError of a failure.
func runProgram(ctx context.Context, base *syscall.SysProcAttr, limit int64, env []string, name string, args ...string) ([]byte, error) {
	run, kill := context.WithCancel(ctx)
	defer kill()
	cmd := exec.CommandContext(run, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	attr := syscall.SysProcAttr{}
	if base != nil {
		attr = *base
	}
	attr.Setpgid = true
	cmd.SysProcAttr = &attr
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdout := &cappedWriter{limit: limit, fail: true, onOver: kill}
	stderr := &cappedWriter{limit: stderrMax}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case stdout.over:
		return nil, errOutputTooLarge
	case err != nil:
		return stdout.buf.Bytes(), &toolError{tool: name, err: err, stderr: strings.TrimSpace(stderr.buf.String())}
	}
	return stdout.buf.Bytes(), nil
}

// stderrMax is the most of a program's stderr kept (a damaged PDF makes poppler print a line
// per syntax error): enough for the error message.
const stderrMax = 64 << 10

// errOutputTooLarge is a program printing more than cappedCommand reads.
var errOutputTooLarge = errors.New("output too large")

// cappedWriter keeps at most limit bytes (limit 0: all). Past that, it drops the rest
// (stderr), or fails the write and calls onOver once (stdout: the program is killed).
type cappedWriter struct {
	buf    bytes.Buffer
	limit  int64
	fail   bool // fail writes past the limit (stdout), or drop them (stderr)
	over   bool
	onOver func()
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.limit <= 0 {
		return w.buf.Write(p)
	}
	if room := w.limit - int64(w.buf.Len()); int64(len(p)) > room {
		n, _ := w.buf.Write(p[:max(room, 0)])
		if !w.fail {
			return len(p), nil
		}
		if !w.over && w.onOver != nil {
			w.onOver()
		}
		w.over = true
		return n, errOutputTooLarge
	}
	return w.buf.Write(p)
}

type toolError struct {
	tool   string
	err    error
	stderr string
}

func (e *toolError) Error() string {
	if e.stderr != "" {
		return e.tool + ": " + firstLines(e.stderr, 2)
	}
	return e.tool + ": " + e.err.Error()
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}
