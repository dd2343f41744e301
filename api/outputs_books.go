package api

import "flipbook/actors/convert"

// The answers of the book, upload and batch operations (spec §4.1) and of health and identity
// (spec §4.10), as Go types: httpapi builds them, and their response schemas are derived from
// them (SchemaOf).

// CursorMeta is the meta of every cursor-paginated list (docs/API.md, Pagination): limit is
// the page size used (the default when the request gave none).
type CursorMeta struct {
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
	Limit      int     `json:"limit"`
}

// BookDeleted is the data of books.delete.
type BookDeleted struct {
	Message string `json:"message"`
}

// BookDeletedMeta is the meta of books.delete: the deleted book's id.
type BookDeletedMeta struct {
	BookID string `json:"book_id"`
}

// BookCreated is the data of books.create_from_template: the new draft book.
type BookCreated struct {
	Book Raw[Book] `json:"book"`
}

// UploadAccepted is the data of books.upload: the batch converting the file and its book.
type UploadAccepted struct {
	BatchID string   `json:"batch_id"`
	Status  string   `json:"status"`
	BookIDs []string `json:"book_ids"`
}

// Batch is an upload batch (spec §3.2, DESIGN §11) with the Book objects it produced.
type Batch struct {
	ID          string        `json:"id"`
	BatchID     string        `json:"batch_id"`
	Status      string        `json:"status" enum:"queued|processing|completed|failed|cancelled"`
	Progress    BatchProgress `json:"progress"`
	Files       []BatchFile   `json:"files"`
	Books       []Raw[Book]   `json:"books" desc:"the Book objects the batch produced (those still existing); the same in every form of the batch"`
	CreatedAt   *string       `json:"created_at" format:"date-time"`
	StartedAt   *string       `json:"started_at" format:"date-time"`
	FinishedAt  *string       `json:"finished_at" format:"date-time"`
	CancelledAt *string       `json:"cancelled_at" format:"date-time"`
}

// BatchProgress counts a batch's files by state.
type BatchProgress struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Pending   int `json:"pending"`
	Failed    int `json:"failed"`
}

// BatchFile is one file of a batch and the book it becomes.
type BatchFile struct {
	Name   string  `json:"name"`
	Kind   string  `json:"kind"`
	Size   int64   `json:"size"`
	BookID string  `json:"book_id"`
	Status string  `json:"status"`
	Pages  int     `json:"page_count"`
	Error  *string `json:"error"`
}

// ActiveUploads is the data of books.active_upload_status: the batches still queued or
// converting, and the state of the most advanced (idle when none).
type ActiveUploads struct {
	State   string  `json:"state" enum:"idle|queued|processing"`
	Batches []Batch `json:"batches"`
}

// Health is GET /health: the spec's three strings, and details on what this server can do.
// status is "degraded" (still 200) when a document converter cannot run (uploads of its kinds
// answer 503 with the reason) or a cluster takeover failed.
type Health struct {
	Status    string        `json:"status"`
	Timestamp string        `json:"timestamp"`
	Version   string        `json:"version"`
	Details   HealthDetails `json:"details"`
}

// HealthDetails are the document converters and, in cluster mode, this node's part of the
// cluster (absent in one process).
type HealthDetails struct {
	Converters []convert.Converter `json:"converters"`
	Cluster    *ClusterHealth      `json:"cluster,omitempty"`
}

// ClusterHealth is a cluster node's part of GET /health (docs/OPERATIONS.md "Running a
// cluster"): its partitions, who owns each, the restores under way and how far its copy of
// the global table lags, from memory only.
type ClusterHealth struct {
	Node       string            `json:"node"`
	URL        string            `json:"url"`
	Partitions int               `json:"partitions"`
	Owned      []int             `json:"owned"`
	Ready      []int             `json:"ready"`
	Owners     map[string]string `json:"owners"` // partition → node
	Restoring  []ClusterRestore  `json:"restoring"`
	GlobalLag  int64             `json:"global_lag"`
	Error      string            `json:"takeover_error,omitempty"`
}

// ClusterRestore is a partition being restored from the changelog: its offsets.
type ClusterRestore struct {
	Partition int   `json:"partition"`
	From      int64 `json:"from"`
	To        int64 `json:"to"`
	Applied   int64 `json:"applied"`
}
