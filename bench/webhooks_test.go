package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWebhooksScenarioRuns keeps the webhooks scenario working: a small run against service
// child processes (this test binary acting as `flipbook serve`) must deliver every event to the
// healthy receiver in both phases and report every target. (The targets themselves are judged
// by `make bench` on the full-size run, not here.)
func TestWebhooksScenarioRuns(t *testing.T) {
	asChild(t)
	var out, log bytes.Buffer
	rep, err := Webhooks(context.Background(), WebhooksOptions{Deliveries: 1000, Conns: 2, Sessions: 8,
		Paced: 50, PacedRate: 500, SingleBaseline: true, RSSEvery: 20 * time.Millisecond,
		Timeout: time.Minute, Log: &log}, &out)
	require.NoError(t, err, "%s\nservice log:\n%s", out.String(), log.String())
	t.Log(out.String())
	require.Equal(t, "webhooks", rep.Scenario)
	for _, want := range []string{"baseline: one subscription", "with a dead receiver", "delivered 1,000 of 1,000",
		"event -> delivered (backlog)", "event -> delivered (paced", "(50 of 50 delivered)", "dead subscription: 1,050 deliveries created",
		"deliveries/s to the healthy receiver, alone", "beside a dead receiver / baseline: healthy deliveries/s", "beside a dead receiver / alone", "service RSS"} {
		require.Contains(t, out.String(), want)
	}
	for _, f := range rep.Failed {
		require.NotContains(t, f, "deliveries arrived", f)
	}
}
