package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `flipbook admin` finds the server and its admin token the way serve is configured: --data and
// FLIPBOOK_DATA (admin-token and the listen address serve records there), --addr and
// FLIPBOOK_ADDR, and its errors name the flag to pass.
func TestAdminFindsTheServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "elsewhere")
	s := startServe(t, serveArgs(dir), nil)
	b, err := os.ReadFile(filepath.Join(dir, "listen-addr"))
	require.NoError(t, err)
	require.Equal(t, s.addr, strings.TrimSpace(string(b)))

	admin := func(env map[string]string, args ...string) (string, error) {
		var stdout, stderr syncBuffer
		err := run(context.Background(), append([]string{"admin"}, args...), envMap(env), &stdout, &stderr)
		return stdout.String() + stderr.String(), err
	}
	create := []string{"workspaces", "create", "--name", "Found", "--plan", "free"}

	out, err := admin(nil, append([]string{"--data", dir}, create...)...)
	require.NoError(t, err, "--data alone: %s", out)
	require.Contains(t, out, `"plan": "free"`)

	out, err = admin(map[string]string{"FLIPBOOK_DATA": dir}, create...)
	require.NoError(t, err, "FLIPBOOK_DATA alone: %s", out)

	tok, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	out, err = admin(map[string]string{"FLIPBOOK_ADDR": s.addr, "FLIPBOOK_ADMIN_TOKEN": strings.TrimSpace(string(tok))}, create...)
	require.NoError(t, err, "FLIPBOOK_ADDR + FLIPBOOK_ADMIN_TOKEN: %s", out)
	out, err = admin(nil, append([]string{"--addr", s.addr, "--admin-token", strings.TrimSpace(string(tok)),
		"--data", t.TempDir()}, create...)...)
	require.NoError(t, err, "--addr + --admin-token: %s", out)

	// Run from another folder without flags: the default ./data holds no token.
	t.Chdir(t.TempDir())
	_, err = admin(nil, create...)
	require.ErrorContains(t, err, "no admin token")
	require.ErrorContains(t, err, "--data DIR")
	require.ErrorContains(t, err, "FLIPBOOK_DATA")

	// The right token, a wrong address.
	_, err = admin(nil, append([]string{"--data", dir, "--addr", "127.0.0.1:1"}, create...)...)
	require.ErrorContains(t, err, "cannot reach the service at http://127.0.0.1:1")
	require.ErrorContains(t, err, "--addr HOST:PORT")

	// Another server's data directory: its token is refused here.
	other := t.TempDir()
	s2 := startServe(t, serveArgs(other), nil)
	_, err = admin(nil, append([]string{"--data", other, "--addr", s.addr}, create...)...)
	require.ErrorContains(t, err, "401")
	require.ErrorContains(t, err, "--data DIR")
	require.NoError(t, s2.stop())

	require.NoError(t, s.stop())
	require.NoFileExists(t, filepath.Join(dir, "listen-addr"), "a clean stop removes the recorded address")
}
