package actors

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"flipbook/errs"
	"flipbook/storage"
)

// Bulk settings batches (spec §3.4, §4.1.1; docs/DECISIONS.md "Bulk settings").
//
// The bulk supervisor (one actor) owns batch records: it creates a batch with its items, its
// active index entry and its queue entry in one commit, starts batches from the durable queue
// (g/bulkq/, recovered at start), cancels them and finishes them. It never waits on another
// actor: each running batch has a runner goroutine that sends its pending items, at most
// BulkInFlight at a time, to the books' actors through their workspace actors (as
// System.UpdateBook does). A book actor applies an item and records the item's outcome in the
// same Pebble commit as the book, so after a crash an item is applied exactly once: a recovered
// batch sends only the items without an outcome, and a book actor that finds an outcome already
// recorded (an ask repeated after a timeout) answers it without applying the item again.

// Limits and tuning of bulk settings.
const (
	// MaxUnfinishedBulk is how many queued or running batches a tenant may have (409 beyond).
	MaxUnfinishedBulk = 10
	// BulkInFlight is how many items of one batch are applied at once.
	BulkInFlight = 64
	// bulkRunning is how many batches run at once (the others wait in the queue).
	bulkRunning = 4
	// bulkTries bounds the attempts of an item whose book actor answers an error (a timeout is
	// asked again for as long as the service runs: the item may still be applied).
	bulkTries = 3
)

// Item error codes.
const (
	BulkRevisionConflict = "settings_revision_conflict"
	BulkBookNotFound     = "book_not_found"
	BulkInvalidSettings  = "invalid_settings"
	BulkInternalError    = "internal_error"
)

// ConflictError is a request the current state forbids (409), with the reason.
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

// BulkView is a batch and its items.
type BulkView struct {
	Batch *storage.BulkBatch
	Items []*storage.BulkItem
}

// Messages of the bulk supervisor.
type (
	// CreateBulk → *BulkView: a new batch applying Settings to Books (BookID and Expected of
	// each; the books were checked to be the tenant's).
	CreateBulk struct {
		Tenant   storage.Tenant
		Books    []storage.BulkItem
		Settings map[string]any
	}
	// CancelBulk → *BulkView, answered once the items in flight are back; errs.ErrNotFound;
	// *ConflictError when the batch has finished.
	CancelBulk struct {
		Tenant storage.Tenant
		ID     string
	}
	// RetryBulk → *BulkView: a new batch of the failed items of a finished batch.
	RetryBulk struct {
		Tenant storage.Tenant
		ID     string
	}
	pauseBulk struct{ paused bool }
	// bulkDone: a runner stopped.
	bulkDone struct {
		ref      storage.QueueRef
		internal map[int]string // items whose book actor failed: index → error
		stopped  bool           // shutdown: the batch resumes on the next start
	}
	// applyBulkItem asks a book actor to apply one item (→ *storage.BulkItem, its outcome).
	applyBulkItem struct {
		batch string
		item  storage.BulkItem
		patch *BookPatch
	}
)

func (m *applyBulkItem) bookID() string { return m.item.BookID }

// bulkState is the System's part of bulk settings.
type bulkState struct {
	pid     *actor.PID
	workers sync.WaitGroup // runner goroutines
	hook    atomic.Pointer[func(batch string, index int)]
}

type bulkJob struct {
	ref       storage.QueueRef
	stop      context.CancelFunc // shutdown
	cancelled atomic.Bool        // the customer's cancel: start no further item
	waiters   []*actor.PID       // cancels waiting for the runner to stop
}

type bulkSup struct {
	s       *System
	queue   []storage.QueueRef
	known   map[string]bool // batch ids queued or running
	running map[string]*bulkJob
	paused  bool
}

func newBulkSup(s *System) actor.Producer {
	return func() actor.Receiver {
		return &bulkSup{s: s, known: map[string]bool{}, running: map[string]*bulkJob{}}
	}
}

// reset rebuilds the queue from Pebble after a recovered panic; running batches go on.
func (v *bulkSup) reset() {
	v.queue, v.known = nil, map[string]bool{}
	for id := range v.running {
		v.known[id] = true
	}
	v.recover()
}

