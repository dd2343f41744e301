package api

import (
	"github.com/google/jsonschema-go/jsonschema"

	"flipbook/analytics"
)

// Response schemas of the resources of spec §2, as the service renders them (JSON Schema
// 2020-12: the MCP outputSchema and, unchanged, the OpenAPI 3.1 response schemas). Objects list
// the fields every response carries as required, and the fields only some carry as optional;
// `make test` checks a real response of every operation against them (httpapi/openapi_test.go),
// and that test also fails on a property an object schema with properties does not declare,
// so they cannot drift from the handlers either way. A schema without properties (anyObject)
// is free-form and left out of that check: use it only for data that really is free-form.

type kv struct {
	name string
	s    *jsonschema.Schema
}

func prop(name string, s *jsonschema.Schema) kv { return kv{name, s} }

// describe gives the property a description (on a copy: the shared schemas stay bare).
func (p kv) describe(d string) kv {
	c := *p.s
	c.Description = d
	return kv{p.name, &c}
}

// object is an object whose listed properties are all present (others may be added later).
func object(props ...kv) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, p := range props {
		s.Properties[p.name] = p.s
		s.Required = append(s.Required, p.name)
	}
	return s
}

// with is base (an object) plus the required props.
func with(base *jsonschema.Schema, props ...kv) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{},
		Required: append([]string(nil), base.Required...)}
	for k, v := range base.Properties {
		s.Properties[k] = v
	}
	for _, p := range props {
		s.Properties[p.name] = p.s
		s.Required = append(s.Required, p.name)
	}
	return s
}

// optional is base (an object) plus props that only some answers carry.
func optional(base *jsonschema.Schema, props ...kv) *jsonschema.Schema {
	s := with(base)
	for _, p := range props {
		s.Properties[p.name] = p.s
	}
	return s
}

func typ(t string) *jsonschema.Schema { return &jsonschema.Schema{Type: t} }

func orNull(t string) *jsonschema.Schema { return &jsonschema.Schema{Types: []string{t, "null"}} }

// nullable is s or null.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{s, {Type: "null"}}}
}

func arrayOf(s *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: s}
}

