package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Blobs stores a book's files (page images, thumbnails) in one folder per book, named by
// content hash: a file's name never changes meaning, so it is served as immutable, and deleting
// a book removes its folder.
//
// With Options.BlobURL the files are objects in an S3-compatible store instead (blobs_s3.go):
// every method then works on the bucket, and Path has no file to give (Open streams).
type Blobs struct {
	dir    string
	remote *s3Blobs
}

func openBlobs(dir string) (*Blobs, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("storage: create blob dir: %w", err)
	}
	return &Blobs{dir: dir}, nil
}

// Put stores data for book rid durably and returns its name ("<hash>.<ext>").
func (b *Blobs) Put(rid string, data []byte, ext string) (string, error) {
	if !ValidName(rid) {
		return "", fmt.Errorf("storage: bad book id %q", rid)
	}
	if !ValidName(ext) || strings.Contains(ext, ".") {
		return "", fmt.Errorf("storage: bad file extension %q", ext)
	}
	if b.remote != nil {
		return b.remote.putBytes(rid, data, ext)
	}
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:16]) + "." + ext
	dir := filepath.Join(b.dir, rid)
	final := filepath.Join(dir, name)
	if _, err := os.Stat(final); err == nil {
		return name, nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return name, syncDir(dir)
}

// PutFile moves the file at path (on the same filesystem as the blob store) into book rid's
// folder, named by its content hash, and returns the name. The source is gone afterwards. The
// file and its folder entry are synced before it returns.
func (b *Blobs) PutFile(rid, path, ext string) (string, error) {
	return b.putFile(rid, path, ext, true)
}

// MoveFile is PutFile without syncing: many files are moved, then Sync makes them all durable
// with one flush instead of two per file.
func (b *Blobs) MoveFile(rid, path, ext string) (string, error) {
	return b.putFile(rid, path, ext, false)
}

// Sync flushes everything written to the blob store's filesystem (syncfs), making files moved
// with MoveFile durable.
func (b *Blobs) Sync() error {
	if b.remote != nil {
		return nil // an acknowledged PUT is durable
	}
	d, err := os.Open(b.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}

func (b *Blobs) putFile(rid, path, ext string, sync bool) (string, error) {
	if !ValidName(rid) {
		return "", fmt.Errorf("storage: bad book id %q", rid)
	}
	if !ValidName(ext) || strings.Contains(ext, ".") {
		return "", fmt.Errorf("storage: bad file extension %q", ext)
	}
	if b.remote != nil {
		return b.remote.putFile(rid, path, ext)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	if err == nil && sync {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		return "", err
	}
	name := hex.EncodeToString(h.Sum(nil)[:16]) + "." + ext
	dir := filepath.Join(b.dir, rid)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if err := os.Rename(path, filepath.Join(dir, name)); err != nil {
		return "", err
	}
	if !sync {
		return name, nil
	}
	return name, syncDir(dir)
}

// Path is the file path of a stored blob; ok is false for names that cannot be blobs, and
// for every name when the blobs are in an object store (Open serves both).
func (b *Blobs) Path(rid, name string) (string, bool) {
	if !ValidName(rid) || !ValidName(name) || b.remote != nil {
		return "", false
	}
	return filepath.Join(b.dir, rid, name), true
}

// Open streams a stored blob and gives its size; a missing one is os.ErrNotExist.
func (b *Blobs) Open(rid, name string) (io.ReadCloser, int64, error) {
	if !ValidName(rid) || !ValidName(name) {
		return nil, 0, os.ErrNotExist
	}
	if b.remote != nil {
		return b.remote.open(rid, name)
	}
	f, err := os.Open(filepath.Join(b.dir, rid, name))
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		f.Close()
		return nil, 0, os.ErrNotExist
	}
	return f, st.Size(), nil
}

// Remote says whether the blobs are in an object store.
func (b *Blobs) Remote() bool { return b.remote != nil }

// DeleteBook removes every file of a book.
func (b *Blobs) DeleteBook(rid string) error {
	if !ValidName(rid) {
		return fmt.Errorf("storage: bad book id %q", rid)
	}
	if b.remote != nil {
		return b.remote.removeFolder(rid)
	}
	return os.RemoveAll(filepath.Join(b.dir, rid))
}

// ValidName accepts names made of [A-Za-z0-9._-] that do not start with a dot.
func ValidName(s string) bool {
	if s == "" || len(s) > 128 || strings.HasPrefix(s, ".") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Sweep removes the folders of books for which keep returns false; it returns how many went.
func (b *Blobs) Sweep(keep func(rid string) bool) (int, error) {
	if b.remote != nil {
		folders, err := b.remote.folders()
		if err != nil {
			return 0, err
		}
		n := 0
		for _, f := range folders {
			if !ValidName(f) || keep(f) {
				continue
			}
			if err := b.remote.removeFolder(f); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !ValidName(e.Name()) || keep(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(b.dir, e.Name())); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Remove deletes one file of a folder (a missing file is not an error).
func (b *Blobs) Remove(folder, name string) error {
	if !ValidName(folder) || !ValidName(name) {
		return fmt.Errorf("storage: bad file %q/%q", folder, name)
	}
	if b.remote != nil {
		return b.remote.remove(folder, name)
	}
	if err := os.Remove(filepath.Join(b.dir, folder, name)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