func (v *bulkSup) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized:
	case actor.Started:
		v.recover()
		v.pump(c)
	case resumeQueues:
		v.recover()
		v.pump(c)
	case actor.Stopped:
		// Shutdown: runners stop starting items; the items in flight finish. Unfinished batches
		// stay queued or running and resume on the next start.
		for _, j := range v.running {
			j.stop()
			for _, w := range j.waiters {
				v.s.tell(w, errs.ErrStopping)
			}
		}
	case *CreateBulk:
		settings, password := sealBulkSettings(m.Settings)
		c.Respond(result(v.create(m.Tenant, m.Books, settings, password, "")))
		v.pump(c)
	case *RetryBulk:
		c.Respond(result(v.retry(m)))
		v.pump(c)
	case *CancelBulk:
		v.cancel(c, m)
	case *pauseBulk:
		v.paused = m.paused
		c.Respond(true)
		v.pump(c)
	case *bulkDone:
		v.done(c, m)
		v.pump(c)
	}
}

// recover reloads the durable queue in creation order.
func (v *bulkSup) recover() {
	refs, err := v.s.Store.BulkQueue()
	if err != nil {
		v.s.opts.Logger.Error("bulk settings: read queue", "err", err)
		return
	}
	for _, ref := range refs {
		if !v.known[ref.ID] && v.s.owns(ref.Tenant.Workspace) {
			v.known[ref.ID] = true
			v.queue = append(v.queue, ref)
		}
	}
}

func (v *bulkSup) write(b *storage.BulkBatch) error {
	bt := v.s.Store.NewBatch()
	if err := bt.PutBulkBatch(b); err != nil {
		bt.Close()
		return err
	}
	return bt.Commit()
}

// sealBulkSettings is what a batch keeps of a request's settings: without what it does not
// apply (eod_enabled and eod_lists, accepted and ignored: the lists held readers' addresses),
// and pdf_password as whether one is set (true) or removed (false), its salted hash apart. The
// batch record and every answer showing it held the password in the clear (found by a review).
func sealBulkSettings(in map[string]any) (map[string]any, *storage.PasswordHash) {
	out := make(map[string]any, len(in))
	var password *storage.PasswordHash
	for k, v := range in {
		switch k {
		case "eod_enabled", "eod_lists":
		case "pdf_password":
			s, _ := v.(string)
			out[k] = s != ""
			if s != "" {
				password = &storage.PasswordHash{Salt: make([]byte, 16)}
				_, _ = rand.Read(password.Salt)
				password.Hash = HashPassword(password.Salt, s)
			}
		default:
			out[k] = v
		}
	}
	return out, password
}

// create writes a new batch, its items and its queue entry in one commit.
func (v *bulkSup) create(t storage.Tenant, books []storage.BulkItem, settings map[string]any, password *storage.PasswordHash, retryOf string) (*BulkView, error) {
	n, err := v.s.Store.ActiveBulkCount(t, MaxUnfinishedBulk)
	if err != nil {
		return nil, err
	}
	if n >= MaxUnfinishedBulk {
		return nil, &ConflictError{Message: fmt.Sprintf("the workspace already has %d unfinished bulk settings batches (queued or running), "+
			"the most it may have; wait until one finishes or cancel one", MaxUnfinishedBulk)}
	}
	seq, err := v.s.Store.NextIDFor(t.Workspace, "bulkq")
	if err != nil {
		return nil, err
	}
	b := &storage.BulkBatch{ID: "bsb_" + RandomString(20), Workspace: t.Workspace, Mode: t.Mode, Seq: uint64(seq),
		Status: storage.BulkQueued, Total: len(books), Settings: settings, PDFPassword: password, RetryOf: retryOf, CreatedAt: v.s.now()}
	items := make([]*storage.BulkItem, len(books))
	bt := v.s.Store.NewBatch()
	if err := bt.PutBulkBatch(b); err != nil {
		bt.Close()
		return nil, err
	}
	for i, book := range books {
		items[i] = &storage.BulkItem{Index: i, BookID: book.BookID, Expected: book.Expected, Status: storage.ItemPending}
		if err := bt.PutBulkItem(t, b.ID, items[i]); err != nil {
			bt.Close()
			return nil, err
		}
	}
	if err := bt.Commit(); err != nil {
		return nil, err
	}
	v.known[b.ID] = true
	v.queue = append(v.queue, storage.QueueRef{Seq: b.Seq, Tenant: t, ID: b.ID})
	return &BulkView{Batch: b, Items: items}, nil
}

