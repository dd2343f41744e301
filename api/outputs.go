package api

import (
	"encoding/json"

	"flipbook/storage"
)

// The resources answers carry (spec §2), as Go types: httpapi builds them, and their response
// schemas are derived from them (SchemaOf), so the two cannot drift apart.

// Book is spec §2.1's flipbook: exactly these fields, plus settings_revision.
type Book struct {
	ID                int64            `json:"id"`
	RandomID          string           `json:"random_id"`
	BatchID           *string          `json:"batch_id"`
	ExternalCatalogID *int64           `json:"external_catalog_id"`
	Name              string           `json:"name"`
	Description       *string          `json:"description"`
	Status            *string          `json:"status"`
	PageCount         int              `json:"page_count"`
	PageImagesStatus  string           `json:"page_images_status" enum:"ready|processing|failed"`
	PreviewURL        *string          `json:"preview_url"`
	ThumbnailURL      *string          `json:"thumbnail_url"`
	EmbedCode         *string          `json:"embed_code"`
	PublishedDate     *string          `json:"published_date"`
	ExpiresAt         *string          `json:"expires_at"`
	BillingExpiresAt  *string          `json:"billing_expires_at"`
	CreatedAt         *string          `json:"created_at" format:"date-time"`
	UpdatedAt         *string          `json:"updated_at" format:"date-time"`
	Settings          storage.Settings `json:"settings"`
	// SettingsRevision changes with every change of PUT /books/{book} or a bulk settings item
	// (spec §4.1: the revision bulk settings batches expect).
	SettingsRevision string `json:"settings_revision"`
}

// Subscriber is spec §2.2's access-list entry.
type Subscriber struct {
	ID        int64   `json:"id"`
	BookID    string  `json:"book_id"`
	Email     string  `json:"email"`
	Type      string  `json:"type" enum:"email|domain"`
	CreatedAt *string `json:"created_at" format:"date-time"`
}

// EmbedDomain is spec §2.3's embed domain.
type EmbedDomain struct {
	ID                 string  `json:"id"`
	Domain             string  `json:"domain"`
	IncludesSubdomains bool    `json:"includes_subdomains"`
	CreatedAt          *string `json:"created_at" format:"date-time"`
}

// TrackedLink is spec §2.7's tracked link; url is the service's redirect (/l/{slug}).
type TrackedLink struct {
	ID        int64          `json:"id"`
	BookID    string         `json:"book_id"`
	Name      string         `json:"name"`
	Slug      string         `json:"slug"`
	Channel   *string        `json:"channel"`
	Kind      string         `json:"kind"`
	Metadata  map[string]any `json:"metadata"`
	URL       string         `json:"url"`
	CreatedAt *string        `json:"created_at" format:"date-time"`
}

// LabelValue is a choice as the webhook operations list it: a label for people, a value for
// requests.
type LabelValue struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Webhook is spec §2.6's webhook subscription; the signing secret is never returned.
type Webhook struct {
	ID               int64          `json:"id"`
	Name             string         `json:"name"`
	Provider         string         `json:"provider" enum:"generic|zapier"`
	TargetURL        string         `json:"target_url"`
	EventTypes       []LabelValue   `json:"event_types"`
	Filters          WebhookFilters `json:"filters"`
	HasSigningSecret bool           `json:"has_signing_secret"`
	IsActive         bool           `json:"is_active"`
	DisabledReason   *string        `json:"disabled_reason"`
	DisabledAt       *string        `json:"disabled_at" format:"date-time"`
	DeliveriesCount  int64          `json:"deliveries_count"`
	CreatedAt        *string        `json:"created_at" format:"date-time"`
	UpdatedAt        *string        `json:"updated_at" format:"date-time"`
}

