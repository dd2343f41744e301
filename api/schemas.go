package api

import (
	"github.com/google/jsonschema-go/jsonschema"
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
	anyObject = typ("object")
	dateTime  = &jsonschema.Schema{Types: []string{"string", "null"}, Format: "date-time"}

	totalMetaSchema = object(prop("total", integer))
)
