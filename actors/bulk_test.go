package actors

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
	"flipbook/storage"
)

func (e *env) waitBulk(tn storage.Tenant, id string) *storage.BulkBatch {
	e.tb.Helper()
	var b *storage.BulkBatch
	testutil.Eventually(e.tb, 20*time.Second, 5*time.Millisecond, func() error {
		var err error
		b, err = e.st.BulkBatch(tn, id)
		require.NoError(e.tb, err)
		if b.Active() {
			return fmt.Errorf("bulk batch %s did not finish: %s", id, b.Status)
		}
		return nil
	})
	return b
}

// An item asked of its book actor several times (a runner asking again after a timeout, a
// batch resumed after a restart) is applied once: the outcome is recorded with the book.
func TestBulkItemAppliedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tn := storage.Tenant{Workspace: 1, Mode: storage.ModeLive}
	bk := createBook(t, e, tn, storage.StatusDraft, "once")
	require.NoError(t, e.sys.PauseBulk(true))
	v, err := e.sys.CreateBulk(tn, []storage.BulkItem{{BookID: bk.RandomID, Expected: "1"}}, map[string]any{"title": "Renamed"})
	require.NoError(t, err)
	require.Equal(t, storage.BulkQueued, v.Batch.Status)

	msg := &applyBulkItem{batch: v.Batch.ID, item: *v.Items[0], patch: BulkPatch(v.Batch.Settings, v.Batch.PDFPassword)}
	var wg sync.WaitGroup
	outcomes := make([]*storage.BulkItem, 4)
	for i := range outcomes {
		wg.Go(func() {
			out, err := askT[*storage.BulkItem](e.sys, e.sys.workspace(tn), msg)
			require.NoError(t, err)
			outcomes[i] = out
		})
	}
	wg.Wait()
	for _, o := range outcomes {
		require.Equal(t, storage.ItemSucceeded, o.Status)
		require.Equal(t, "2", o.NewRevision)
		require.Equal(t, outcomes[0].FinishedAt, o.FinishedAt, "one outcome, answered again")
	}
	require.Equal(t, "2", e.book(tn, bk.RandomID).SettingsRevision())

	// The supervisor finds the item decided and finishes the batch without applying it again.
	require.NoError(t, e.sys.PauseBulk(false))
	b := e.waitBulk(tn, v.Batch.ID)
	require.Equal(t, storage.BulkCompleted, b.Status)
	got := e.book(tn, bk.RandomID)
	require.Equal(t, "2", got.SettingsRevision())
	require.Equal(t, "Renamed", got.Name)
}

// A batch whose cancel was recorded while it ran is finished as cancelled at the next start.
func TestBulkCancelRecordedBeforeStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tn := storage.Tenant{Workspace: 1, Mode: storage.ModeLive}
	a, b := createBook(t, e, tn, storage.StatusDraft, "a"), createBook(t, e, tn, storage.StatusDraft, "b")
	require.NoError(t, e.sys.PauseBulk(true))
	v, err := e.sys.CreateBulk(tn, []storage.BulkItem{{BookID: a.RandomID, Expected: "1"}, {BookID: b.RandomID, Expected: "1"}},
		map[string]any{"flip_sound": false})
	require.NoError(t, err)
	// As a stop right after the cancel leaves it: running, the first item applied, cancel requested.
	_, err = askT[*storage.BulkItem](e.sys, e.sys.workspace(tn), &applyBulkItem{batch: v.Batch.ID, item: *v.Items[0], patch: BulkPatch(v.Batch.Settings, v.Batch.PDFPassword)})
	require.NoError(t, err)
	rec := *v.Batch
	now := time.Now().UTC()
	rec.Status, rec.StartedAt, rec.CancelRequested, rec.CancelledAt = storage.BulkRunning, &now, true, &now
	bt := e.st.NewBatch()
	require.NoError(t, bt.PutBulkBatch(&rec))
	require.NoError(t, bt.Commit())
	e.stop()
	e.start()

	done := e.waitBulk(tn, v.Batch.ID)
	require.Equal(t, storage.BulkCancelled, done.Status)
	require.Equal(t, now, done.CancelledAt.UTC())
	items, err := e.st.BulkItems(tn, v.Batch.ID)
	require.NoError(t, err)
	require.Equal(t, storage.ItemSucceeded, items[0].Status)
	require.Equal(t, storage.ItemCancelled, items[1].Status)
	require.Equal(t, "2", e.book(tn, a.RandomID).SettingsRevision())
	require.Equal(t, "1", e.book(tn, b.RandomID).SettingsRevision())
	require.Equal(t, 0, mustCount(t, e, tn), "no unfinished batch is left")
}

