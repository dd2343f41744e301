package bench

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// TestRestScenarioRuns keeps the harness working: a tiny rest scenario must complete without
// request errors and report its target checks. (The targets themselves are judged by `make
// bench` on full-size runs, not here.)
func TestRestScenarioRuns(t *testing.T) {
	var out bytes.Buffer
	rep, err := Rest(context.Background(), RestOptions{Books: 300, SmallBooks: 30, Conns: 4,
		Warmup: 50 * time.Millisecond, Duration: 400 * time.Millisecond, AuthRounds: 2}, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, "rest", rep.Scenario)
	require.Contains(t, out.String(), "bare fasthttp handler")
	require.Contains(t, out.String(), "GET /books/{book} req/s vs bare handler")
	require.Contains(t, out.String(), "list p99")
	require.Contains(t, out.String(), "OAuth access token vs API key")
	require.Contains(t, out.String(), "round 2 (token first)")
}

// TestRightBook: the key/token rounds' check takes only a 200 carrying the book asked for.
func TestRightBook(t *testing.T) {
	resp := &fasthttp.Response{}
	resp.Header.Set("X-Request-Id", "abc123")
	resp.SetBodyString(`{"data":{"id":245,"random_id":"abc123","name":"x"}}`)
	require.NoError(t, rightBook(resp))
	resp.SetBodyString(`{"data":{"id":245,"random_id":"abc1234","name":"x"}}`)
	require.Error(t, rightBook(resp))
	resp.SetBodyString(`{"data":{"id":245,"random_id":"zzz999","name":"x"}}`)
	require.Error(t, rightBook(resp))
	resp.SetBodyString(`{"data":{"id":245,"random_id":"abc12"}}`)
	require.Error(t, rightBook(resp))
	resp.SetBodyString(`{"error":{"type":"not_found"}}`)
	require.Error(t, rightBook(resp))
	resp.SetBodyString(`{"data":{"id":245,"random_id":"abc123","name":"x"}}`)
	resp.SetStatusCode(401)
	require.Error(t, rightBook(resp))
}

func TestMainRejectsUnknownScenario(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Error(t, Main(context.Background(), []string{"-scenario", "nope"}, &out, &errOut))
}

// BenchmarkGetBookCredential is GET /books/{book} through the service's handler alone (no
// network, no load generator) with the API key and with an OAuth access token of that key,
// alternating request by request (the same book for both, the order swapped every time), so
// the machine's noise hits both alike: key-ns/op and token-ns/op are what each credential's
// request costs the service (medians), token/key their ratio.
//
//	go test -tags pebblegozstd,duckdb_arrow -run '^$' -bench GetBookCredential -count 3 ./bench/
func BenchmarkGetBookCredential(b *testing.B) {
	dir := b.TempDir()
	svc, cfg, err := startService(dir, nil)
	require.NoError(b, err)
	defer svc.Shutdown(context.Background())
	key, _, ids, err := seedWorkspace(svc, "bench-credential", 10_000)
	require.NoError(b, err)
	require.NoError(b, svc.Store.Settle())
	token, err := clientCredentialsToken(context.Background(), cfg.Addr, key)
	require.NoError(b, err)
	paths := bookPaths(ids)
	handler := svc.Handler()
	var ctx fasthttp.RequestCtx
	get := func(path, auth string) time.Duration {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.Set("Authorization", auth)
		t0 := time.Now()
		handler(&ctx)
		d := time.Since(t0)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		return d
	}
	keyAuth, tokAuth := "Bearer "+key, "Bearer "+token
	for _, p := range paths { // every book decoded and cached once, as in a warm service
		get(p, keyAuth)
		get(p, tokAuth)
	}
	var keyT, tokT []float64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := paths[i%len(paths)]
		if i%2 == 0 {
			keyT = append(keyT, float64(get(p, keyAuth)))
			tokT = append(tokT, float64(get(p, tokAuth)))
		} else {
			tokT = append(tokT, float64(get(p, tokAuth)))
			keyT = append(keyT, float64(get(p, keyAuth)))
		}
	}
	// Medians: a request the scheduler preempted (the machine is shared) would weigh on a mean.
	slices.Sort(keyT)
	slices.Sort(tokT)
	b.ReportMetric(median(keyT), "key-ns/op")
	b.ReportMetric(median(tokT), "token-ns/op")
	b.ReportMetric(median(tokT)/median(keyT), "token/key")
}
