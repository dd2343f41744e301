package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"flipbook/api"
)

// failingStream writes n bytes in 1 KB writes, then fails (a database error mid-export).
type failingStream struct {
	n      int
	closed int
}

func (f *failingStream) WriteTo(w io.Writer) (int64, error) {
	var total int64
	chunk := []byte(strings.Repeat("x", 1023) + "\n")
	for total < int64(f.n) {
		n, err := w.Write(chunk)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, errors.New("the database failed")
}

func (f *failingStream) Close() error { f.closed++; return nil }

// TestStreamErrorCutsTransfer: a stream that fails after its first bytes ends the response
// without the final chunk, so the client sees an incomplete transfer rather than a short
// file that looks complete; the stream is closed once.
func TestStreamErrorCutsTransfer(t *testing.T) {
	t.Parallel()
	s := &Service{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	st := &failingStream{n: 200 << 10}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		s.renderStream(ctx, &api.Operation{ID: "test"}, &api.Result{Stream: st, ContentType: csvContentType, Filename: "f.csv"})
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(ln)
	defer srv.Shutdown()

	res, err := http.Get("http://" + ln.Addr().String() + "/")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "attachment; filename=f.csv", res.Header.Get("Content-Disposition"))
	require.Equal(t, []string{"chunked"}, res.TransferEncoding)
	body, err := io.ReadAll(res.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the transfer is cut, not ended")
	require.GreaterOrEqual(t, len(body), 100<<10, "what was written before the failure arrived")
	require.True(t, s.streams.abort(5*time.Second), "the stream was closed and let go")
	require.Equal(t, 1, st.closed)
}
