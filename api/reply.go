package api

import (
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// Typed outputs (issue 27): an operation's handler answers a *Reply[D, M] whose types are the
// envelope's data and meta, and Define derives the operation's parameters (from In), its
// response schemas (from D and M: SchemaOf) and its Handler from that one function:
//
//	func (s *bookService) GetBook(r *api.Request, in *api.BookPath) (*api.Reply[api.Raw[api.Book], api.None], error)
//	Define(Operation{ID: "books.get", Method: "GET", Path: "/books/{book}", ...}, b.GetBook)
//
// so the OpenAPI document, the MCP output schema and the answer come from the same types and
// the compiler checks that a handler answers what its operation declares. CSV exports answer
// a stream (Result.Stream) and keep Bind.

// Reply is a typed success: Data is the envelope's data, Meta its meta (nil: none). Status,
// when not 0, is the success status; 0 is the operation's (Operation.SuccessStatus).
type Reply[D, M any] struct {
	Status int
	Data   D
	Meta   *M
}

// None is the meta type of an operation whose answers have no meta.
type None struct{}

// Data is a Reply without meta.
type Data[D any] = Reply[D, None]

// OK returns a Reply of d without meta.
func OK[D any](d D) *Reply[D, None] { return &Reply[D, None]{Data: d} }

// With returns a Reply of d with meta m.
func With[D, M any](d D, m M) *Reply[D, M] { return &Reply[D, M]{Data: d, Meta: &m} }

// Raw is JSON already encoded whose value is a T (a cached book): it is written as it is,
// and its schema is T's.
type Raw[T any] json.RawMessage

// MarshalJSON returns the JSON as it is (null when empty).
func (r Raw[T]) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// rawType is what Raw's type parameter is, for SchemaOf.
func (Raw[T]) rawType() reflect.Type { return reflect.TypeFor[T]() }

// rawJSON returns the bytes (Define: the envelope frames them without encoding).
func (r Raw[T]) rawJSON() json.RawMessage { return json.RawMessage(r) }

type rawOf interface {
	rawType() reflect.Type
	rawJSON() json.RawMessage
}

var (
	rawOfType = reflect.TypeFor[rawOf]()
	noneType  = reflect.TypeFor[None]()
)

// Define completes op from its typed handler h: Params from In (unless op sets them: a
// declaration adjusted with Adjust), Response from D and ResponseMeta from M (unless op sets
// them; none for None), and Handler, which binds each call's validated parameters into a new
// In and renders h's Reply. It returns a pointer for the table.
func Define[In, D, M any](op Operation, h func(*Request, *In) (*Reply[D, M], error)) *Operation {
	if op.Params == nil {
		op.Params = ParamsOf[In]()
	}
	if op.Response == nil {
		op.Response = SchemaOf[D]()
	}
	if op.ResponseMeta == nil && reflect.TypeFor[M]() != noneType {
		op.ResponseMeta = SchemaOf[M]()
	}
	t := typedOf(reflect.TypeFor[In]())
	if t.stringsOnly(op.Params) {
		op.direct = func(a *Args) any {
			in := new(In)
			if !t.bindStrings(reflect.ValueOf(in).Elem(), op.Params, a) {
				return nil
			}
			return in
		}
	}
	op.Handler = func(r *Request) (*Result, error) {
		in, ok := r.In.(*In)
		if !ok {
			in = new(In)
			t.bind(reflect.ValueOf(in).Elem(), r.Params)
		}
		rep, err := h(r, in)
		if err != nil {
			return nil, err
		}
		res := rep.result()
		if res.Status == 0 {
			res.Status = op.SuccessStatus()
		}
		return res, nil
	}
	return &op
}

// DefineNoParams is Define for an operation without parameters.
func DefineNoParams[D, M any](op Operation, h func(*Request) (*Reply[D, M], error)) *Operation {
	return Define(op, func(r *Request, _ *struct{}) (*Reply[D, M], error) { return h(r) })
}

// result is the transport-neutral Result of rep: raw JSON is handed on as Raw, framed by
// encodeResult without being encoded again.
func (rep *Reply[D, M]) result() *Result {
	res := &Result{Status: rep.Status}
	if raw, ok := any(&rep.Data).(interface{ rawJSON() json.RawMessage }); ok && rep.Meta == nil {
		res.Raw = raw.rawJSON()
		return res
	}
	res.Data = rep.Data
	if rep.Meta != nil {
		res.Meta = rep.Meta
	}
	return res
}

// schemaOfRaw is the schema of a Raw[T]: T's.
func schemaOfRaw(t reflect.Type) (*jsonschema.Schema, bool) {
	if !t.Implements(rawOfType) {
		return nil, false
	}
	return schemaOfType(reflect.Zero(t).Interface().(rawOf).rawType()), true
}
