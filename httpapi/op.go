package httpapi

import (
	"io"
	"time"

	"flipbook/storage"
)

// In is where a parameter comes from.
type In int

const (
	InPath In = iota
	InQuery
	InBody // JSON body (or multipart form field)
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
	KFile // a multipart file part: the value is []*multipart.FileHeader
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
	Format   string // email, uri, host
	Items    *Param
	Props    []Param
	Desc     string
}

// Auth is how an operation authenticates.
type Auth int

const (
	AuthKey   Auth = iota // API key (bearer or api_key), scope-checked
	AuthNone              // public, not rate limited
	AuthAdmin             // the provisioning surface's admin token
)

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
	Plan    string // minimum plan; "" for any
	Auth    Auth
	Write   bool // Idempotency-Key applies
	// ReadOnly and Destructive are MCP tool hints.
	ReadOnly    bool
	Destructive bool
	Params      []Param
	// MaxBody caps the request body in bytes (413 above it); 0 means DefaultMaxJSONBody.
	MaxBody int
	// Internal operations are routes of the service that are not part of the public API (the
	// collector, the email gate): no MCP tool, not in the OpenAPI document.
	Internal bool
	// Multipart operations take multipart/form-data (body parameters are form fields and files).
	Multipart bool
	// FastBody, for an operation whose parameters are all in a JSON body, may decode and
	// validate the body's common shape without the generic path; ok=false falls back to the
	// generic path, which must accept and reject exactly as if FastBody did not exist (the
	// collector: collectfast.go).
	FastBody func(body []byte) (params map[string]any, ok bool)
	Handler  func(*Request) (*Result, error)
}

// DefaultMaxJSONBody is the body cap of operations that do not set their own.
const DefaultMaxJSONBody = 1 << 20

// Principal is the authenticated caller.
type Principal struct {
	Key       *storage.APIKey
	Workspace *storage.Workspace
	Tenant    storage.Tenant
}

// Request is the transport-neutral input of a handler: validated, typed parameters.
type Request struct {
	Op     *Operation
	Auth   *Principal
	Params map[string]any // string, int64, float64, bool, time.Time, map[string]any, []any; nil = JSON null
	Now    time.Time
	IP     string // the caller's address (for per-IP limits of public routes)
	// Geo is the reader's location from trusted edge headers (Config.TrustGeoHeaders), or nil.
	Geo *geo
}

// Has reports whether a parameter was given (possibly as null).
func (r *Request) Has(name string) bool { _, ok := r.Params[name]; return ok }

// Str returns a string parameter ("" when absent or null).
func (r *Request) Str(name string) string { s, _ := r.Params[name].(string); return s }

// Int returns an integer parameter and whether it was given.
func (r *Request) Int(name string) (int64, bool) { v, ok := r.Params[name].(int64); return v, ok }

// Result is a handler's success: status, data and optional meta, rendered as {data, meta};
// or, with Stream, a body written as it is produced (the CSV exports).
type Result struct {
	Status int
	Data   any
	Meta   any
	// Stream, when set, is the body instead of the envelope, sent with ContentType and, when
	// Filename is set, Content-Disposition: attachment.
	Stream      Stream
	ContentType string
	Filename    string
}

// Stream is a body written as it is produced. The REST pipeline hands it to fasthttp, which
// calls WriteTo with the connection's chunked writer after the handler returned (so it must not
// use anything of the request but what it copied); an error from that writer means the client
// went away, and WriteTo must then stop and return it. Close is called exactly once, whether
// or not WriteTo ran, and releases what the stream holds.
type Stream interface {
	io.WriterTo
	io.Closer
}

// Helpers for concise table entries.

func f64(v float64) *float64 { return &v }

func pStr(name string, in In, maxLen int) Param {
	return Param{Name: name, In: in, Kind: KString, MaxLen: maxLen}
}
func pBool(name string, in In) Param { return Param{Name: name, In: in, Kind: KBool} }
func pInt(name string, in In, min, max float64) Param {
	p := Param{Name: name, In: in, Kind: KInt}
	if min != 0 || max != 0 {
		p.Min = f64(min)
	}
	if max != 0 {
		p.Max = f64(max)
	}
	return p
}
func pEnum(name string, in In, values ...string) Param {
	return Param{Name: name, In: in, Kind: KString, Enum: values}
}
func pTime(name string, in In) Param { return Param{Name: name, In: in, Kind: KDateTime} }

func (p Param) req() Param               { p.Required = true; return p }
func (p Param) null() Param              { p.Nullable = true; return p }
func (p Param) desc(d string) Param      { p.Desc = d; return p }
func (p Param) minLen(n int) Param       { p.MinLen = n; return p }
func (p Param) format(f string) Param    { p.Format = f; return p }
func (p Param) items(min, max int) Param { p.MinItems, p.MaxItems = min, max; return p }
