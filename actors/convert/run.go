package convert

import (
	"bytes"
	"context"
	"errors"
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
	return runCommand(ctx, nil, name, args...)
}

// runCommand is command with the process attributes of base (namespaces), if not nil.
func runCommand(ctx context.Context, base *syscall.SysProcAttr, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	attr := syscall.SysProcAttr{}
	if base != nil {
		attr = *base
	}
	attr.Setpgid = true
	cmd.SysProcAttr = &attr
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return stdout.Bytes(), &toolError{tool: name, err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.Bytes(), nil
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
