package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"maps"
	"math"
	"mime/multipart"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"flipbook/api"
)

// The REST adapter: a RequestCtx becomes an api.Input (values copied out of the pooled
// request), api.Caller.Call runs the operation, and the result becomes status, headers and
// body. Nothing of authentication, limits, idempotency or validation is decided here.

var (
	reqJSON  = api.RequestJSON
	respJSON = api.ResponseJSON
)

// operations is every operation the service routes: the public table (package api) and this
// package's own routes outside the public API (admin, reader).
func (s *Service) operations() []*api.Operation {
	ops := api.Table(s.backends(), api.TableOptions{MaxUploadBody: s.cfg.MaxBodyBytes})
	ops = append(ops, s.adminOperations()...)
	return append(ops, s.readerOperations()...)
}

// backends are the domains that run the public operations, each a struct holding only what
// its domain uses (the store, the actors, DuckDB, the event log, the cursor key, the public
// URL, a limit): books, access, brand, analytics and exports, webhooks, catalogs, bulk
// settings, Shopify. Health and identity stay methods of Service: they report the service
// itself (its operations, converters, cluster state).
func (s *Service) backends() api.Backends {
	stats := &analyticsService{Store: s.Store, Analytics: s.Analytics, cursors: &s.cursors,
		readersBatch: &s.readersBatch, log: s.log}
	hooks := &webhookService{links: s.links, Store: s.Store, Actors: s.Actors, Analytics: s.Analytics,
		cursors: &s.cursors, allowPrivate: s.cfg.AllowPrivateTargets}
	books := &bookService{links: s.links, Store: s.Store, Actors: s.Actors, cursors: &s.cursors, noRenditions: s.cfg.NoRenditions,
		maxUploadBytes: s.cfg.MaxUploadBytes, allowPrivate: s.cfg.AllowPrivateTargets, noText: s.cfg.NoPageText}
	bulk := &bulkService{Store: s.Store, Actors: s.Actors}
	access := &accessService{links: s.links, Store: s.Store, Actors: s.Actors}
	brand := &brandService{links: s.links, Store: s.Store, Actors: s.Actors, log: s.log}
	catalogs := &catalogService{links: s.links, Store: s.Store, Actors: s.Actors, cursors: &s.cursors, log: s.log}
	shopify := &shopifyService{Store: s.Store, Actors: s.Actors, Analytics: s.Analytics, events: s.events,
		consumer: s.consumer, caller: s.caller, log: s.log}
	return api.Backends{Books: books, Access: access, Brand: brand, General: s, Analytics: stats,
		Webhooks: hooks, Catalogs: catalogs, Bulk: bulk, Shopify: shopify}
}

// serveOp answers one REST call of op.
func (s *Service) serveOp(ctx *fasthttp.RequestCtx, op *api.Operation) {
	reqID := s.requestID(ctx) // on the response since serveHTTP
	in := api.Input{Op: op, Credential: bearer(ctx), IP: ctx.RemoteIP().String(), RequestID: reqID}
	if in.Credential == "" && op.Auth == api.AuthKey {
		in.Credential = string(ctx.QueryArgs().Peek("api_key"))
	}
	maxBody := op.BodyCap()
	// A declared length over the cap is a 413 at once; otherwise the body is read only once
	// the caller is authenticated and authorized (Decode and Fingerprint run after that): a
	// request without valid credentials is a 401 with its body unread (body.go).
	multipartBody := op.Multipart && bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("multipart/form-data"))
	body := s.newBody(ctx, maxBody, multipartBody)
	defer body.release()
	if body.overCap() {
		// Refused from the headers, whoever sends it: nothing of it is read.
		s.writeError(ctx, body.tooLarge())
		return
	}
	if op.Write {
		in.IdempotencyKey = string(ctx.Request.Header.Peek("Idempotency-Key"))
		in.Args.Fingerprint = func() ([]byte, error) {
			if err := body.load(); err != nil {
				return nil, err
			}
			return requestFingerprint(ctx, op), nil
		}
	}
	if s.cfg.TrustGeoHeaders && op.Auth == api.AuthNone {
		in.Extra = geoFromHeaders(&ctx.Request.Header)
	}
	body.op, in.Decode = op, body
	res, err := s.caller.Call(ctx, &in)
	if in.Args.Path != nil { // nothing holds the map after Call: its values were copied or bound
		clear(in.Args.Path)
		pathMaps.Put(in.Args.Path)
	}
	if err != nil && !body.loaded && (ctx.Request.IsBodyStream() || body.overCap()) {
		// Refused before its body was read (401, 403, 429): the unread bytes are still on
		// the connection.
		refusedUnread(ctx)
	}
	noteCaller(ctx, in.Principal)
	if err != nil {
		s.writeError(ctx, err.(*api.Error))
		return
	}
	if res.Rate != nil {
		setRateHeaders(ctx, *res.Rate)
	}
	if res.Stream != nil {
		s.renderStream(ctx, op, res)
		return
	}
	if res.Replayed {
		ctx.Response.Header.Set("X-Idempotent-Replay", "true")
	}
	ctx.SetStatusCode(res.Status)
	ctx.SetContentType(res.ContentType)
	if res.Body != nil {
		ctx.SetBody(res.Body)
		return
	}
	// Raw data, framed (as api.FrameData does) into the response's own pooled buffer.
	ctx.Response.ResetBody()
	_, _ = ctx.WriteString(`{"data":`)
	_, _ = ctx.Write(res.Raw)
	_, _ = ctx.WriteString("}")
}