// retry creates a batch of the failed items of a finished batch. A conflicting item expects the
// revision the book had when it failed (the client saw it in the report); others keep theirs.
func (v *bulkSup) retry(m *RetryBulk) (*BulkView, error) {
	b, items, err := v.s.Store.BulkBatchView(m.Tenant, m.ID)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, errs.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if b.Active() {
		return nil, &ConflictError{Message: fmt.Sprintf("the batch is %s; retry it once it has finished", b.Status)}
	}
	var books []storage.BulkItem
	for _, it := range items {
		if it.Status != storage.ItemFailed {
			continue
		}
		exp := it.Expected
		if it.ErrorCode == BulkRevisionConflict && it.CurrentRevision != "" {
			exp = it.CurrentRevision
		}
		books = append(books, storage.BulkItem{BookID: it.BookID, Expected: exp})
	}
	if len(books) == 0 {
		return nil, &ConflictError{Message: "the batch has no failed items to retry"}
	}
	settings, password := b.Settings, b.PDFPassword
	if _, clear := settings["pdf_password"].(string); clear { // a batch stored before sealing
		settings, password = sealBulkSettings(settings)
	}
	return v.create(m.Tenant, books, settings, password, b.ID)
}

// pump starts queued batches while fewer than bulkRunning run.
func (v *bulkSup) pump(c *actor.Context) {
	for !v.paused && len(v.running) < bulkRunning && len(v.queue) > 0 {
		ref := v.queue[0]
		v.queue = v.queue[1:]
		b, items, err := v.s.Store.BulkBatchView(ref.Tenant, ref.ID)
		if err != nil || !b.Active() {
			if err != nil && !errors.Is(err, errs.ErrNotFound) {
				v.s.opts.Logger.Error("bulk settings: read batch", "batch", ref.ID, "err", err)
			}
			delete(v.known, ref.ID)
			continue
		}
		if b.CancelRequested { // cancelled while running, then the service stopped
			if _, err := v.finish(b, items, nil, true); err != nil {
				v.s.opts.Logger.Error("bulk settings: finish cancelled batch", "batch", b.ID, "err", err)
			}
			delete(v.known, ref.ID)
			continue
		}
		if b.Status == storage.BulkQueued {
			now := v.s.now()
			b.Status, b.StartedAt = storage.BulkRunning, &now
			if err := v.write(b); err != nil {
				v.s.opts.Logger.Error("bulk settings: start batch", "batch", b.ID, "err", err)
				v.queue = append([]storage.QueueRef{ref}, v.queue...)
				return
			}
		}
		ctx, stop := context.WithCancel(context.Background())
		j := &bulkJob{ref: ref, stop: stop}
		v.running[ref.ID] = j
		pid := c.PID()
		v.s.bulk.workers.Add(1)
		go func() {
			defer v.s.bulk.workers.Done()
			v.s.tell(pid, v.s.runBulk(ctx, j, b, items))
		}()
	}
}

