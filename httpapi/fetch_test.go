package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/outbound"
)

func TestPrivateAddrClassifier(t *testing.T) {
	t.Parallel()
	blocked := []string{
		"127.0.0.1", "127.255.0.1", "::1", "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.254",
		"192.168.0.1", "192.168.255.255", "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.254",
		"fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "0.0.0.0", "0.1.2.3", "::", "224.0.0.1",
		"239.255.255.250", "255.255.255.255", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
		"::ffff:169.254.169.254", "64:ff9b::a00:1", "2002:7f00:1::1", "192.0.2.1", "198.18.0.1", "240.0.0.1",
		"2001:db8::1", "fec0::1",
	}
	for _, s := range blocked {
		require.False(t, outbound.PublicAddr(netip.MustParseAddr(s)), "%s must be refused", s)
	}
	public := []string{"93.184.215.14", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "192.169.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"}
	for _, s := range public {
		require.True(t, outbound.PublicAddr(netip.MustParseAddr(s)), "%s is public", s)
	}
	require.False(t, outbound.PublicAddr(netip.Addr{}))

	// The dial hook sees resolved addresses.
	require.ErrorIs(t, outbound.Control("tcp4", "127.0.0.1:80", nil), ErrBlockedAddress)
	require.ErrorIs(t, outbound.Control("tcp6", "[::1]:443", nil), ErrBlockedAddress)
	require.ErrorIs(t, outbound.Control("tcp6", "[fe80::1%eth0]:443", nil), ErrBlockedAddress)
	require.NoError(t, outbound.Control("tcp4", "8.8.8.8:443", nil))
}

// countingServer answers /ok with body, /r/N with a redirect chain N long ending at /ok.
func countingServer(t *testing.T, body []byte) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch {
		case r.URL.Path == "/ok":
			w.Write(body)
		case r.URL.Path == "/chunked":
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			w.Write(body[len(body)/2:])
		case strings.HasPrefix(r.URL.Path, "/r/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
			if n <= 0 {
				http.Redirect(w, r, "/ok", http.StatusFound)
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusMovedPermanently)
		case r.URL.Path == "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case r.URL.Path == "/slow":
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestFetchRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, []byte("hello"))
	f := newFetcher(false)
	defer f.close()
	ctx := context.Background()
	for _, u := range []string{
		srv.URL + "/ok",
		strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/ok", // resolved by DNS, refused at dial
		strings.Replace(srv.URL, "127.0.0.1", "[::1]", 1) + "/ok",
		"http://0.0.0.0:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:] + "/ok",
	} {
		_, err := f.fetch(ctx, u)
		require.ErrorIs(t, err, ErrBlockedAddress, u)
	}
	require.EqualValues(t, 0, hits.Load(), "no connection reached the server")

	// Allowed when the service is configured for private targets.
	g := newFetcher(true)
	defer g.close()
	data, err := g.fetch(ctx, srv.URL+"/ok")
	require.NoError(t, err)
	require.Equal(t, "hello", string(data))
}

func TestFetchRules(t *testing.T) {
	body := []byte(strings.Repeat("x", 1000))
	srv, hits := countingServer(t, body)
	restore := SetFetchLimits(FetchLimits{Timeout: 300 * time.Millisecond, Overall: 5 * time.Second, MaxBytes: 1000, MaxRedirects: 3})
	t.Cleanup(restore)
	f := newFetcher(true)
	defer f.close()
	ctx := context.Background()

	// Schemes.
	for _, u := range []string{"ftp://example.com/a", "file:///etc/passwd", "gopher://x", "//no-scheme/a", "http://"} {
		_, err := f.fetch(ctx, u)
		require.Error(t, err, u)
	}
	_, err := f.fetch(ctx, srv.URL+"/to-file")
	require.Error(t, err, "a redirect to another scheme is refused")

	// Redirects: 3 are followed, a 4th is refused.
	data, err := f.fetch(ctx, srv.URL+"/r/2") // /r/2 → /r/1 → /r/0 → /ok: 3 redirects
	require.NoError(t, err)
	require.Equal(t, body, data)
	hits.Store(0)
	_, err = f.fetch(ctx, srv.URL+"/r/3")
	require.ErrorIs(t, err, errTooManyRedirs)
	require.EqualValues(t, 4, hits.Load(), "the 4th redirect is not followed")

	// Size cap: exactly the cap is fine, one byte more is not (with and without Content-Length).
	data, err = f.fetch(ctx, srv.URL+"/ok")
	require.NoError(t, err)
	require.Len(t, data, 1000)
	restore2 := SetFetchLimits(FetchLimits{Timeout: 300 * time.Millisecond, Overall: 5 * time.Second, MaxBytes: 999, MaxRedirects: 3})
	small := newFetcher(true)
	restore2()
	defer small.close()
	_, err = small.fetch(ctx, srv.URL+"/ok")
	require.ErrorIs(t, err, errFetchTooLarge)
	_, err = small.fetch(ctx, srv.URL+"/chunked")
	require.ErrorIs(t, err, errFetchTooLarge)

	// Non-200 answers fail.
	_, err = f.fetch(ctx, srv.URL+"/missing")
	require.Error(t, err)

	// A server that never answers is given up on after the timeout.
	start := time.Now()
	_, err = f.fetch(ctx, srv.URL+"/slow")
	require.Error(t, err)
	require.Less(t, time.Since(start), 3*time.Second)

	// The overall bound: a cancelled parent context stops fetching at once.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = f.fetch(cctx, srv.URL+"/ok")
	require.ErrorIs(t, err, context.Canceled)
}
