package actors

import (
	"errors"
	"strconv"

	"github.com/anthdm/hollywood/actor"

	"flipbook/storage"
)

// Messages of the accounts actor.
type (
	// CreateWorkspace → *storage.Workspace
	CreateWorkspace struct{ Name, Plan string }
	// SetPlan → *storage.Workspace
	SetPlan struct {
		Workspace int64
		Plan      string
	}
	// CreateKey → *NewKey
	CreateKey struct {
		Workspace int64
		Name      string
		Scopes    []string
		Mode      storage.Mode
	}
	// RotateKey → *NewKey (same id, new secret; the old secret stops working at once)
	RotateKey struct{ ID int64 }
	// RevokeKey → *storage.APIKey
	RevokeKey struct{ ID int64 }
)

// NewKey is a created or rotated key with its secret, shown once.
type NewKey struct {
	Key    *storage.APIKey
	Secret string
}

// KeyPrefix returns the secret prefix of a mode: wsk_live_ or wsk_test_.
func KeyPrefix(m storage.Mode) string { return "wsk_" + m.String() + "_" }

// accounts owns workspaces and API keys (global records with global uniqueness: slugs, ids).
type accounts struct {
	s *System
}

func newAccounts(s *System) actor.Producer {
	return func() actor.Receiver { return &accounts{s: s} }
}

func (a *accounts) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started, actor.Stopped, actor.Initialized:
	case *CreateWorkspace:
		c.Respond(result(a.createWorkspace(m)))
	case *SetPlan:
		c.Respond(result(a.setPlan(m)))
	case *CreateKey:
		c.Respond(result(a.createKey(m)))
	case *RotateKey:
		c.Respond(result(a.rotateKey(m)))
	case *RevokeKey:
		c.Respond(result(a.revokeKey(m)))
	}
}

// result folds (value, error) into one reply.
func result[T any](v T, err error) any {
	if err != nil {
		return err
	}
	return v
}

func (a *accounts) createWorkspace(m *CreateWorkspace) (*storage.Workspace, error) {
	st := a.s.Store
	id, err := st.NextID("workspace")
	if err != nil {
		return nil, err
	}
	base := slugify(m.Name)
	slug := base
	for n := 2; ; n++ {
		if _, err := st.WorkspaceIDBySlug(slug); errors.Is(err, storage.ErrNotFound) {
			break
		} else if err != nil {
			return nil, err
		}
		slug = base + "-" + strconv.Itoa(n)
	}
	now := a.s.now()
	w := &storage.Workspace{ID: id, Name: m.Name, Slug: slug, Plan: m.Plan, CanRename: true, CreatedAt: now, UpdatedAt: now}
	return w, st.PutWorkspace(w, "")
}

func (a *accounts) setPlan(m *SetPlan) (*storage.Workspace, error) {
	w, err := a.s.Store.Workspace(m.Workspace)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	w.Plan = m.Plan
	w.UpdatedAt = a.s.now()
	return w, a.s.Store.PutWorkspace(w, w.Slug)
}

func newSecret(mode storage.Mode) string { return KeyPrefix(mode) + RandomString(40) }

func (a *accounts) createKey(m *CreateKey) (*NewKey, error) {
	if _, err := a.s.Store.Workspace(m.Workspace); errors.Is(err, storage.ErrNotFound) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, err
	}
	id, err := a.s.Store.NextID("key")
	if err != nil {
		return nil, err
	}
	secret := newSecret(m.Mode)
	k := &storage.APIKey{ID: id, Workspace: m.Workspace, Name: m.Name, Scopes: m.Scopes, Mode: m.Mode,
		Hash: storage.HashSecret(secret), CreatedAt: a.s.now()}
	if err := a.s.Store.PutKey(k, nil); err != nil {
		return nil, err
	}
	return &NewKey{Key: k, Secret: secret}, nil
}

func (a *accounts) rotateKey(m *RotateKey) (*NewKey, error) {
	k, err := a.s.Store.KeyByID(m.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	old := k.Hash
	secret := newSecret(k.Mode)
	k.Hash = storage.HashSecret(secret)
	if err := a.s.Store.PutKey(k, old); err != nil {
		return nil, err
	}
	return &NewKey{Key: k, Secret: secret}, nil
}

func (a *accounts) revokeKey(m *RevokeKey) (*storage.APIKey, error) {
	k, err := a.s.Store.KeyByID(m.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return k, a.s.Store.DeleteKey(k)
}

// Account operations, called by the admin surface.

func (s *System) CreateWorkspace(name, plan string) (*storage.Workspace, error) {
	return askT[*storage.Workspace](s, s.accounts, &CreateWorkspace{Name: name, Plan: plan})
}

func (s *System) SetPlan(ws int64, plan string) (*storage.Workspace, error) {
	return askT[*storage.Workspace](s, s.accounts, &SetPlan{Workspace: ws, Plan: plan})
}

func (s *System) CreateKey(ws int64, name string, scopes []string, mode storage.Mode) (*NewKey, error) {
	return askT[*NewKey](s, s.accounts, &CreateKey{Workspace: ws, Name: name, Scopes: scopes, Mode: mode})
}

func (s *System) RotateKey(id int64) (*NewKey, error) {
	return askT[*NewKey](s, s.accounts, &RotateKey{ID: id})
}

func (s *System) RevokeKey(id int64) (*storage.APIKey, error) {
	return askT[*storage.APIKey](s, s.accounts, &RevokeKey{ID: id})
}

func askT[T any](s *System, pid *actor.PID, msg any) (T, error) {
	var zero T
	v, err := s.ask(pid, msg)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, errInternal
	}
	return t, nil
}
