package api

import (
	"github.com/google/jsonschema-go/jsonschema"
)

// ParamSchema is a parameter's rules as JSON Schema 2020-12: the MCP inputSchema and the
// OpenAPI 3.1 parameter and body schemas are built from it, so both say what Validate checks.
// A file part is a binary string (multipart/form-data).
func ParamSchema(p *Param) *jsonschema.Schema {
	if p.Schema != nil {
		s := p.Schema.CloneSchemas()
		if s.Description == "" {
			s.Description = p.Desc
		}
		return s
	}
	s := &jsonschema.Schema{Description: p.Desc}
	switch p.Kind {
	case KString:
		s.Type = "string"
		if p.MinLen > 0 {
			s.MinLength = ptr(p.MinLen)
		} else if p.Required {
			s.MinLength = ptr(1) // Validate refuses a blank required string
		}
		if p.MaxLen > 0 {
			s.MaxLength = ptr(p.MaxLen)
		}
		for _, v := range p.Enum {
			s.Enum = append(s.Enum, v)
		}
		switch p.Format {
		case "email":
			s.Format = "email"
		case "uri":
			s.Format = "uri"
		}
	case KInt:
		s.Type = "integer"
		s.Minimum, s.Maximum = p.Min, p.Max
	case KNumber:
		s.Type = "number"
		s.Minimum, s.Maximum = p.Min, p.Max
	case KBool:
		s.Type = "boolean"
	case KDateTime:
		s.Type, s.Format = "string", "date-time"
	case KObject:
		s.Type = "object"
		if len(p.Props) > 0 {
			s.Properties = map[string]*jsonschema.Schema{}
			for i := range p.Props {
				sub := &p.Props[i]
				s.Properties[sub.Name] = ParamSchema(sub)
				if sub.Required {
					s.Required = append(s.Required, sub.Name)
				}
			}
		}
	case KArray:
		s.Type = "array"
		if p.MinItems > 0 {
			s.MinItems = ptr(p.MinItems)
		}
		if p.MaxItems > 0 {
			s.MaxItems = ptr(p.MaxItems)
		}
		if p.Items != nil {
			s.Items = ParamSchema(p.Items)
		}
	case KFile:
		s.Type, s.Format = "string", "binary"
	case KAny:
	}
	if p.Nullable && s.Type != "" {
		s.Types = []string{s.Type, "null"}
		s.Type = ""
		if s.Enum != nil {
			s.Enum = append(s.Enum, nil)
		}
	}
	if p.Extension {
		s.Extra = map[string]any{"x-extension": true}
	}
	return s
}

// ObjectSchema is an object whose properties are params, keyed by name (arg: by tool argument
// name), with their required list.
func ObjectSchema(params []Param, arg bool) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for i := range params {
		p := &params[i]
		name := p.Name
		if arg {
			name = p.ArgName()
		}
		s.Properties[name] = ParamSchema(p)
		if p.Required {
			s.Required = append(s.Required, name)
		}
	}
	return s
}

// Envelope is the schema of a success body: {data, meta}.
func Envelope(op *Operation) *jsonschema.Schema {
	data := op.Response
	if data == nil {
		data = &jsonschema.Schema{}
	}
	s := &jsonschema.Schema{Type: "object", Required: []string{"data"},
		Properties: map[string]*jsonschema.Schema{"data": data}}
	if op.ResponseMeta != nil {
		s.Properties["meta"] = op.ResponseMeta
	}
	return s
}

// ResultSchema is the schema of op's success body, exactly as it is sent: Data itself for a
// Bare operation (health), the {data, meta} envelope otherwise. The MCP outputSchema of a tool
// is this (its structuredContent is the body), so clients that validate structured content
// against it (the TypeScript SDK does) accept every success.
func ResultSchema(op *Operation) *jsonschema.Schema {
	if op.Bare && op.Response != nil {
		return op.Response
	}
	return Envelope(op)
}

// Portable is a copy of s in the subset of JSON Schema that MCP hosts map tool schemas onto
// (docs/CLIENTS.md, "Schema portability"): every `type` is a single type. A type union such as
// ["string", "null"] (legal JSON Schema, but refused or flattened by single-type dialects such
// as the OpenAPI 3.0 subset of Gemini function declarations, and a warning of mcp-inspector
// --strict) becomes anyOf branches of one type each, the value's assertions (format, enum,
// bounds, properties) repeated in each non-null branch and its annotations (description,
// title, default) kept on the outer schema. s itself is not changed: the OpenAPI 3.1 document
// keeps the type arrays, which every 3.1 tool reads.
func Portable(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	c := s.CloneSchemas()
	portable(c)
	return c
}

// portable rewrites s in place (s is a tree: CloneSchemas copies a shared sub-schema at each
// place it appears), children first.
func portable(s *jsonschema.Schema) {
	for _, sub := range []*jsonschema.Schema{s.Items, s.AdditionalProperties, s.Not, s.Contains,
		s.PropertyNames, s.If, s.Then, s.Else, s.UnevaluatedItems, s.UnevaluatedProperties, s.AdditionalItems, s.ContentSchema} {
		if sub != nil {
			portable(sub)
		}
	}
	for _, list := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems, s.ItemsArray} {
		for _, sub := range list {
			portable(sub)
		}
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.PatternProperties, s.Defs, s.Definitions, s.DependentSchemas, s.DependencySchemas} {
		for _, sub := range m {
			portable(sub)
		}
	}
	if len(s.Types) == 0 {
		return
	}
	types := s.Types
	if len(types) == 1 {
		s.Type, s.Types = types[0], nil
		return
	}
	// The assertions, without the annotations, for each branch.
	body := *s
	body.Types = nil
	body.Description, body.Title, body.Default, body.Examples, body.Comment = "", "", nil, nil, ""
	body.Deprecated, body.ReadOnly, body.WriteOnly = false, false, false
	body.AnyOf = nil
	var enum []any
	for _, v := range s.Enum {
		if v != nil {
			enum = append(enum, v)
		}
	}
	body.Enum = enum
	var branches []*jsonschema.Schema
	for _, t := range types {
		if t == "null" {
			branches = append(branches, &jsonschema.Schema{Type: "null"})
			continue
		}
		b := body
		b.Type = t
		branches = append(branches, &b)
	}
	outer := jsonschema.Schema{Description: s.Description, Title: s.Title, Default: s.Default, Examples: s.Examples,
		Comment: s.Comment, Deprecated: s.Deprecated, ReadOnly: s.ReadOnly, WriteOnly: s.WriteOnly, AnyOf: branches}
	if s.AnyOf != nil {
		// A type union beside an anyOf: the value must match both.
		outer.AnyOf = nil
		outer.AllOf = []*jsonschema.Schema{{AnyOf: s.AnyOf}, {AnyOf: branches}}
	}
	*s = outer
}

func ptr[T any](v T) *T { return &v }