// pathMaps hold the path values of REST calls (Args.Path), reused from call to call.
var pathMaps = sync.Pool{New: func() any { return make(map[string]string, 2) }}

// readArgs collects path, query and body values, copied out of the pooled request.
func readArgs(ctx *fasthttp.RequestCtx, op *api.Operation, a *api.Args) error {
	multipartBody := bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("multipart/form-data"))
	if op.FastBody != nil && !multipartBody {
		if params, ok := op.FastBody(ctx.PostBody()); ok {
			a.Valid = params
			return nil
		}
	}
	hasBody := false
	for i := range op.Params {
		p := &op.Params[i]
		switch p.In {
		case api.InPath:
			if a.Path == nil {
				a.Path = pathMaps.Get().(map[string]string)
			}
			if v, ok := ctx.UserValue(p.Name).(string); ok {
				a.Path[p.Name] = v
			}
		case api.InQuery:
			if v := ctx.QueryArgs().Peek(p.Name); v != nil {
				if a.Query == nil {
					a.Query = make(map[string]string, 4)
				}
				a.Query[p.Name] = string(v)
			}
		case api.InBody:
			hasBody = true
		}
	}
	if !hasBody {
		return nil
	}
	if op.Multipart && multipartBody {
		form, err := ctx.MultipartForm()
		if err != nil {
			return api.ErrBadRequest("the multipart/form-data body cannot be read: " + err.Error())
		}
		a.Body, a.BodyStrings = formValues(op.Params, form), true
		return nil
	}
	raw := ctx.PostBody()
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	// The body is read as JSON whatever Content-Type says (curl -d sends a form type);
	// multipart bodies are refused where JSON is expected.
	if multipartBody {
		return api.ErrBadRequest("this operation takes a JSON body, not multipart/form-data")
	}
	var v any
	if err := reqJSON.Unmarshal(raw, &v); err != nil {
		return api.ErrBadRequest("the body is not valid JSON: " + err.Error())
	}
	m, ok := v.(map[string]any)
	if !ok {
		return api.ErrBadRequest("the body must be a JSON object")
	}
	a.Body = m
	return nil
}

// formValues collects the body parameters of a multipart form: fields as strings (the first
// value), files as []*multipart.FileHeader. A field may also be sent as "name[]".
func formValues(params []api.Param, form *multipart.Form) map[string]any {
	out := map[string]any{}
	for _, p := range params {
		if p.In != api.InBody {
			continue
		}
		if p.Kind == api.KFile {
			fs := append(append([]*multipart.FileHeader(nil), form.File[p.Name]...), form.File[p.Name+"[]"]...)
			if len(fs) > 0 {
				out[p.Name] = fs
			}
			continue
		}
		vals := form.Value[p.Name]
		if len(vals) == 0 {
			vals = form.Value[p.Name+"[]"]
		}
		if len(vals) > 0 {
			out[p.Name] = strings.Clone(vals[0])
		}
	}
	return out
}

