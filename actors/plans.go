package actors

// Plan names (DESIGN §11).
const (
	PlanFree       = "free"
	PlanPro        = "pro"
	PlanCompany    = "company"
	PlanEnterprise = "enterprise"
)

// Plan describes what a plan allows. PublishedBooks 0 means no limit.
type Plan struct {
	Name           string `json:"name"`
	Rank           int    `json:"-"`
	PublishedBooks int    `json:"published_book_limit"`
	Analytics      bool   `json:"analytics"`
	Exports        bool   `json:"exports"`
	LeadsExport    bool   `json:"leads_export"`
	Webhooks       bool   `json:"webhooks"`
	Catalogs       bool   `json:"catalogs"`
	TakeOverBrand  bool   `json:"take_over_branding"`
}

// Plans are the plans in rank order. The published-book limits are this service's decision
// (the spec does not give numbers): see docs/DECISIONS.md.
var Plans = map[string]Plan{
	PlanFree:       {Name: PlanFree, Rank: 0, PublishedBooks: 3, LeadsExport: true, Catalogs: true},
	PlanPro:        {Name: PlanPro, Rank: 1, PublishedBooks: 50, LeadsExport: true, Catalogs: true, TakeOverBrand: true},
	PlanCompany:    {Name: PlanCompany, Rank: 2, Analytics: true, Exports: true, LeadsExport: true, Webhooks: true, Catalogs: true, TakeOverBrand: true},
	PlanEnterprise: {Name: PlanEnterprise, Rank: 3, Analytics: true, Exports: true, LeadsExport: true, Webhooks: true, Catalogs: true, TakeOverBrand: true},
}

// PlanNames in rank order.
var PlanNames = []string{PlanFree, PlanPro, PlanCompany, PlanEnterprise}

// PlanAtLeast reports whether plan has at least the rank of min.
func PlanAtLeast(plan, min string) bool {
	return Plans[plan].Rank >= Plans[min].Rank
}
