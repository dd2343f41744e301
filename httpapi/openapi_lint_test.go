package httpapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenAPIRecommendedRules checks the served document against the rules of redocly's
// "recommended" ruleset for OpenAPI 3.1 that are not off (redocly-cli
// packages/core/src/config/recommended.ts), each as its rule's source describes it. There is
// no redocly CLI here: this is the same list, checked in Go. struct and no-unresolved-refs are
// kin-openapi's load and Validate (newContract).
func TestOpenAPIRecommendedRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	raw := h.do(t, "GET", "/api/v1/openapi.json", "", nil).Body
	_, err := newContract(raw)
	require.NoError(t, err, "struct, no-unresolved-refs")
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Empty(t, lintRecommended(doc))
}

// TestOpenAPILintCatches shows that the rules find what they are for.
func TestOpenAPILintCatches(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{
	  "info": {"title": "t", "version": "1"},
	  "servers": [{"url": "https://example.com/"}],
	  "tags": [{"name": "a"}, {"name": "a", "description": "d"}],
	  "paths": {
	    "/x/{id}": {"get": {"operationId": "x y", "responses": {"200": {"description": "ok"}},
	      "parameters": [{"name": "q", "in": "query"}, {"name": "q", "in": "query"}]}},
	    "/x/{key}": {"get": {"operationId": "x y", "summary": "s", "security": [{"nope": []}],
	      "parameters": [{"name": "key", "in": "path", "required": true}],
	      "responses": {"400": {"description": "bad", "content": {"application/json": {"schema": {
	        "type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string", "enum": ["x", 1]}},
	        "items": {}, "minimum": 1, "exclusiveMinimum": 0}}}}}}},
	    "/y/": {"get": {"summary": "s", "responses": {"204": {"description": "ok"}}}},
	    "/z?q": {"get": {"summary": "s", "responses": {"200": {"description": "ok"}}}}
	  },
	  "components": {"schemas": {"Unused": {"type": "array", "properties": {"a": {}}}, "bad name": {}}}
	}`), &doc))
	got := strings.Join(lintRecommended(doc), "\n")
	for _, rule := range []string{"info-license", "no-server-trailing-slash", "no-server-example.com",
		"tag-description", "no-duplicated-tag-names", "operation-summary", "operation-operationId-unique",
		"operation-operationId-url-safe", "operation-parameters-unique", "path-parameters-defined",
		"operation-2xx-response", "operation-4xx-response", "security-defined", "no-enum-type-mismatch",
		"no-required-schema-properties-undefined", "no-schema-type-mismatch", "no-mixed-number-range-constraints",
		"no-path-trailing-slash", "path-not-include-query", "no-identical-paths", "no-unused-components",
		"spec-components-invalid-map-name", "operation-operationId"} {
		require.Contains(t, got, rule+":", got)
	}
}

var (
	urlSafeID     = regexp.MustCompile(`^[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=-]*$`)
	componentName = regexp.MustCompile(`^[a-zA-Z0-9.\-_]+$`)
	pathParam     = regexp.MustCompile(`\{([^}]*)\}`)
)

// lintRecommended lists the recommended rules' findings in doc, "rule: where: what".
func lintRecommended(doc map[string]any) []string {
	var out []string
	bad := func(rule, where, format string, args ...any) {
		out = append(out, rule+": "+where+": "+fmt.Sprintf(format, args...))
	}
	obj := func(v any) map[string]any { m, _ := v.(map[string]any); return m }
	arr := func(v any) []any { a, _ := v.([]any); return a }
	str := func(v any) string { s, _ := v.(string); return s }

	// info-license, info-license-strict (3.1: url or identifier).
	lic := obj(obj(doc["info"])["license"])
	if lic == nil || str(lic["name"]) == "" {
		bad("info-license", "info", "no license")
	} else if str(lic["url"]) == "" && str(lic["identifier"]) == "" {
		bad("info-license-strict", "info.license", "neither url nor identifier")
	}
	// no-empty-servers, no-server-trailing-slash, no-server-example.com.
	servers := arr(doc["servers"])
	if len(servers) == 0 {
		bad("no-empty-servers", "servers", "none")
	}
	for _, s := range servers {
		u := str(obj(s)["url"])
		if u != "/" && strings.HasSuffix(u, "/") {
			bad("no-server-trailing-slash", u, "trailing slash")
		}
		if strings.Contains(u, "example.com") {
			bad("no-server-example.com", u, "example.com")
		}
	}
	// tag-description, no-duplicated-tag-names.
	seenTags := map[string]bool{}
	for _, tg := range arr(doc["tags"]) {
		name := str(obj(tg)["name"])
		if str(obj(tg)["description"]) == "" {
			bad("tag-description", "tags."+name, "no description")
		}
		if seenTags[name] {
			bad("no-duplicated-tag-names", "tags."+name, "duplicated")
		}
		seenTags[name] = true
	}
	// Components: spec-components-invalid-map-name; no-unused-components (by $ref).
	refs := map[string]bool{}
	var collectRefs func(v any)
	collectRefs = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r := str(v["$ref"]); r != "" {
				refs[r] = true
			}
			for _, e := range v {
				collectRefs(e)
			}
		case []any:
			for _, e := range v {
				collectRefs(e)
			}
		}
	}
	collectRefs(doc)
	schemes := obj(obj(doc["components"])["securitySchemes"])
	for kind, m := range obj(doc["components"]) {
		for name := range obj(m) {
			if !componentName.MatchString(name) {
				bad("spec-components-invalid-map-name", "components."+kind+"."+name, "invalid name")
			}
			if kind != "securitySchemes" && !refs["#/components/"+kind+"/"+name] {
				bad("no-unused-components", "components."+kind+"."+name, "never referenced")
			}
		}
	}
	checkSecurity := func(where string, reqs []any) {
		for _, r := range reqs {
			for name := range obj(r) {
				if schemes[name] == nil {
					bad("security-defined", where, "scheme %q is not defined", name)
				}
			}
		}
	}
	checkSecurity("security", arr(doc["security"]))

	// Paths and operations.
	paths := obj(doc["paths"])
	names := make([]string, 0, len(paths))
	for p := range paths {
		names = append(names, p)
	}
	sort.Strings(names)
	ids := map[string]string{}
	shapes := map[string]string{}
	for i, p := range names {
		if p != "/" && strings.HasSuffix(p, "/") {
			bad("no-path-trailing-slash", p, "trailing slash")
		}
		if strings.Contains(p, "?") {
			bad("path-not-include-query", p, "query in the path")
		}
		if strings.Contains(p, "{}") {
			bad("path-declaration-must-exist", p, "empty parameter name")
		}
		shape := pathParam.ReplaceAllString(p, "{}")
		if q, ok := shapes[shape]; ok {
			bad("no-identical-paths", p, "identical to %s", q)
		}
		shapes[shape] = p
		for _, q := range names[:i] {
			if ambiguousPaths(q, p) {
				bad("no-ambiguous-paths", p, "ambiguous with %s", q)
			}
		}
		var templ []string
		for _, m := range pathParam.FindAllStringSubmatch(p, -1) {
			templ = append(templ, m[1])
		}
		for method, o := range obj(paths[p]) {
			op := obj(o)
			if op == nil {
				continue
			}
			where := strings.ToUpper(method) + " " + p
			id := str(op["operationId"])
			switch {
			case id == "":
				bad("operation-operationId", where, "no operationId")
			case ids[id] != "":
				bad("operation-operationId-unique", where, "%q is also %s", id, ids[id])
			}
			if id != "" && !urlSafeID.MatchString(id) {
				bad("operation-operationId-url-safe", where, "%q", id)
			}
			if id != "" && ids[id] == "" {
				ids[id] = where
			}
			if strings.TrimSpace(str(op["summary"])) == "" {
				bad("operation-summary", where, "no summary")
			}
			var has2xx, has4xx bool
			for code := range obj(op["responses"]) {
				has2xx = has2xx || strings.HasPrefix(code, "2") || code == "default"
				has4xx = has4xx || strings.HasPrefix(code, "4")
			}
			if !has2xx {
				bad("operation-2xx-response", where, "no 2xx response")
			}
			if !has4xx {
				bad("operation-4xx-response", where, "no 4xx response")
			}
			if sec, ok := op["security"]; ok {
				checkSecurity(where, arr(sec))
			} else if len(arr(doc["security"])) == 0 {
				bad("security-defined", where, "no security")
			}
			seen := map[string]bool{}
			inPath := map[string]bool{}
			for _, pr := range arr(op["parameters"]) {
				name, in := str(obj(pr)["name"]), str(obj(pr)["in"])
				if seen[in+":"+name] {
					bad("operation-parameters-unique", where, "%s parameter %q twice", in, name)
				}
				seen[in+":"+name] = true
				if in == "path" {
					inPath[name] = true
				}
			}
			for _, name := range templ {
				if !inPath[name] {
					bad("path-parameters-defined", where, "{%s} is not a parameter", name)
				}
				delete(inPath, name)
			}
			for name := range inPath {
				bad("path-parameters-defined", where, "path parameter %q is not in the path", name)
			}
		}
	}

	// Schemas: no-enum-type-mismatch, no-schema-type-mismatch, no-mixed-number-range-constraints,
	// no-required-schema-properties-undefined. Examples: the document has none (the
	// no-invalid-*-examples rules and no-example-value-and-externalValue have nothing to check).
	var walk func(where string, v any, schema bool)
	walk = func(where string, v any, schema bool) {
		switch v := v.(type) {
		case map[string]any:
			if schema {
				lintSchema(where, v, bad)
			}
			for k, e := range v {
				if k == "example" || k == "examples" {
					bad("no-invalid-schema-examples", where, "an example to check by hand")
				}
				sub := false
				switch k {
				case "schema", "items", "not", "contains", "if", "then", "else", "additionalProperties", "propertyNames":
					sub = true
				case "properties", "patternProperties", "$defs", "dependentSchemas":
					if schema || where == "components" {
						for name, s := range obj(e) {
							walk(where+"."+k+"."+name, s, true)
						}
						continue
					}
				case "allOf", "anyOf", "oneOf", "prefixItems":
					if schema {
						for i, s := range arr(e) {
							walk(fmt.Sprintf("%s.%s[%d]", where, k, i), s, true)
						}
						continue
					}
				}
				if k == "schemas" && where == "components" {
					for name, s := range obj(e) {
						walk(where+".schemas."+name, s, true)
					}
					continue
				}
				walk(where+"."+k, e, sub)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", where, i), e, false)
			}
		}
	}
	for k, v := range doc {
		walk(k, v, false)
	}
	sort.Strings(out)
	return out
}

func lintSchema(where string, s map[string]any, bad func(rule, where, format string, args ...any)) {
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if e, ok := e.(string); ok {
				types = append(types, e)
			}
		}
	}
	if enum, ok := s["enum"].([]any); ok && len(types) > 0 {
		for _, v := range enum {
			if !jsonTypeIn(v, types) {
				bad("no-enum-type-mismatch", where, "enum value %v is not of type %v", v, types)
			}
		}
	}
	if st, ok := s["type"].(string); ok {
		if st == "object" && s["items"] != nil {
			bad("no-schema-type-mismatch", where, "object with items")
		}
		if st == "array" && s["properties"] != nil {
			bad("no-schema-type-mismatch", where, "array with properties")
		}
	}
	_, min := s["minimum"].(float64)
	_, xmin := s["exclusiveMinimum"].(float64)
	_, max := s["maximum"].(float64)
	_, xmax := s["exclusiveMaximum"].(float64)
	if (min && xmin) || (max && xmax) {
		bad("no-mixed-number-range-constraints", where, "minimum/maximum beside its exclusive form")
	}
	if req, ok := s["required"].([]any); ok {
		props := map[string]bool{}
		var elevate func(m map[string]any)
		elevate = func(m map[string]any) {
			p, _ := m["properties"].(map[string]any)
			for k := range p {
				props[k] = true
			}
			for _, k := range []string{"allOf", "anyOf"} {
				sub, _ := m[k].([]any)
				for _, e := range sub {
					if e, ok := e.(map[string]any); ok {
						elevate(e)
					}
				}
			}
		}
		elevate(s)
		for _, r := range req {
			if name, _ := r.(string); !props[name] {
				bad("no-required-schema-properties-undefined", where, "required %v is not a property", r)
			}
		}
	}
}

// ambiguousPaths is redocly's no-ambiguous-paths test: as many segments, the literal ones
// equal where both are literal, and as many templated segments on each side.
func ambiguousPaths(a, b string) bool {
	pa, pb := strings.Split(a, "/"), strings.Split(b, "/")
	if len(pa) != len(pb) {
		return false
	}
	var va, vb int
	isVar := func(s string) bool { return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && len(s) > 2 }
	for i := range pa {
		av, bv := isVar(pa[i]), isVar(pb[i])
		if av || bv {
			if av {
				va++
			}
			if bv {
				vb++
			}
			continue
		}
		if pa[i] != pb[i] {
			return false
		}
	}
	return va == vb
}

func jsonTypeIn(v any, types []string) bool {
	var kind string
	switch v := v.(type) {
	case nil:
		kind = "null"
	case string:
		kind = "string"
	case bool:
		kind = "boolean"
	case float64:
		kind = "number"
		if v == float64(int64(v)) {
			for _, t := range types {
				if t == "integer" {
					return true
				}
			}
		}
	case map[string]any:
		kind = "object"
	case []any:
		kind = "array"
	}
	for _, t := range types {
		if t == kind {
			return true
		}
	}
	return false
}
