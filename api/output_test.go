package api

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/require"

	"flipbook/analytics"
)

// normalized is s as JSON with every required list sorted (the order of required names says
// nothing).
func normalized(t *testing.T, s *jsonschema.Schema) string {
	t.Helper()
	var walk func(*jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		slices.Sort(s.Required)
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		for _, a := range s.AnyOf {
			walk(a)
		}
	}
	c := s.CloneSchemas()
	walk(c)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return string(b)
}

// The analytics rows' schemas, derived from the types the handlers answer with, say what the
// hand-written ones said (kept here as the expected values).
func TestSchemaOfAnalyticsRows(t *testing.T) {
	t.Parallel()
	want := map[string]*jsonschema.Schema{
		"page summary": object(
			prop("id", integer).describe("the page number"), prop("book_id", str), prop("page_number", integer), prop("unique_readers", integer),
			prop("total_active_ms", integer), prop("avg_active_ms_per_reader", integer),
			prop("avg_active_ms_per_segment", integer), prop("median_active_ms_per_segment", integer),
			prop("total_segments", integer), prop("total_active_seconds", number),
			prop("avg_active_seconds_per_reader", number), prop("avg_active_seconds_per_segment", number),
			prop("median_active_seconds_per_segment", number)),
		"reader page": object(
			prop("id", integer).describe("stable: derived from the book, the reader and the page"), prop("book_id", str),
			prop("reader_id", str), prop("viewer_id", intN), prop("session_id", strN).describe("anonymous readers only"),
			prop("page_number", integer), prop("total_active_ms", integer),
			prop("segments", integer), prop("avg_active_ms_per_segment", integer), prop("total_active_seconds", number),
			prop("avg_active_seconds_per_segment", number), prop("viewer_email", str),
			prop("first_viewed_at", strN), prop("last_viewed_at", strN)),
		"reader summary": object(
			prop("id", str), prop("book_id", str), prop("viewer_id", intN), prop("viewer_email", str),
			prop("session_id", strN), prop("anonymous", boolean), prop("sessions", integer),
			prop("pages_viewed", integer), prop("total_active_ms", integer), prop("total_active_seconds", number),
			prop("duration_seconds", integer), prop("downloads", integer), prop("link_clicks", integer),
			prop("engagement_score", str), prop("first_seen_at", strN), prop("last_seen_at", strN)),
		"session page": object(
			prop("id", integer), prop("view_event_id", integer), prop("book_id", str), prop("session_id", str),
			prop("page_number", integer), prop("visit_order", integer), prop("segments", integer),
			prop("total_active_ms", integer), prop("total_active_seconds", number),
			prop("avg_active_ms_per_segment", integer), prop("avg_active_seconds_per_segment", number),
			prop("first_viewed_at", strN), prop("last_viewed_at", strN)),
		"book flow": object(
			prop("book_id", str), prop("page_count", integer), prop("readers", integer),
			prop("readers_with_page_views", integer), prop("sessions", integer),
			prop("pages", arrayOf(object(prop("page_number", integer), prop("readers", integer), prop("reach_rate", number),
				prop("drop_offs", integer), prop("drop_off_rate", number)))),
			prop("transitions", arrayOf(object(prop("from_page", integer), prop("to_page", integer), prop("count", integer),
				prop("readers", integer)))),
			prop("downloads", object(prop("count", integer), prop("unique_readers", integer))),
			prop("link_clicks", object(prop("count", integer), prop("unique_readers", integer), prop("top_urls",
				arrayOf(object(prop("url", str), prop("count", integer), prop("unique_readers", integer))))))),
	}
	got := map[string]*jsonschema.Schema{
		"page summary":   SchemaOf[analytics.PageSummary](),
		"reader page":    SchemaOf[analytics.ReaderPage](),
		"reader summary": SchemaOf[analytics.ReaderSummary](),
		"session page":   SchemaOf[analytics.SessionPage](),
		"book flow":      SchemaOf[analytics.BookFlow](),
	}
	for name, w := range want {
		require.JSONEq(t, normalized(t, w), normalized(t, got[name]), name)
	}
}

