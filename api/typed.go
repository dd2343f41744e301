package api

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Typed operations (issue 27): an operation's parameters declared once, as the fields of an
// input struct whose tags are the parameter schema, and a handler that receives the struct
// filled with the validated values:
//
//	type TrackedLinkCreate struct {
//		Book string `param:"book,path,required" max:"64"`
//		Name string `param:"name,body,required" max:"255"`
//	}
//	{ID: "tracked_links.create", ..., Params: ParamsOf[TrackedLinkCreate](), Handler: Bind(b.CreateTrackedLink)}
//
// The table's Params (validation, the MCP input schema, the OpenAPI document) are derived from
// the tags; Bind copies the validated values into a new struct for each call, so a handler
// reads fields the compiler knows, not names in a map. Tags:
//
//	param:"name,in[,required][,nullable][,lines]"  in: path, query or body
//	max:"N" (string length, or number maximum), min:"N" (number minimum), minlen:"N"
//	enum:"a|b|c", format:"email|uri|background|domain", desc:"...", arg:"tool argument name"
//
// Field types: string, int64, float64, bool, time.Time and map[string]any (object), each also
// as a pointer, which is nil when the parameter is absent or null (with nullable). A field
// without a param tag is not a parameter.

// ParamsOf is the parameter list of In's tagged fields, in field order. It panics on a tag it
// cannot read (a declaration error, met when the table is built).
func ParamsOf[In any]() []Param {
	return typedOf(reflect.TypeFor[In]()).params
}

// Bind turns a typed handler into the table's Handler: each call gets a new In holding the
// request's validated parameters.
func Bind[In any](h func(*Request, *In) (*Result, error)) Handler {
	t := typedOf(reflect.TypeFor[In]())
	return func(r *Request) (*Result, error) {
		in := new(In)
		t.bind(reflect.ValueOf(in).Elem(), r.Params)
		return h(r, in)
	}
}

// typedStruct is what one input struct declares: its parameters and the field of each.
type typedStruct struct {
	params []Param
	fields []int // params[i] is read into field fields[i]
}

var typedCache sync.Map // reflect.Type → *typedStruct

func typedOf(t reflect.Type) *typedStruct {
	if v, ok := typedCache.Load(t); ok {
		return v.(*typedStruct)
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("api: typed parameters of %s: not a struct", t))
	}
	ts := &typedStruct{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("param")
		if !ok {
			continue
		}
		p, err := paramOf(f, tag)
		if err != nil {
			panic(fmt.Sprintf("api: %s.%s: %v", t.Name(), f.Name, err))
		}
		ts.params = append(ts.params, p)
		ts.fields = append(ts.fields, i)
	}
	v, _ := typedCache.LoadOrStore(t, ts)
	return v.(*typedStruct)
}

var (
	timeType = reflect.TypeFor[time.Time]()
	mapType  = reflect.TypeFor[map[string]any]()
)

// paramOf reads one field's tags.
func paramOf(f reflect.StructField, tag string) (Param, error) {
	parts := strings.Split(tag, ",")
	if len(parts) < 2 || parts[0] == "" {
		return Param{}, fmt.Errorf(`param tag %q: want "name,in[,options]"`, tag)
	}
	p := Param{Name: parts[0]}
	switch parts[1] {
	case "path":
		p.In = InPath
	case "query":
		p.In = InQuery
	case "body":
		p.In = InBody
	default:
		return p, fmt.Errorf("param tag %q: in is path, query or body", tag)
	}
	for _, o := range parts[2:] {
		switch o {
		case "required":
			p.Required = true
		case "nullable":
			p.Nullable = true
		case "lines":
			p.Multiline = true
		default:
			return p, fmt.Errorf("param tag %q: unknown option %q", tag, o)
		}
	}
	ft := f.Type
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	} else if p.Nullable && ft != mapType {
		return p, fmt.Errorf("a nullable parameter needs a pointer (or map) field: nil for null")
	}
	switch {
	case ft == timeType:
		p.Kind = KDateTime
	case ft == mapType:
		p.Kind = KObject
	case ft.Kind() == reflect.String:
		p.Kind = KString
	case ft.Kind() == reflect.Int64:
		p.Kind = KInt
	case ft.Kind() == reflect.Float64:
		p.Kind = KNumber
	case ft.Kind() == reflect.Bool:
		p.Kind = KBool
	default:
		return p, fmt.Errorf("type %s is not a parameter type", f.Type)
	}
	num := func(name string) (float64, bool, error) {
		v, ok := f.Tag.Lookup(name)
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s:%q: %v", name, v, err)
		}
		return n, true, nil
	}
	if n, ok, err := num("max"); err != nil {
		return p, err
	} else if ok && p.Kind == KString {
		p.MaxLen = int(n)
	} else if ok {
		p.Max = F64(n)
	}
	if n, ok, err := num("min"); err != nil {
		return p, err
	} else if ok {
		p.Min = F64(n)
	}
	if n, ok, err := num("minlen"); err != nil {
		return p, err
	} else if ok {
		p.MinLen = int(n)
	}
	if v, ok := f.Tag.Lookup("enum"); ok {
		p.Enum = strings.Split(v, "|")
	}
	p.Format, p.Desc, p.Arg = f.Tag.Get("format"), f.Tag.Get("desc"), f.Tag.Get("arg")
	return p, nil
}

// bind copies the validated values into the struct v (values of the kinds validation leaves:
// string, int64, float64, bool, time.Time, map[string]any; nil for null).
func (ts *typedStruct) bind(v reflect.Value, params map[string]any) {
	for i, p := range ts.params {
		x, ok := params[p.Name]
		if !ok || x == nil {
			continue // absent or null: the zero value (nil for a pointer)
		}
		f := v.Field(ts.fields[i])
		val := reflect.ValueOf(x)
		if f.Kind() == reflect.Pointer {
			ptr := reflect.New(f.Type().Elem())
			ptr.Elem().Set(val.Convert(f.Type().Elem()))
			f.Set(ptr)
			continue
		}
		f.Set(val.Convert(f.Type()))
	}
}
