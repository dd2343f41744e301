package api

import (
	"fmt"
	"mime/multipart"
	"reflect"
	"slices"
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
//	func (s *accessService) CreateTrackedLink(r *Request, in *TrackedLinkCreate) (*Data[TrackedLink], error)
//	Define(Operation{ID: "tracked_links.create", ...}, b.CreateTrackedLink)
//
// The table's Params (validation, the MCP input schema, the OpenAPI document) are derived from
// the tags (ParamsOf); Define (reply.go), or Bind for a handler that answers a *Result (a CSV
// stream), copies the validated values into a new struct for each call, so a handler reads
// fields the compiler knows, not names in a map. Tags:
//
//	param:"name,in[,required][,nullable][,lines][,extension]"  in: path, query or body
//	max:"N" (string length, or number maximum), min:"N" (number minimum), minlen:"N"
//	enum:"a|b|c", format:"email|uri|background|domain", desc:"...", arg:"tool argument name"
//	minitems:"N", maxitems:"N" (arrays and files); itemmax, itemmin, itemenum, itemformat
//	(the same for an array's items); refuse:"a|b" with refusemsg:"..." (an object's
//	forbidden properties)
//
// Field types: string, int64, float64, bool, time.Time, map[string]any (a free-form object),
// any (any JSON value), []*multipart.FileHeader (a multipart file part), a struct (an object
// whose properties are its own tagged fields, "in" written body), a slice of any of these (an
// array; []any for a free-form one), and actors.Opt[T] of any of these (absent, null or a value:
// what an update distinguishes). A pointer is nil when the parameter is absent or null (with
// nullable); a field of another type holds its zero value for both. An embedded struct without a param tag lends its parameters (a shared filter).
// A field without a param tag is not a parameter.

// ParamsOf is the parameter list of In's tagged fields, in field order. It panics on a tag it
// cannot read (a declaration error, met when the table is built). The list is the caller's
// to change, nested items and properties included (a deep copy: the declarations are cached
// per type and shared by every service built in the process).
func ParamsOf[In any]() []Param {
	return cloneParams(typedOf(reflect.TypeFor[In]()).params)
}

// cloneParams copies ps and what its parameters point to that a caller may change (items,
// properties, enums).
func cloneParams(ps []Param) []Param {
	if ps == nil {
		return nil
	}
	out := slices.Clone(ps)
	for i := range out {
		p := &out[i]
		p.Enum = slices.Clone(p.Enum)
		p.Refuse = slices.Clone(p.Refuse)
		p.Props = cloneParams(p.Props)
		if p.Items != nil {
			it := cloneParams([]Param{*p.Items})[0]
			p.Items = &it
		}
	}
	return out
}

// Adjust returns ps with f applied to the parameter called name (a schema a tag cannot say:
// Param.Schema). It panics when there is none.
func Adjust(ps []Param, name string, f func(*Param)) []Param {
	for i := range ps {
		if ps[i].Name == name {
			f(&ps[i])
			return ps
		}
	}
	panic("api: Adjust: no parameter " + name)
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

// stringsOnly reports whether params, the declaration of an operation whose input is ts, are
// ts's own parameters and all plain strings in the path or query read into string fields (a
// GET by id): their values can be checked and bound without the map Validate builds.
func (ts *typedStruct) stringsOnly(params []Param) bool {
	if len(params) != len(ts.params) || len(params) == 0 {
		return false
	}
	for i := range params {
		p := &params[i]
		if p.Name != ts.params[i].Name || p.Kind != KString || (p.In != InPath && p.In != InQuery) ||
			p.Format != "" || p.Nullable || len(ts.fields[i]) != 1 {
			return false
		}
	}
	return true
}

// bindStrings checks and binds the values of a stringsOnly declaration into v, with the
// rules of Validate. It returns false, leaving the call to Validate, when a value is missing
// or refused (so every error, and its status, comes from one place) or is not a string.
func (ts *typedStruct) bindStrings(v reflect.Value, params []Param, a *Args) bool {
	problems := Validation{} // stays on the stack; a problem means the generic path
	for i := range params {
		p := &params[i]
		var s string
		var present bool
		switch {
		case a.Values != nil:
			raw, ok := a.Values[p.Name]
			if !ok || raw == nil || raw == "" {
				break
			}
			if s, present = raw.(string); !present {
				return false
			}
		case p.In == InPath:
			s, present = a.Path[p.Name]
		default:
			s, present = a.Query[p.Name]
			present = present && s != ""
		}
		if !present {
			if p.Required {
				return false
			}
			continue
		}
		if !checkString(p, &fieldPath{top: p.Name}, s, problems) {
			return false
		}
		f := v.Field(ts.fields[i][0])
		if f.Kind() != reflect.String {
			return false
		}
		f.SetString(s)
	}
	return true
}

// typedStruct is what one input struct declares: its parameters and the field of each.
type typedStruct struct {
	params []Param
	fields [][]int // params[i] is read into the field at index path fields[i]
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
	ts.collect(t, nil)
	v, _ := typedCache.LoadOrStore(t, ts)
	return v.(*typedStruct)
}

// collect adds t's tagged fields, and those of its embedded untagged structs, at index path
// prefix.
func (ts *typedStruct) collect(t reflect.Type, prefix []int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		index := append(slices.Clone(prefix), i)
		tag, ok := f.Tag.Lookup("param")
		if !ok {
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				ts.collect(f.Type, index)
			}
			continue
		}
		p, err := paramOf(f, tag)
		if err != nil {
			panic(fmt.Sprintf("api: %s.%s: %v", t.Name(), f.Name, err))
		}
		ts.params = append(ts.params, p)
		ts.fields = append(ts.fields, index)
	}
}

