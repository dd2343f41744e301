package httpapi

import (
	"encoding/json"
	"fmt"
	"image/color"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/internal/testutil"
)

// openAPIChecker sends real requests and records which operations answered a success. Every
// answer is checked against the served document by the harness's hook (openapi_contract_test.go).
type openAPIChecker struct {
	h       *harness
	doc     *openapi3.T
	covered map[string]bool
}

func newOpenAPIChecker(t *testing.T, h *harness) *openAPIChecker {
	r := h.do(t, "GET", "/api/v1/openapi.json", "", nil)
	require.Equal(t, 200, r.Status, "served without credentials")
	c, err := newContract(r.Body)
	require.NoError(t, err)
	require.Equal(t, "3.1.0", c.doc.OpenAPI)
	return &openAPIChecker{h: h, doc: c.doc, covered: map[string]bool{}}
}

// check sends a request (body: nil, []byte or a JSON value) and returns the response; want is
// the expected status.
func (c *openAPIChecker) check(t *testing.T, want int, method, path, key string, body any, headers ...string) *resp {
	t.Helper()
	r := c.h.do(t, method, path, key, body, headers...)
	require.Equal(t, want, r.Status, "%s %s: %s", method, path, r.Body)
	contract, err := contractFor(c.h.base)
	require.NoError(t, err)
	route, _, _ := contract.route(method, path)
	require.NotNil(t, route, "%s %s is in the document", method, path)
	if r.Status < 300 {
		c.covered[route.Operation.OperationID] = true
	}
	return r
}

// responseSchema is the JSON schema op declares for status (nil when none, or not JSON).
func responseSchema(op *openapi3.Operation, status int, ctype string) *openapi3.SchemaRef {
	if !strings.HasPrefix(ctype, "application/json") {
		return nil
	}
	ref := op.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return nil
	}
	mt := ref.Value.Content.Get("application/json")
	if mt == nil {
		return nil
	}
	return mt.Schema
}

