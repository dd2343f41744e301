package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every boolean flag of serve takes the bare form (--pprof), and =true / =false, and its
// FLIPBOOK_ variable; none is a string flag holding "true" or "false" (which refuses the bare
// form with "flag needs an argument").
func TestBooleanFlagsTakeTheBareForm(t *testing.T) {
	get := map[string]func(*serveFlags) bool{
		"pprof":                 func(f *serveFlags) bool { return f.cfg.PProf },
		"allow-private-targets": func(f *serveFlags) bool { return f.cfg.AllowPrivateTargets },
		"trust-geo-headers":     func(f *serveFlags) bool { return f.cfg.TrustGeoHeaders },
	}
	for name, val := range get {
		f, err := parseServeFlags(nil, envMap(nil), io.Discard)
		require.NoError(t, err, name)
		require.False(t, val(f), "%s defaults to false", name)
		f, err = parseServeFlags([]string{"--" + name}, envMap(nil), io.Discard)
		require.NoError(t, err, "--%s alone", name)
		require.True(t, val(f), "--%s alone", name)
		for _, v := range []string{"true", "false"} {
			f, err = parseServeFlags([]string{"--" + name + "=" + v}, envMap(nil), io.Discard)
			require.NoError(t, err, "--%s=%s", name, v)
			require.Equal(t, v == "true", val(f), "--%s=%s", name, v)
		}
		env := envMap(map[string]string{envName(name): "true"})
		f, err = parseServeFlags(nil, env, io.Discard)
		require.NoError(t, err)
		require.True(t, val(f), "%s from the environment", envName(name))
		f, err = parseServeFlags([]string{"--" + name + "=false"}, env, io.Discard)
		require.NoError(t, err)
		require.False(t, val(f), "the flag wins over %s", envName(name))
		_, err = parseServeFlags([]string{"--" + name + "=maybe"}, envMap(nil), io.Discard)
		require.ErrorContains(t, err, "--"+name)
	}

	// No other flag is a boolean spelled as a string: the help lists none with a string
	// default of "true" or "false".
	var help bytes.Buffer
	_, err := parseServeFlags([]string{"-h"}, envMap(nil), &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.NotRegexp(t, regexp.MustCompile(`(?m)^\s+-\S+ string\n[^\n]*\(default "(true|false)"\)`), help.String())
	for name := range get {
		require.Regexp(t, regexp.MustCompile(`(?m)^\s+-`+regexp.QuoteMeta(name)+`\n`), help.String(), "%s is listed as a boolean", name)
	}
}

// Cluster mode's flags: --cluster-node needs the others (each refusal names what is missing);
// given all, they reach the config, from flags or FLIPBOOK_ variables.
func TestClusterFlags(t *testing.T) {
	all := []string{"--cluster-node", "n1", "--advertise-url", "http://10.0.0.1:8080", "--kafka-brokers", "k1:9092,k2:9092",
		"--blob-url", "s3://b?endpoint=http://m:9000&region=us-east-1", "--admin-token", "adm_shared"}
	f, err := parseServeFlags(all, envMap(nil), io.Discard)
	require.NoError(t, err)
	cc := f.cfg.Cluster
	require.NotNil(t, cc)
	require.Equal(t, "n1", cc.Node)
	require.Equal(t, "http://10.0.0.1:8080", cc.AdvertiseURL)
	require.Equal(t, 24, cc.Partitions)
	require.False(t, cc.Standby)
	require.Equal(t, []string{"k1:9092", "k2:9092"}, f.cfg.KafkaBrokers)

	f, err = parseServeFlags(append(all, "--cluster-standby", "--cluster-partitions", "12", "--cluster-wait", "3s"), envMap(nil), io.Discard)
	require.NoError(t, err)
	require.True(t, f.cfg.Cluster.Standby)
	require.Equal(t, 12, f.cfg.Cluster.Partitions)
	require.Equal(t, "3s", f.cfg.Cluster.Wait.String())

	for i, missing := range []string{"--advertise-url", "--kafka-brokers", "--blob-url", "--admin-token"} {
		args := append([]string{}, all[:2]...)
		for j := 2; j < len(all); j += 2 {
			if all[j] != missing {
				args = append(args, all[j], all[j+1])
			}
		}
		_, err := parseServeFlags(args, envMap(nil), io.Discard)
		require.ErrorContains(t, err, missing, "case %d", i)
	}
	_, err = parseServeFlags(append(all, "--cluster-standby=maybe"), envMap(nil), io.Discard)
	require.ErrorContains(t, err, "--cluster-standby")
	_, err = parseServeFlags(append(all, "--cluster-partitions", "0"), envMap(nil), io.Discard)
	require.ErrorContains(t, err, "--cluster-partitions")

	// From the environment, as compose.yaml sets them.
	env := envMap(map[string]string{"FLIPBOOK_CLUSTER_NODE": "node2", "FLIPBOOK_ADVERTISE_URL": "http://node2:8080",
		"FLIPBOOK_KAFKA_BROKERS": "kafka:9092", "FLIPBOOK_BLOB_URL": "s3://flipbook?endpoint=http://minio:9000&region=us-east-1",
		"FLIPBOOK_ADMIN_TOKEN": "adm_x", "FLIPBOOK_CLUSTER_PARTITIONS": "24"})
	f, err = parseServeFlags(nil, env, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "node2", f.cfg.Cluster.Node)

	// Without --cluster-node, one process as before.
	f, err = parseServeFlags(nil, envMap(nil), io.Discard)
	require.NoError(t, err)
	require.Nil(t, f.cfg.Cluster)
}

// An admin token given through FLIPBOOK_ADMIN_TOKEN (or --admin-token) with a trailing newline,
// as a Kubernetes secret made from a file holds it, is used as is, while every client's
// "Authorization: Bearer <token>" is trimmed (api.Bearer) and the token read from
// <data>/admin-token is trimmed too (resolveAdminToken): no request can ever present the
// configured token, so the admin API, GET /metrics and /debug/pprof/ answered 401 to the operator
// holding the right token (found by a review). serve trims it, as it does the file's.
func TestAdminTokenFromEnvWithNewline(t *testing.T) {
	const token = "adm_review_k8s_secret"
	s := launch(t, serveArgs(t.TempDir()), map[string]string{"FLIPBOOK_ADMIN_TOKEN": token + "\n"})
	require.False(t, s.done, "serve started: %v", s.err)
	r := call(t, "GET", s.base+"/admin/v1/ingest", token, nil)
	require.Equal(t, 200, r.status, "the admin token configured as %q cannot be presented: %s", token+"\n", r.raw)
}

// The admin token serve generates goes into a file only its owner reads, also when an empty
// <data>/admin-token readable by everyone was there (made by a provisioning script, or a failed
// earlier write): it was written with os.WriteFile, which keeps an existing file's mode (found
// by a review); writeSecretFile, as for the first API key, forces 0600.
func TestGeneratedAdminTokenFileIsPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin-token")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Chmod(path, 0o644)) // whatever the umask
	s := startServe(t, serveArgs(dir), nil)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	tok := strings.TrimSpace(string(b))
	require.NotEmpty(t, tok, "serve generated a token into the empty file")
	require.Equal(t, 200, call(t, "GET", s.base+"/admin/v1/ingest", tok, nil).status)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the admin token was written to a file of mode %v", st.Mode().Perm())
}