// WebhookDelivery is spec §2.6's delivery with its attempts.
type WebhookDelivery struct {
	ID             int64            `json:"id"`
	SubscriptionID int64            `json:"subscription_id"`
	EventID        string           `json:"event_id"`
	EventType      string           `json:"event_type"`
	Status         string           `json:"status" enum:"pending|retrying|succeeded|failed"`
	Attempts       int              `json:"attempts"`
	Payload        json.RawMessage  `json:"payload" type:"object"`
	ResponseStatus *int             `json:"response_status"`
	ResponseBody   *string          `json:"response_body"`
	ErrorMessage   *string          `json:"error_message"`
	Test           bool             `json:"test"`
	CreatedAt      *string          `json:"created_at" format:"date-time"`
	DeliveredAt    *string          `json:"delivered_at" format:"date-time"`
	NextAttemptAt  *string          `json:"next_attempt_at" format:"date-time"`
	History        []WebhookAttempt `json:"history"`
}

// WebhookAttempt is one attempt of a delivery.
type WebhookAttempt struct {
	Number         int     `json:"number"`
	At             *string `json:"attempted_at" format:"date-time"`
	ResponseStatus *int    `json:"response_status"`
	ErrorMessage   *string `json:"error_message"`
	DurationMs     int64   `json:"duration_ms"`
}

// Workspace is a workspace as answers show it (the brand's, the caller's in GET /me).
type Workspace struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Slug      string `json:"slug"`
	Plan      string `json:"plan"`
	CanRename bool   `json:"can_rename"`
}

// Brand is spec §2.4's brand with its colours, social accounts and workspace.
type Brand struct {
	ID               int64       `json:"id"`
	WorkspaceID      int64       `json:"workspace_id"`
	CompanyName      *string     `json:"company_name"`
	Logo             *string     `json:"logo"`
	ContactNumber    *string     `json:"contact_number"`
	WebsiteURL       *string     `json:"website_url"`
	GoogleAnalytics  *string     `json:"google_analytics"`
	AboutBrand       *string     `json:"about_brand"`
	TakeOverBranding bool        `json:"take_over_branding"`
	BrandColor       BrandColor  `json:"brand_color"`
	BrandSocialMedia BrandSocial `json:"brand_social_media"`
	Workspace        Workspace   `json:"workspace"`
	CreatedAt        *string     `json:"created_at" format:"date-time"`
	UpdatedAt        *string     `json:"updated_at" format:"date-time"`
}

// BrandColor is a brand's colours.
type BrandColor struct {
	ID        int64   `json:"id"`
	BrandID   int64   `json:"brand_id"`
	Primary   *string `json:"primary_color"`
	Secondary *string `json:"secondary_color"`
	Tertiary  *string `json:"tertiary_color"`
	CreatedAt *string `json:"created_at" format:"date-time"`
	UpdatedAt *string `json:"updated_at" format:"date-time"`
}

// BrandSocial is a brand's social accounts.
type BrandSocial struct {
	ID        int64   `json:"id"`
	BrandID   int64   `json:"brand_id"`
	Twitter   *string `json:"twitter"`
	Linkedin  *string `json:"linkedin"`
	Facebook  *string `json:"facebook"`
	Youtube   *string `json:"youtube"`
	Instagram *string `json:"instagram"`
	Pinterest *string `json:"pinterest"`
	CreatedAt *string `json:"created_at" format:"date-time"`
	UpdatedAt *string `json:"updated_at" format:"date-time"`
}

// Me is GET /me: the authenticated workspace, its plan's features, the key and where the
// service's faces are.
type Me struct {
	Workspace Workspace `json:"workspace"`
	Plan      Plan      `json:"plan"`
	Key       KeyInfo   `json:"key"`
	Scopes    []string  `json:"scopes"`
	Mode      string    `json:"mode" enum:"live|test"`
	Endpoints Endpoints `json:"endpoints"`
}

// Plan is the workspace's plan as GET /me reports it. Each feature is true exactly when the
// operations it stands for answer on this plan; published_book_limit is null when unlimited.
type Plan struct {
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

// KeyInfo names the API key a call authenticated with.
type KeyInfo struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Endpoints tell a client where the service's faces are.
type Endpoints struct {
	API     string `json:"api"`
	MCP     string `json:"mcp"`
	OpenAPI string `json:"openapi"`
	// OAuth is the authorization server's metadata document (RFC 8414).
	OAuth string `json:"oauth"`
}
