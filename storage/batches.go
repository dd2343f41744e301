package storage

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// Batch statuses (DESIGN §11).
const (
	BatchQueued     = "queued"
	BatchProcessing = "processing"
	BatchCompleted  = "completed"
	BatchFailed     = "failed"
	BatchCancelled  = "cancelled"
)

// Upload is an upload batch: the files of one POST /books and the books they become.
// It is created by the workspace actor together with its books, then owned by the conversion
// supervisor.
type Upload struct {
	ID          string       `json:"id"`
	Workspace   int64        `json:"workspace_id"`
	Mode        Mode         `json:"mode"`
	Seq         uint64       `json:"seq"` // queue position
	Status      string       `json:"status"`
	AutoLinks   bool         `json:"auto_links"`
	Files       []UploadFile `json:"files"`
	CreatedAt   time.Time    `json:"created_at"`
	StartedAt   *time.Time   `json:"started_at"`
	FinishedAt  *time.Time   `json:"finished_at"`
	CancelledAt *time.Time   `json:"cancelled_at"`
	// Attempts counts starts of the conversion (a crash mid-conversion starts it again).
	Attempts int `json:"attempts"`
	// Cleaned is set once a cancelled batch's books and files are gone.
	Cleaned bool `json:"cleaned,omitempty"`
}

// Tenant of the batch.
func (u *Upload) Tenant() Tenant { return Tenant{Workspace: u.Workspace, Mode: u.Mode} }

// Active reports whether the batch is still queued or converting.
func (u *Upload) Active() bool { return u.Status == BatchQueued || u.Status == BatchProcessing }

// UploadFile is one file of a batch.
type UploadFile struct {
	Name   string `json:"name"` // the client's file name
	Kind   string `json:"kind"` // pdf, docx, ..., as recognised from the content
	Size   int64  `json:"size"`
	BookID string `json:"book_id"` // random id of the book it becomes (fixed at upload)
	Status string `json:"status"`  // queued, processing, completed, failed, cancelled
	Error  string `json:"error,omitempty"`
	Pages  int    `json:"pages"`
}

func uploadKey(t Tenant, id string) []byte { return cat(t.prefix(), []byte("upload/"), []byte(id)) }
func uploadActiveKey(t Tenant, id string) []byte {
	return cat(t.prefix(), []byte("upact/"), []byte(id))
}

const convQueuePrefix = "g/convq/"

func convQueueKey(seq uint64) []byte { return cat([]byte(convQueuePrefix), u64(seq)) }

// QueueRef is an entry of the durable conversion queue.
type QueueRef struct {
	Seq    uint64
	Tenant Tenant
	ID     string
}

// PutUpload stages a batch record, keeping its active index (while queued or processing) and its
// queue entry (while there is work left: converting, or cleaning up after a cancel) in step.
func (bt *Batch) PutUpload(u *Upload) error {
	t := u.Tenant()
	if u.Active() {
		bt.set(uploadActiveKey(t, u.ID), nil)
	} else {
		bt.del(uploadActiveKey(t, u.ID))
	}
	// The queue entry stays while there is work: converting, or cleaning up after a cancel.
	if u.Active() || (u.Status == BatchCancelled && !u.Cleaned) {
		bt.set(convQueueKey(u.Seq), cat(t.bytes(), []byte(u.ID)))
	} else {
		bt.del(convQueueKey(u.Seq))
	}
	return bt.setJSON(uploadKey(t, u.ID), u)
}

// Upload reads a batch of a tenant.
func (s *Store) Upload(t Tenant, id string) (*Upload, error) {
	var u Upload
	if err := s.getJSON(uploadKey(t, id), &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// ActiveUploads lists a tenant's queued and processing batches (at most limit).
func (s *Store) ActiveUploads(t Tenant, limit int) ([]*Upload, error) {
	p := cat(t.prefix(), []byte("upact/"))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*Upload
	for it.First(); it.Valid() && len(out) < limit; it.Next() {
		u, err := s.Upload(t, string(it.Key()[len(p):]))
		if errors.Is(err, errs.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, it.Error()
}

// ConversionQueue lists the durable queue in order.
func (s *Store) ConversionQueue() ([]QueueRef, error) { return s.readQueue(convQueuePrefix) }

// readQueue lists a durable queue of QueueRef entries (<prefix><seq> → <tenant><id>) in order:
// the conversion and bulk settings queues.
func (s *Store) readQueue(prefix string) ([]QueueRef, error) {
	p := []byte(prefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []QueueRef
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key()[len(p):], it.Value()
		if len(k) != 8 || len(v) < tenantLen {
			continue
		}
		t, ok := tenantFromBytes(v[:tenantLen])
		if !ok {
			continue
		}
		out = append(out, QueueRef{Seq: binary.BigEndian.Uint64(k), Tenant: t, ID: string(v[tenantLen:])})
	}
	return out, it.Error()
}

// UploadDir is where a batch's uploaded files wait for conversion.
func (s *Store) UploadDir(batchID string) string { return filepath.Join(s.dir, "uploads", batchID) }

// WorkDir is a batch's scratch space during conversion.
func (s *Store) WorkDir(batchID string) string { return filepath.Join(s.dir, "work", batchID) }

// RemoveBatchFiles deletes a batch's upload and scratch folders.
func (s *Store) RemoveBatchFiles(batchID string) error {
	if !ValidName(batchID) {
		return nil
	}
	err1 := os.RemoveAll(s.UploadDir(batchID))
	err2 := os.RemoveAll(s.WorkDir(batchID))
	if s.Blobs.remote != nil && err1 == nil {
		err1 = s.Blobs.remote.removeUpload(batchID)
	}
	if err1 != nil {
		return err1
	}
	return err2
}
