package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/actors/convert"
	"flipbook/errs"
	"flipbook/storage"
)

// MaxConversionAttempts bounds how often a batch is started again after the server stopped in
// the middle of it (a file that crashes the process must not do so forever).
const MaxConversionAttempts = 3

// ConversionOptions configure the conversion supervisor.
type ConversionOptions struct {
	Workers  int // batches converted at once, and renderer processes at once
	LongEdge int // page image size, longer side in pixels
	Chunk    int // pages per renderer process
	MaxPages int // most pages of a PDF or Office document (0: convert.DefaultMaxPages)
	// NoText turns page text off (issue 28): no pdftotext, no OCR, no backfill; books are
	// page images only (and search finds nothing in them).
	NoText bool
	// OCRLanguages are Tesseract's languages ("eng+deu"; "": convert.DefaultOCRLanguages).
	OCRLanguages string
}

// Messages of the conversion supervisor.
type (
	batchQueued struct{ ref storage.QueueRef }
	jobFinished struct {
		ref       storage.QueueRef
		files     []storage.UploadFile
		cancelled bool
	}
	cleanupDone struct{ ref storage.QueueRef }
	// CancelUpload → *storage.Upload (answered once the conversion has stopped and the batch's
	// books and files are gone); errs.ErrNotFound, errs.ErrConflict when it has finished.
	CancelUpload struct {
		Tenant storage.Tenant
		ID     string
	}
)

type convJob struct {
	ref      storage.QueueRef
	cancel   context.CancelFunc
	userStop bool // cancelled by the customer (not by shutdown)
	waiters  []*actor.PID
}

// conversion is the supervisor of document conversion. It owns upload batch records after
// their creation and the queue g/convq/; workers are goroutines (they may wait on book actors).
type conversion struct {
	s       *System
	queue   []storage.QueueRef
	known   map[string]bool // batch ids queued, running or cleaning
	running map[string]*convJob
	waiting map[string][]*actor.PID // cancels waiting for a cleanup
}

func newConversion(s *System) actor.Producer {
	return func() actor.Receiver {
		return &conversion{s: s, known: map[string]bool{}, running: map[string]*convJob{}, waiting: map[string][]*actor.PID{}}
	}
}

func (v *conversion) reset() {
	v.queue, v.known, v.waiting = nil, map[string]bool{}, map[string][]*actor.PID{}
	for _, j := range v.running {
		v.known[j.ref.ID] = true
	}
}

func (v *conversion) Receive(c *actor.Context) {
	defer v.publish()
	switch m := c.Message().(type) {
	case actor.Initialized:
	case actor.Started:
		v.recover(c)
		v.pump(c)
	case actor.Stopped:
		// Shutdown: the batches stay processing and resume on restart. A clean stop is not a
		// failed attempt (the attempt cap is for files that take the process down), so the
		// attempt is given back.
		for _, j := range v.running {
			j.cancel()
			if u, err := v.s.Store.Upload(j.ref.Tenant, j.ref.ID); err == nil && u.Status == storage.BatchProcessing && u.Attempts > 0 {
				u.Attempts--
				if err := v.write(u); err != nil {
					v.s.opts.Logger.Error("conversion: record stop", "batch", u.ID, "err", err)
				}
			}
		}
	case resumeQueues:
		v.recover(c)
		v.pump(c)
	case *batchQueued:
		if !v.known[m.ref.ID] {
			v.known[m.ref.ID] = true
			v.queue = append(v.queue, m.ref)
		}
		v.pump(c)
	case *jobFinished:
		v.finished(c, m)
		v.pump(c)
	case *cleanupDone:
		v.cleaned(c, m.ref)
	case *CancelUpload:
		v.cancelUpload(c, m)
	}
}

// convMetrics are the conversion figures metrics read (System.ConversionStats).
type convMetrics struct {
	queued, running atomic.Int64
	pages           atomic.Uint64
}

