// Package api is what operations the service has and how one is called, whatever the
// transport: the operation table (table.go, one declaration per operation of spec §4), the
// error catalogue (errors.go), parameter validation (validate.go), response schemas
// (schemas.go) and Call (call.go), which runs authentication, rate limits, scope and plan,
// idempotency, validation and the handler. REST (package httpapi), MCP (package mcp) and the
// OpenAPI document (package httpapi, openapi.go) are readers of this table and callers of Call;
// nothing here knows of HTTP.
package api

import (
	"context"
	"io"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"flipbook/storage"
)

// In is where a parameter comes from.
type In int

const (
	InPath In = iota
	InQuery
	InBody // JSON body (or multipart form field)
	// InTool is a tool-only argument: declared for MCP, never read by REST. The MCP adapter
	// consumes it (output_path of an export, base64 files of an upload).
	InTool
)

// Kind is a parameter's type.
type Kind int

const (
	KString Kind = iota
	KInt
	KNumber
	KBool
	KDateTime
	KObject
	KArray
	KAny
	KFile // a file part: the value is []*multipart.FileHeader
)

// Param is one parameter of an operation with its limits (spec §4, §8).
type Param struct {
	Name     string
	In       In
	Kind     Kind
	Required bool
	Nullable bool
	MinLen   int // strings: minimum length in characters (0 = none)
	MaxLen   int // strings: maximum length in characters (0 = none)
	Min, Max *float64
	MinItems int
	MaxItems int // arrays (0 = none)
	Enum     []string
	Format   string // email, uri, background (validate_text.go), domain (validate_domain.go)
	Items    *Param
	Props    []Param
	// Multiline marks free text: tab, line breaks and bidi controls allowed (validate_text.go).
	Multiline bool
	// Refuse lists properties an object must not have (a 422 with RefuseMsg names each one
	// present): catalog product data refuses template and styling fields.
	Refuse    []string
	RefuseMsg string
	Desc      string
	// Arg is the MCP argument name when it differs from Name (path values: book → book_id,
	// spec §4.11); see ArgName.
	Arg string
	// Schema, when set, is the parameter's JSON Schema instead of the one its Kind gives (a
	// KAny value the handler reads in more than one form: webhook event types).
	Schema *jsonschema.Schema
	// Extension marks a parameter that is not in the public API specification (the tag option
	// extension): its schema says x-extension, in the OpenAPI document and the MCP tool.
	Extension bool `json:",omitempty"`
}

// ArgName is the parameter's name as a tool argument.
func (p *Param) ArgName() string {
	if p.Arg != "" {
		return p.Arg
	}
	return p.Name
}

// Auth is how an operation authenticates.
type Auth int

const (
	AuthKey   Auth = iota // API key (bearer or api_key), scope-checked
	AuthNone              // public, not rate limited
	AuthAdmin             // the provisioning surface's admin token
)

// Handler runs an operation on validated parameters.
type Handler func(*Request) (*Result, error)

// Operation is one entry of the operation table: the single declaration from which the REST
// router, validation, the MCP tool list and the OpenAPI document are built.
type Operation struct {
	ID      string
	Method  string
	Path    string // relative to Base (e.g. /books/{book})
	Base    string // /api/v1 or /admin/v1
	Tool    string // MCP tool name; "" when the operation has no tool
	Summary string
	Scope   string // required scope; "" for none
	// AlsoScope is a second scope the operation requires ("" for none): a catalog render reads
	// the catalog and writes a book.
	AlsoScope string
	Plan      string // minimum plan; "" for any
	Auth      Auth
	Write     bool // Idempotency-Key applies
	// ReadOnly, Destructive and OpenWorld are MCP tool hints (an idempotent hint is derived:
	// see Idempotent).
	ReadOnly    bool
	Destructive bool
	OpenWorld   bool // the operation reaches outside the service (fetches URLs)
	Params      []Param
	// ToolParams are tool-only arguments (In = InTool), handled by the MCP adapter.
	ToolParams []Param
	// Status is the success status (200 when 0); CSV marks an operation whose success is a
	// text/csv stream rather than the JSON envelope.
	Status int
	// OtherStatus is a second success status, 0 for none (subscribers: 200 when the entry
	// already existed, 201 when it was added).
	OtherStatus int
	// ExtraErrors are error statuses beyond those derived from the entry (POST /webhooks: 502).
	ExtraErrors []int
	CSV         bool
	// Bare operations answer Data itself, without the {data, meta} envelope (health).
	Bare bool
	// Response is the schema of the success envelope's data (nil: not described); ResponseMeta
	// of its meta.
	Response     *jsonschema.Schema
	ResponseMeta *jsonschema.Schema
	// MaxBody caps the request body in bytes (413 above it); 0 means DefaultMaxJSONBody.
	MaxBody int
	// Internal operations are routes of the service that are not part of the public API (the
	// collector, the email gate): no MCP tool, not in the OpenAPI document.
	Internal bool
	// Extension operations are public but not in the spec (issue 28's page text): the OpenAPI
	// document marks them x-extension; they have no MCP tool by default.
	Extension bool
	// Multipart operations take multipart/form-data (body parameters are form fields and files).
	Multipart bool
	// FastBody, for an operation whose parameters are all in a JSON body, may decode and
	// validate the body's common shape without the generic path; ok=false falls back to the
	// generic path, which must accept and reject exactly as if FastBody did not exist (the
	// collector: httpapi/collectfast.go).
	FastBody func(body []byte) (params map[string]any, ok bool)
	Handler  Handler
	// direct, set by Define for an input of path and query strings only, checks and binds a
	// call's values into the input without Validate's map; nil (the call then goes through
	// Validate) when a value is missing or refused.
	direct func(*Args) any
}

