package bench

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHostileScenarioRuns keeps the hostile scenario working: a small run against a service
// child process (this test binary acting as `flipbook serve`). Every declaring socket is
// answered 401 or 413 before its body, and the chunked upload over the cap gets its 413. (The
// memory and latency targets are judged by `make bench` on the full-size run.)
func TestHostileScenarioRuns(t *testing.T) {
	asChild(t)
	var out, log bytes.Buffer
	rep, err := Hostile(context.Background(), HostileOptions{Declare: 6, Trickle: 20, Duration: 6 * time.Second,
		Settle: time.Second, Upload: 3 << 20, ChildArgs: []string{"--max-body-bytes", "1048576"}, Log: &log}, &out)
	require.NoError(t, err, "%s\nservice log:\n%s", out.String(), log.String())
	t.Log(out.String())
	require.Equal(t, "hostile", rep.Scenario)
	for _, f := range rep.Failed {
		require.NotContains(t, f, "chunked upload", f)
		require.NotContains(t, f, "health failed", f)
	}
	line := out.String()[strings.Index(out.String(), "attack ("):]
	require.Contains(t, line, "declaring sockets (")
	require.Regexp(t, `\((\d+) answers, (\d+) of them 401/413 before the body\)`, line)
	m := regexpAnswers.FindStringSubmatch(line)
	require.NotNil(t, m)
	require.Equal(t, m[1], m[2], "every declaring socket refused before its body")
	require.NotEqual(t, "0", m[1])
}

var regexpAnswers = regexp.MustCompile(`\((\d+) answers, (\d+) of them 401/413 before the body\)`)
