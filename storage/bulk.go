package storage

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// Bulk settings batches (spec §3.4, §4.1.1; docs/DECISIONS.md "Bulk settings"). Keys:
//
//	t/<tenant>/bulk/<batch id>              BulkBatch
//	t/<tenant>/bulki/<batch id>/<index 4B>  BulkItem: one per book of the batch, in request order
//	t/<tenant>/bulkact/<batch id>           present while the batch is queued or running
//	g/bulkq/<seq>                           bulk queue: tenant + batch id, while there is work
//
// A batch, its items, its active index entry and its queue entry are written in one commit by
// the bulk supervisor. An item's outcome is written by the book actor of its book, in the same
// commit as the book (or alone when the item fails), so after any crash an item is either
// applied with its outcome or neither; the supervisor only writes items it never dispatched
// (cancelled ones).

// Bulk batch statuses.
const (
	BulkQueued              = "queued"
	BulkRunning             = "running"
	BulkCompleted           = "completed"
	BulkCompletedWithErrors = "completed_with_errors"
	BulkFailed              = "failed"
	BulkCancelled           = "cancelled"
)

// Bulk item statuses.
const (
	ItemPending   = "pending"
	ItemSucceeded = "succeeded"
	ItemFailed    = "failed"
	ItemCancelled = "cancelled"
)

// BulkBatch is a bulk settings batch: the settings to apply to a list of books.
type BulkBatch struct {
	ID        string `json:"id"`
	Workspace int64  `json:"workspace_id"`
	Mode      Mode   `json:"mode"`
	Seq       uint64 `json:"seq"` // queue position
	Status    string `json:"status"`
	Total     int    `json:"total"`
	// Settings is the settings object of the request, as validated (spec §4.1.1 keys), less
	// what it does not apply (eod_enabled, eod_lists) and with pdf_password as whether one is
	// set (true) or removed (false): the password itself is PDFPassword, hashed.
	Settings map[string]any `json:"settings"`
	// PDFPassword is the salted hash of the pdf_password the batch sets (nil for none).
	PDFPassword *PasswordHash `json:"pdf_password,omitempty"`
	RetryOf     string        `json:"retry_of,omitempty"`
	CreatedAt   time.Time     `json:"created_at"`
	StartedAt   *time.Time    `json:"started_at"`
	FinishedAt  *time.Time    `json:"finished_at"`
	CancelledAt *time.Time    `json:"cancelled_at"`
	// CancelRequested is set (with CancelledAt) when a running batch is cancelled: no item is
	// started after it, and the batch becomes cancelled once the items in flight are back (also
	// after a restart).
	CancelRequested bool `json:"cancel_requested,omitempty"`
}

// PasswordHash is a salted password hash (the password is never stored).
type PasswordHash struct {
	Salt []byte `json:"salt"`
	Hash []byte `json:"hash"`
}

// Tenant of the batch.
func (b *BulkBatch) Tenant() Tenant { return Tenant{Workspace: b.Workspace, Mode: b.Mode} }

// Active reports whether the batch is still queued or running.
func (b *BulkBatch) Active() bool { return b.Status == BulkQueued || b.Status == BulkRunning }

// BulkItem is one book of a batch and its outcome.
type BulkItem struct {
	Index  int    `json:"index"`
	BookID string `json:"book_id"`
	// Expected is the settings_revision the client read: the item applies only if the book
	// still has it.
	Expected        string     `json:"settings_revision"`
	Status          string     `json:"status"`
	ErrorCode       string     `json:"error_code,omitempty"`
	ErrorMessage    string     `json:"error_message,omitempty"`
	NewRevision     string     `json:"new_settings_revision,omitempty"`
	CurrentRevision string     `json:"current_settings_revision,omitempty"`
	FinishedAt      *time.Time `json:"finished_at"`
}

