package httpapi

import (
	"flipbook/api"
	"strings"
	"time"

	"flipbook/actors"
	"flipbook/actors/convert"
	"flipbook/mcp"
)

// healthJSON is GET /health: the spec's three strings, and details on what this server can do.
// status is "degraded" (still 200) when a document converter cannot run: uploads of its kinds
// answer 503 with the reason.
type healthJSON struct {
	Status    string        `json:"status"`
	Timestamp string        `json:"timestamp"`
	Version   string        `json:"version"`
	Details   healthDetails `json:"details"`
}

type healthDetails struct {
	Converters []convert.Converter `json:"converters"`
	// Cluster is this node's part of a cluster (absent in one process): its partitions, who
	// owns each, the restores under way, how far its copy of the global table lags.
	Cluster *clusterHealth `json:"cluster,omitempty"`
}

func (s *Service) Health(r *api.Request) (*api.Result, error) {
	h := healthJSON{Status: "ok", Timestamp: r.Now.Format(time.RFC3339), Version: Version,
		Details: healthDetails{Converters: convert.Converters()}}
	for _, c := range h.Details.Converters {
		if !c.Usable() {
			h.Status = "degraded"
		}
	}
	if s.cluster != nil {
		h.Details.Cluster = s.cluster.health()
		if h.Details.Cluster.Error != "" {
			h.Status = "degraded"
		}
	}
	return &api.Result{Data: h}, nil
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

type meJSON struct {
	Workspace api.Workspace `json:"workspace"`
	Plan      planJSON      `json:"plan"`
	Key       keyInfoJSON   `json:"key"`
	Scopes    []string      `json:"scopes"`
	Mode      string        `json:"mode"`
	Endpoints endpointsJSON `json:"endpoints"`
}

// planJSON is the workspace's plan as /me reports it. Each feature is true exactly when the
// operations it stands for answer on this plan (derived from the operation table, so /me cannot
// advertise what answers 403 or 404); published_book_limit is null when unlimited.
type planJSON struct {
	Name               string `json:"name"`
	PublishedBookLimit *int   `json:"published_book_limit"`
	Analytics          bool   `json:"analytics"`
	Exports            bool   `json:"exports"`
	LeadsExport        bool   `json:"leads_export"`
	Webhooks           bool   `json:"webhooks"`
	Catalogs           bool   `json:"catalogs"`
	BulkSettings       bool   `json:"bulk_settings"`
	TakeOverBranding   bool   `json:"take_over_branding"`
}

// planFeatures are the /me features and the operations each stands for: "exports" is every
// CSV export except the leads export, which is its own feature (open on every plan).
var planFeatures = []struct {
	name  string
	match func(id string) bool
	field func(*planJSON) *bool
}{
	{"analytics", prefix("analytics."), func(p *planJSON) *bool { return &p.Analytics }},
	{"exports", func(id string) bool { return strings.HasPrefix(id, "exports.") && id != "exports.leads" },
		func(p *planJSON) *bool { return &p.Exports }},
	{"leads_export", func(id string) bool { return id == "exports.leads" }, func(p *planJSON) *bool { return &p.LeadsExport }},
	{"webhooks", prefix("webhooks."), func(p *planJSON) *bool { return &p.Webhooks }},
	{"catalogs", prefix("catalogs."), func(p *planJSON) *bool { return &p.Catalogs }},
	{"bulk_settings", prefix("bulk_settings."), func(p *planJSON) *bool { return &p.BulkSettings }},
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

func (s *Service) planJSON(plan string) planJSON {
	p := actors.Plans[plan]
	out := planJSON{Name: p.Name, TakeOverBranding: p.TakeOverBrand && featureAnswers(s.ops, prefix("brand.toggle_take_over"), plan)}
	if p.PublishedBooks > 0 {
		n := p.PublishedBooks
		out.PublishedBookLimit = &n
	}
	for _, f := range planFeatures {
		*f.field(&out) = featureAnswers(s.ops, f.match, plan)
	}
	return out
}

// endpointsJSON tells a client where the service's faces are.
type endpointsJSON struct {
	API     string `json:"api"`
	MCP     string `json:"mcp"`
	OpenAPI string `json:"openapi"`
	// OAuth is the authorization server's metadata document (RFC 8414).
	OAuth string `json:"oauth"`
}

type keyInfoJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func (s *Service) Me(r *api.Request) (*api.Result, error) {
	p := r.Auth
	return &api.Result{Data: meJSON{
		Workspace: wsJSON(p.Workspace),
		Plan:      s.planJSON(p.Workspace.Plan),
		Key:       keyInfoJSON{ID: p.Key.ID, Name: p.Key.Name},
		Scopes:    p.Key.Scopes,
		Mode:      p.Key.Mode.String(),
		Endpoints: endpointsJSON{API: s.cfg.PublicURL + APIBase, MCP: s.cfg.PublicURL + mcp.Path,
			OpenAPI: s.cfg.PublicURL + APIBase + "/openapi.json",
			OAuth:   s.cfg.PublicURL + "/.well-known/oauth-authorization-server"},
	}}, nil
}