// cancel cancels a batch: a queued one at once; a running one once its items in flight are
// back (the request is recorded first, so the cancel holds across a restart).
func (v *bulkSup) cancel(c *actor.Context, m *CancelBulk) {
	b, err := v.s.Store.BulkBatch(m.Tenant, m.ID)
	if errors.Is(err, errs.ErrNotFound) {
		c.Respond(errs.ErrNotFound)
		return
	}
	if err != nil {
		c.Respond(err)
		return
	}
	if !b.Active() {
		c.Respond(&ConflictError{Message: fmt.Sprintf("the batch has already finished (%s); only a queued or running batch can be cancelled", b.Status)})
		return
	}
	if j, ok := v.running[b.ID]; ok {
		if !b.CancelRequested {
			now := v.s.now()
			b.CancelRequested, b.CancelledAt = true, &now
			if err := v.write(b); err != nil {
				c.Respond(err)
				return
			}
		}
		j.cancelled.Store(true)
		j.waiters = append(j.waiters, c.Sender())
		return
	}
	for i, ref := range v.queue {
		if ref.ID == b.ID {
			v.queue = append(v.queue[:i], v.queue[i+1:]...)
			break
		}
	}
	delete(v.known, b.ID)
	items, err := v.s.Store.BulkItems(m.Tenant, m.ID)
	if err != nil {
		c.Respond(err)
		return
	}
	c.Respond(result(v.finish(b, items, nil, true)))
}

// done finishes a batch whose runner stopped.
func (v *bulkSup) done(c *actor.Context, m *bulkDone) {
	j := v.running[m.ref.ID]
	delete(v.running, m.ref.ID)
	delete(v.known, m.ref.ID)
	answer := func(x any) {
		if j != nil {
			for _, w := range j.waiters {
				v.s.tell(w, x)
			}
		}
	}
	if m.stopped {
		answer(errs.ErrStopping)
		return
	}
	b, items, err := v.s.Store.BulkBatchView(m.ref.Tenant, m.ref.ID)
	if err != nil {
		v.s.opts.Logger.Error("bulk settings: read finished batch", "batch", m.ref.ID, "err", err)
		answer(err)
		return
	}
	view, err := v.finish(b, items, m.internal, b.CancelRequested || (j != nil && j.cancelled.Load()))
	if err != nil {
		v.s.opts.Logger.Error("bulk settings: finish batch", "batch", b.ID, "err", err)
		answer(err)
		return
	}
	answer(view)
}

// finish writes a batch's final status with its items still pending: cancelled when the batch
// was cancelled, failed (internal error) otherwise, in one commit.
func (v *bulkSup) finish(b *storage.BulkBatch, items []*storage.BulkItem, internal map[int]string, cancelled bool) (*BulkView, error) {
	now := v.s.now()
	bt := v.s.Store.NewBatch()
	var ok, failed int
	for _, it := range items {
		if it.Status == storage.ItemPending {
			it.FinishedAt = &now
			switch {
			case cancelled && internal[it.Index] == "":
				it.Status = storage.ItemCancelled
			default:
				it.Status, it.ErrorCode = storage.ItemFailed, BulkInternalError
				it.ErrorMessage = "the settings could not be applied because of an internal error; retry the batch"
			}
			if err := bt.PutBulkItem(b.Tenant(), b.ID, it); err != nil {
				bt.Close()
				return nil, err
			}
		}
		switch it.Status {
		case storage.ItemSucceeded:
			ok++
		case storage.ItemFailed:
			failed++
		}
	}
	switch {
	case cancelled:
		b.Status = storage.BulkCancelled
		if b.CancelledAt == nil {
			b.CancelledAt = &now
		}
	case failed == 0:
		b.Status = storage.BulkCompleted
	case ok == 0:
		b.Status = storage.BulkFailed
	default:
		b.Status = storage.BulkCompletedWithErrors
	}
	b.FinishedAt = &now
	if err := bt.PutBulkBatch(b); err != nil {
		bt.Close()
		return nil, err
	}
	if err := bt.Commit(); err != nil {
		return nil, err
	}
	return &BulkView{Batch: b, Items: items}, nil
}

// runBulk applies a batch's pending items (in a runner goroutine) and reports how it stopped.
func (s *System) runBulk(ctx context.Context, j *bulkJob, b *storage.BulkBatch, items []*storage.BulkItem) *bulkDone {
	t := b.Tenant()
	patch := BulkPatch(b.Settings, b.PDFPassword)
	d := &bulkDone{ref: j.ref}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, BulkInFlight)
	hook := s.bulk.hook.Load()
	for _, it := range items {
		if it.Status != storage.ItemPending {
			continue // decided before a restart
		}
		if j.cancelled.Load() || ctx.Err() != nil {
			break
		}
		if hook != nil {
			(*hook)(b.ID, it.Index)
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if j.cancelled.Load() || ctx.Err() != nil {
			break
		}
		msg := &applyBulkItem{batch: b.ID, item: *it, patch: patch}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			err := s.applyBulk(ctx, t, msg)
			if err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, errs.ErrStopping) || ctx.Err() != nil {
				d.stopped = true
				return
			}
			if d.internal == nil {
				d.internal = map[int]string{}
			}
			d.internal[msg.item.Index] = err.Error()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		d.stopped = true
	}
	return d
}

