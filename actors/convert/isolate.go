package convert

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// Network isolation of converters that read untrusted documents (LibreOffice): the process runs
// in a network namespace of its own, with no interface but a down loopback, so nothing in a
// document can make it connect anywhere. Where the kernel allows an unprivileged user namespace,
// the process gets one that maps the service's user to itself (files keep their owner); as root
// without user namespaces, a network namespace alone. Where neither is allowed (a container
// without the capability), converters run as before and NetworkIsolation says so.

var (
	isolationOnce  sync.Once
	isolationAttr  *syscall.SysProcAttr // nil: not available
	isolationLabel string
)

// isolationCandidates are tried in order, once per process, by running /bin/true in them.
func isolationCandidates() []struct {
	label string
	attr  func() *syscall.SysProcAttr
} {
	uid, gid := os.Getuid(), os.Getgid()
	return []struct {
		label string
		attr  func() *syscall.SysProcAttr
	}{
		{"user and network namespace", func() *syscall.SysProcAttr {
			return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
				UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
				GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
				GidMappingsEnableSetgroups: false}
		}},
		{"network namespace", func() *syscall.SysProcAttr {
			return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		}},
	}
}

func probeIsolation() {
	isolationLabel = "none: the kernel refused both a user and a network namespace"
	truePath, err := exec.LookPath("true")
	if err != nil {
		isolationLabel = "unknown: no true(1) to probe with"
		return
	}
	for _, c := range isolationCandidates() {
		cmd := exec.Command(truePath)
		cmd.SysProcAttr = c.attr()
		if cmd.Run() == nil {
			isolationAttr, isolationLabel = c.attr(), c.label
			return
		}
	}
}

// NetworkIsolation describes how untrusted-document converters are cut off from the network
// ("none: ..." when they are not).
func NetworkIsolation() (isolated bool, how string) {
	isolationOnce.Do(probeIsolation)
	return isolationAttr != nil, isolationLabel
}

// isolatedCommand is command in a network namespace of its own when the kernel allows one,
// with the environment variables env added to the service's.
func isolatedCommand(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	isolationOnce.Do(probeIsolation)
	return runProgram(ctx, isolationAttr, 0, env, name, args...)
}