// undeclared lists the properties of v (at path) that its schema does not declare: kin-openapi
// accepts them (an object schema is open unless it says additionalProperties: false, and ours
// stay open so that fields can be added), but a field the handlers send and the document
// leaves out is drift. An object schema is checked when it declares properties and does not
// mark itself open (additionalProperties true or a schema: a map); a schema without
// properties ({type: object}) is free-form. anyOf/oneOf: v fits when one branch has nothing
// undeclared.
func undeclared(ref *openapi3.SchemaRef, v any, path string) []string {
	if ref == nil || ref.Value == nil || v == nil {
		return nil
	}
	s := ref.Value
	if alts := append(append(openapi3.SchemaRefs{}, s.AnyOf...), s.OneOf...); len(alts) > 0 {
		var first []string
		for _, alt := range alts {
			if !admits(alt, v) {
				continue
			}
			out := undeclared(alt, v, path)
			if len(out) == 0 {
				return nil
			}
			if first == nil {
				first = out
			}
		}
		return first
	}
	var out []string
	for _, sub := range s.AllOf {
		out = append(out, undeclared(sub, v, path)...)
	}
	switch v := v.(type) {
	case map[string]any:
		open := s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := s.Properties[k]; ok {
				out = append(out, undeclared(p, v[k], path+"."+k)...)
			} else if ap := s.AdditionalProperties.Schema; ap != nil {
				out = append(out, undeclared(ap, v[k], path+"."+k)...)
			} else if len(s.Properties) > 0 && !open {
				out = append(out, path+"."+k)
			}
		}
	case []any:
		for i, e := range v {
			out = append(out, undeclared(s.Items, e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// admits reports whether ref's type (when it has one) allows v's JSON type.
func admits(ref *openapi3.SchemaRef, v any) bool {
	if ref == nil || ref.Value == nil || ref.Value.Type == nil || len(*ref.Value.Type) == 0 {
		return true
	}
	var kind string
	switch v.(type) {
	case nil:
		kind = "null"
	case map[string]any:
		kind = "object"
	case []any:
		kind = "array"
	case string:
		kind = "string"
	case bool:
		kind = "boolean"
	default:
		kind = "number"
	}
	for _, t := range *ref.Value.Type {
		if t == kind || (t == "integer" && kind == "number") {
			return true
		}
	}
	return false
}

func TestUndeclaredProperties(t *testing.T) {
	t.Parallel()
	load := func(schema string) *openapi3.SchemaRef {
		var s openapi3.Schema
		require.NoError(t, json.Unmarshal([]byte(schema), &s))
		return &openapi3.SchemaRef{Value: &s}
	}
	var body any
	require.NoError(t, json.Unmarshal([]byte(`{"data":[{"id":1,"extra":2,"nested":{"a":1,"b":2},"free":{"x":1},
		"maybe":{"a":1,"z":3}}],"meta":{"next_cursor":null,"limit":5}}`), &body))
	s := load(`{"type":"object","properties":{
		"data":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},
			"nested":{"type":"object","properties":{"a":{"type":"integer"}}},"free":{"type":"object"},
			"maybe":{"anyOf":[{"type":"object","properties":{"a":{}}},{"type":"null"}]}}}},
		"meta":{"type":"object","properties":{"next_cursor":{}}}}}`)
	require.Equal(t, []string{"$.data[0].extra", "$.data[0].maybe.z", "$.data[0].nested.b", "$.meta.limit"}, undeclared(s, body, "$"))
	// Marked open: additionalProperties true or a schema.
	open := load(`{"type":"object","properties":{"id":{}},"additionalProperties":true}`)
	require.Empty(t, undeclared(open, map[string]any{"id": 1, "x": 2}, "$"))
	typed := load(`{"type":"object","properties":{"id":{}},"additionalProperties":{"type":"object","properties":{"n":{}}}}`)
	require.Equal(t, []string{"$.x.m"}, undeclared(typed, map[string]any{"id": 1, "x": map[string]any{"n": 1, "m": 2}}, "$"))
}

// TestOpenAPIDocumentMatchesResponses checks a real success response of every public
// operation, and the common error responses, against the served document.
func TestOpenAPIDocumentMatchesResponses(t *testing.T) {
	t.Parallel()
	fx := newExportFixture(t)
	h, key, rid := fx.h, fx.key, fx.rid
	c := newOpenAPIChecker(t, h)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := len(h.do(t, "GET", "/api/v1/analytics/book-view-events?book_id="+rid, key, nil).list()); n < 3 {
			return fmt.Errorf("%d of the fixture's 3 sessions are in DuckDB", n)
		}
		return nil
	})

	// General. Any operation caps the body it is sent, /health too (its documented 4xx).
	c.check(t, 200, "GET", "/api/v1/health", "", nil)
	c.check(t, 413, "GET", "/api/v1/health", "", strings.Repeat(" ", api.DefaultMaxJSONBody+1))
	c.check(t, 200, "GET", "/api/v1/me", key, nil)

	// Books and uploads.
	c.check(t, 200, "GET", "/api/v1/books?limit=5&sort=-created_at", key, nil)
	c.check(t, 200, "GET", "/api/v1/books/"+rid, key, nil)
	c.check(t, 200, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "title": "Renamed"})
	c.check(t, 201, "POST", "/api/v1/books/konva", key, konvaBody("from the editor", "draft", 1))
	c.check(t, 201, "POST", "/api/v1/books/create-from-template", key, map[string]any{"source": "wordpress", "source_type": "posts",
		"content": []any{map[string]any{"id": "1", "title": "Hello", "content": "<p>First post</p>"}}})
	body, ctype := multipartBody([]filePart{{"files", "cover.png", solidPNG(200, 300, color.RGBA{20, 60, 200, 255})}}, map[string]string{"status": "draft"})
	up := c.check(t, 202, "POST", "/api/v1/books", key, body, "Content-Type", ctype)
	batch := up.data()["batch_id"].(string)
	h.waitBatch(t, key, batch)
	// The page extensions: a photo's page (no text) and a PDF's (words with boxes).
	photo := up.data()["book_ids"].([]any)[0].(string)
	c.check(t, 200, "GET", "/api/v1/books/"+photo+"/pages", key, nil)
	c.check(t, 200, "GET", "/api/v1/books/"+photo+"/pages/1", key, nil)
	c.check(t, 404, "GET", "/api/v1/books/"+photo+"/pages/2", key, nil)
	pdfBatch, pdfBook := h.uploadOK(t, key, "text.pdf", samplePDF(t))
	h.waitBatch(t, key, pdfBatch)
	pages := c.check(t, 200, "GET", "/api/v1/books/"+pdfBook+"/pages", key, nil).list()
	require.Len(t, pages, 3)
	require.Equal(t, true, pages[0].(map[string]any)["has_text"])
	page := c.check(t, 200, "GET", "/api/v1/books/"+pdfBook+"/pages/2", key, nil).data()
	require.Contains(t, page["text"], "Page two has a link annotation below.")
	require.Len(t, c.check(t, 200, "GET", "/api/v1/books/"+pdfBook+"/search?q=annotation", key, nil).list(), 1)
	c.check(t, 422, "GET", "/api/v1/books/"+pdfBook+"/search?q=%2C", key, nil)
	found := c.check(t, 200, "GET", "/api/v1/search?q=page&limit=1", key, nil)
	require.Len(t, found.list(), 1)
	require.Equal(t, true, found.meta()["has_more"])
	c.check(t, 422, "GET", "/api/v1/search?q=page&cursor=x", key, nil)
	olBatch, olBook := h.uploadOK(t, key, "menu.pdf", bookmarkedPDF(t))
	h.waitBatch(t, key, olBatch)
	require.Len(t, c.check(t, 200, "GET", "/api/v1/books/"+olBook+"/outline", key, nil).list(), 4)
	c.check(t, 200, "GET", "/api/v1/batches/"+batch, key, nil)
	c.check(t, 200, "GET", "/api/v1/books/uploads/"+batch+"/status", key, nil)
	c.check(t, 200, "GET", "/api/v1/books/uploads/status/active", key, nil)
	c.check(t, 409, "DELETE", "/api/v1/batches/"+batch, key, nil)
	// A batch still queued can be cancelled: hold the conversion workers (one per core) with
	// big uploads made back to back, then cancel the last one, which waits behind them.
	cancelled := false
	big := noisePNG(2400, 3200) // made once: under -race making it takes longer than converting it
	for i := 0; i < 5 && !cancelled; i++ {
		var b string
		for k := 0; k <= runtime.NumCPU(); k++ {
			body, ctype := multipartBody([]filePart{{"files", "big.png", big}}, nil)
			b = h.do(t, "POST", "/api/v1/books", key, body, "Content-Type", ctype).data()["batch_id"].(string)
		}
		r := h.do(t, "DELETE", "/api/v1/batches/"+b, key, nil)
		if r.Status == 200 {
			c.covered["batches_cancel"] = true
			c.check(t, 200, "GET", "/api/v1/batches/"+b, key, nil)
			cancelled = true
		}
	}
	require.True(t, cancelled, "a queued batch was cancelled")

	// Access lists, embed domains, tracked links.
	sub := c.check(t, 201, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "zed@example.com"})
	c.check(t, 200, "GET", "/api/v1/subscribers?pagination[per_page]=10", key, nil)
	dom := c.check(t, 200, "POST", "/api/v1/books/"+rid+"/embed-domains", key, map[string]any{"domain": "shop.example.com"})
	c.check(t, 200, "GET", "/api/v1/books/"+rid+"/embed-domains", key, nil)
	c.check(t, 201, "POST", "/api/v1/books/"+rid+"/tracked-links", key, map[string]any{"name": "Footer", "channel": "email"})
	c.check(t, 200, "GET", "/api/v1/books/"+rid+"/tracked-links", key, nil)

	// Brand.
	c.check(t, 200, "GET", "/api/v1/brand", key, nil)
	body, ctype = multipartBody([]filePart{{"file", "logo.png", solidPNG(64, 64, color.RGBA{20, 60, 200, 255})}}, map[string]string{"company_name": "Acme", "primary_color": "#112233"})
	brand := c.check(t, 201, "POST", "/api/v1/brand", key, body, "Content-Type", ctype)
	id := fmt.Sprint(int64(brand.data()["brand"].(map[string]any)["id"].(float64)))
	body, ctype = multipartBody(nil, map[string]string{"id": id, "company_name": "Acme Inc"})
	c.check(t, 200, "PUT", "/api/v1/brand", key, body, "Content-Type", ctype)
	c.check(t, 200, "POST", "/api/v1/toggle-take-over-branding", key, nil)
	c.check(t, 200, "GET", "/api/v1/brand", key, nil)

	// Analytics.
	views := c.check(t, 200, "GET", "/api/v1/analytics/book-view-events?book_id="+rid+"&limit=2", key, nil)
	viewID := fmt.Sprint(int64(views.list()[0].(map[string]any)["id"].(float64)))
	c.check(t, 200, "GET", "/api/v1/analytics/interaction-events?book_id="+rid, key, nil)
	c.check(t, 200, "GET", "/api/v1/analytics/audit-log?book_id="+rid, key, nil)
	c.check(t, 200, "GET", "/api/v1/analytics/page-performance?book_id="+rid, key, nil)
	c.check(t, 200, "GET", "/api/v1/analytics/book-flow?book_id="+rid, key, nil)
	c.check(t, 200, "GET", "/api/v1/analytics/page-heatmap?book_id="+rid+"&page_number=1", key, nil)
	c.check(t, 422, "GET", "/api/v1/analytics/page-heatmap?book_id="+rid, key, nil)
	c.check(t, 200, "GET", "/api/v1/analytics/readers?book_id="+rid+"&include_anonymous=true", key, nil)
	c.check(t, 200, "GET", "/api/v1/analytics/reader-pages?book_id="+rid+"&include_anonymous=true", key, nil)
	c.check(t, 200, "GET", "/api/v1/analytics/reading-session-pages?book_id="+rid+"&view_event_id="+viewID, key, nil)
	c.check(t, 200, "GET", fmt.Sprintf("/api/v1/analytics/reader-journey?viewer_id=%d", int64(fx.viewer)), key, nil)

	// Exports.
	for _, p := range []string{"/exports/analytics/" + rid, "/exports/books/" + rid + "/access-audit", "/exports/books/" + rid + "/audit-log",
		"/exports/books/" + rid + "/interaction-events", "/exports/books/" + rid + "/leads", "/exports/books/" + rid + "/page-performance",
		"/exports/books/" + rid + "/reader-pages", "/exports/books/" + rid + "/readers",
		"/exports/books/" + rid + "/page-heatmap?page_number=1"} {
		r := c.check(t, 200, "GET", "/api/v1"+p, key, nil)
		require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv"))
	}

	// Webhooks, on a service that may call a loopback receiver.
	for op := range checkWebhookResponses(t) {
		c.covered[op] = true
	}
	checkCatalogResponses(t, c)
	for op := range checkBulkResponses(t) {
		c.covered[op] = true
	}
	for op := range checkShopifyResponses(t) {
		c.covered[op] = true
	}

	// Deletes last.
	c.check(t, 200, "DELETE", "/api/v1/books/"+rid+"/embed-domains/"+fmt.Sprint(dom.data()["id"]), key, nil)
	c.check(t, 200, "DELETE", fmt.Sprintf("/api/v1/subscribers/%d", int64(sub.data()["id"].(float64))), key, nil)
	other := h.konva(t, key, "doomed", "draft")
	c.check(t, 200, "DELETE", "/api/v1/books/"+other, key, nil)

	// Errors are in the document too.
	c.check(t, 401, "GET", "/api/v1/books", "", nil)
	c.check(t, 404, "GET", "/api/v1/books/nope", key, nil)
	c.check(t, 422, "GET", "/api/v1/books?limit=0", key, nil)
	c.check(t, 422, "PUT", "/api/v1/books/"+other, key, map[string]any{})
	c.check(t, 400, "POST", "/api/v1/subscribers", key, "{not json")
	free := h.workspace(t, "free", "live")
	c.check(t, 403, "GET", "/api/v1/analytics/page-performance?book_id="+rid, free, nil)
	readOnly := h.key(t, fx.ws, "live", "books:read")
	c.check(t, 403, "GET", "/api/v1/subscribers", readOnly, nil)

	// Every public operation was checked with a success.
	for _, op := range h.svc.Operations() {
		if op.Internal || op.Base != APIBase {
			continue
		}
		require.True(t, c.covered[strings.ReplaceAll(op.ID, ".", "_")], "a response of %s was checked against the document", op.ID)
	}
}