// withErrors adds error statuses to ExtraErrors (for table entries built by a helper).
func (op *Operation) withErrors(codes ...int) *Operation {
	op.ExtraErrors = append(op.ExtraErrors, codes...)
	return op
}

// Idempotent reports whether repeating the call has no further effect (MCP idempotentHint):
// reads, PUT and DELETE.
func (op *Operation) Idempotent() bool {
	return op.ReadOnly || op.Method == "PUT" || op.Method == "DELETE"
}

// SuccessStatus is the status of a success (200 unless the entry says otherwise).
func (op *Operation) SuccessStatus() int {
	if op.Status == 0 {
		return 200
	}
	return op.Status
}

// HasBody reports whether any parameter comes from the request body.
func (op *Operation) HasBody() bool {
	for i := range op.Params {
		if op.Params[i].In == InBody {
			return true
		}
	}
	return false
}

// DefaultMaxJSONBody is the body cap of operations that do not set their own.
const DefaultMaxJSONBody = 1 << 20

// BodyCap is the operation's body cap in bytes (MaxBody, or DefaultMaxJSONBody).
func (op *Operation) BodyCap() int {
	if op.MaxBody > 0 {
		return op.MaxBody
	}
	return DefaultMaxJSONBody
}

// Principal is the authenticated caller.
type Principal struct {
	Key       *storage.APIKey // for an OAuth access token: its key, with the token's scopes
	Workspace *storage.Workspace
	Tenant    storage.Tenant
	Token     *TokenInfo // set when the credential is an OAuth access token
}

// Request is the transport-neutral input of a handler: validated, typed parameters.
type Request struct {
	Ctx    context.Context
	Op     *Operation
	Auth   *Principal
	Params map[string]any // string, int64, float64, bool, time.Time, map[string]any, []any; nil = JSON null
	// In, when set, is the operation's input already bound (Define's direct binding; Params
	// is then nil).
	In  any
	Now time.Time
	IP  string // the caller's address (for per-IP limits of public routes)
	// Extra is what a transport hands its own handlers beyond the parameters (httpapi: the
	// reader's location from trusted edge headers); nil otherwise.
	Extra any
}

// Str returns a string parameter ("" when absent or null).
func (r *Request) Str(name string) string { s, _ := r.Params[name].(string); return s }

// Result is a handler's success: status, data and optional meta, rendered as {data, meta};
// or, with Stream, a body written as it is produced (the CSV exports).
type Result struct {
	Status int
	Data   any
	Meta   any
	// Raw, when set, is the data already encoded (a Reply of Raw[T]: the cached book JSON),
	// framed without being encoded again; Data and Meta are then unused.
	Raw []byte
	// Stream, when set, is the body instead of the envelope, sent with ContentType and, when
	// Filename is set, Content-Disposition: attachment.
	Stream      Stream
	ContentType string
	Filename    string
	// Body is the rendered JSON (the {data, meta} envelope, or Data itself for a Bare
	// operation), filled by Call, except for Raw data that is not stored for an
	// Idempotency-Key: the transport then writes it framed (FrameData) without a copy.
	// Replayed marks a stored response returned for a repeated Idempotency-Key (Data and
	// Meta are then nil).
	Body     []byte
	Replayed bool
	// Rate is the rate-limit state reported with the answer (nil when unlimited).
	Rate *Decision
}

// Stream is a body written as it is produced. The REST adapter hands it to fasthttp, which
// calls WriteTo with the connection's chunked writer after the handler returned (so it must not
// use anything of the request but what it copied); an error from that writer means the client
// went away, and WriteTo must then stop and return it. Close is called exactly once, whether
// or not WriteTo ran, and releases what the stream holds.
type Stream interface {
	io.WriterTo
	io.Closer
}

// Constructors for concise table entries.

// F64 returns a pointer to v (Param.Min and Max).
func F64(v float64) *float64 { return &v }

// Str is a string parameter of at most maxLen characters (0 = no limit).
func Str(name string, in In, maxLen int) Param {
	return Param{Name: name, In: in, Kind: KString, MaxLen: maxLen}
}

// Bool is a boolean parameter.
func Bool(name string, in In) Param { return Param{Name: name, In: in, Kind: KBool} }

// Int is an integer parameter in [min, max] (max 0: no upper bound; both 0: no bounds).
func Int(name string, in In, min, max float64) Param {
	p := Param{Name: name, In: in, Kind: KInt}
	if min != 0 || max != 0 {
		p.Min = F64(min)
	}
	if max != 0 {
		p.Max = F64(max)
	}
	return p
}

// Enum is a string parameter taking one of values.
func Enum(name string, in In, values ...string) Param {
	return Param{Name: name, In: in, Kind: KString, Enum: values}
}

// Time is an RFC 3339 date-time parameter.
func Time(name string, in In) Param { return Param{Name: name, In: in, Kind: KDateTime} }

// Modifiers, chained on a constructor: Str("title", InBody, 255).Req().Describe("...").

func (p Param) Req() Param                { p.Required = true; return p }
func (p Param) Null() Param               { p.Nullable = true; return p }
func (p Param) Describe(d string) Param   { p.Desc = d; return p }
func (p Param) MinLength(n int) Param     { p.MinLen = n; return p }
func (p Param) WithFormat(f string) Param { p.Format = f; return p }
