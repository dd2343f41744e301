package outbound

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	strict := Policy{}
	for _, u := range []string{
		"http://93.184.215.14/", "https://127.0.0.1/", "https://localhost/", "https://10.1.2.3/",
		"https://169.254.169.254/latest/meta-data", "https://[::1]/", "https://[::ffff:127.0.0.1]/",
		"https://[fe80::1]/", "https://100.64.0.1/", "https://0.0.0.0/", "https://user:pw@93.184.215.14/",
		"ftp://93.184.215.14/", "not a url", "https:///nohost",
	} {
		var ue *URLError
		require.ErrorAs(t, strict.CheckURL(ctx, u), &ue, "%s is refused", u)
		require.NotEmpty(t, ue.Reason)
	}
	require.NoError(t, strict.CheckURL(ctx, "https://93.184.215.14/hook"))
	require.NoError(t, strict.CheckURL(ctx, "https://[2606:4700:4700::1111]/hook"))

	local := Policy{AllowPrivate: true}
	require.NoError(t, local.CheckURL(ctx, "http://127.0.0.1:8080/hook"))
	require.NoError(t, local.CheckURL(ctx, "http://localhost/hook"))
	require.Error(t, local.CheckURL(ctx, "ftp://127.0.0.1/"), "only http and https even then")
}

// The dial-time check: a URL that passed (or skipped) the configuration check still cannot
// reach a loopback address, whether given as an address or as a name that resolves to one.
func TestTransportRefusesPrivateAddressesAtDial(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]

	strict := &http.Client{Transport: Policy{}.Transport(TransportOptions{Timeout: 2 * time.Second}), Timeout: 5 * time.Second}
	for _, u := range []string{srv.URL, "http://localhost" + port} {
		_, err := strict.Get(u)
		require.Error(t, err, u)
		require.True(t, errors.Is(err, ErrBlockedAddress), "%s: %v", u, err)
	}

	local := &http.Client{Transport: Policy{AllowPrivate: true}.Transport(TransportOptions{Timeout: 2 * time.Second})}
	res, err := local.Get("http://localhost" + port)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 204, res.StatusCode)
}