// publish records the queue's length and the running batches after each message.
func (v *conversion) publish() {
	v.s.convM.queued.Store(int64(len(v.queue)))
	v.s.convM.running.Store(int64(len(v.running)))
}

// ConversionStats are the conversion supervisor's figures.
type ConversionStats struct {
	Queued  int64  // batches waiting for a worker
	Running int64  // batches being converted
	Pages   uint64 // pages rendered since start (failed and cancelled conversions included)
}

// ConversionStats reports the queue, the running batches and the pages rendered.
func (s *System) ConversionStats() ConversionStats {
	return ConversionStats{Queued: s.convM.queued.Load(), Running: s.convM.running.Load(), Pages: s.convM.pages.Load()}
}

// recover reloads the durable queue: interrupted batches first, then queued ones in order;
// cancelled batches whose cleanup did not finish are cleaned up.
func (v *conversion) recover(c *actor.Context) {
	refs, err := v.s.Store.ConversionQueue()
	if err != nil {
		v.s.opts.Logger.Error("conversion: read queue", "err", err)
		return
	}
	var interrupted, queued []storage.QueueRef
	for _, ref := range refs {
		if v.known[ref.ID] || !v.s.owns(ref.Tenant.Workspace) {
			continue // running or queued here already, or another node's
		}
		u, err := v.s.Store.Upload(ref.Tenant, ref.ID)
		if err != nil {
			continue
		}
		v.known[ref.ID] = true
		switch u.Status {
		case storage.BatchProcessing:
			interrupted = append(interrupted, ref)
		case storage.BatchQueued:
			queued = append(queued, ref)
		case storage.BatchCancelled:
			v.startCleanup(c, u)
		}
	}
	v.queue = append(v.queue, append(interrupted, queued...)...)
}

