package actors

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/stretchr/testify/require"

	"flipbook/errs"
	"flipbook/internal/testutil"
	"flipbook/storage"
)

const testBookIdle = 200 * time.Millisecond

// liveBookActorsGone is a condition for testutil.Eventually: every idle book actor has stopped.
func liveBookActorsGone(e *env) func() error {
	return func() error {
		if n := e.sys.LiveBookActors(); n != 0 {
			return fmt.Errorf("%d book actors still live, want all idle ones stopped", n)
		}
		return nil
	}
}

// env is a running actor system on a real store in a temp dir; it can be restarted.
type env struct {
	tb   testing.TB
	dir  string
	opts Options
	st   *storage.Store
	sys  *System
}

func newEnv(tb testing.TB, mod func(*Options)) *env {
	tb.Helper()
	o := Options{BookIdle: testBookIdle, AskTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&o)
	}
	e := &env{tb: tb, dir: tb.TempDir(), opts: o}
	e.start()
	tb.Cleanup(e.stop)
	return e
}

func (e *env) start() {
	e.tb.Helper()
	st, err := storage.Open(e.dir, storage.Options{CacheBytes: 8 << 20})
	require.NoError(e.tb, err)
	sys, err := Start(st, e.opts)
	require.NoError(e.tb, err)
	e.st, e.sys = st, sys
}

// stop stops the actors, then closes the store (idempotent).
func (e *env) stop() {
	if e.sys != nil {
		e.sys.Stop()
		e.sys = nil
	}
	if e.st != nil {
		require.NoError(e.tb, e.st.Close())
		e.st = nil
	}
}

// workspace creates a workspace on plan and returns its live tenant.
func (e *env) workspace(name, plan string) storage.Tenant {
	e.tb.Helper()
	w, err := e.sys.CreateWorkspace(name, plan)
	require.NoError(e.tb, err)
	return storage.Tenant{Workspace: w.ID, Mode: storage.ModeLive}
}

// rawContains reports whether any key or value in Pebble contains needle.
func (e *env) rawContains(needle []byte) bool {
	e.tb.Helper()
	it, err := e.st.DB().NewIter(nil)
	require.NoError(e.tb, err)
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if bytes.Contains(it.Key(), needle) || bytes.Contains(it.Value(), needle) {
			return true
		}
	}
	require.NoError(e.tb, it.Error())
	return false
}

func TestCreateWorkspaceUniqueSlugs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var slugs []string
	var ids []int64
	for _, name := range []string{"Acme", "Acme", "ACME", "  Acme!! ", "Ünïcode Co", "!!!"} {
		w, err := e.sys.CreateWorkspace(name, PlanFree)
		require.NoError(t, err)
		require.Equal(t, name, w.Name)
		require.Equal(t, PlanFree, w.Plan)
		require.False(t, w.CreatedAt.IsZero())
		slugs = append(slugs, w.Slug)
		ids = append(ids, w.ID)
		got, err := e.st.WorkspaceIDBySlug(w.Slug)
		require.NoError(t, err)
		require.Equal(t, w.ID, got)
		stored, err := e.st.Workspace(w.ID)
		require.NoError(t, err)
		require.Equal(t, w.Slug, stored.Slug)
	}
	require.Equal(t, []string{"acme", "acme-2", "acme-3", "acme-4", "n-code-co", "workspace"}, slugs)
	for i := 1; i < len(ids); i++ {
		require.Greater(t, ids[i], ids[i-1])
	}

	// Concurrent creation through the actor still gives unique slugs.
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := e.sys.CreateWorkspace("Parallel", PlanPro)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[w.Slug] {
				t.Errorf("slug %q handed out twice", w.Slug)
			}
			seen[w.Slug] = true
		}()
	}
	wg.Wait()
	require.Len(t, seen, 20)
	require.True(t, seen["parallel"])
	require.True(t, seen["parallel-20"])
}

func TestSetPlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tn := e.workspace("Plan Co", PlanFree)
	w, err := e.sys.SetPlan(tn.Workspace, PlanCompany)
	require.NoError(t, err)
	require.Equal(t, PlanCompany, w.Plan)
	stored, err := e.st.Workspace(tn.Workspace)
	require.NoError(t, err)
	require.Equal(t, PlanCompany, stored.Plan)
	id, err := e.st.WorkspaceIDBySlug("plan-co")
	require.NoError(t, err, "the slug survives a plan change")
	require.Equal(t, tn.Workspace, id)
	_, err = e.sys.SetPlan(9999, PlanPro)
	require.ErrorIs(t, err, errs.ErrNotFound)
}

func TestAPIKeysCreateRotateRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tn := e.workspace("Keys", PlanPro)

	for _, mode := range []storage.Mode{storage.ModeLive, storage.ModeTest} {
		nk, err := e.sys.CreateKey(tn.Workspace, "ci", []string{"books:read", "books:write"}, mode)
		require.NoError(t, err)
		prefix := "wsk_" + mode.String() + "_"
		require.True(t, strings.HasPrefix(nk.Secret, prefix), nk.Secret)
		require.Equal(t, prefix, KeyPrefix(mode))
		require.Len(t, nk.Secret, len(prefix)+40)
		require.Equal(t, storage.HashSecret(nk.Secret), nk.Key.Hash)

		stored, err := e.st.KeyByHash(storage.HashSecret(nk.Secret))
		require.NoError(t, err)
		require.Equal(t, nk.Key.ID, stored.ID)
		require.Equal(t, tn.Workspace, stored.Workspace)
		require.Equal(t, mode, stored.Mode)
		require.Equal(t, []string{"books:read", "books:write"}, stored.Scopes)
		byID, err := e.st.KeyByID(nk.Key.ID)
		require.NoError(t, err)
		require.Equal(t, stored.Hash, byID.Hash)

		// Only the hash is stored: neither the secret nor its random part is anywhere in Pebble.
		require.False(t, e.rawContains([]byte(nk.Secret)), "secret stored in clear")
		require.False(t, e.rawContains([]byte(strings.TrimPrefix(nk.Secret, prefix))), "secret body stored in clear")

		// Rotation keeps the id and the settings; the old secret stops working at once.
		rot, err := e.sys.RotateKey(nk.Key.ID)
		require.NoError(t, err)
		require.Equal(t, nk.Key.ID, rot.Key.ID)
		require.NotEqual(t, nk.Secret, rot.Secret)
		require.True(t, strings.HasPrefix(rot.Secret, prefix))
		_, err = e.st.KeyByHash(storage.HashSecret(nk.Secret))
		require.ErrorIs(t, err, errs.ErrNotFound)
		stored, err = e.st.KeyByHash(storage.HashSecret(rot.Secret))
		require.NoError(t, err)
		require.Equal(t, nk.Key.ID, stored.ID)
		require.Equal(t, "ci", stored.Name)
		require.Equal(t, mode, stored.Mode)
		require.False(t, e.rawContains([]byte(rot.Secret)))

		// Revocation removes it.
		rev, err := e.sys.RevokeKey(nk.Key.ID)
		require.NoError(t, err)
		require.Equal(t, nk.Key.ID, rev.ID)
		_, err = e.st.KeyByHash(storage.HashSecret(rot.Secret))
		require.ErrorIs(t, err, errs.ErrNotFound)
		_, err = e.st.KeyByID(nk.Key.ID)
		require.ErrorIs(t, err, errs.ErrNotFound)
		_, err = e.sys.RotateKey(nk.Key.ID)
		require.ErrorIs(t, err, errs.ErrNotFound)
		_, err = e.sys.RevokeKey(nk.Key.ID)
		require.ErrorIs(t, err, errs.ErrNotFound)
	}

	// Unknown ids and workspaces.
	_, err := e.sys.CreateKey(12345, "x", nil, storage.ModeLive)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = e.sys.RotateKey(777)
	require.ErrorIs(t, err, errs.ErrNotFound)
	_, err = e.sys.RevokeKey(777)
	require.ErrorIs(t, err, errs.ErrNotFound)

	// Key ids are unique.
	a, err := e.sys.CreateKey(tn.Workspace, "a", nil, storage.ModeLive)
	require.NoError(t, err)
	b, err := e.sys.CreateKey(tn.Workspace, "b", nil, storage.ModeLive)
	require.NoError(t, err)
	require.NotEqual(t, a.Key.ID, b.Key.ID)
	require.NotEqual(t, a.Secret, b.Secret)
}