// The resources' schemas, derived from the types httpapi answers with (outputs.go), say what
// the hand-written ones said (kept here as the expected values).
func TestSchemaOfResources(t *testing.T) {
	t.Parallel()
	settings := object(
		prop("background", strN), prop("downloadable", boolean), prop("fullscreen_enabled", boolean),
		prop("sound_enabled", boolean), prop("copyright_enabled", boolean), prop("share_social_media", boolean),
		prop("privacy", strN), prop("image_display", strN), prop("animation_type", str),
		prop("mobile_animation_type", strN), prop("eod_enabled", boolean), prop("domains_enabled", boolean),
	)
	want := map[string]*jsonschema.Schema{
		"book": object(
			prop("id", integer), prop("random_id", str), prop("batch_id", strN), prop("external_catalog_id", intN),
			prop("name", str), prop("description", strN), prop("status", strN), prop("page_count", integer),
			prop("page_images_status", enumOf("ready", "processing", "failed")),
			prop("preview_url", strN), prop("thumbnail_url", strN), prop("embed_code", strN),
			prop("published_date", strN), prop("expires_at", strN), prop("billing_expires_at", strN),
			prop("created_at", dateTime), prop("updated_at", dateTime), prop("settings", settings),
			prop("settings_revision", str)),
		"subscriber": object(prop("id", integer), prop("book_id", str), prop("email", str),
			prop("type", enumOf("email", "domain")), prop("created_at", dateTime)),
		"embed domain": object(prop("id", str), prop("domain", str), prop("includes_subdomains", boolean),
			prop("created_at", dateTime)),
		"tracked link": object(prop("id", integer), prop("book_id", str), prop("name", str), prop("slug", str),
			prop("channel", strN), prop("kind", str), prop("metadata", orNull("object")), prop("url", str),
			prop("created_at", dateTime)),
	}
	want["webhook"] = object(
		prop("id", integer), prop("name", str), prop("provider", enumOf(WebhookProviders...)),
		prop("target_url", str), prop("event_types", arrayOf(object(prop("label", str), prop("value", str)))),
		prop("filters", object(prop("book_ids", arrayOf(str)), prop("tracked_link_ids", arrayOf(integer)),
			prop("recipient_emails", arrayOf(str)))),
		prop("has_signing_secret", boolean), prop("is_active", boolean), prop("disabled_reason", strN),
		prop("disabled_at", dateTime), prop("deliveries_count", integer),
		prop("created_at", dateTime), prop("updated_at", dateTime))
	want["delivery"] = object(
		prop("id", integer), prop("subscription_id", integer), prop("event_id", str), prop("event_type", str),
		prop("status", enumOf("pending", "retrying", "succeeded", "failed")), prop("attempts", integer),
		prop("payload", anyObject), prop("response_status", intN), prop("response_body", strN),
		prop("error_message", strN), prop("test", boolean), prop("created_at", dateTime),
		prop("delivered_at", dateTime), prop("next_attempt_at", dateTime),
		prop("history", arrayOf(object(prop("number", integer), prop("attempted_at", dateTime),
			prop("response_status", intN), prop("error_message", strN), prop("duration_ms", integer)))))
	workspace := object(prop("id", integer), prop("name", str), prop("slug", str), prop("plan", str),
		prop("can_rename", boolean))
	want["workspace"] = workspace
	want["brand"] = object(
		prop("id", integer), prop("workspace_id", integer), prop("company_name", strN), prop("logo", strN),
		prop("contact_number", strN), prop("website_url", strN), prop("google_analytics", strN),
		prop("about_brand", strN), prop("take_over_branding", boolean),
		prop("brand_color", object(prop("id", integer), prop("brand_id", integer), prop("primary_color", strN),
			prop("secondary_color", strN), prop("tertiary_color", strN), prop("created_at", dateTime), prop("updated_at", dateTime))),
		prop("brand_social_media", object(prop("id", integer), prop("brand_id", integer), prop("twitter", strN),
			prop("linkedin", strN), prop("facebook", strN), prop("youtube", strN), prop("instagram", strN),
			prop("pinterest", strN), prop("created_at", dateTime), prop("updated_at", dateTime))),
		prop("workspace", workspace),
		prop("created_at", dateTime), prop("updated_at", dateTime))
	want["me"] = object(prop("workspace", workspace),
		prop("plan", object(prop("name", str), prop("published_book_limit", intN), prop("analytics", boolean),
			prop("exports", boolean), prop("leads_export", boolean), prop("webhooks", boolean), prop("catalogs", boolean),
			prop("bulk_settings", boolean), prop("take_over_branding", boolean))),
		prop("key", object(prop("id", integer), prop("name", str))), prop("scopes", arrayOf(str)),
		prop("mode", enumOf("live", "test")),
		prop("endpoints", object(prop("api", str), prop("mcp", str), prop("openapi", str), prop("oauth", str))))
	got := map[string]*jsonschema.Schema{"workspace": SchemaOf[Workspace](), "brand": SchemaOf[Brand](), "me": SchemaOf[Me](),
		"book": SchemaOf[Book](), "subscriber": SchemaOf[Subscriber](),
		"embed domain": SchemaOf[EmbedDomain](), "tracked link": SchemaOf[TrackedLink](),
		"webhook": SchemaOf[Webhook](), "delivery": SchemaOf[WebhookDelivery]()}
	for name, w := range want {
		require.JSONEq(t, normalized(t, w), normalized(t, got[name]), name)
	}
}

// SchemaOf's rules: omitempty is optional, json:"-" is left out, pointers are nullable,
// embedded structs lend their fields, a type it cannot describe is a declaration error.
func TestSchemaOfRules(t *testing.T) {
	t.Parallel()
	type inner struct {
		X int `json:"x"`
	}
	type row struct {
		inner
		A  string            `json:"a,omitempty"`
		B  *int64            `json:"b"`
		C  *inner            `json:"c"`
		D  []string          `json:"d"`
		E  json.RawMessage   `json:"e"`
		F  map[string]any    `json:"f"`
		G  bool              `json:"-"`
		H  analytics.Time    `json:"h" desc:"when"`
		Ms map[string]string `json:"-"`
	}
	want := optional(object(prop("x", integer), prop("b", intN), prop("c", nullable(object(prop("x", integer)))),
		prop("d", arrayOf(str)), prop("e", &jsonschema.Schema{}), prop("f", orNull("object")),
		prop("h", strN).describe("when")), prop("a", str))
	require.JSONEq(t, normalized(t, want), normalized(t, SchemaOf[row]()))
	require.Panics(t, func() { SchemaOf[struct{ C chan int }]() })
}
