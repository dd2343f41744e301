package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"flipbook/api"
)

// The contract hook: every response the harness's HTTP client receives for a documented
// /api/v1 operation is checked against the service's own OpenAPI document (status listed for
// the operation, content type listed for the status, JSON body valid against the schema and
// without properties the schema does not declare). A mismatch fails the test that sent the
// request (h.do passes its tb in the request's context; other requests through h.http fail
// the test that started the harness). Requests to paths the document does not route (the
// admin surface, files, the viewer, MCP, unknown paths, other methods) are not checked;
// malformed HTTP is sent on raw sockets, never through h.http.

// apiContract is a loaded document and its router.
type apiContract struct {
	doc    *openapi3.T
	router routers.Router
}

// contractServer is the server URL the contract's router matches: the served document names
// the harness's own address, which differs per harness.
const contractServer = "http://contract.test" + APIBase

// sharedContract is the document served by the first harness that needed it, loaded once per
// test binary (the document does not depend on the configuration beyond its server URL). A
// failed load is not kept: the next answer tries again (and its test fails meanwhile).
var sharedContract struct {
	mu sync.Mutex
	c  *apiContract
}

func contractFor(base string) (*apiContract, error) {
	sharedContract.mu.Lock()
	defer sharedContract.mu.Unlock()
	if sharedContract.c != nil {
		return sharedContract.c, nil
	}
	res, err := http.Get(base + APIBase + "/openapi.json") // not through a hooked client
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("GET /api/v1/openapi.json: %d", res.StatusCode)
	}
	if err != nil {
		return nil, err
	}
	c, err := newContract(raw)
	if err != nil {
		return nil, err
	}
	sharedContract.c = c
	return c, nil
}

// newContract loads and validates a document and builds its router.
func newContract(raw []byte) (*apiContract, error) {
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("the OpenAPI document does not load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	doc.Servers = openapi3.Servers{{URL: contractServer}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &apiContract{doc: doc, router: router}, nil
}

// route finds the documented operation of method and target (a path under /api/v1 with its
// query); nil when the document has none.
func (c *apiContract) route(method, target string) (*routers.Route, map[string]string, *http.Request) {
	rest, ok := strings.CutPrefix(target, APIBase)
	if !ok || (rest != "" && rest[0] != '/' && rest[0] != '?') {
		return nil, nil, nil
	}
	req, err := http.NewRequest(method, contractServer+rest, nil)
	if err != nil {
		return nil, nil, nil
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return nil, nil, nil
	}
	return route, params, req
}

// check checks one response to method target. op is the operation's id ("" when the document
// routes no operation there: nothing is checked). body nil means the body was not read (a
// stream that is not JSON): the status and content type are checked, not the body.
func (c *apiContract) check(method, target string, status int, header http.Header, body []byte) (op string, err error) {
	route, params, req := c.route(method, target)
	if route == nil {
		return "", nil
	}
	op = route.Operation.OperationID
	var problems []string
	ref := route.Operation.Responses.Status(status)
	if ref == nil {
		ref = route.Operation.Responses.Default()
	}
	if ref == nil || ref.Value == nil {
		return op, fmt.Errorf("status %d is not listed for the operation (listed: %s)", status, strings.Join(listedStatuses(route.Operation), ", "))
	}
	ctype := header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ctype)
	if content := ref.Value.Content; len(content) > 0 {
		if content.Get(ctype) == nil {
			return op, fmt.Errorf("content type %q is not listed for status %d (listed: %s)", ctype, status, strings.Join(sortedKeys(content), ", "))
		}
	} else if len(body) > 0 {
		return op, fmt.Errorf("status %d is documented without a body, the answer has %d bytes of %q", status, len(body), ctype)
	}
	if body == nil {
		return op, nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status, Header: header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		problems = append(problems, err.Error())
	}
	if mt == "application/json" {
		if s := responseSchema(route.Operation, status, ctype); s != nil {
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				problems = append(problems, "the body is not JSON: "+err.Error())
			} else if extra := undeclared(s, v, "$"); len(extra) > 0 {
				problems = append(problems, "properties the document does not declare: "+strings.Join(extra, ", "))
			}
		}
	}
	if len(problems) > 0 {
		return op, errors.New(strings.Join(problems, "; "))
	}
	return op, nil
}

func listedStatuses(op *openapi3.Operation) []string {
	return sortedKeys(op.Responses.Map())
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// tbKey carries the test that sends a request in the request's context (h.do sets it).
type tbKey struct{}

// contractTransport checks the answers of the harness's client against the contract.
type contractTransport struct {
	h    *harness
	next http.RoundTripper
}

func (t *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(req)
	if err != nil || req.URL.Host != strings.TrimPrefix(t.h.base, "http://") || !strings.HasPrefix(req.URL.Path, APIBase+"/") {
		return res, err
	}
	tb, _ := req.Context().Value(tbKey{}).(testing.TB)
	if tb == nil {
		tb = t.h.tb
	}
	c := t.h.contract
	if c == nil {
		if c, err = contractFor(t.h.base); err != nil {
			tb.Errorf("OpenAPI contract: %v", err)
			return res, nil
		}
	}
	target := req.URL.RequestURI()
	if route, _, _ := c.route(req.Method, target); route == nil {
		return res, nil
	}
	var body []byte
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" || res.ContentLength == 0 {
		// JSON answers are read whole here and handed on; other media types may be streams
		// the test reads at its own pace (CSV exports), so only their status and type are checked.
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		res.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		if err != nil {
			return res, nil
		}
		if body == nil {
			body = []byte{}
		}
	}
	if op, err := c.check(req.Method, target, res.StatusCode, res.Header, body); err != nil {
		tb.Errorf("OpenAPI contract: %s %s: operation %s answered %d: %v\nbody: %s", req.Method, target, op, res.StatusCode, err, clip(body, 600))
	}
	return res, nil
}

