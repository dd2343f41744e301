package storage

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"
)

// newS3 is an in-process S3-protocol server (gofakes3) on loopback; it returns the blob URL of
// a bucket on it and sets the credentials the store reads from the environment.
func newS3(t *testing.T) (blobURL, endpoint string) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	return "s3://flipbook-test/node-a?endpoint=" + srv.URL + "&region=us-east-1", srv.URL
}

// objects lists the bucket's keys with an S3 client of its own, as an operator's tool would.
func objects(t *testing.T, endpoint string) []string {
	t.Helper()
	c, err := minio.New(endpoint[len("http://"):], &minio.Options{Creds: credentials.NewStaticV4("test-key", "test-secret", ""), BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	var out []string
	for o := range c.ListObjects(context.Background(), "flipbook-test", minio.ListObjectsOptions{Recursive: true}) {
		require.NoError(t, o.Err)
		out = append(out, o.Key)
	}
	sort.Strings(out)
	return out
}

// The blob store behaves the same on local files and in an S3-compatible store.
func TestBlobsLocalAndS3(t *testing.T) {
	blobURL, endpoint := newS3(t)
	for _, c := range []struct {
		name string
		url  string
	}{{"local", ""}, {"s3", blobURL}} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{CacheBytes: 8 << 20, BlobURL: c.url})
			require.NoError(t, err)
			defer s.Close()
			b := s.Blobs
			require.Equal(t, c.url != "", b.Remote())
			n1, err := b.Put("book1", []byte("page one"), "jpg")
			require.NoError(t, err)
			again, err := b.Put("book1", []byte("page one"), "jpg")
			require.NoError(t, err)
			require.Equal(t, n1, again, "content-addressed")
			src := filepath.Join(t.TempDir(), "render.jpg")
			require.NoError(t, os.WriteFile(src, []byte("page two"), 0o600))
			n2, err := b.MoveFile("book1", src, "jpg")
			require.NoError(t, err)
			require.NoError(t, b.Sync())
			_, err = os.Stat(src)
			require.True(t, os.IsNotExist(err), "the source file is gone")
			_, err = b.Put("brand-x", []byte("logo"), "png")
			require.NoError(t, err)

			r, size, err := b.Open("book1", n2)
			require.NoError(t, err)
			data, _ := io.ReadAll(r)
			r.Close()
			require.Equal(t, "page two", string(data))
			require.EqualValues(t, 8, size)
			_, _, err = b.Open("book1", "nope.jpg")
			require.ErrorIs(t, err, os.ErrNotExist)
			_, _, err = b.Open("../x", n1)
			require.ErrorIs(t, err, os.ErrNotExist)

			require.NoError(t, b.Remove("book1", n1))
			require.NoError(t, b.Remove("book1", n1), "a missing file is not an error")
			_, _, err = b.Open("book1", n1)
			require.ErrorIs(t, err, os.ErrNotExist)
			if c.url != "" {
				require.Equal(t, []string{"node-a/books/book1/" + n2, "node-a/books/brand-x/" + mustName(t, b, "brand-x", "logo", "png")}, objects(t, endpoint))
			}
			gone, err := b.Sweep(func(rid string) bool { return rid == "brand-x" })
			require.NoError(t, err)
			require.Equal(t, 1, gone)
			_, _, err = b.Open("book1", n2)
			require.ErrorIs(t, err, os.ErrNotExist)
			require.NoError(t, b.DeleteBook("brand-x"))
			if c.url != "" {
				require.Empty(t, objects(t, endpoint))
			}
		})
	}
}

func mustName(t *testing.T, b *Blobs, folder, data, ext string) string {
	n, err := b.Put(folder, []byte(data), ext)
	require.NoError(t, err)
	return n
}