func TestOpenAPIDocumentShape(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	c := newOpenAPIChecker(t, h)
	doc := c.doc
	// Parameters keep their bounds and enums; bodies are described for JSON and multipart.
	list := doc.Paths.Find("/books").Get
	var limit, sort *openapi3.Parameter
	for _, p := range list.Parameters {
		switch p.Value.Name {
		case "limit":
			limit = p.Value
		case "sort":
			sort = p.Value
		}
	}
	require.NotNil(t, limit)
	require.EqualValues(t, 200, *limit.Schema.Value.Max)
	require.Contains(t, sort.Schema.Value.Enum, "-updated_at")
	upload := doc.Paths.Find("/books").Post
	require.NotNil(t, upload.RequestBody.Value.Content.Get("multipart/form-data"))
	require.NotNil(t, doc.Paths.Find("/books/{book}").Put.RequestBody.Value.Content.Get("application/json"))
	// The bearer scheme, scopes and plans.
	require.Equal(t, "bearer", doc.Components.SecuritySchemes["bearerAuth"].Value.Scheme)
	get := doc.Paths.Find("/analytics/page-performance").Get
	require.Equal(t, "analytics:read", get.Extensions["x-scope"])
	require.Equal(t, "company", get.Extensions["x-plan"])
	require.NotNil(t, get.Responses.Status(403))
	require.NotNil(t, get.Responses.Status(429))
	// Internal routes and the admin surface are not public.
	require.Nil(t, doc.Paths.Find("/collect"))
	for path := range doc.Paths.Map() {
		require.False(t, strings.HasPrefix(path, "/workspaces"), path)
	}

	// The reference page and its bundle are served offline.
	r := h.do(t, "GET", "/api/docs", "", nil)
	require.Equal(t, 200, r.Status)
	require.Contains(t, string(r.Body), "/api/v1/openapi.json")
	r = h.do(t, "GET", "/api/docs/redoc.standalone.js", "", nil)
	require.Equal(t, 200, r.Status)
	require.Greater(t, len(r.Body), 100_000)
}

