package httpapi

import (
	"time"

	"flipbook/actors"
	"flipbook/mcp"
)

func (s *Service) Health(r *Request) (*Result, error) {
	return &Result{Data: map[string]string{
		"status": "ok", "timestamp": r.Now.Format(time.RFC3339), "version": Version,
	}}, nil
}

type meJSON struct {
	Workspace workspaceJSON `json:"workspace"`
	Plan      actors.Plan   `json:"plan"`
	Key       keyInfoJSON   `json:"key"`
	Scopes    []string      `json:"scopes"`
	Mode      string        `json:"mode"`
	Endpoints endpointsJSON `json:"endpoints"`
}

// endpointsJSON tells a client where the service's faces are.
type endpointsJSON struct {
	API     string `json:"api"`
	MCP     string `json:"mcp"`
	OpenAPI string `json:"openapi"`
}

type keyInfoJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func (s *Service) Me(r *Request) (*Result, error) {
	p := r.Auth
	return &Result{Data: meJSON{
		Workspace: wsJSON(p.Workspace),
		Plan:      actors.Plans[p.Workspace.Plan],
		Key:       keyInfoJSON{ID: p.Key.ID, Name: p.Key.Name},
		Scopes:    p.Key.Scopes,
		Mode:      p.Key.Mode.String(),
		Endpoints: endpointsJSON{API: s.cfg.PublicURL + APIBase, MCP: s.cfg.PublicURL + mcp.Path,
			OpenAPI: s.cfg.PublicURL + APIBase + "/openapi.json"},
	}}, nil
}
