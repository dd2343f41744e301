package httpapi

import (
	"errors"

	"flipbook/actors"
	"flipbook/storage"
)

// The provisioning surface (outside the public API): workspaces and API keys, authenticated by
// the admin token. Its operations share the table's validation and error envelope but have no
// MCP tools and are left out of the public OpenAPI document.

type workspaceJSON struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Slug      string `json:"slug"`
	Plan      string `json:"plan"`
	CanRename bool   `json:"can_rename"`
}

func wsJSON(w *storage.Workspace) workspaceJSON {
	return workspaceJSON{ID: w.ID, Name: w.Name, Slug: w.Slug, Plan: w.Plan, CanRename: w.CanRename}
}

type keyJSON struct {
	ID          int64    `json:"id"`
	WorkspaceID int64    `json:"workspace_id"`
	Name        string   `json:"name"`
	Key         string   `json:"key,omitempty"`
	Scopes      []string `json:"scopes"`
	Mode        string   `json:"mode"`
}

func newKeyJSON(k *actors.NewKey) keyJSON {
	return keyJSON{ID: k.Key.ID, WorkspaceID: k.Key.Workspace, Name: k.Key.Name, Key: k.Secret,
		Scopes: k.Key.Scopes, Mode: k.Key.Mode.String()}
}

func (s *Service) adminOperations() []*Operation {
	scopeItem := &Param{Kind: KString, Enum: append([]string{"*"}, Scopes...)}
	idParam := Param{Name: "id", In: InPath, Kind: KInt, Required: true, Min: f64(1)}
	ops := []*Operation{
		{ID: "admin.create_workspace", Method: "POST", Path: "/workspaces", Auth: AuthAdmin, Write: true,
			Summary: "Create a workspace.",
			Params: []Param{
				pStr("name", InBody, 255).req(),
				pEnum("plan", InBody, planEnum()...).req(),
			},
			Handler: s.adminCreateWorkspace},
		{ID: "admin.update_workspace", Method: "PUT", Path: "/workspaces/{id}", Auth: AuthAdmin, Write: true,
			Summary: "Change a workspace's plan.",
			Params:  []Param{idParam, pEnum("plan", InBody, planEnum()...).req()},
			Handler: s.adminUpdateWorkspace},
		{ID: "admin.create_key", Method: "POST", Path: "/workspaces/{id}/keys", Auth: AuthAdmin, Write: true,
			Summary: "Create an API key; the key is shown only in this response.",
			Params: []Param{
				idParam,
				pStr("name", InBody, 255),
				{Name: "scopes", In: InBody, Kind: KArray, Required: true, MinItems: 1, MaxItems: 32, Items: scopeItem},
				pEnum("mode", InBody, "live", "test"),
			},
			Handler: s.adminCreateKey},
		{ID: "admin.rotate_key", Method: "POST", Path: "/keys/{id}/rotate", Auth: AuthAdmin, Write: true,
			Summary: "Replace a key's secret; the old one stops working at once.",
			Params:  []Param{idParam}, Handler: s.adminRotateKey},
		{ID: "admin.revoke_key", Method: "DELETE", Path: "/keys/{id}", Auth: AuthAdmin, Write: true,
			Summary: "Revoke a key.",
			Params:  []Param{idParam}, Handler: s.adminRevokeKey},
	}
	for _, op := range ops {
		op.Base = AdminBase
	}
	return ops
}

func adminNotFound(err error, what string) error {
	if errors.Is(err, actors.ErrNotFound) {
		return errNotFound(what)
	}
	return err
}

func (s *Service) adminCreateWorkspace(r *Request) (*Result, error) {
	w, err := s.Actors.CreateWorkspace(r.Str("name"), r.Str("plan"))
	if err != nil {
		return nil, err
	}
	return &Result{Status: 201, Data: wsJSON(w)}, nil
}

func (s *Service) adminUpdateWorkspace(r *Request) (*Result, error) {
	id, _ := r.Int("id")
	w, err := s.Actors.SetPlan(id, r.Str("plan"))
	s.auth.invalidate()
	if err != nil {
		return nil, adminNotFound(err, "workspace")
	}
	return &Result{Data: wsJSON(w)}, nil
}

func (s *Service) adminCreateKey(r *Request) (*Result, error) {
	id, _ := r.Int("id")
	mode := storage.ModeLive
	if r.Str("mode") == "test" {
		mode = storage.ModeTest
	}
	name := r.Str("name")
	if name == "" {
		name = "API key"
	}
	var scopes []string
	for _, sc := range r.Params["scopes"].([]any) {
		if !contains(scopes, sc.(string)) {
			scopes = append(scopes, sc.(string))
		}
	}
	k, err := s.Actors.CreateKey(id, name, scopes, mode)
	if err != nil {
		return nil, adminNotFound(err, "workspace")
	}
	return &Result{Status: 201, Data: newKeyJSON(k)}, nil
}

func (s *Service) adminRotateKey(r *Request) (*Result, error) {
	id, _ := r.Int("id")
	k, err := s.Actors.RotateKey(id)
	s.auth.invalidate()
	if err != nil {
		return nil, adminNotFound(err, "key")
	}
	return &Result{Status: 201, Data: newKeyJSON(k)}, nil
}

func (s *Service) adminRevokeKey(r *Request) (*Result, error) {
	id, _ := r.Int("id")
	k, err := s.Actors.RevokeKey(id)
	s.auth.invalidate()
	if err != nil {
		return nil, adminNotFound(err, "key")
	}
	return &Result{Data: map[string]any{"id": k.ID, "revoked": true}}, nil
}

// FirstStart is what Bootstrap created on an empty data directory.
type FirstStart struct {
	Workspace *storage.Workspace
	Key       *actors.NewKey
}

// Bootstrap creates the "Default" workspace on the company plan and a *-scoped test key when the
// data directory holds no workspace yet; it returns nil otherwise.
func (s *Service) Bootstrap() (*FirstStart, error) {
	has, err := s.Store.HasWorkspaces()
	if err != nil || has {
		return nil, err
	}
	w, err := s.Actors.CreateWorkspace("Default", actors.PlanCompany)
	if err != nil {
		return nil, err
	}
	k, err := s.Actors.CreateKey(w.ID, "default test key", []string{"*"}, storage.ModeTest)
	if err != nil {
		return nil, err
	}
	return &FirstStart{Workspace: w, Key: k}, nil
}
