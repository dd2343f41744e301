package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"

	"flipbook/errs"
)

// A batch's uploaded files wait for conversion in UploadDir, on the disk of the node that
// received them. In cluster mode a batch may be converted by another node (its partition moved
// while it waited or converted), so with an object store (Options.BlobURL) the files are also
// kept there, under "uploads/<batch id>/", before the upload is acknowledged (StashUpload), and
// a node converting a batch whose files it does not have fetches them (FetchUpload). They are
// removed with the batch's other files (RemoveBatchFiles).

// uploadTimeout bounds one upload file's copy to or from the object store (files are at most
// --max-upload-bytes; 10 minutes is 1 GiB at under 2 MB/s).
const uploadTimeout = 10 * time.Minute

func (s *s3Blobs) uploadKey(batchID, name string) string {
	return s.prefix + "uploads/" + batchID + "/" + name
}

// StashUpload copies the files in a batch's UploadDir to the object store (a no-op without one).
func (s *Store) StashUpload(batchID string) error {
	r := s.Blobs.remote
	if r == nil || !ValidName(batchID) {
		return nil
	}
	dir := s.UploadDir(batchID)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := r.putUploadFile(r.uploadKey(batchID, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("storage: keep upload %s in the object store: %w", batchID, err)
		}
	}
	return nil
}

func (s *s3Blobs) putUploadFile(key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
	defer cancel()
	_, err = s.c.PutObject(ctx, s.bucket, key, f, st.Size(), minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

// FetchUpload brings a batch's files from the object store into its UploadDir when that folder
// is not on this node (a batch taken over from another node). Without an object store, or
// when the folder is here, it does nothing.
func (s *Store) FetchUpload(batchID string) error {
	r := s.Blobs.remote
	if r == nil || !ValidName(batchID) {
		return nil
	}
	dir := s.UploadDir(batchID)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
	defer cancel()
	tmp := dir + ".fetch"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		return err
	}
	prefix := r.uploadKey(batchID, "")
	n := 0
	for o := range r.c.ListObjects(ctx, r.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		name := o.Key[len(prefix):]
		if !ValidName(name) {
			continue
		}
		if err := r.c.FGetObject(ctx, r.bucket, o.Key, filepath.Join(tmp, name), minio.GetObjectOptions{}); err != nil {
			return fmt.Errorf("storage: fetch upload %s: %w", batchID, err)
		}
		n++
	}
	if n == 0 {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("storage: upload %s: %w", batchID, errNoUpload)
	}
	return os.Rename(tmp, dir)
}

var errNoUpload = errors.New("its files are neither on this node nor in the object store")

// removeUpload deletes a batch's files from the object store.
func (s *s3Blobs) removeUpload(batchID string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s3Timeout)
	defer cancel()
	objs := s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.uploadKey(batchID, ""), Recursive: true})
	for err := range s.c.RemoveObjects(ctx, s.bucket, objs, minio.RemoveObjectsOptions{}) {
		if err.Err != nil {
			return err.Err
		}
	}
	return nil
}

// A catalog sync job's input (its accepted items, WriteSyncInput) is a file of the node that
// accepted the request; with an object store it is kept there too ("sync-inputs/<name>"), so the
// node that runs the job after a takeover reads it (ReadSyncInput falls back to it).

func (s *s3Blobs) syncInputKey(name string) string { return s.prefix + "sync-inputs/" + name }

func (s *s3Blobs) putSyncInput(name string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
	defer cancel()
	_, err := s.c.PutObject(ctx, s.bucket, s.syncInputKey(name), bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/json"})
	return err
}

func (s *s3Blobs) getSyncInput(name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
	defer cancel()
	o, err := s.c.GetObject(ctx, s.bucket, s.syncInputKey(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	data, err := io.ReadAll(o)
	if err != nil && minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, errs.ErrNotFound
	}
	return data, err
}

func (s *s3Blobs) removeSyncInput(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), s3Timeout)
	defer cancel()
	_ = s.c.RemoveObject(ctx, s.bucket, s.syncInputKey(name), minio.RemoveObjectOptions{})
}

// With an object store, the MCP export tools' stored CSVs (output_path, output_object_key) are
// objects "exports/<area>/<path>" there, not files of the node that ran the tool (cluster mode:
// the next call may reach another node; a node's loss must not take them).

// ExportsRemote says whether exports are kept in the object store.
func (s *Store) ExportsRemote() bool { return s.Blobs.remote != nil }

// PutExport stores the file at path as the export object key ("<area>/<path>") and removes the
// file.
func (s *Store) PutExport(key, path string) error {
	r := s.Blobs.remote
	if r == nil {
		return errors.New("storage: no object store for exports")
	}
	if err := r.putUploadFile(r.prefix+"exports/"+key, path); err != nil {
		return fmt.Errorf("storage: store export: %w", err)
	}
	return os.Remove(path)
}

// ExportObject reads an export object back (tests, and operators' tools see the same bytes).
func (s *Store) ExportObject(key string) ([]byte, error) {
	r := s.Blobs.remote
	if r == nil {
		return nil, errs.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
	defer cancel()
	o, err := r.c.GetObject(ctx, r.bucket, r.prefix+"exports/"+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return io.ReadAll(o)
}