func enumOf(values ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

var (
	str       = typ("string")
	integer   = typ("integer")
	number    = typ("number")
	boolean   = typ("boolean")
	strN      = orNull("string")
	intN      = orNull("integer")
	numN      = orNull("number")
	anyObject = typ("object")
	dateTime  = &jsonschema.Schema{Types: []string{"string", "null"}, Format: "date-time"}

	// bookSchema is spec §2.1, plus settings_revision (bulk settings, spec §4.1).
	bookSchema = SchemaOf[Book]()

	// cursorMetaSchema is the meta of every cursor-paginated list (docs/API.md, Pagination):
	// limit is the page size used (the default when the request gave none).
	cursorMetaSchema = object(prop("next_cursor", strN), prop("has_more", boolean), prop("limit", integer))
	// pageMetaSchema is the meta of the page-paginated subscribers list (spec §4.2).
	pageMetaSchema = object(prop("total", integer), prop("per_page", integer), prop("current_page", integer),
		prop("last_page", integer), prop("from", intN), prop("to", intN))
	messageSchema = object(prop("message", str))
	// createdMetaSchema is the meta of an add that may find the entry already there.
	createdMetaSchema = object(prop("created", boolean))
	totalMetaSchema   = object(prop("total", integer))

	uploadSchema = object(prop("batch_id", str), prop("status", str), prop("book_ids", arrayOf(str)))

	progressSchema = object(prop("total", integer), prop("completed", integer), prop("pending", integer), prop("failed", integer))

	// batchSchema is an upload batch (spec §3.2, DESIGN §11).
	batchSchema = object(
		prop("id", str), prop("batch_id", str),
		prop("status", enumOf("queued", "processing", "completed", "failed", "cancelled")),
		prop("progress", progressSchema),
		prop("files", arrayOf(object(prop("name", str), prop("kind", str), prop("size", integer),
			prop("book_id", str), prop("status", str), prop("page_count", integer), prop("error", strN)))),
		prop("books", arrayOf(bookSchema)).describe("the Book objects the batch produced (those still existing); the same in every form of the batch"),
		prop("created_at", dateTime), prop("started_at", dateTime), prop("finished_at", dateTime),
		prop("cancelled_at", dateTime),
	)
	batchStatusSchema   = batchSchema
	activeUploadsSchema = object(prop("state", enumOf("idle", "queued", "processing")), prop("batches", arrayOf(batchSchema)))

	subscriberSchema        = SchemaOf[Subscriber]()
	subscriberDeletedSchema = with(messageSchema, prop("id", integer))

	// embedDomainSchema is spec §2.3.
	embedDomainSchema        = SchemaOf[EmbedDomain]()
	embedDomainDeletedSchema = with(messageSchema, prop("id", str))
	embedDomainsMetaSchema   = object(prop("total", integer), prop("domains_enabled", boolean))

	trackedLinkSchema = SchemaOf[TrackedLink]()

	workspaceSchema = SchemaOf[Workspace]()

	// brandSchema is spec §2.4.
	brandSchema     = SchemaOf[Brand]()
	brandMetaSchema = object(prop("plan", str), prop("take_over_branding_available", boolean))

	healthSchema = object(prop("status", str), prop("timestamp", str), prop("version", str),
		prop("details", optional(object(prop("converters", arrayOf(object(prop("name", str), prop("kinds", arrayOf(str)),
			prop("programs", arrayOf(str)), prop("packages", arrayOf(str)), prop("missing", arrayOf(str)))))),
			// cluster mode only (docs/OPERATIONS.md "Running a cluster")
			prop("cluster", optional(object(prop("node", str), prop("url", str), prop("partitions", integer),
				prop("owned", arrayOf(integer)), prop("ready", arrayOf(integer)),
				prop("owners", &jsonschema.Schema{Type: "object", AdditionalProperties: str}),
				prop("restoring", arrayOf(object(prop("partition", integer), prop("from", integer), prop("to", integer), prop("applied", integer)))),
				prop("global_lag", integer)), prop("takeover_error", str))))))

	meSchema = SchemaOf[Me]()

	location = []kv{prop("country", strN), prop("region", strN), prop("city", strN), prop("latitude", numN), prop("longitude", numN)}

	// viewEventSchema, interactionEventSchema and auditEventSchema are spec §2.8.
	viewEventSchema = object(append([]kv{
		prop("id", integer), prop("book_id", str), prop("book_title", str), prop("viewer_id", intN),
		prop("viewer_email", str), prop("source_host", strN), prop("from_embedded", boolean),
		prop("impressions", integer), prop("reads", integer), prop("clicks", integer), prop("pages_viewed", integer),
		prop("duration_seconds", integer), prop("engagement_score", str),
		prop("tracked_link", nullable(object(prop("id", integer), prop("name", str), prop("slug", str)))),
		prop("session_id", str), prop("recorded_at", dateTime), prop("updated_at", dateTime)}, location...)...)

	interactionEventSchema = object(append([]kv{
		prop("id", integer), prop("book_id", str), prop("viewer_id", intN), prop("viewer_email", str),
		prop("tracked_link_id", intN), prop("session_id", str), prop("event_type", str), prop("page_number", intN),
		prop("active_ms", intN), prop("active_seconds", numN), prop("exit_reason", str), prop("source_type", str),
		prop("source_host", strN), prop("metadata", orNull("array")),
		prop("url", str).describe("the URL a link_clicked or checkout_redirect_clicked event went to (empty for other events)"),
		prop("occurred_at", dateTime), prop("created_at", dateTime)}, location...)...)

	auditEventSchema = object(
		prop("id", str), prop("source", str), prop("source_event_id", integer), prop("book_id", str),
		prop("viewer_id", intN), prop("viewer_email", str), prop("event_type", str), prop("page_number", intN),
		prop("active_ms", intN), prop("active_seconds", numN), prop("reason", str),
		prop("metadata", &jsonschema.Schema{Types: []string{"null", "object", "string", "array"}}),
		prop("occurred_at", dateTime))

	// pageSummarySchema and readerPageSchema are spec §2.8's page summary and reader page
	// summary; a reader page also names its reader (reader_id, as the readers operation does)
	// and, for an anonymous reader, its session.
	// The analytics rows are the analytics package's types (SchemaOf, output.go).
	pageSummarySchema   = SchemaOf[analytics.PageSummary]()
	readerPageSchema    = SchemaOf[analytics.ReaderPage]()
	readerSummarySchema = SchemaOf[analytics.ReaderSummary]()
	sessionPageSchema   = SchemaOf[analytics.SessionPage]()
	bookFlowSchema      = SchemaOf[analytics.BookFlow]()

	journeySchema = object(
		prop("viewer", object(prop("id", str), prop("email", str))),
		prop("aggregates", object(prop("total_books", str), prop("total_pages_viewed", str),
			prop("total_duration_seconds", str), prop("overall_engagement_score", str), prop("total_visits", str))),
		prop("books", arrayOf(object(prop("book_id", str), prop("title", str), prop("visits", str),
			prop("pages_viewed", str), prop("duration_seconds", str), prop("engagement_score", str), prop("last_visit", str)))),
		prop("timeline", arrayOf(object(prop("view_event_id", str), prop("book_id", str), prop("title", str),
			prop("session_id", str), prop("started_at", str), prop("ended_at", str), prop("pages_viewed", str),
			prop("duration_seconds", str), prop("engagement_score", str)))))
)