// errReader yields err (io.EOF when nil): a body read in full, then its read error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// recordTB is a testing.TB that records errors instead of failing (tests of the hook).
type recordTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordTB) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// TestContractCatchesDrift shows that the hook is not silent: hand-made answers that drift
// from the document are refused by the same checker, and a drift in a real answer fails the
// test that sent the request.
func TestContractCatchesDrift(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	c, err := contractFor(h.base)
	require.NoError(t, err)
	js := http.Header{"Content-Type": {"application/json"}}
	health := `{"status":"ok","timestamp":"2026-11-27T10:00:00Z","version":"1.0.0","details":{"converters":[]}}`
	op, err := c.check("GET", "/api/v1/health", 200, js, []byte(health))
	require.Equal(t, "health", op)
	require.NoError(t, err, "a valid answer passes")

	for name, tc := range map[string]struct {
		method, target string
		status         int
		ctype, body    string
		want           string
	}{
		"status":       {"GET", "/api/v1/books/abc", 418, "application/json", `{"error":{"message":"x","type":"Teapot"}}`, "status 418 is not listed"},
		"field":        {"GET", "/api/v1/health", 200, "application/json", strings.Replace(health, `"status"`, `"surprise":1,"status"`, 1), "$.surprise"},
		"nested field": {"GET", "/api/v1/books/abc", 404, "application/json", `{"error":{"message":"x","type":"NotFound","hint":"y"}}`, "$.error.hint"},
		"type":         {"GET", "/api/v1/health", 200, "application/json", strings.Replace(health, `"ok"`, `7`, 1), "doesn't match schema"},
		"required":     {"GET", "/api/v1/books/abc", 404, "application/json", `{"message":"x"}`, "doesn't match schema"},
		"content type": {"GET", "/api/v1/health", 200, "text/html", "<p>ok</p>", `content type "text/html" is not listed`},
		"csv as json":  {"GET", "/api/v1/exports/analytics/abc", 200, "application/json", `{}`, `content type "application/json" is not listed`},
		"empty json":   {"GET", "/api/v1/health", 200, "application/json", "", "failed to decode"},
	} {
		op, err := c.check(tc.method, tc.target, tc.status, http.Header{"Content-Type": {tc.ctype}}, []byte(tc.body))
		require.NotEmpty(t, op, name)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), tc.want, name)
	}
	// Nothing is checked where the document routes no operation.
	for _, target := range []string{"/api/v1/nope", "/admin/v1/workspaces", "/collect", "/api/v1"} {
		op, err := c.check("GET", target, 418, js, []byte("<"))
		require.Empty(t, op, target)
		require.NoError(t, err, target)
	}
	op, err = c.check("PATCH", "/api/v1/health", 405, js, []byte("{}"))
	require.Empty(t, op, "a method the path does not document")
	require.NoError(t, err)

	// Wired into the harness: a document that leaves out the 404 of GET /books/{book} makes a
	// real 404 fail the test that received it, naming the operation, the status and why.
	var doc map[string]any
	require.NoError(t, json.Unmarshal(h.do(t, "GET", "/api/v1/openapi.json", "", nil).Body, &doc))
	get := doc["paths"].(map[string]any)["/books/{book}"].(map[string]any)["get"].(map[string]any)
	delete(get["responses"].(map[string]any), "404")
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	h.contract, err = newContract(raw)
	require.NoError(t, err)
	key := h.workspace(t, "pro", "live")
	rec := &recordTB{TB: t}
	r := h.do(rec, "GET", "/api/v1/books/nope", key, nil)
	require.Equal(t, 404, r.Status)
	require.Equal(t, api.TypeNotFound, r.errType(), "the body still reaches the test")
	fails := rec.failures()
	require.Len(t, fails, 1)
	for _, want := range []string{"GET /api/v1/books/nope", "operation books_get answered 404", "status 404 is not listed"} {
		require.Contains(t, fails[0], want)
	}
	// A request through the harness's client without h.do fails the harness's test.
	h.tb = rec
	res, err := h.http.Get(h.base + "/api/v1/books/nope?api_key=" + key)
	require.NoError(t, err)
	res.Body.Close()
	require.Len(t, rec.failures(), 2)
	h.tb = t
	// Documented answers pass.
	require.Equal(t, 200, h.do(rec, "GET", "/api/v1/books", key, nil).Status)
	require.Len(t, rec.failures(), 2)
}