// requestFingerprint identifies "the same request": operation, path and body. A multipart body
// is fingerprinted by its content (fields, file names and file bytes), not its bytes on the
// wire: clients choose a new random boundary for every attempt, so a retry of the same upload
// would otherwise never match.
func requestFingerprint(ctx *fasthttp.RequestCtx, op *api.Operation) []byte {
	h := sha256.New()
	h.Write([]byte(op.ID))
	h.Write([]byte{0})
	h.Write(ctx.Path())
	h.Write([]byte{0})
	if op.Multipart && bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("multipart/form-data")) {
		if form, err := ctx.MultipartForm(); err == nil {
			hashForm(h, form)
			return h.Sum(nil)
		}
	}
	h.Write(ctx.PostBody())
	return h.Sum(nil)
}

func hashForm(h hash.Hash, form *multipart.Form) {
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, k := range slices.Sorted(maps.Keys(form.Value)) {
		field("v:" + k)
		for _, v := range form.Value[k] {
			field(v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(form.File)) {
		field("f:" + k)
		for _, fh := range form.File[k] {
			field(fh.Filename)
			fsum := sha256.New()
			if f, err := fh.Open(); err == nil {
				_, _ = io.Copy(fsum, f)
				f.Close()
			}
			field(string(fsum.Sum(nil)))
		}
	}
}

// bearer is the credential of the request's Authorization: Bearer header (api.Bearer).
func bearer(ctx *fasthttp.RequestCtx) string {
	return api.Bearer(ctx.Request.Header.Peek("Authorization"))
}

func setRateHeaders(ctx *fasthttp.RequestCtx, d api.Decision) {
	h := &ctx.Response.Header
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(d.Reset.Seconds()))))
}

// renderResult writes a success that did not go through Call (the viewer's page list).
func (s *Service) renderResult(ctx *fasthttp.RequestCtx, res *api.Result) {
	body, err := respJSON.Marshal(struct {
		Data any `json:"data"`
		Meta any `json:"meta,omitempty"`
	}{res.Data, res.Meta})
	if err != nil {
		s.log.Error("encode response", "err", err)
		s.writeError(ctx, api.ErrInternal())
		return
	}
	ctx.SetStatusCode(res.Status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

func (s *Service) writeError(ctx *fasthttp.RequestCtx, e *api.Error) {
	if e.Rate != nil {
		setRateHeaders(ctx, *e.Rate)
	}
	if e.RetryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if s.oauth != nil && bytes.HasPrefix(ctx.Path(), []byte(APIBase)) {
		if h := wwwAuthenticate(e, s.oauth.ResourceMetadataURL(s.restResource())); h != "" {
			ctx.Response.Header.Set("WWW-Authenticate", h)
		}
	}
	ctx.SetStatusCode(e.Status)
	ctx.SetContentType("application/json")
	ctx.SetBody(e.Envelope(string(ctx.Response.Header.Peek("X-Request-Id")), false))
}

// collectMaxBody is the collector's body cap.
const collectMaxBody = 1 << 20

// readerOperations are the public routes of readers: the collector and the email gate.
func (s *Service) readerOperations() []*api.Operation {
	return []*api.Operation{
		{ID: "reader.collect", Method: "POST", Path: "/collect", Auth: api.AuthNone, Internal: true,
			Summary: "Reader events from a viewer (JSON or text/plain for sendBeacon); 202 once durable.",
			Params:  collectParams(), MaxBody: collectMaxBody, FastBody: fastCollect, Handler: s.collect},
		api.Define(api.Operation{ID: "reader.access", Method: "POST", Path: "/view/{book}/access", Auth: api.AuthNone, Internal: true,
			Summary: "The email gate: an address on the book's access list gets a reader token.",
			MaxBody: 16 << 10}, s.viewerAccess),
	}
}

// wwwAuthenticate is the challenge of a refused call (RFC 6750, RFC 9728): every 401 names the
// resource's metadata document, a token's refusal says invalid_token, and a missing scope says
// which scope to ask for.
func wwwAuthenticate(e *api.Error, metadata string) string {
	switch {
	case e.Status == 401 && e.OAuthError != "":
		return `Bearer error="` + e.OAuthError + `", error_description="` + strings.ReplaceAll(e.Message, `"`, "'") +
			`", resource_metadata="` + metadata + `"`
	case e.Status == 401:
		return `Bearer resource_metadata="` + metadata + `"`
	case e.Status == 403 && e.Type == api.TypeMissingScope:
		return `Bearer error="insufficient_scope", scope="` + e.Required + `", resource_metadata="` + metadata + `"`
	}
	return ""
}
