package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"flipbook/analytics"
)

// Response schemas derived from the types handlers answer with (issue 27): SchemaOf[T] is the
// JSON Schema of T's JSON encoding, written as the hand-made schemas of schemas.go are. A
// struct is an object whose properties are its JSON fields (embedded structs lend theirs; a
// field tagged json:"-" is left out), all required but those tagged omitempty (a pointer
// tagged omitempty is absent when nil, so its schema is not nullable); a map with string keys
// other than map[string]any is an object whose values are its elements'; a `desc` tag
// is the property's description, `format` its format, `enum:"a|b"` its values and `type` its
// type where the Go type does not say (raw JSON; `type:"array|null"` for a union of types). int types are integer, float types number, a pointer to a
// scalar is that type or null, a pointer to a struct is the object or null, a slice is an
// array; the types of outputTypes have their own schema (a time stored as text, raw JSON).
// The response of an operation whose rows are such a type is declared from it, so the
// document, the MCP output schema and the answer cannot drift apart; the contract test
// (httpapi/openapi_test.go) checks a real answer of every operation against the schema.
func SchemaOf[T any]() *jsonschema.Schema { return schemaOfType(reflect.TypeFor[T]()) }

// outputTypes are the types whose JSON is not what their Go kind says.
var outputTypes = map[reflect.Type]func() *jsonschema.Schema{
	reflect.TypeFor[analytics.Time]():  func() *jsonschema.Schema { return orNull("string") }, // an RFC 3339 string or null
	reflect.TypeFor[json.RawMessage](): func() *jsonschema.Schema { return &jsonschema.Schema{} },
	timeType:                           func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Format: "date-time"} },
	mapType:                            func() *jsonschema.Schema { return orNull("object") }, // a nil map is null
	anyType:                            func() *jsonschema.Schema { return &jsonschema.Schema{} },
	// The catalog and bulk settings types whose schemas have always been written so (anyOf
	// with null, an object without properties), which the rules above would write otherwise.
	reflect.TypeFor[ArrayOrNull]():      func() *jsonschema.Schema { return nullable(typ("array")) },
	reflect.TypeFor[BoolOrNull]():       func() *jsonschema.Schema { return nullable(typ("boolean")) },
	reflect.TypeFor[BulkAcceptedMeta](): func() *jsonschema.Schema { return typ("object") },
}

func schemaOfType(t reflect.Type) *jsonschema.Schema {
	if f, ok := outputTypes[t]; ok {
		return f()
	}
	if s, ok := schemaOfRaw(t); ok {
		return s
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := schemaOfType(t.Elem())
		if inner.Type != "" && inner.Type != "object" && inner.Type != "array" {
			return &jsonschema.Schema{Types: []string{inner.Type, "null"}, Format: inner.Format, Enum: inner.Enum}
		}
		return nullable(inner)
	case reflect.String:
		return typ("string")
	case reflect.Bool:
		return typ("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return typ("integer")
	case reflect.Float32, reflect.Float64:
		return typ("number")
	case reflect.Slice, reflect.Array:
		return arrayOf(schemaOfType(t.Elem()))
	case reflect.Map:
		if t.Key().Kind() == reflect.String { // never nil where it is answered (map[string]any is)
			return &jsonschema.Schema{Type: "object", AdditionalProperties: schemaOfType(t.Elem())}
		}
	case reflect.Struct:
		s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
		addFields(s, t)
		return s
	}
	panic(fmt.Sprintf("api: SchemaOf: %s has no JSON Schema", t))
}

// addFields adds t's JSON fields to the object schema s.
func addFields(s *jsonschema.Schema, t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			addFields(s, f.Type)
			continue
		}
		if name == "" {
			name = f.Name
		}
		omitempty := strings.Contains(","+opts+",", ",omitempty,")
		ft := f.Type
		if omitempty && ft.Kind() == reflect.Pointer {
			ft = ft.Elem() // absent when nil, never null
		}
		p := schemaOfType(ft)
		if d := f.Tag.Get("desc"); d != "" {
			p.Description = d
		}
		if v := f.Tag.Get("format"); v != "" {
			p.Format = v
		}
		if v := f.Tag.Get("type"); v != "" { // raw JSON known to be of one type, or of "a|b"
			if strings.Contains(v, "|") {
				p.Type, p.Types = "", strings.Split(v, "|")
			} else {
				p.Type, p.Types = v, nil
			}
			p.Items, p.AnyOf = nil, nil // the tag says all
		}
		if v, ok := f.Tag.Lookup("enum"); ok {
			for _, e := range strings.Split(v, "|") {
				p.Enum = append(p.Enum, e)
			}
		}
		s.Properties[name] = p
		if !omitempty {
			s.Required = append(s.Required, name)
		}
	}
}
