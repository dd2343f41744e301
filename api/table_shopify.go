package api

// ShopifyBackend runs the Shopify integration operations (spec §4.10).
type ShopifyBackend interface {
	ShopifyWebhook(*Request, *ShopifyWebhook) (*Data[ShopifyAnswer], error)
	ShopifyWorkspaceName(*Request, *ShopifyWorkspaceName) (*Reply[ShopifyRenamed, ShopifyRenamedMeta], error)
}

// Shopify GDPR webhook topics (spec §4.10) and the actions they map to.
const (
	ShopifyDataRequest    = "customers/data_request"
	ShopifyCustomerRedact = "customers/redact"
	ShopifyShopRedact     = "shop/redact"
)

// ShopifyTopics are the topics POST /integrations/shopify/webhooks takes.
var ShopifyTopics = []string{ShopifyDataRequest, ShopifyCustomerRedact, ShopifyShopRedact}

// ShopifyActions are the actions its answer reports, one per topic.
var ShopifyActions = []string{"data_request", "redact_customer", "redact_shop"}

// shopifyOperations are the Shopify integration operations of spec §4.10 (no MCP tools).
func shopifyOperations(b ShopifyBackend) []*Operation {
	return []*Operation{
		Define(Operation{ID: "integrations.shopify_webhooks", Method: "POST", Path: "/integrations/shopify/webhooks",
			Scope: "catalogs:write", Write: true, Destructive: true, Status: 202,
			Summary: "Shopify's mandatory GDPR webhooks, forwarded by the connector: customers/data_request (what the " +
				"workspace holds of a customer), customers/redact (erase a customer's reader data) and shop/redact (erase " +
				"the shop's catalogs and records). The same request again returns the first answer with replayed true.",
			Params: Adjust(ParamsOf[ShopifyWebhook](), "topic", func(p *Param) { p.Enum = ShopifyTopics })}, b.ShopifyWebhook),
		Define(Operation{ID: "integrations.shopify_workspace_name", Method: "POST", Path: "/integrations/shopify/workspace-name",
			Scope: "workspace:write", Write: true,
			Summary: "Rename the workspace the Shopify connector generated at sign-up: once, and only such a workspace " +
				"(403 otherwise)."}, b.ShopifyWorkspaceName),
	}
}