// panicky is a test actor: "boom" panics, anything else is echoed.
type panicky struct {
	started atomic.Int32
	resets  atomic.Int32
	handled atomic.Int32
}

func (p *panicky) reset() { p.resets.Add(1) }

func (p *panicky) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		p.started.Add(1)
	case string:
		p.handled.Add(1)
		if m == "boom" {
			panic("boom")
		}
		if c.Sender() != nil {
			c.Respond("echo:" + m)
		}
	}
}

func TestRecoverMiddlewareAnswersAndKeepsServing(t *testing.T) {
	e := newEnv(t, nil)
	rcv := &panicky{}
	pid := e.sys.Engine.Spawn(func() actor.Receiver { return rcv }, "panicky",
		actor.WithMiddleware(e.sys.recoverMW), actor.WithMaxRestarts(0))
	t.Cleanup(func() { <-e.sys.Engine.Poison(pid).Done() })

	v, err := e.sys.ask(pid, "hello")
	require.NoError(t, err)
	require.Equal(t, "echo:hello", v)

	start := time.Now()
	_, err = e.sys.ask(pid, "boom")
	require.ErrorIs(t, err, errInternal, "the asker gets an error, not a timeout")
	require.Less(t, time.Since(start), e.opts.AskTimeout/2)
	require.Equal(t, int32(1), rcv.resets.Load(), "a resettable receiver is reset")

	// A panic with no asker (a plain send) must not break the actor either.
	e.sys.Engine.Send(pid, "boom")
	testutil.Eventually(t, 2*time.Second, 5*time.Millisecond, func() error {
		if n := rcv.resets.Load(); n != 2 {
			return fmt.Errorf("second panic not handled: %d resets, want 2", n)
		}
		return nil
	})

	v, err = e.sys.ask(pid, "again")
	require.NoError(t, err)
	require.Equal(t, "echo:again", v)
	require.Equal(t, int32(1), rcv.started.Load(), "the actor was not restarted by hollywood")
	require.Equal(t, int32(4), rcv.handled.Load())
}

func TestRecoverMiddlewareOnBookActor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tn := e.workspace("Panic", PlanPro)
	b := createBook(t, e, tn, storage.StatusDraft, "Before")

	// A nil patch makes the book actor dereference nil: a real panic inside a real book actor.
	_, err := e.sys.UpdateBook(tn, b.RandomID, nil)
	require.ErrorIs(t, err, errInternal)

	// The record was dropped from memory and is reloaded: a change written behind the actor's back
	// (straight to the store) is seen by the next update.
	cur, err := e.st.GetBook(tn, b.RandomID)
	require.NoError(t, err)
	next := *cur
	next.Name = "Written directly"
	next.Memo = nil
	batch := e.st.NewBatch()
	require.NoError(t, batch.PutBook(cur, &next))
	require.NoError(t, batch.Commit())

	got, err := e.sys.UpdateBook(tn, b.RandomID, &BookPatch{Status: storage.StatusDraft, Description: Val("d")})
	require.NoError(t, err)
	require.Equal(t, "Written directly", got.Name)
	require.Equal(t, "d", *got.Description)
}

func TestAskUnknownMessageTimesOut(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.AskTimeout = 150 * time.Millisecond })
	start := time.Now()
	_, err := e.sys.ask(e.sys.accounts, struct{}{}) // the accounts actor ignores it
	require.ErrorIs(t, err, errs.ErrTimeout)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	// The actor is still fine.
	_, err = e.sys.CreateWorkspace("Still there", PlanFree)
	require.NoError(t, err)
}

