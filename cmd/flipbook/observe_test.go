package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestObserveFlags(t *testing.T) {
	f, err := parseServeFlags(nil, envMap(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, observeFlags{logLevel: slog.LevelInfo, logFormat: "json"}, f.observe, "defaults")
	require.False(t, f.cfg.PProf)

	f, err = parseServeFlags([]string{"--log-level", "debug", "--log-format", "text", "--metrics-addr", "127.0.0.1:9100", "--pprof"},
		envMap(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, observeFlags{logLevel: slog.LevelDebug, logFormat: "text", metricsAddr: "127.0.0.1:9100", pprof: true}, f.observe)
	require.True(t, f.cfg.PProf)

	env := envMap(map[string]string{"FLIPBOOK_LOG_LEVEL": "WARN", "FLIPBOOK_LOG_FORMAT": "text",
		"FLIPBOOK_METRICS_ADDR": ":9100", "FLIPBOOK_PPROF": "true"})
	f, err = parseServeFlags(nil, env, io.Discard)
	require.NoError(t, err)
	require.Equal(t, observeFlags{logLevel: slog.LevelWarn, logFormat: "text", metricsAddr: ":9100", pprof: true}, f.observe)
	f, err = parseServeFlags([]string{"--log-level", "error", "--pprof=false"}, env, io.Discard)
	require.NoError(t, err)
	require.Equal(t, slog.LevelError, f.observe.logLevel, "the flag wins over the env")
	require.False(t, f.observe.pprof)

	for _, args := range [][]string{
		{"--log-level", "verbose"},
		{"--log-level", "info+2"},
		{"--log-format", "xml"},
		{"--metrics-addr", "nohostport"},
		{"--pprof=maybe"},
	} {
		_, err := parseServeFlags(args, envMap(nil), io.Discard)
		require.Error(t, err, "%v", args)
	}
	_, err = parseServeFlags(nil, envMap(map[string]string{"FLIPBOOK_LOG_FORMAT": "yaml"}), io.Discard)
	require.ErrorContains(t, err, "--log-format")
}

// serve with --metrics-addr, --pprof and the default JSON log: request lines on stderr, the
// metrics listener without a token, /metrics and pprof on the main address with the admin token.
func TestServeObservability(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, serveArgs(dir, "--metrics-addr", "127.0.0.1:0", "--pprof"), nil)
	key := s.firstKey(t)
	m := regexp.MustCompile(`metrics \(no token\) on (http://\S+/metrics)`).FindStringSubmatch(s.stdout.String())
	require.Len(t, m, 2, "stdout:\n%s", s.stdout.String())
	metricsURL := m[1]

	require.Equal(t, 200, call(t, "GET", s.base+"/api/v1/me?api_key="+key, "", nil).status)
	res, err := http.Get(metricsURL)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, string(raw), `flipbook_http_requests_total{operation="me",status="200"} 1`)

	adminToken, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	require.NoError(t, err)
	admin := strings.TrimSpace(string(adminToken))
	require.Equal(t, 401, call(t, "GET", s.base+"/metrics", "", nil).status)
	require.Equal(t, 200, call(t, "GET", s.base+"/metrics", admin, nil).status)
	require.Equal(t, 401, call(t, "GET", s.base+"/debug/pprof/", key, nil).status)
	require.Equal(t, 200, call(t, "GET", s.base+"/debug/pprof/", admin, nil).status)

	// stderr is JSON, one object a line; the /me request has its line (request lines are
	// batched: the stop writes what is pending); no key anywhere.
	require.NoError(t, s.stop())
	var me map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.stderr.String()))
	for sc.Scan() {
		var l map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "not JSON: %s", sc.Text())
		if l["msg"] == "request" && l["operation"] == "me" {
			me = l
		}
	}
	require.NotNil(t, me, "stderr:\n%s", s.stderr.String())
	require.Equal(t, "/api/v1/me", me["route"])
	require.EqualValues(t, 200, me["status"])
	require.NotContains(t, s.stderr.String(), key)
	require.NotContains(t, s.stderr.String(), admin)
}

func TestServeLogLevelWarnAndText(t *testing.T) {
	s := startServe(t, serveArgs(t.TempDir()), map[string]string{"FLIPBOOK_LOG_LEVEL": "warn", "FLIPBOOK_LOG_FORMAT": "text"})
	require.Equal(t, 200, call(t, "GET", s.base+"/api/v1/health", "", nil).status)
	require.Equal(t, 404, call(t, "GET", s.base+"/metrics-nope", "", nil).status)
	require.NoError(t, s.stop())
	require.NotContains(t, s.stderr.String(), "msg=request", "request lines are info")
	require.NotContains(t, s.stderr.String(), `"msg"`, "text, not JSON")
}
