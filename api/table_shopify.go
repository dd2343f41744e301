package api

import "github.com/google/jsonschema-go/jsonschema"

// ShopifyBackend runs the Shopify integration operations (spec §4.10).
type ShopifyBackend interface {
	ShopifyWebhook(*Request) (*Result, error)
	ShopifyWorkspaceName(*Request) (*Result, error)
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

var (
	// shopifyWebhookSchema is the answer to a GDPR webhook: counts are what the workspace holds
	// of the customer (data_request) or what was deleted (redactions); docs/DECISIONS.md,
	// "Shopify integration", lists their keys.
	shopifyWebhookSchema = object(
		prop("action", enumOf(ShopifyActions...)),
		prop("counts", &jsonschema.Schema{Type: "object", AdditionalProperties: integer}),
		prop("replayed", boolean),
		prop("status", enumOf("completed")),
	)

	shopifyWorkspaceNameMeta = object(prop("previous_name", str), prop("previous_slug", str))
)

// shopifyOperations are the Shopify integration operations of spec §4.10 (no MCP tools).
func shopifyOperations(b ShopifyBackend) []*Operation {
	id := func(name string) Param { return Param{Name: name, In: InBody, Kind: KInt} }
	return []*Operation{
		{ID: "integrations.shopify_webhooks", Method: "POST", Path: "/integrations/shopify/webhooks",
			Scope: "catalogs:write", Write: true, Destructive: true, Status: 202,
			Summary: "Shopify's mandatory GDPR webhooks, forwarded by the connector: customers/data_request (what the " +
				"workspace holds of a customer), customers/redact (erase a customer's reader data) and shop/redact (erase " +
				"the shop's catalogs and records). The same request again returns the first answer with replayed true.",
			Params: []Param{
				Enum("topic", InBody, ShopifyTopics...).Req(),
				Str("shopDomain", InBody, 255).Req().Describe("the shop's myshopify.com domain; must equal payload.shop_domain"),
				{Name: "payload", In: InBody, Kind: KObject, Required: true,
					Desc: "the webhook's body as Shopify sent it (fields other than these are ignored)",
					Props: []Param{
						Str("shop_domain", InBody, 255).Req(),
						id("shop_id").Req(),
						{Name: "customer", In: InBody, Kind: KObject, Nullable: true,
							Desc: "required for the customers/* topics, with an email or an id",
							Props: []Param{
								id("id"),
								Str("email", InBody, 255).WithFormat("email"),
							}},
						{Name: "data_request", In: InBody, Kind: KObject, Nullable: true,
							Props: []Param{id("id")}},
					}},
			},
			Response: shopifyWebhookSchema, Handler: b.ShopifyWebhook},
		{ID: "integrations.shopify_workspace_name", Method: "POST", Path: "/integrations/shopify/workspace-name",
			Scope: "workspace:write", Write: true,
			Summary: "Rename the workspace the Shopify connector generated at sign-up: once, and only such a workspace " +
				"(403 otherwise).",
			Params: []Param{
				Str("workspace_name", InBody, 255).Req().MinLength(1),
				Str("workspace_slug", InBody, 255).MinLength(1).
					Describe("lowercase letters, digits and hyphens, unique across all workspaces; derived from the name when absent"),
			},
			Response:     object(prop("workspace", workspaceSchema)),
			ResponseMeta: shopifyWorkspaceNameMeta,
			Handler:      b.ShopifyWorkspaceName},
	}
}
