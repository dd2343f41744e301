package api

// The answers of the Shopify integration operations (spec §4.10), as Go types.

// ShopifyAnswer is the answer to a GDPR webhook: counts are what the workspace holds of the
// customer (data_request) or what was deleted (redactions); docs/DECISIONS.md, "Shopify
// integration", lists their keys.
type ShopifyAnswer struct {
	Action   string           `json:"action" enum:"data_request|redact_customer|redact_shop"`
	Counts   map[string]int64 `json:"counts"`
	Replayed bool             `json:"replayed"`
	Status   string           `json:"status" enum:"completed"`
}

// ShopifyRenamed is POST /integrations/shopify/workspace-name's answer: the renamed workspace.
type ShopifyRenamed struct {
	Workspace Workspace `json:"workspace"`
}

// ShopifyRenamedMeta is the workspace's name and slug before the rename.
type ShopifyRenamedMeta struct {
	PreviousName string `json:"previous_name"`
	PreviousSlug string `json:"previous_slug"`
}