// pump starts queued batches while workers are free.
func (v *conversion) pump(c *actor.Context) {
	for len(v.running) < v.s.conv.Workers && len(v.queue) > 0 {
		ref := v.queue[0]
		v.queue = v.queue[1:]
		u, err := v.s.Store.Upload(ref.Tenant, ref.ID)
		if err != nil || u.Status != storage.BatchQueued && u.Status != storage.BatchProcessing || !v.s.owns(ref.Tenant.Workspace) {
			delete(v.known, ref.ID)
			continue
		}
		u.Attempts++
		if u.Attempts > MaxConversionAttempts {
			for i := range u.Files {
				if u.Files[i].Status != storage.BatchCompleted {
					u.Files[i].Status = storage.BatchFailed
					u.Files[i].Error = fmt.Sprintf("conversion did not finish after %d attempts", MaxConversionAttempts)
				}
			}
			v.finish(u)
			delete(v.known, ref.ID)
			go v.s.failBooks(u) // books are told by their actors; not from inside this actor
			continue
		}
		now := v.s.now()
		u.Status, u.StartedAt = storage.BatchProcessing, &now
		for i := range u.Files {
			if u.Files[i].Status == storage.BatchQueued || u.Files[i].Status == storage.BatchProcessing {
				u.Files[i].Status = storage.BatchProcessing
			}
		}
		if err := v.write(u); err != nil {
			v.s.opts.Logger.Error("conversion: start batch", "batch", u.ID, "err", err)
			v.queue = append(v.queue, ref)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		j := &convJob{ref: ref, cancel: cancel}
		v.running[ref.ID] = j
		pid := c.PID()
		v.s.workers.Add(1)
		go func() {
			defer v.s.workers.Done()
			files, cancelled := v.s.convertUpload(ctx, u)
			v.s.tell(pid, &jobFinished{ref: ref, files: files, cancelled: cancelled})
		}()
	}
}

func (v *conversion) write(u *storage.Upload) error {
	b := v.s.Store.NewBatch()
	if err := b.PutUpload(u); err != nil {
		b.Close()
		return err
	}
	return b.Commit()
}

// finish writes a batch's final status from its files (DESIGN §11: some failed → completed with
// progress.failed > 0; all failed → failed).
func (v *conversion) finish(u *storage.Upload) {
	t := v.s.now()
	u.Status = storage.BatchFailed
	for _, f := range u.Files {
		if f.Status == storage.BatchCompleted {
			u.Status = storage.BatchCompleted
		}
	}
	u.FinishedAt = &t
	if err := v.write(u); err != nil {
		v.s.opts.Logger.Error("conversion: finish batch", "batch", u.ID, "err", err)
	}
}

func (v *conversion) finished(c *actor.Context, m *jobFinished) {
	j := v.running[m.ref.ID]
	delete(v.running, m.ref.ID)
	u, err := v.s.Store.Upload(m.ref.Tenant, m.ref.ID)
	if err != nil {
		delete(v.known, m.ref.ID)
		return
	}
	if u.Status == storage.BatchCancelled || (j != nil && j.userStop) {
		if j != nil {
			v.waiting[u.ID] = append(v.waiting[u.ID], j.waiters...)
		}
		v.startCleanup(c, u)
		return
	}
	if m.cancelled { // stopped without a customer's cancel: shutdown; it resumes on restart
		delete(v.known, m.ref.ID)
		return
	}
	u.Files = m.files
	v.finish(u)
	delete(v.known, m.ref.ID)
}

func (v *conversion) cancelUpload(c *actor.Context, m *CancelUpload) {
	u, err := v.s.Store.Upload(m.Tenant, m.ID)
	if errors.Is(err, errs.ErrNotFound) {
		c.Respond(errs.ErrNotFound)
		return
	}
	if err != nil {
		c.Respond(err)
		return
	}
	if !u.Active() {
		c.Respond(errs.ErrConflict)
		return
	}
	now := v.s.now()
	u.Status, u.CancelledAt, u.FinishedAt = storage.BatchCancelled, &now, &now
	for i := range u.Files {
		if u.Files[i].Status != storage.BatchCompleted && u.Files[i].Status != storage.BatchFailed {
			u.Files[i].Status = storage.BatchCancelled
		}
	}
	if err := v.write(u); err != nil {
		c.Respond(err)
		return
	}
	v.waiting[u.ID] = append(v.waiting[u.ID], c.Sender())
	if j, ok := v.running[u.ID]; ok {
		j.userStop = true
		j.cancel() // the worker stops; jobFinished starts the cleanup
		return
	}
	for i, ref := range v.queue {
		if ref.ID == u.ID {
			v.queue = append(v.queue[:i], v.queue[i+1:]...)
			break
		}
	}
	v.startCleanup(c, u)
}

// startCleanup removes a cancelled batch's books and files in a goroutine (it waits on book
// actors), then reports cleanupDone.
func (v *conversion) startCleanup(c *actor.Context, u *storage.Upload) {
	v.known[u.ID] = true
	pid := c.PID()
	ref := storage.QueueRef{Seq: u.Seq, Tenant: u.Tenant(), ID: u.ID}
	v.s.workers.Add(1)
	go func() {
		defer v.s.workers.Done()
		for _, f := range u.Files {
			if _, err := v.s.DeleteBook(u.Tenant(), f.BookID); err != nil && !errors.Is(err, errs.ErrNotFound) {
				v.s.opts.Logger.Error("conversion: remove cancelled book", "book", f.BookID, "err", err)
				return // retried on the next start (the queue entry stays)
			}
			_ = v.s.Store.Blobs.DeleteBook(f.BookID)
		}
		if err := v.s.Store.RemoveBatchFiles(u.ID); err != nil {
			v.s.opts.Logger.Error("conversion: remove batch files", "batch", u.ID, "err", err)
		}
		v.s.tell(pid, &cleanupDone{ref: ref})
	}()
}

func (v *conversion) cleaned(c *actor.Context, ref storage.QueueRef) {
	delete(v.known, ref.ID)
	u, err := v.s.Store.Upload(ref.Tenant, ref.ID)
	if err == nil {
		u.Cleaned = true
		if err := v.write(u); err != nil {
			v.s.opts.Logger.Error("conversion: mark cleaned", "batch", u.ID, "err", err)
		}
	}
	for _, w := range v.waiting[ref.ID] {
		if u != nil {
			v.s.tell(w, u)
		} else {
			v.s.tell(w, err)
		}
	}
	delete(v.waiting, ref.ID)
}

// convertUpload converts every file of a batch (in a worker goroutine) and returns the files
// with their outcome; cancelled is true when ctx ended first.
func (s *System) convertUpload(ctx context.Context, u *storage.Upload) (files []storage.UploadFile, cancelled bool) {
	files = append([]storage.UploadFile(nil), u.Files...)
	t := u.Tenant()
	// A batch taken over from another node (cluster mode): its files come from the object store.
	for try := 1; ; try++ {
		err := s.Store.FetchUpload(u.ID)
		if err == nil {
			break
		}
		s.opts.Logger.Error("conversion: fetch the batch's files", "batch", u.ID, "try", try, "err", err)
		if try == 3 || ctx.Err() != nil {
			break // its files fail with the reason that they are missing
		}
		time.Sleep(time.Duration(try) * time.Second)
	}
	for i := range files {
		f := &files[i]
		if f.Status == storage.BatchCompleted || f.Status == storage.BatchFailed {
			continue
		}
		reason, pages, err := s.convertFile(ctx, u, i)
		if ctx.Err() != nil {
			return files, true
		}
		if err != nil {
			s.opts.Logger.Error("conversion: internal error", "batch", u.ID, "file", f.Name, "err", err)
			reason = "the conversion failed because of an internal error"
		}
		if reason != "" {
			f.Status, f.Error = storage.BatchFailed, reason
			if _, err := s.SetPages(t, &SetPages{RandomID: f.BookID, Failed: reason}); err != nil && !errors.Is(err, errs.ErrNotFound) {
				s.opts.Logger.Error("conversion: record failure", "book", f.BookID, "err", err)
			}
			_ = s.Store.Blobs.DeleteBook(f.BookID)
			continue
		}
		f.Status, f.Pages = storage.BatchCompleted, pages
	}
	if err := s.Store.RemoveBatchFiles(u.ID); err != nil {
		s.opts.Logger.Error("conversion: remove batch files", "batch", u.ID, "err", err)
	}
	return files, false
}

// UploadPath is where file i of a batch is kept until it is converted.
func UploadPath(st *storage.Store, batchID string, i int) string {
	return filepath.Join(st.UploadDir(batchID), "file-"+strconv.Itoa(i))
}

// convertFile converts file i of u into its book. It returns a customer-facing reason when the
// file cannot be converted, or an internal error.
func (s *System) convertFile(ctx context.Context, u *storage.Upload, i int) (reason string, pages int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	f := u.Files[i]
	start := time.Now()
	// One folder per attempt: renderer processes of an attempt cut short by a kill may still be
	// running and writing into theirs.
	work := filepath.Join(s.Store.WorkDir(u.ID), "attempt-"+strconv.Itoa(u.Attempts), strconv.Itoa(i))
	_ = os.RemoveAll(work)
	var fetch convert.Fetcher
	if f.Kind == convert.KindCatalog && s.opts.ImageFetcher != nil {
		var done func()
		fetch, done = s.opts.ImageFetcher()
		defer done()
	}
	var rendered atomic.Int64 // pages reported by the renderers as they finish (OnPages)
	res, err := convert.Convert(ctx, UploadPath(s.Store, u.ID, i), f.Kind, work, convert.Options{
		LongEdge: s.conv.LongEdge, MaxPages: s.conv.MaxPages, AutoLinks: u.AutoLinks, Slots: s.renderSlots, Chunk: s.conv.Chunk,
		NoText: s.conv.NoText, OCRLanguages: s.conv.OCRLanguages,
		Fetch: fetch,
		OnPages: func(n int) {
			rendered.Add(int64(n))
			s.convM.pages.Add(uint64(n))
		},
	})
	if err == nil && int64(len(res.Pages)) > rendered.Load() {
		// A catalog render reports no progress: its pages count when it is done.
		s.convM.pages.Add(uint64(int64(len(res.Pages)) - rendered.Load()))
	}
	if err != nil {
		if convert.IsFailure(err) {
			return err.Error(), 0, nil
		}
		return "", 0, err
	}
	renderedAt := time.Now()
	out, err := s.storePages(ctx, f.BookID, res.Pages)
	if err != nil {
		return "", 0, err
	}
	thumb, err := s.Store.Blobs.Put(f.BookID, res.Thumb, "jpg")
	if err != nil {
		return "", 0, err
	}
	doc := ""
	if res.PDF != "" {
		if doc, err = s.Store.Blobs.PutFile(f.BookID, res.PDF, "pdf"); err != nil {
			return "", 0, err
		}
	}
	if ctx.Err() != nil {
		return "", 0, ctx.Err()
	}
	stored := time.Now()
	_, err = s.SetPages(u.Tenant(), &SetPages{RandomID: f.BookID, Pages: out, Thumbnail: thumb, Document: doc, Texts: res.Text, Outline: res.Outline})
	if errors.Is(err, errs.ErrNotFound) {
		_ = s.Store.Blobs.DeleteBook(f.BookID)
		return "the book was deleted during its conversion", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	s.WantRenditions(u.Tenant(), f.BookID)
	s.opts.Logger.Info("converted", "batch", u.ID, "book", f.BookID, "kind", f.Kind, "pages", len(out),
		"convert", renderedAt.Sub(start).Round(time.Millisecond), "store", stored.Sub(renderedAt).Round(time.Millisecond),
		"total", time.Since(start).Round(time.Millisecond))
	return "", len(out), nil
}

// storeParallel is how many page files are moved (hashed and renamed) into the blob store at
// once.
const storeParallel = 8

// storePages moves rendered page files into the book's folder.
func (s *System) storePages(ctx context.Context, rid string, pages []convert.Page) ([]storage.Page, error) {
	out := make([]storage.Page, len(pages))
	storeErrs := make(chan error, storeParallel)
	sem := make(chan struct{}, storeParallel)
	var wg sync.WaitGroup
	for n, p := range pages {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(n int, p convert.Page) {
			defer func() { <-sem; wg.Done() }()
			name, err := s.Store.Blobs.MoveFile(rid, p.Path, "jpg")
			if err != nil {
				select {
				case storeErrs <- err:
				default:
				}
				return
			}
			out[n] = storage.Page{Number: n + 1, File: name, Width: p.Width, Height: p.Height, Links: p.Links}
		}(n, p)
	}
	wg.Wait()
	select {
	case err := <-storeErrs:
		return nil, err
	default:
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// One flush makes every moved page durable before the book's record points at them.
	if err := s.Store.Blobs.Sync(); err != nil {
		return nil, err
	}
	return out, nil
}

// failBooks tells a batch's books that their conversion failed (used when a batch is given up).
func (s *System) failBooks(u *storage.Upload) {
	for _, f := range u.Files {
		if f.Status == storage.BatchFailed {
			if _, err := s.SetPages(u.Tenant(), &SetPages{RandomID: f.BookID, Failed: f.Error}); err != nil && !errors.Is(err, errs.ErrNotFound) {
				s.opts.Logger.Error("conversion: record failure", "book", f.BookID, "err", err)
			}
		}
	}
}

// CancelUpload cancels a queued or converting batch and waits until its books and files are
// gone.
func (s *System) CancelUpload(t storage.Tenant, id string) (*storage.Upload, error) {
	return askT[*storage.Upload](s, s.conversion, &CancelUpload{Tenant: t, ID: id})
}
