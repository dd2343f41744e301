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
	PublishedBooks int    `json:"published_book_limit"` // 0: unlimited (GET /me reports null)
	TakeOverBrand  bool   `json:"take_over_branding"`
	// Which operations a plan opens is the operation table's Plan of each operation (api);
	// GET /me derives its feature flags from it.
}

// Plans are the plans in rank order. The published-book limits are this service's decision
// (the spec does not give numbers): see docs/DECISIONS.md.
var Plans = map[string]Plan{
	PlanFree:       {Name: PlanFree, Rank: 0, PublishedBooks: 3},
	PlanPro:        {Name: PlanPro, Rank: 1, PublishedBooks: 50, TakeOverBrand: true},
	PlanCompany:    {Name: PlanCompany, Rank: 2, TakeOverBrand: true},
	PlanEnterprise: {Name: PlanEnterprise, Rank: 3, TakeOverBrand: true},
}

// PlanNames in rank order.
var PlanNames = []string{PlanFree, PlanPro, PlanCompany, PlanEnterprise}

// WebhooksPlan is the least plan with webhooks (spec: the webhook operations); a workspace
// below it gets no deliveries either (whReader.store).
const WebhooksPlan = PlanCompany

// PlanAtLeast reports whether plan has at least the rank of min.
func PlanAtLeast(plan, min string) bool {
	return Plans[plan].Rank >= Plans[min].Rank
}
