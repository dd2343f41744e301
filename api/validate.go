package api

import (
	"encoding/json"
	"fmt"
	"math"
	"mime/multipart"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Args are an operation's raw inputs as a transport received them.
type Args struct {
	// Path and Query hold raw strings (REST); Body the decoded JSON object, or the form values
	// of a multipart body (BodyStrings: its fields arrive as strings and are converted).
	Path, Query map[string]string
	Body        map[string]any
	BodyStrings bool
	// Values, when not nil, holds every parameter by its name as a typed JSON value (MCP tool
	// arguments); Path, Query and Body are then unused. A path or query parameter given as
	// null or "" counts as absent, as an empty query value does in REST. Errors then name
	// each parameter by its argument name (Param.ArgName).
	Values map[string]any
	// Valid, when not nil, is the parameters already decoded and validated (FastBody).
	Valid map[string]any
	// Fingerprint identifies "the same request" for Idempotency-Key (called only when a key
	// is given); nil hashes the operation and Values.
	Fingerprint func() ([]byte, error)
}

// Validate checks raw inputs against an operation's parameters and returns the typed values.
// Every failure is collected (field → messages) before anything runs. The body's objects and
// arrays are converted in place (they belong to this request).
//
// Fields are named as the caller named them: by the REST name, or for tool arguments (Values)
// by the argument name (book_id, not book; spec §4.11), nested names included.
//
// A path value that is given but is not a valid id (not an integer, out of range, too long)
// names nothing: the answer is 404, as for an id that does not exist (spec §7), not 422. It
// wins over the other parameters' failures (what would they be validated for?). A missing
// path argument of a tool is still 422 "is required".
func Validate(params []Param, a *Args) (map[string]any, error) {
	out := make(map[string]any, len(params))
	// v and the field path stay on the stack (a valid call allocates neither): v leaves only
	// as a copy, in the error.
	v := Validation{}
	var elems []pathElem // the nested names' stack, reused from one parameter to the next
	tool := a.Values != nil
	var notFound *Error
	for i := range params {
		p := &params[i]
		name := p.Name
		if tool {
			name = p.ArgName()
		}
		var raw any
		var present bool
		fromString := false
		switch {
		case p.In == InTool:
			continue
		case a.Values != nil:
			raw, present = a.Values[p.Name]
			if present && p.In != InBody && (raw == nil || raw == "") {
				present = false
			}
		case p.In == InPath:
			s, ok := a.Path[p.Name]
			raw, present, fromString = s, ok, true
		case p.In == InQuery:
			s, ok := a.Query[p.Name]
			raw, present, fromString = s, ok && s != "", true
		case p.In == InBody:
			raw, present = a.Body[p.Name]
			fromString = a.BodyStrings
		}
		if !present {
			if p.Required {
				v.Add(name, "is required")
			}
			continue
		}
		field := &fieldPath{top: name, elems: elems[:0]}
		if p.In == InPath {
			pv := Validation{}
			if val, ok := checkValue(p, field, raw, fromString, pv); ok {
				out[p.Name] = val
			} else if notFound == nil {
				notFound = ErrNotFound(pathNoun(p.Name))
			}
		} else if val, ok := checkValue(p, field, raw, fromString, v); ok {
			out[p.Name] = val
		}
		elems = field.elems
	}
	if notFound != nil {
		return nil, notFound
	}
	if len(v) > 0 {
		errs := make(Validation, len(v))
		for k, m := range v {
			errs[k] = m
		}
		return out, errs.Err()
	}
	return out, nil
}

// pathNouns name what a path value identifies, as the handlers' own 404s name it ("catalog
// not found"), so a malformed id and an unknown one read the same.
var pathNouns = map[string]string{
	"book": "book", "batchId": "batch", "batch": "bulk settings batch", "catalog": "catalog",
	"item": "catalog item", "syncJob": "sync job", "subscription": "webhook subscription",
	"subscriber": "subscriber", "embedDomain": "embed domain", "client": "OAuth client", "grant": "OAuth grant",
}

// pathNoun is what the path parameter name identifies ("resource" when not known).
func pathNoun(name string) string {
	if n, ok := pathNouns[name]; ok {
		return n
	}
	return "resource"
}

// fieldPath names the value being checked (events.3.type) as the parameter's name and a stack
// of names and indexes below it, shared down the recursion; the string is only made for an
// error, so a valid request builds no names, and a scalar parameter no stack.
type fieldPath struct {
	top   string
	elems []pathElem
}

type pathElem struct {
	name  string // "" for an array element
	index int
}

func (f *fieldPath) push(name string, index int) {
	f.elems = append(f.elems, pathElem{name: name, index: index})
}

func (f *fieldPath) pop() { f.elems = f.elems[:len(f.elems)-1] }

func (f *fieldPath) String() string {
	if len(f.elems) == 0 {
		return f.top
	}
	var b strings.Builder
	b.WriteString(f.top)
	for _, e := range f.elems {
		b.WriteByte('.')
		if e.name == "" {
			b.WriteString(strconv.Itoa(e.index))
		} else {
			b.WriteString(e.name)
		}
	}
	return b.String()
}

// checkValue validates one value; fromString is true for path and query values (and form
// fields), which arrive as strings and are converted. Objects and arrays are converted in
// place: an object keeps only its declared properties, with their typed values.
func checkValue(p *Param, field *fieldPath, raw any, fromString bool, v Validation) (any, bool) {
	if raw == nil {
		if p.Nullable {
			return nil, true
		}
		if p.Required {
			v.Add(field.String(), "is required")
		} else {
			v.Add(field.String(), "must not be null")
		}
		return nil, false
	}
	// One function per kind, each with checkValue's arguments: no closures, nothing escapes.
	switch p.Kind {
	case KString:
		return checkStringValue(p, field, raw, fromString, v)
	case KInt:
		return checkIntValue(p, field, raw, fromString, v)
	case KNumber:
		return checkNumberValue(p, field, raw, fromString, v)
	case KBool:
		return checkBoolValue(p, field, raw, fromString, v)
	case KDateTime:
		return checkDateTimeValue(p, field, raw, fromString, v)
	case KObject:
		return checkObjectValue(p, field, raw, fromString, v)
	case KFile:
		return checkFileValue(p, field, raw, fromString, v)
	case KArray:
		return checkArrayValue(p, field, raw, fromString, v)
	case KAny:
		return raw, nestingOK(raw, field, v)
	}
	return raw, true
}

// checkStringValue is checkValue of a KString value.
func checkStringValue(p *Param, field *fieldPath, raw any, _ bool, v Validation) (any, bool) {
	s, ok := raw.(string)
	if !ok {
		v.Add(field.String(), "must be a string")
		return nil, false
	}
	if !checkString(p, field, s, v) {
		return nil, false
	}
	return raw, true // the string as it came, not boxed again
}

// checkIntValue is checkValue of a KInt value.
func checkIntValue(p *Param, field *fieldPath, raw any, _ bool, v Validation) (any, bool) {
	n, ok := toInt(raw)
	if !ok {
		v.Add(field.String(), "must be an integer")
		return nil, false
	}
	return n, checkRange(p, field, float64(n), v)
}

// checkNumberValue is checkValue of a KNumber value.
func checkNumberValue(p *Param, field *fieldPath, raw any, _ bool, v Validation) (any, bool) {
	f, ok := toFloat(raw)
	if !ok {
		v.Add(field.String(), "must be a number")
		return nil, false
	}
	return f, checkRange(p, field, f, v)
}

// checkBoolValue is checkValue of a KBool value.
func checkBoolValue(_ *Param, field *fieldPath, raw any, fromString bool, v Validation) (any, bool) {
	b, ok := toBool(raw, fromString)
	if !ok {
		v.Add(field.String(), "must be true or false")
		return nil, false
	}
	return b, true
}

// checkDateTimeValue is checkValue of a KDateTime value.
func checkDateTimeValue(_ *Param, field *fieldPath, raw any, _ bool, v Validation) (any, bool) {
	s, ok := raw.(string)
	if !ok {
		v.Add(field.String(), "must be an RFC 3339 date-time string")
		return nil, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		v.Add(field.String(), "must be an RFC 3339 date-time, such as 2026-01-31T09:00:00Z")
		return nil, false
	}
	// An offset can carry year 0000 or 9999 out of the years RFC 3339 (and JSON answers)
	// can write: "0000-01-01T00:00:00+01:00" is in year -1 (found by FuzzRESTValidation).
	if t = t.UTC(); t.Year() < 1 || t.Year() > 9999 {
		v.Add(field.String(), "must be a date-time between years 0001 and 9999 (UTC)")
		return nil, false
	}
	return t, true
}

// checkObjectValue is checkValue of a KObject value: refused properties are errors, declared
// ones are checked and converted in place, undeclared ones are dropped.
func checkObjectValue(p *Param, field *fieldPath, raw any, fromString bool, v Validation) (any, bool) {
	m, ok := raw.(map[string]any)
	if !ok {
		v.Add(field.String(), "must be an object")
		return nil, false
	}
	good := true
	for _, k := range p.Refuse {
		if _, ok := m[k]; ok {
			v.Add(field.String()+"."+k, p.RefuseMsg)
			good = false
		}
	}
	if len(p.Props) == 0 {
		return m, nestingOK(m, field, v) && good
	}
	declared := 0
	for i := range p.Props {
		sub := &p.Props[i]
		rv, present := m[sub.Name]
		if !present {
			if sub.Required {
				v.Add(field.String()+"."+sub.Name, "is required")
				good = false
			}
			continue
		}
		declared++
		field.push(sub.Name, 0)
		val, ok := checkValue(sub, field, rv, fromString, v)
		field.pop()
		if ok {
			m[sub.Name] = val
		} else {
			delete(m, sub.Name)
			declared--
			good = false
		}
	}
	if declared < len(m) { // undeclared properties are dropped
		for k := range m {
			if !declaredProp(p.Props, k) {
				delete(m, k)
			}
		}
	}
	return m, good
}

// checkFileValue is checkValue of a KFile value (multipart form files).
func checkFileValue(p *Param, field *fieldPath, raw any, _ bool, v Validation) (any, bool) {
	fs, ok := raw.([]*multipart.FileHeader)
	if !ok || len(fs) == 0 {
		v.Add(field.String(), "must be a file sent as multipart/form-data")
		return nil, false
	}
	if p.MaxItems > 0 && len(fs) > p.MaxItems {
		v.Add(field.String(), fmt.Sprintf("must not have more than %d files", p.MaxItems))
		return nil, false
	}
	return fs, true
}

// checkArrayValue is checkValue of a KArray value: its items are checked and converted in
// place.
func checkArrayValue(p *Param, field *fieldPath, raw any, fromString bool, v Validation) (any, bool) {
	a, ok := raw.([]any)
	if !ok {
		v.Add(field.String(), "must be an array")
		return nil, false
	}
	if p.MinItems > 0 && len(a) < p.MinItems {
		v.Add(field.String(), fmt.Sprintf("must have at least %d item%s", p.MinItems, Plural(p.MinItems)))
		return nil, false
	}
	if p.MaxItems > 0 && len(a) > p.MaxItems {
		v.Add(field.String(), fmt.Sprintf("must not have more than %d items", p.MaxItems))
		return nil, false
	}
	if p.Items == nil {
		return a, nestingOK(a, field, v)
	}
	good := true
	for i, item := range a {
		field.push("", i)
		val, ok := checkValue(p.Items, field, item, fromString, v)
		field.pop()
		a[i] = val
		good = good && ok
	}
	return a, good
}

// MaxNesting is how deep a free-form value (metadata, a product's payload) may nest objects
// and arrays. The JSON decoder accepts thousands of levels, the encoder that stores and answers
// them about 2,000: past this a value is a 422 naming its field, not a 500 after the fact.
const MaxNesting = 32

// nestingOK checks a free-form value: its depth (MaxNesting), and that each number in it is
// one a float64 holds, finite. The decoder keeps numbers as written (json.Number), and 1e400
// was stored, then every reader that decoded the value failed on it: a lead form vanished from
// the API and the exports, and a customer erasure passed over the webhook payload naming them
// (found by a review).
func nestingOK(x any, field *fieldPath, v Validation) bool {
	switch freeForm(x, MaxNesting) {
	case freeFormDeep:
		v.Add(field.String(), fmt.Sprintf("must not nest objects and arrays more than %d levels deep", MaxNesting))
		return false
	case freeFormNumber:
		v.Add(field.String(), "holds a number out of range: every number must fit a 64-bit float")
		return false
	}
	return true
}

// What freeForm finds wrong with a value.
const (
	freeFormOK = iota
	freeFormDeep
	freeFormNumber
)

// freeForm checks that x nests objects and arrays at most n levels deep and holds only finite
// float64 numbers.
func freeForm(x any, n int) int {
	switch c := x.(type) {
	case map[string]any:
		if n == 0 {
			return freeFormDeep
		}
		for _, e := range c {
			if r := freeForm(e, n-1); r != freeFormOK {
				return r
			}
		}
	case []any:
		if n == 0 {
			return freeFormDeep
		}
		for _, e := range c {
			if r := freeForm(e, n-1); r != freeFormOK {
				return r
			}
		}
	case json.Number, float64:
		if _, ok := toFloat(c); !ok {
			return freeFormNumber
		}
	}
	return freeFormOK
}

func declaredProp(props []Param, name string) bool {
	for i := range props {
		if props[i].Name == name {
			return true
		}
	}
	return false
}

func checkString(p *Param, field *fieldPath, s string, v Validation) bool {
	if !utf8.ValidString(s) {
		v.Add(field.String(), "must be valid UTF-8")
		return false
	}
	if msg := textProblem(s, p.Multiline); msg != "" {
		v.Add(field.String(), msg)
		return false
	}
	if p.Required && strings.TrimSpace(s) == "" {
		v.Add(field.String(), "is required")
		return false
	}
	n := len(s) // bytes: at least the characters
	if p.MinLen > 0 || (p.MaxLen > 0 && n > p.MaxLen) {
		n = utf8.RuneCountInString(s)
	}
	if p.MinLen > 0 && n < p.MinLen {
		v.Add(field.String(), fmt.Sprintf("must be at least %d character%s", p.MinLen, Plural(p.MinLen)))
		return false
	}
	if p.MaxLen > 0 && n > p.MaxLen {
		v.Add(field.String(), fmt.Sprintf("must not be longer than %d characters", p.MaxLen))
		return false
	}
	if len(p.Enum) > 0 && !Contains(p.Enum, s) {
		v.Add(field.String(), "must be one of: "+strings.Join(p.Enum, ", "))
		return false
	}
	switch p.Format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s || a.Name != "" {
			v.Add(field.String(), "must be a valid email address")
			return false
		}
		if msg := EmailProblem(s); msg != "" {
			v.Add(field.String(), msg)
			return false
		}
	case "background":
		if msg := backgroundProblem(s); msg != "" {
			v.Add(field.String(), msg)
			return false
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.Add(field.String(), "must be a valid http or https URL")
			return false
		}
	}
	return true
}