// checkWebhookResponses checks a success of every webhook operation against the document and
// returns the operations covered.
func checkWebhookResponses(t *testing.T) map[string]bool {
	h := newHarness(t, fastWebhooks)
	c := newOpenAPIChecker(t, h)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "hooked", "publish")
	rc := newReceiver(t, "whsec_0123456789abcdef")
	sub := c.check(t, 201, "POST", "/api/v1/webhook-subscriptions", key, map[string]any{"name": "crm", "provider": "generic",
		"target_url": rc.url(), "event_types": []string{"flipbook_opened"}, "signing_secret": "whsec_0123456789abcdef",
		"filters": map[string]any{"book_ids": []string{rid}}})
	id := fmt.Sprint(int64(sub.data()["id"].(float64)))
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", collectBody(rid, map[string]any{"type": "session_started", "page_number": 1})).Status)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(1, "the delivery arrived"))
	c.check(t, 200, "GET", "/api/v1/webhook-subscriptions", key, nil)
	c.check(t, 200, "GET", "/api/v1/webhook-subscriptions/options", key, nil)
	c.check(t, 200, "GET", "/api/v1/webhook-subscriptions/sample-events?event_types=flipbook_opened,session_ended", key, nil)
	c.check(t, 200, "PUT", "/api/v1/webhook-subscriptions/"+id, key, map[string]any{"name": "crm 2"})
	c.check(t, 202, "POST", "/api/v1/webhook-subscriptions/"+id+"/test", key, nil)
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, rc.succeededN(2, "the test delivery arrived"))
	c.check(t, 200, "GET", "/api/v1/webhook-subscriptions/"+id+"/deliveries?limit=1", key, nil)
	c.check(t, 202, "POST", "/api/v1/webhooks", key, map[string]any{"event": "flipbook.created", "url": rc.url()})
	c.check(t, 502, "POST", "/api/v1/webhooks", key, map[string]any{"event": "flipbook.created", "url": "http://127.0.0.1:1/"})
	c.check(t, 422, "POST", "/api/v1/webhook-subscriptions", key, map[string]any{"name": "x"})
	c.check(t, 200, "DELETE", "/api/v1/webhook-subscriptions/"+id, key, nil)
	c.check(t, 404, "GET", "/api/v1/webhook-subscriptions/"+id+"/deliveries", key, nil)
	return c.covered
}