var (
	timeType = reflect.TypeFor[time.Time]()
	mapType  = reflect.TypeFor[map[string]any]()
	anyType  = reflect.TypeFor[any]()
	fileType = reflect.TypeFor[[]*multipart.FileHeader]()
)

// isOpt reports whether t is actors.Opt[T] (Set, Null, V): absent, null or a value.
func isOpt(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.PkgPath() == "flipbook/actors" && strings.HasPrefix(t.Name(), "Opt[")
}

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
		case "extension":
			p.Extension = true
		default:
			return p, fmt.Errorf("param tag %q: unknown option %q", tag, o)
		}
	}
	ft := f.Type
	switch {
	case ft.Kind() == reflect.Pointer:
		ft = ft.Elem()
	case isOpt(ft):
		ft = ft.Field(2).Type
	}
	if err := kindOf(&p, ft); err != nil {
		return p, fmt.Errorf("type %s: %v", f.Type, err)
	}
	if err := limitsOf(&p, f.Tag, ""); err != nil {
		return p, err
	}
	if p.Kind == KArray && p.Items != nil {
		if err := limitsOf(p.Items, f.Tag, "item"); err != nil {
			return p, err
		}
	}
	if v, ok := f.Tag.Lookup("refuse"); ok {
		p.Refuse, p.RefuseMsg = strings.Split(v, "|"), f.Tag.Get("refusemsg")
	}
	p.Desc, p.Arg = f.Tag.Get("desc"), f.Tag.Get("arg")
	return p, nil
}