func checkRange(p *Param, field *fieldPath, f float64, v Validation) bool {
	if p.Min != nil && f < *p.Min {
		v.Add(field.String(), "must be at least "+fmtNum(*p.Min))
		return false
	}
	if p.Max != nil && f > *p.Max {
		v.Add(field.String(), "must be at most "+fmtNum(*p.Max))
		return false
	}
	return true
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// toInt is an integer value: a JSON integer (or a float with no fraction, within 2^53), or a
// string holding a decimal in canonical form (a path or query value, a tool's catalog_id "5"):
// no sign but "-", no leading zeros, no spaces, so "+1", "01" and " 1" are not the object 1.
func toInt(raw any) (int64, bool) {
	switch x := raw.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		f, err := x.Float64()
		if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), true
		}
	case string:
		if !canonicalInt(x) {
			return 0, false
		}
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case int64:
		return x, true
	}
	return 0, false
}

// canonicalInt reports whether s is an integer written the one usual way: -?(0|[1-9][0-9]*).
func canonicalInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// toFloat reads a number, finite only: strconv.ParseFloat takes "NaN" and "Inf", which pass
// every range check (NaN compares false) and then broke what read them (a click at x "NaN"
// made the page's heatmap query fail for good).
func toFloat(raw any) (float64, bool) {
	var f float64
	switch x := raw.(type) {
	case json.Number:
		v, err := x.Float64()
		if err != nil {
			return 0, false
		}
		f = v
	case string:
		v, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, false
		}
		f = v
	case float64:
		f = x
	case int64:
		return float64(x), true
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

func toBool(raw any, fromString bool) (bool, bool) {
	switch x := raw.(type) {
	case bool:
		return x, true
	case string:
		if !fromString {
			return false, false
		}
		switch strings.ToLower(x) {
		case "true", "1":
			return true, true
		case "false", "0":
			return false, true
		}
	}
	return false, false
}

// Contains reports whether list holds s.
func Contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
