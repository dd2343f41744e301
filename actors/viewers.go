package actors

import (
	"errors"

	"flipbook/errs"
	"flipbook/storage"
)

// ViewerFor → int64: the viewer id of an address, created on first use (workspace actor, so
// two concurrent first visits cannot create two ids).
type ViewerFor struct{ Email string }

func (w *workspace) viewerFor(email string) (int64, error) {
	id, err := w.s.Store.ViewerID(w.t, email)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, errs.ErrNotFound) {
		return 0, err
	}
	if id, err = w.s.Store.NextIDFor(w.t.Workspace, "viewer"); err != nil {
		return 0, err
	}
	b := w.s.Store.NewBatch()
	b.PutViewer(w.t, id, email)
	return id, b.Commit()
}

// ViewerFor returns the viewer id of an address in a tenant.
func (s *System) ViewerFor(t storage.Tenant, email string) (int64, error) {
	id, err := s.Store.ViewerID(t, email)
	if err == nil {
		return id, nil
	}
	return askT[int64](s, s.workspace(t), &ViewerFor{Email: email})
}