// kindOf sets p's Kind (and Items or Props) from the field's type.
func kindOf(p *Param, ft reflect.Type) error {
	switch {
	case ft == timeType:
		p.Kind = KDateTime
	case ft == mapType:
		p.Kind = KObject
	case ft == anyType:
		p.Kind = KAny
	case ft == fileType:
		p.Kind = KFile
	case ft.Kind() == reflect.String:
		p.Kind = KString
	case ft.Kind() == reflect.Int64:
		p.Kind = KInt
	case ft.Kind() == reflect.Float64:
		p.Kind = KNumber
	case ft.Kind() == reflect.Bool:
		p.Kind = KBool
	case ft.Kind() == reflect.Struct && !isOpt(ft):
		p.Kind = KObject
		p.Props = cloneParams(typedOf(ft).params)
	case ft.Kind() == reflect.Slice:
		p.Kind = KArray
		et := ft.Elem()
		if et == anyType {
			return nil // a free-form array
		}
		if et.Kind() == reflect.Pointer && et.Elem().Kind() == reflect.Struct {
			et = et.Elem()
		}
		item := &Param{}
		if err := kindOf(item, et); err != nil {
			return err
		}
		if item.Kind == KArray || item.Kind == KFile {
			return fmt.Errorf("arrays of arrays are not parameters")
		}
		p.Items = item
	default:
		return fmt.Errorf("not a parameter type")
	}
	return nil
}

// limitsOf reads the limit tags (max, min, minlen, enum, format, minitems, maxitems), each
// name after prefix ("item" for an array's items), into p.
func limitsOf(p *Param, tag reflect.StructTag, prefix string) error {
	num := func(name string) (float64, bool, error) {
		v, ok := tag.Lookup(prefix + name)
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s:%q: %v", prefix+name, v, err)
		}
		return n, true, nil
	}
	if n, ok, err := num("max"); err != nil {
		return err
	} else if ok && p.Kind == KString {
		p.MaxLen = int(n)
	} else if ok {
		p.Max = F64(n)
	}
	if n, ok, err := num("min"); err != nil {
		return err
	} else if ok {
		p.Min = F64(n)
	}
	if n, ok, err := num("minlen"); err != nil {
		return err
	} else if ok {
		p.MinLen = int(n)
	}
	if prefix == "" {
		if n, ok, err := num("minitems"); err != nil {
			return err
		} else if ok {
			p.MinItems = int(n)
		}
		if n, ok, err := num("maxitems"); err != nil {
			return err
		} else if ok {
			p.MaxItems = int(n)
		}
	}
	if v, ok := tag.Lookup(prefix + "enum"); ok {
		p.Enum = strings.Split(v, "|")
	}
	p.Format = tag.Get(prefix + "format")
	return nil
}

// bind copies the validated values into the struct v (values of the kinds validation leaves:
// string, int64, float64, bool, time.Time, map[string]any, []any, file headers; nil for null).
func (ts *typedStruct) bind(v reflect.Value, params map[string]any) {
	for i, p := range ts.params {
		x, ok := params[p.Name]
		if !ok {
			continue // absent: the zero value
		}
		assign(v.FieldByIndex(ts.fields[i]), x)
	}
}

// assign stores the validated value x in dst: nil (null) leaves a pointer nil and marks an
// Opt null; an object fills a struct, an array a slice.
func assign(dst reflect.Value, x any) {
	t := dst.Type()
	switch {
	case isOpt(t):
		dst.Field(0).SetBool(true)
		if x == nil {
			dst.Field(1).SetBool(true)
			return
		}
		assign(dst.Field(2), x)
		return
	case x == nil:
		return
	case reflect.TypeOf(x).AssignableTo(t):
		dst.Set(reflect.ValueOf(x))
	case t.Kind() == reflect.Pointer:
		ptr := reflect.New(t.Elem())
		assign(ptr.Elem(), x)
		dst.Set(ptr)
	case t.Kind() == reflect.Struct:
		if m, ok := x.(map[string]any); ok {
			typedOf(t).bind(dst, m)
		}
	case t.Kind() == reflect.Slice:
		a, ok := x.([]any)
		if !ok {
			return
		}
		s := reflect.MakeSlice(t, len(a), len(a))
		for i, e := range a {
			assign(s.Index(i), e)
		}
		dst.Set(s)
	default:
		dst.Set(reflect.ValueOf(x).Convert(t))
	}
}
