package storage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"time"

	"flipbook/errs"
)

// Workspace is an account: the unit of tenancy and billing.
type Workspace struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Slug      string `json:"slug"`
	Plan      string `json:"plan"`
	CanRename bool   `json:"can_rename"`
	// SignupSource is the connector that generated the workspace at sign-up ("shopify"), ""
	// for one provisioned otherwise. Only a generated workspace can be renamed, once.
	SignupSource string    `json:"signup_source,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// APIKey is a stored API key. Only the SHA-256 of the secret is kept.
type APIKey struct {
	ID        int64     `json:"id"`
	Workspace int64     `json:"workspace_id"`
	Name      string    `json:"name"`
	Scopes    []string  `json:"scopes"`
	Mode      Mode      `json:"mode"`
	Hash      []byte    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
}

// Tenant is the storage tenant the key reads and writes.
func (k *APIKey) Tenant() Tenant { return Tenant{Workspace: k.Workspace, Mode: k.Mode} }

// HashSecret is the stored form of an API key or token.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Workspace reads a workspace.
func (s *Store) Workspace(id int64) (*Workspace, error) {
	var w Workspace
	if err := s.getJSON(workspaceKey(id), &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// WorkspaceIDBySlug resolves a slug.
func (s *Store) WorkspaceIDBySlug(slug string) (int64, error) {
	v, err := s.get(workspaceSlugKey(slug))
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, errors.New("storage: corrupt slug entry")
	}
	return int64(beUint64(v)), nil
}

// PutWorkspace writes a workspace and its slug entry (removing oldSlug's if it changed).
func (s *Store) PutWorkspace(w *Workspace, oldSlug string) error {
	b := s.NewBatch()
	if oldSlug != "" && oldSlug != w.Slug {
		b.del(workspaceSlugKey(oldSlug))
	}
	b.set(workspaceSlugKey(w.Slug), u64(uint64(w.ID)))
	if err := b.setJSON(workspaceKey(w.ID), w); err != nil {
		b.Close()
		return err
	}
	return b.Commit()
}

// HasWorkspaces reports whether any workspace exists (first-start detection).
func (s *Store) HasWorkspaces() (bool, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	defer it.Close()
	p := []byte("g/ws/")
	it.SeekGE(p)
	return it.Valid() && len(it.Key()) >= len(p) && string(it.Key()[:len(p)]) == string(p), nil
}

// KeyByHash looks up an API key by the hash of its secret.
func (s *Store) KeyByHash(hash []byte) (*APIKey, error) {
	var k APIKey
	if err := s.getJSON(apiKeyKey(hash), &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// KeyByID looks up an API key by id.
func (s *Store) KeyByID(id int64) (*APIKey, error) {
	h, err := s.get(apiKeyIDKey(id))
	if err != nil {
		return nil, err
	}
	return s.KeyByHash(h)
}

// PutKey stores a key under its hash, replacing the entry of oldHash (rotation) if given.
func (s *Store) PutKey(k *APIKey, oldHash []byte) error {
	b := s.NewBatch()
	if oldHash != nil {
		b.del(apiKeyKey(oldHash))
	}
	b.set(apiKeyIDKey(k.ID), k.Hash)
	if err := b.setJSON(apiKeyKey(k.Hash), k); err != nil {
		b.Close()
		return err
	}
	return b.Commit()
}

// DeleteKey revokes a key: both its entries go.
func (s *Store) DeleteKey(k *APIKey) error {
	b := s.NewBatch()
	b.del(apiKeyKey(k.Hash))
	b.del(apiKeyIDKey(k.ID))
	return b.Commit()
}

// Meta reads a service metadata value.
func (s *Store) Meta(name string) ([]byte, error) { return s.get(metaKey(name)) }

// Secret is the installation's 32-byte secret of that name (cursor signing, reader tokens, OAuth
// token signatures, webhook secret sealing): made at random on first use and kept in the meta
// keys; in cluster mode (Options.SharedSecret) derived from the cluster's shared secret instead,
// so every node holds the same one without a first writer to race for.
func (s *Store) Secret(name string) ([]byte, error) {
	if len(s.shared) > 0 {
		h := hmac.New(sha256.New, s.shared)
		h.Write([]byte("flipbook-secret\n" + name))
		return h.Sum(nil), nil
	}
	v, err := s.Meta(name)
	if err == nil && len(v) == 32 {
		return v, nil
	}
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	v = make([]byte, 32)
	if _, err := rand.Read(v); err != nil {
		return nil, err
	}
	return v, s.SetMeta(name, v)
}

// SetMeta writes a service metadata value durably.
func (s *Store) SetMeta(name string, v []byte) error {
	b := s.NewBatch()
	b.set(metaKey(name), v)
	return b.Commit()
}
