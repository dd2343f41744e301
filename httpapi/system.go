package httpapi

import (
	"strings"
	"time"

	"flipbook/actors"
	"flipbook/actors/convert"
	"flipbook/api"
	"flipbook/mcp"
)

// Health is GET /health (api.Health): status is "degraded" (still 200) when a document
// converter cannot run, or a cluster node's takeover failed.
func (s *Service) Health(r *api.Request) (*api.Data[api.Health], error) {
	h := api.Health{Status: "ok", Timestamp: r.Now.Format(time.RFC3339), Version: Version,
		Details: api.HealthDetails{Converters: convert.Converters()}}
	for _, c := range h.Details.Converters {
		if !c.Usable() {
			h.Status = "degraded"
		}
	}
	if s.cluster != nil {
		c := s.cluster.health()
		h.Details.Cluster = c
		if c.Error != "" {
			h.Status = "degraded"
		}
	}
	return api.OK(h), nil
}

// LogConverters says at start-up which document converters cannot run here, and why.
func (s *Service) LogConverters() {
	for _, c := range convert.Converters() {
		if !c.Usable() {
			s.log.Warn(c.Unusable()+"; uploads of these files will be refused with this reason",
				"converter", c.Name, "missing", strings.Join(c.Missing, ","))
		}
	}
	if ok, how := convert.NetworkIsolation(); ok {
		s.log.Info("office conversion runs without network", "isolation", how)
	} else {
		s.log.Warn("office conversion cannot be cut off from the network here; linked content is still refused by LibreOffice's own settings",
			"isolation", how)
	}
}

// planFeatures are the /me features and the operations each stands for: "exports" is every
// CSV export except the leads export, which is its own feature (open on every plan).
var planFeatures = []struct {
	name  string
	match func(id string) bool
	field func(*api.Plan) *bool
}{
	{"analytics", prefix("analytics."), func(p *api.Plan) *bool { return &p.Analytics }},
	{"exports", func(id string) bool { return strings.HasPrefix(id, "exports.") && id != "exports.leads" },
		func(p *api.Plan) *bool { return &p.Exports }},
	{"leads_export", func(id string) bool { return id == "exports.leads" }, func(p *api.Plan) *bool { return &p.LeadsExport }},
	{"webhooks", prefix("webhooks."), func(p *api.Plan) *bool { return &p.Webhooks }},
	{"catalogs", prefix("catalogs."), func(p *api.Plan) *bool { return &p.Catalogs }},
	{"bulk_settings", prefix("bulk_settings."), func(p *api.Plan) *bool { return &p.BulkSettings }},
}

func prefix(p string) func(string) bool {
	return func(id string) bool { return strings.HasPrefix(id, p) }
}

// featureAnswers reports whether the table has operations the feature stands for and every one
// of them is open to the plan.
func featureAnswers(ops []*api.Operation, match func(string) bool, plan string) bool {
	n := 0
	for _, op := range ops {
		if match(op.ID) {
			if op.Plan != "" && !actors.PlanAtLeast(plan, op.Plan) {
				return false
			}
			n++
		}
	}
	return n > 0
}

func (s *Service) planJSON(plan string) api.Plan {
	p := actors.Plans[plan]
	out := api.Plan{Name: p.Name, TakeOverBranding: p.TakeOverBrand && featureAnswers(s.ops, prefix("brand.toggle_take_over"), plan)}
	if p.PublishedBooks > 0 {
		n := p.PublishedBooks
		out.PublishedBookLimit = &n
	}
	for _, f := range planFeatures {
		*f.field(&out) = featureAnswers(s.ops, f.match, plan)
	}
	return out
}

func (s *Service) Me(r *api.Request) (*api.Data[api.Me], error) {
	p := r.Auth
	return api.OK(api.Me{
		Workspace: wsJSON(p.Workspace),
		Plan:      s.planJSON(p.Workspace.Plan),
		Key:       api.KeyInfo{ID: p.Key.ID, Name: p.Key.Name},
		Scopes:    p.Key.Scopes,
		Mode:      p.Key.Mode.String(),
		Endpoints: api.Endpoints{API: s.cfg.PublicURL + APIBase, MCP: s.cfg.PublicURL + mcp.Path,
			OpenAPI: s.cfg.PublicURL + APIBase + "/openapi.json",
			OAuth:   s.cfg.PublicURL + "/.well-known/oauth-authorization-server"},
	}), nil
}
