package httpapi

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

// validateParams checks raw inputs against an operation's parameters and returns the typed
// values. Every failure is collected (field → messages) before anything runs.
//
// path and query hold the raw strings given; body is the decoded JSON object (or nil).
func validateParams(params []Param, path, query map[string]string, body map[string]any, bodyStrings bool) (map[string]any, error) {
	out := make(map[string]any, len(params))
	v := Validation{}
	for i := range params {
		p := &params[i]
		var raw any
		var present bool
		switch p.In {
		case InPath:
			s, ok := path[p.Name]
			raw, present = s, ok
		case InQuery:
			s, ok := query[p.Name]
			raw, present = s, ok && s != ""
		case InBody:
			raw, present = body[p.Name]
		}
		if !present {
			if p.Required {
				v.Add(p.Name, "is required")
			}
			continue
		}
		if val, ok := checkValue(p, p.Name, raw, p.In != InBody || bodyStrings, v); ok {
			out[p.Name] = val
		}
	}
	return out, v.Err()
}

// checkValue validates one value; fromString is true for path and query values (and form
// fields), which arrive as strings and are converted.
func checkValue(p *Param, field string, raw any, fromString bool, v Validation) (any, bool) {
	if raw == nil {
		if p.Nullable {
			return nil, true
		}
		if p.Required {
			v.Add(field, "is required")
		} else {
			v.Add(field, "must not be null")
		}
		return nil, false
	}
	switch p.Kind {
	case KString:
		s, ok := raw.(string)
		if !ok {
			v.Add(field, "must be a string")
			return nil, false
		}
		return checkString(p, field, s, v)
	case KInt:
		n, ok := toInt(raw)
		if !ok {
			v.Add(field, "must be an integer")
			return nil, false
		}
		return n, checkRange(p, field, float64(n), v)
	case KNumber:
		f, ok := toFloat(raw)
		if !ok {
			v.Add(field, "must be a number")
			return nil, false
		}
		return f, checkRange(p, field, f, v)
	case KBool:
		b, ok := toBool(raw, fromString)
		if !ok {
			v.Add(field, "must be true or false")
			return nil, false
		}
		return b, true
	case KDateTime:
		s, ok := raw.(string)
		if !ok {
			v.Add(field, "must be an RFC 3339 date-time string")
			return nil, false
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			v.Add(field, "must be an RFC 3339 date-time, such as 2026-01-31T09:00:00Z")
			return nil, false
		}
		return t.UTC(), true
	case KObject:
		m, ok := raw.(map[string]any)
		if !ok {
			v.Add(field, "must be an object")
			return nil, false
		}
		if len(p.Props) == 0 {
			return m, true
		}
		out := make(map[string]any, len(p.Props))
		good := true
		for i := range p.Props {
			sub := &p.Props[i]
			rv, present := m[sub.Name]
			if !present {
				if sub.Required {
					v.Add(field+"."+sub.Name, "is required")
					good = false
				}
				continue
			}
			if val, ok := checkValue(sub, field+"."+sub.Name, rv, fromString, v); ok {
				out[sub.Name] = val
			} else {
				good = false
			}
		}
		return out, good
	case KFile:
		fs, ok := raw.([]*multipart.FileHeader)
		if !ok || len(fs) == 0 {
			v.Add(field, "must be a file sent as multipart/form-data")
			return nil, false
		}
		if p.MaxItems > 0 && len(fs) > p.MaxItems {
			v.Add(field, fmt.Sprintf("must not have more than %d files", p.MaxItems))
			return nil, false
		}
		return fs, true
	case KArray:
		a, ok := raw.([]any)
		if !ok {
			v.Add(field, "must be an array")
			return nil, false
		}
		if p.MinItems > 0 && len(a) < p.MinItems {
			v.Add(field, fmt.Sprintf("must have at least %d item%s", p.MinItems, plural(p.MinItems)))
			return nil, false
		}
		if p.MaxItems > 0 && len(a) > p.MaxItems {
			v.Add(field, fmt.Sprintf("must not have more than %d items", p.MaxItems))
			return nil, false
		}
		if p.Items == nil {
			return a, true
		}
		out := make([]any, len(a))
		good := true
		for i, item := range a {
			val, ok := checkValue(p.Items, field+"."+strconv.Itoa(i), item, fromString, v)
			out[i] = val
			good = good && ok
		}
		return out, good
	}
	return raw, true
}

func checkString(p *Param, field, s string, v Validation) (any, bool) {
	if !utf8.ValidString(s) {
		v.Add(field, "must be valid UTF-8")
		return nil, false
	}
	if p.Required && strings.TrimSpace(s) == "" {
		v.Add(field, "is required")
		return nil, false
	}
	n := utf8.RuneCountInString(s)
	if p.MinLen > 0 && n < p.MinLen {
		v.Add(field, fmt.Sprintf("must be at least %d character%s", p.MinLen, plural(p.MinLen)))
		return nil, false
	}
	if p.MaxLen > 0 && n > p.MaxLen {
		v.Add(field, fmt.Sprintf("must not be longer than %d characters", p.MaxLen))
		return nil, false
	}
	if len(p.Enum) > 0 && !contains(p.Enum, s) {
		v.Add(field, "must be one of: "+strings.Join(p.Enum, ", "))
		return nil, false
	}
	switch p.Format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s || a.Name != "" {
			v.Add(field, "must be a valid email address")
			return nil, false
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.Add(field, "must be a valid http or https URL")
			return nil, false
		}
	}
	return s, true
}

func checkRange(p *Param, field string, f float64, v Validation) bool {
	if p.Min != nil && f < *p.Min {
		v.Add(field, "must be at least "+fmtNum(*p.Min))
		return false
	}
	if p.Max != nil && f > *p.Max {
		v.Add(field, "must be at most "+fmtNum(*p.Max))
		return false
	}
	return true
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

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
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
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

func toFloat(raw any) (float64, bool) {
	switch x := raw.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