func bulkKey(t Tenant, id string) []byte { return cat(t.prefix(), []byte("bulk/"), []byte(id)) }
func bulkActiveKey(t Tenant, id string) []byte {
	return cat(t.prefix(), []byte("bulkact/"), []byte(id))
}
func bulkItemPrefix(t Tenant, id string) []byte {
	return cat(t.prefix(), []byte("bulki/"), []byte(id), []byte{'/'})
}
func bulkItemKey(t Tenant, id string, index int) []byte {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(index))
	return cat(bulkItemPrefix(t, id), n[:])
}

const bulkQueuePrefix = "g/bulkq/"

func bulkQueueKey(seq uint64) []byte { return cat([]byte(bulkQueuePrefix), u64(seq)) }

// PutBulkBatch stages a batch record with its active index entry and its queue entry, both kept
// while the batch is queued or running.
func (bt *Batch) PutBulkBatch(b *BulkBatch) error {
	t := b.Tenant()
	if b.Active() {
		bt.set(bulkActiveKey(t, b.ID), nil)
		bt.set(bulkQueueKey(b.Seq), cat(t.bytes(), []byte(b.ID)))
	} else {
		bt.del(bulkActiveKey(t, b.ID))
		bt.del(bulkQueueKey(b.Seq))
	}
	return bt.setJSON(bulkKey(t, b.ID), b)
}

// PutBulkItem stages an item of a batch.
func (bt *Batch) PutBulkItem(t Tenant, batchID string, it *BulkItem) error {
	return bt.setJSON(bulkItemKey(t, batchID, it.Index), it)
}

// BulkBatch reads a batch of a tenant.
func (s *Store) BulkBatch(t Tenant, id string) (*BulkBatch, error) {
	var b BulkBatch
	if err := s.getJSON(bulkKey(t, id), &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// BulkItem reads one item of a batch.
func (s *Store) BulkItem(t Tenant, batchID string, index int) (*BulkItem, error) {
	var it BulkItem
	if err := s.getJSON(bulkItemKey(t, batchID, index), &it); err != nil {
		return nil, err
	}
	return &it, nil
}

// BulkItems reads every item of a batch in order.
func (s *Store) BulkItems(t Tenant, batchID string) ([]*BulkItem, error) {
	return listJSON[BulkItem](s, bulkItemPrefix(t, batchID), false)
}

// BulkBatchView reads a batch and its items from one snapshot, so the items and the batch's
// status agree.
func (s *Store) BulkBatchView(t Tenant, id string) (*BulkBatch, []*BulkItem, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	v, closer, err := snap.Get(bulkKey(t, id))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, errs.ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	var b BulkBatch
	err = codec.Unmarshal(v, &b)
	_ = closer.Close()
	if err != nil {
		return nil, nil, err
	}
	p := bulkItemPrefix(t, id)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	items := make([]*BulkItem, 0, b.Total)
	for ok := it.First(); ok; ok = it.Next() {
		var item BulkItem
		if err := codec.Unmarshal(it.Value(), &item); err != nil {
			return nil, nil, err
		}
		items = append(items, &item)
	}
	return &b, items, it.Error()
}

// ActiveBulkCount counts a tenant's queued and running batches, stopping at max (0 = all).
func (s *Store) ActiveBulkCount(t Tenant, max int) (int, error) {
	return s.countPrefix(cat(t.prefix(), []byte("bulkact/")), max)
}

// BulkQueue lists the durable bulk queue in order.
func (s *Store) BulkQueue() ([]QueueRef, error) { return s.readQueue(bulkQueuePrefix) }

// BookAccessEntries lists up to limit addresses and domains of a book's access list, in order.
func (s *Store) BookAccessEntries(t Tenant, rid string, limit int) ([]string, error) {
	p := cat(t.prefix(), []byte("bsub/"+rid+"/"))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := []string{}
	for it.First(); it.Valid() && len(out) < limit; it.Next() {
		out = append(out, string(it.Key()[len(p):]))
	}
	return out, it.Error()
}