func mustCount(t *testing.T, e *env, tn storage.Tenant) int {
	n, err := e.st.ActiveBulkCount(tn, 0)
	require.NoError(t, err)
	return n
}

// BulkPatch maps the bulk settings object like PUT and leaves the status and its rules alone.
func TestBulkPatch(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	past := now.Add(-time.Hour)
	b := &storage.Book{Name: "old", Status: storage.StatusPublish, ExpiresAt: &past,
		Settings: storage.Settings{FullscreenEnabled: true, SoundEnabled: true, AnimationType: "flip"}}
	p := BulkPatch(map[string]any{"title": "new", "allow_fullscreen": false, "flip_sound": false, "downloadable_pdf": "single",
		"pdf_privacy_status": "private", "description": nil, "eod_enabled": true, "eod_lists": []any{"x@example.com"},
		"image_display": "repeat", "watermark": "W"}, nil)
	require.NoError(t, p.apply(b, now), "an expired publish book is not refused: the status is not touched")
	require.Equal(t, storage.StatusPublish, b.Status)
	require.Equal(t, "new", b.Name)
	require.False(t, b.Settings.FullscreenEnabled)
	require.False(t, b.Settings.SoundEnabled)
	require.True(t, b.Settings.Downloadable)
	require.Equal(t, "single", b.Extra.DownloadMode)
	require.Equal(t, "private", *b.Settings.Privacy)
	require.Equal(t, "repeat", *b.Settings.ImageDisplay)
	require.Equal(t, "W", *b.Extra.Watermark)
	require.False(t, b.Settings.EODEnabled, "eod_enabled is derived, never set")
	require.NoError(t, BulkPatch(map[string]any{"downloadable_pdf": "false"}, nil).apply(b, now))
	require.False(t, b.Settings.Downloadable)
	require.Empty(t, b.Extra.DownloadMode)

	// A batch keeps no password: sealBulkSettings hashes it apart and keeps whether one is set
	// (and drops the ignored access-list keys); the patch sets the book's hash from it.
	sealed, hash := sealBulkSettings(map[string]any{"pdf_password": "s3cret", "eod_lists": []any{"x@example.com"}, "eod_enabled": true, "title": "t"})
	require.Equal(t, map[string]any{"pdf_password": true, "title": "t"}, sealed)
	require.NotNil(t, hash)
	require.NoError(t, BulkPatch(sealed, hash).apply(b, now))
	require.Equal(t, HashPassword(b.Extra.PDFPasswordSalt, "s3cret"), b.Extra.PDFPasswordHash)
	sealed, hash = sealBulkSettings(map[string]any{"pdf_password": nil})
	require.Equal(t, map[string]any{"pdf_password": false}, sealed)
	require.Nil(t, hash)
	require.NoError(t, BulkPatch(sealed, hash).apply(b, now))
	require.Nil(t, b.Extra.PDFPasswordHash, "removed")
	// A batch stored before sealing still applies its password.
	require.NoError(t, BulkPatch(map[string]any{"pdf_password": "old"}, nil).apply(b, now))
	require.Equal(t, HashPassword(b.Extra.PDFPasswordSalt, "old"), b.Extra.PDFPasswordHash)
	require.NoError(t, BulkPatch(map[string]any{"pdf_password": nil}, nil).apply(b, now))
	require.Nil(t, b.Extra.PDFPasswordHash)
}