func TestPassivationAndRespawn(t *testing.T) {
	e := newEnv(t, nil)
	tn := e.workspace("Idle", PlanPro)
	b := createBook(t, e, tn, storage.StatusDraft, "Idle book")
	require.Zero(t, e.sys.LiveBookActors(), "creating a book does not spawn a book actor")

	_, err := e.sys.UpdateBook(tn, b.RandomID, &BookPatch{Status: storage.StatusDraft, Title: Val("one")})
	require.NoError(t, err)
	require.Equal(t, int64(1), e.sys.LiveBookActors())

	// Keep it busy for longer than BookIdle: it must stay alive while used.
	until := time.Now().Add(2 * testBookIdle)
	for time.Now().Before(until) {
		_, err := e.sys.UpdateBook(tn, b.RandomID, &BookPatch{Status: storage.StatusDraft, FlipSound: Val(true)})
		require.NoError(t, err)
		require.Equal(t, int64(1), e.sys.LiveBookActors())
		time.Sleep(testBookIdle / 10) // sleep: pacing the updates, not waiting for a condition
	}

	testutil.Eventually(t, 10*testBookIdle, 5*time.Millisecond, liveBookActorsGone(e))

	// Change the record behind the (stopped) actor's back: a new actor must reload it.
	cur, err := e.st.GetBook(tn, b.RandomID)
	require.NoError(t, err)
	require.Equal(t, "one", cur.Name)
	next := *cur
	next.Memo = nil
	next.Settings.AnimationType = "slide"
	batch := e.st.NewBatch()
	require.NoError(t, batch.PutBook(cur, &next))
	require.NoError(t, batch.Commit())

	got, err := e.sys.UpdateBook(tn, b.RandomID, &BookPatch{Status: storage.StatusDraft, Title: Val("two")})
	require.NoError(t, err)
	require.Equal(t, int64(1), e.sys.LiveBookActors())
	require.Equal(t, "two", got.Name)
	require.Equal(t, "slide", got.Settings.AnimationType, "the respawned actor loaded the stored record")
	require.True(t, got.Settings.SoundEnabled)
	stored, err := e.st.GetBook(tn, b.RandomID)
	require.NoError(t, err)
	require.Equal(t, "two", stored.Name)

	// Many books: one actor each, all passivate.
	var rids []string
	for i := 0; i < 5; i++ {
		rids = append(rids, createBook(t, e, tn, storage.StatusDraft, "many").RandomID)
	}
	for _, rid := range rids {
		_, err := e.sys.UpdateBook(tn, rid, &BookPatch{Status: storage.StatusDraft})
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, e.sys.LiveBookActors(), int64(5))
	testutil.Eventually(t, 10*testBookIdle, 5*time.Millisecond, liveBookActorsGone(e))
}

func TestStopStopsBookActors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BookIdle = time.Hour })
	tn := e.workspace("Stop", PlanPro)
	b := createBook(t, e, tn, storage.StatusDraft, "x")
	_, err := e.sys.UpdateBook(tn, b.RandomID, &BookPatch{Status: storage.StatusDraft})
	require.NoError(t, err)
	sys := e.sys
	require.Equal(t, int64(1), sys.LiveBookActors())
	e.stop()
	require.Zero(t, sys.LiveBookActors(), "Stop waits for book actors to stop")
}

func TestErrorsFormat(t *testing.T) {
	t.Parallel()
	err := &errs.InvalidError{Fields: map[string][]string{"title": {"a", "b"}, "expires_at": {"c"}}}
	require.Equal(t, "invalid: expires_at: c, title: a; b", err.Error())
	var ie *errs.InvalidError
	require.True(t, errors.As(error(errs.Invalid("x", "y")), &ie))
	require.Equal(t, []string{"y"}, ie.Fields["x"])
	require.Equal(t, "m", (&errs.PlanError{Message: "m"}).Error())
}
