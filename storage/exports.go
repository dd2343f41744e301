package storage

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/minio/minio-go/v7"
)

// The MCP export tools store CSVs a workspace asked for (output_path, output_object_key) under
// <data>/exports/<workspace>-<mode>/, or as objects exports/<workspace>-<mode>/... of the object
// store. A customer's erasure reaches them too (found by a review: a stored leads export kept
// the address): EraseFromExports drops the records that name the customer.

// ExportArea is the folder of a tenant's stored exports ("<workspace>-<mode>", as mcp/export.go
// names it; TestShopifyRedactStoredExport erases what an export tool stored).
func ExportArea(t Tenant) string { return strconv.FormatInt(t.Workspace, 10) + "-" + t.Mode.String() }

// EraseFromExports goes through the tenant's stored exports and drops every CSV record one of
// whose fields match (the header row is kept); a file that is not CSV and whose bytes match
// is removed whole. With dryRun nothing changes. It returns how many records (or files) matched.
func (s *Store) EraseFromExports(t Tenant, match func(field string) bool, dryRun bool) (int, error) {
	if r := s.Blobs.remote; r != nil {
		return r.eraseFromExports(ExportArea(t), match, dryRun)
	}
	root := filepath.Join(s.dir, "exports", ExportArea(t))
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, dropped, whole := dropRecords(data, match)
		n += dropped
		switch {
		case dryRun || dropped == 0:
			return nil
		case whole:
			return os.Remove(path)
		}
		tmp := path + ".erase-tmp"
		if err := os.WriteFile(tmp, out, 0o640); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	})
	return n, err
}

// eraseFromExports is EraseFromExports in the object store.
func (s *s3Blobs) eraseFromExports(area string, match func(string) bool, dryRun bool) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
	defer cancel()
	n := 0
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + "exports/" + area + "/", Recursive: true}) {
		if o.Err != nil {
			return n, o.Err
		}
		obj, err := s.c.GetObject(ctx, s.bucket, o.Key, minio.GetObjectOptions{})
		if err != nil {
			return n, err
		}
		data, err := io.ReadAll(obj)
		obj.Close()
		if err != nil {
			return n, err
		}
		out, dropped, whole := dropRecords(data, match)
		n += dropped
		switch {
		case dryRun || dropped == 0:
		case whole:
			err = s.c.RemoveObject(ctx, s.bucket, o.Key, minio.RemoveObjectOptions{})
		default:
			_, err = s.c.PutObject(ctx, s.bucket, o.Key, bytes.NewReader(out), int64(len(out)),
				minio.PutObjectOptions{ContentType: "application/octet-stream"})
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// dropRecords is a CSV without the records (after the header) one of whose fields match, and
// how many went; whole when the data is not CSV and its text matches (the file goes whole).
func dropRecords(data []byte, match func(string) bool) (out []byte, dropped int, whole bool) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		if match(string(data)) {
			return nil, 1, true
		}
		return nil, 0, false
	}
	kept := records[:0]
	for i, rec := range records {
		if i > 0 && matchesAny(rec, match) {
			dropped++
			continue
		}
		kept = append(kept, rec)
	}
	if dropped == 0 {
		return data, 0, false
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.UseCRLF = bytes.Contains(data, []byte("\r\n"))
	_ = w.WriteAll(kept) // a bytes.Buffer does not fail
	return buf.Bytes(), dropped, false
}

func matchesAny(rec []string, match func(string) bool) bool {
	for _, f := range rec {
		if match(f) {
			return true
		}
	}
	return false
}

// ExportUsage is how many objects and bytes the object store holds under an export area
// (exports/<area>/), and whether rel is one of them: the MCP export tools' quota.
func (s *Store) ExportUsage(area, rel string) (files int, bytes int64, exists bool, err error) {
	r := s.Blobs.remote
	if r == nil {
		return 0, 0, false, errors.New("storage: no object store for exports")
	}
	ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
	defer cancel()
	prefix := r.prefix + "exports/" + area + "/"
	for o := range r.c.ListObjects(ctx, r.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return files, bytes, exists, o.Err
		}
		files++
		bytes += o.Size
		exists = exists || o.Key == prefix+rel
	}
	return files, bytes, exists, nil
}
