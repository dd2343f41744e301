package api

import (
	"github.com/google/jsonschema-go/jsonschema"
)

// ParamSchema is a parameter's rules as JSON Schema 2020-12: the MCP inputSchema and the
// OpenAPI 3.1 parameter and body schemas are built from it, so both say what Validate checks.
// A file part is a binary string (multipart/form-data).
func ParamSchema(p *Param) *jsonschema.Schema {
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

func ptr[T any](v T) *T { return &v }
