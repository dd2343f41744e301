package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Blobs in an S3-compatible object store (Options.BlobURL, `--blob-url`; issue 26): the same
// content-addressed layout, one object per file under "<prefix>books/<folder>/<name>". What the
// local store syncs, S3 has made durable once a PUT is acknowledged, so Sync does nothing.
// The client is minio-go (well kept, S3 and MinIO alike; docs/DEPENDENCIES.md).

// s3Blobs is the S3 side of Blobs.
type s3Blobs struct {
	c      *minio.Client
	bucket string
	prefix string
}

// s3Timeout bounds one object operation (a page image or logo; uploads stay local for now).
const s3Timeout = 2 * time.Minute

// openS3Blobs reads s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT&region=REGION; the
// credentials are AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the environment.
func openS3Blobs(raw string) (*s3Blobs, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("storage: blob URL %q: want s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT&region=REGION", raw)
	}
	q := u.Query()
	ep, err := url.Parse(q.Get("endpoint"))
	if err != nil || ep.Host == "" || (ep.Scheme != "http" && ep.Scheme != "https") {
		return nil, fmt.Errorf("storage: blob URL %q: endpoint=http(s)://HOST:PORT is required", raw)
	}
	c, err := minio.New(ep.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")),
		Secure: ep.Scheme == "https", Region: q.Get("region"),
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("storage: blob store: %w", err)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	s := &s3Blobs{c: c, bucket: u.Host, prefix: prefix}
	ctx, cancel := context.WithTimeout(context.Background(), s3Timeout)
	defer cancel()
	ok, err := c.BucketExists(ctx, s.bucket)
	if err != nil {
		return nil, fmt.Errorf("storage: blob store %s: %w", ep.Host, err)
	}
	if !ok {
		if err := c.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: q.Get("region")}); err != nil {
			return nil, fmt.Errorf("storage: create bucket %s: %w", s.bucket, err)
		}
	}
	return s, nil
}

func (s *s3Blobs) key(folder, name string) string { return s.prefix + "books/" + folder + "/" + name }

func (s *s3Blobs) exists(ctx context.Context, key string) (bool, error) {
	_, err := s.c.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return false, nil
	}
	return false, err
}

func (s *s3Blobs) put(folder, name string, r io.Reader, size int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), s3Timeout)
	defer cancel()
	key := s.key(folder, name)
	if ok, err := s.exists(ctx, key); err != nil {
		return err
	} else if ok {
		return nil // content-addressed: the same name is the same bytes
	}
	_, err := s.c.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

func (s *s3Blobs) putBytes(folder string, data []byte, ext string) (string, error) {
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:16]) + "." + ext
	return name, s.put(folder, name, bytes.NewReader(data), int64(len(data)))
}

// putFile uploads the file at path and removes it.
func (s *s3Blobs) putFile(folder, path, ext string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	name := hex.EncodeToString(h.Sum(nil)[:16]) + "." + ext
	if err := s.put(folder, name, f, size); err != nil {
		return "", err
	}
	f.Close()
	return name, os.Remove(path)
}

// open streams an object; the caller closes it.
func (s *s3Blobs) open(folder, name string) (io.ReadCloser, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s3Timeout)
	o, err := s.c.GetObject(ctx, s.bucket, s.key(folder, name), minio.GetObjectOptions{})
	if err != nil {
		cancel()
		return nil, 0, err
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		cancel()
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, 0, os.ErrNotExist
		}
		return nil, 0, err
	}
	return &cancelCloser{ReadCloser: o, cancel: cancel}, st.Size, nil
}

type cancelCloser struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelCloser) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// removePrefix deletes every object under the folder.
func (s *s3Blobs) removeFolder(folder string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s3Timeout)
	defer cancel()
	objs := s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + "books/" + folder + "/", Recursive: true})
	for err := range s.c.RemoveObjects(ctx, s.bucket, objs, minio.RemoveObjectsOptions{}) {
		if err.Err != nil {
			return err.Err
		}
	}
	return nil
}

func (s *s3Blobs) remove(folder, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s3Timeout)
	defer cancel()
	err := s.c.RemoveObject(ctx, s.bucket, s.key(folder, name), minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil
	}
	return err
}

// folders lists the folders (book ids, brand folders) that hold objects.
func (s *s3Blobs) folders() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s3Timeout)
	defer cancel()
	var out []string
	base := s.prefix + "books/"
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: base}) {
		if o.Err != nil {
			return nil, o.Err
		}
		if f := strings.TrimSuffix(strings.TrimPrefix(o.Key, base), "/"); f != "" && strings.HasSuffix(o.Key, "/") {
			out = append(out, f)
		}
	}
	return out, nil
}