// applyBulk asks the book's actor to apply an item until it answers. Asking again after a
// timeout is safe: the book actor applies an item only while it has no outcome.
func (s *System) applyBulk(ctx context.Context, t storage.Tenant, msg *applyBulkItem) error {
	for tries := 1; ; tries++ {
		_, err := s.ask(s.workspace(t), msg)
		switch {
		case err == nil, errors.Is(err, errs.ErrStopping):
			return err
		case errors.Is(err, errs.ErrTimeout):
			if ctx.Err() != nil {
				return err
			}
			tries--
			continue
		}
		if tries >= bulkTries || ctx.Err() != nil {
			s.opts.Logger.Error("bulk settings: apply item", "batch", msg.batch, "book", msg.item.BookID, "err", err)
			return err
		}
		select {
		case <-time.After(time.Duration(tries) * 100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// applyBulk applies one item to the book (in its actor) and records the outcome in the same
// commit; an item that already has an outcome is answered as it is.
func (b *book) applyBulk(m *applyBulkItem) (*storage.BulkItem, error) {
	prev, err := b.s.Store.BulkItem(b.t, m.batch, m.item.Index)
	switch {
	case err == nil && prev.Status != storage.ItemPending:
		return prev, nil
	case err != nil && !errors.Is(err, errs.ErrNotFound):
		return nil, err
	}
	it := m.item
	now := b.s.now()
	it.FinishedAt = &now
	fail := func(code, msg, current string) (*storage.BulkItem, error) {
		it.Status, it.ErrorCode, it.ErrorMessage, it.CurrentRevision = storage.ItemFailed, code, msg, current
		bt := b.s.Store.NewBatch()
		if err := bt.PutBulkItem(b.t, m.batch, &it); err != nil {
			bt.Close()
			return nil, err
		}
		if err := bt.Commit(); err != nil {
			return nil, err
		}
		return &it, nil
	}
	if b.rec == nil {
		return fail(BulkBookNotFound, "the book no longer exists", "")
	}
	cur := b.rec.SettingsRevision()
	if cur != it.Expected {
		return fail(BulkRevisionConflict, fmt.Sprintf("the book's settings_revision is %q, not the expected %q: it was changed after it was read; "+
			"read it again, or retry the batch to apply the settings over revision %q", cur, it.Expected, cur), cur)
	}
	next := cloneBook(b.rec)
	if err := m.patch.apply(next, now); err != nil {
		return fail(BulkInvalidSettings, err.Error(), cur)
	}
	next.UpdatedAt = now
	next.BumpSettingsRevision()
	it.Status, it.NewRevision = storage.ItemSucceeded, next.SettingsRevision()
	if err := b.write(next, func(bt *storage.Batch) error { return bt.PutBulkItem(b.t, m.batch, &it) }); err != nil {
		return nil, err
	}
	return &it, nil
}

// BulkPatch maps a bulk settings object (spec §4.1.1) onto a book patch, as PUT /books/{book}
// maps its body (docs/DECISIONS.md "Books"): title → name, allow_fullscreen →
// fullscreen_enabled, flip_sound → sound_enabled, pdf_privacy_status → privacy,
// downloadable_pdf → downloadable and the viewer's download mode. eod_enabled and eod_lists are
// ignored (derived from the access list). pdf_password is true (set to password, hashed), false
// (removed), or, in a batch stored before sealBulkSettings, the password. The status is left
// alone.
func BulkPatch(settings map[string]any, password *storage.PasswordHash) *BookPatch {
	str := func(k string) Opt[string] {
		v, ok := settings[k]
		switch {
		case !ok:
			return Opt[string]{}
		case v == nil:
			return Opt[string]{Set: true, Null: true}
		}
		s, _ := v.(string)
		return Val(s)
	}
	flag := func(k string) Opt[bool] {
		if v, ok := settings[k].(bool); ok {
			return Val(v)
		}
		return Opt[bool]{}
	}
	return &BookPatch{
		Title:                   str("title"),
		Description:             str("description"),
		AllowFullscreen:         flag("allow_fullscreen"),
		CopyrightEnabled:        flag("copyright_enabled"),
		FlipSound:               flag("flip_sound"),
		MadeWithBadgeEnabled:    flag("made_with_badge_enabled"),
		OpenFullscreenByDefault: flag("open_fullscreen_by_default"),
		ShareSocialMedia:        flag("share_social_media"),
		AnimationType:           str("animation_type"),
		MobileAnimationType:     str("mobile_animation_type"),
		Background:              str("background"),
		ImageDisplay:            str("image_display"),
		MagicLinkMessage:        str("magic_link_message"),
		MagicLinkErrorMessage:   str("magic_link_error_message"),
		PDFPassword:             bulkPassword(settings),
		PDFPasswordHashed:       password,
		PDFPrivacyStatus:        str("pdf_privacy_status"),
		Watermark:               str("watermark"),
		DownloadMode:            str("downloadable_pdf"),
	}
}

// Bulk settings operations, called by the API layers.

// CreateBulk creates a bulk settings batch and queues it.
func (s *System) CreateBulk(t storage.Tenant, books []storage.BulkItem, settings map[string]any) (*BulkView, error) {
	return askT[*BulkView](s, s.bulk.pid, &CreateBulk{Tenant: t, Books: books, Settings: settings})
}

// CancelBulk cancels a queued or running batch and answers once no item of it is in flight.
func (s *System) CancelBulk(t storage.Tenant, id string) (*BulkView, error) {
	return askT[*BulkView](s, s.bulk.pid, &CancelBulk{Tenant: t, ID: id})
}

// RetryBulk creates a batch of the failed items of a finished batch.
func (s *System) RetryBulk(t storage.Tenant, id string) (*BulkView, error) {
	return askT[*BulkView](s, s.bulk.pid, &RetryBulk{Tenant: t, ID: id})
}

// PauseBulk stops (true) or lets (false) the supervisor start queued batches; running batches
// go on. For tests (a batch that stays queued).
func (s *System) PauseBulk(paused bool) error {
	_, err := s.ask(s.bulk.pid, &pauseBulk{paused: paused})
	return err
}

// SetBulkHook installs a function every runner calls before it starts an item (nil removes
// it); it may block. For tests (a batch held mid-run). Runners read it when they start.
func (s *System) SetBulkHook(h func(batch string, index int)) {
	if h == nil {
		s.bulk.hook.Store(nil)
		return
	}
	s.bulk.hook.Store(&h)
}

// startBulk spawns the bulk supervisor, which recovers its queue.
func (s *System) startBulk() {
	s.bulk.pid = s.Engine.Spawn(newBulkSup(s), "bulk", actor.WithID("main"), s.middleware("bulk"))
}

// stopBulk stops the supervisor and waits for its runners (their items in flight finish; the
// workspace and book actors must still run).
func (s *System) stopBulk() {
	<-s.Engine.Poison(s.bulk.pid).Done()
	s.bulk.workers.Wait()
}

// bulkPassword is the PDFPassword of a patch from a batch's pdf_password: false removes it;
// true leaves it to the hash (PDFPasswordHashed); in a batch stored before its settings were
// sealed, a string is the password and null removes it.
func bulkPassword(settings map[string]any) Opt[string] {
	v, ok := settings["pdf_password"]
	switch x := v.(type) {
	case bool:
		if !x {
			return Opt[string]{Set: true, Null: true}
		}
	case string:
		return Val(x)
	case nil:
		if ok {
			return Opt[string]{Set: true, Null: true}
		}
	}
	return Opt[string]{}
}
