package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"mime/multipart"
	"strconv"
	"strings"
	"time"

	"github.com/bytedance/sonic"
	"github.com/valyala/fasthttp"

	"flipbook/actors"
	"flipbook/storage"
)

// JSON codecs. Requests decode with CopyString (strings must not alias fasthttp's pooled
// buffers: they are handed to actors and stored) and UseNumber (integers stay exact).
var (
	reqJSON  = sonic.Config{UseNumber: true, CopyString: true, ValidateString: true}.Froze()
	respJSON = sonic.Config{SortMapKeys: true}.Froze()
)

// serveOp is the request pipeline of one operation (DESIGN §4): request id → authentication →
// rate limits → scope and plan → idempotency → validation → handler → envelope.
func (s *Service) serveOp(ctx *fasthttp.RequestCtx, op *Operation) {
	ctx.Response.Header.Set("X-Request-Id", s.requestID(ctx))
	now := time.Now().UTC()
	p, aerr := s.authenticate(ctx, op, now)
	if aerr != nil {
		s.writeError(ctx, aerr)
		return
	}
	if op.Auth == AuthKey {
		if aerr := s.rateLimit(ctx, op, p, now); aerr != nil {
			s.writeError(ctx, aerr)
			return
		}
		if aerr := authorize(op, p); aerr != nil {
			s.writeError(ctx, aerr)
			return
		}
	}
	maxBody := op.MaxBody
	if maxBody == 0 {
		maxBody = DefaultMaxJSONBody
	}
	if len(ctx.PostBody()) > maxBody {
		s.writeError(ctx, errTooLarge(maxBody))
		return
	}

	var ref idemRef
	idemKey := ctx.Request.Header.Peek("Idempotency-Key")
	useIdem := op.Write && p != nil && len(idemKey) > 0
	var fp []byte
	if useIdem {
		if len(idemKey) > MaxIdempotencyKey {
			s.writeError(ctx, fieldError("Idempotency-Key", fmt.Sprintf("must not be longer than %d characters", MaxIdempotencyKey)))
			return
		}
		ref = idemRef{t: p.Tenant, key: string(idemKey)}
		fp = requestFingerprint(ctx, op)
		if !s.inflight.begin(ref) {
			s.writeError(ctx, &Error{Status: 409, Type: TypeIdempotencyConflict,
				Message: "a request with this Idempotency-Key is still in progress"})
			return
		}
		defer s.inflight.end(ref)
		stored, err := s.Store.Idem(ref.t, ref.key, now)
		switch {
		case err == nil && !bytes.Equal(stored.Fingerprint, fp):
			s.writeError(ctx, fieldError("Idempotency-Key", "was already used with a different request"))
			return
		case err == nil:
			ctx.Response.Header.Set("X-Idempotent-Replay", "true")
			ctx.SetStatusCode(stored.Status)
			ctx.SetContentType(stored.ContentType)
			ctx.SetBody(stored.Body)
			return
		case !errors.Is(err, storage.ErrNotFound):
			s.log.Error("read idempotency entry", "err", err)
			s.writeError(ctx, errInternal())
			return
		}
	}

	req, aerr := s.parseRequest(ctx, op)
	if aerr != nil {
		s.writeError(ctx, aerr)
		return
	}
	req.Auth, req.Now, req.IP = p, now, ctx.RemoteIP().String()
	if s.cfg.TrustGeoHeaders && op.Auth == AuthNone {
		req.Geo = geoFromHeaders(&ctx.Request.Header)
	}
	res, err := op.Handler(req)
	if err != nil {
		ae := toAPIError(err)
		if ae.Status >= 500 {
			s.log.Error("operation failed", "op", op.ID, "err", err,
				"request_id", string(ctx.Response.Header.Peek("X-Request-Id")))
		}
		s.writeError(ctx, ae)
		return
	}
	if res.Stream != nil {
		s.renderStream(ctx, op, res)
		return
	}
	if res.Status == 0 {
		res.Status = 200
	}
	body := s.renderResult(ctx, res)
	if useIdem && res.Status >= 200 && res.Status < 300 {
		e := &storage.IdemEntry{Fingerprint: fp, Status: res.Status,
			ContentType: "application/json", Body: body, CreatedAt: now}
		if err := s.Store.PutIdem(ref.t, ref.key, e); err != nil {
			s.log.Error("store idempotent response", "err", err)
		}
	}
}

func bearer(ctx *fasthttp.RequestCtx) string {
	h := ctx.Request.Header.Peek("Authorization")
	if len(h) > 7 && (string(h[:7]) == "Bearer " || string(h[:7]) == "bearer ") {
		return string(bytes.TrimSpace(h[7:]))
	}
	return ""
}

func (s *Service) authenticate(ctx *fasthttp.RequestCtx, op *Operation, now time.Time) (*Principal, *Error) {
	switch op.Auth {
	case AuthNone:
		return nil, nil
	case AuthAdmin:
		tok := bearer(ctx)
		sum := sha256.Sum256([]byte(tok))
		if s.adminHash != nil && tok != "" && hmac.Equal(sum[:], s.adminHash) {
			return nil, nil
		}
		return nil, s.unauthenticated(ctx, now, "missing or wrong admin token")
	}
	tok := bearer(ctx)
	if tok == "" {
		tok = string(ctx.QueryArgs().Peek("api_key"))
	}
	if tok == "" {
		return nil, s.unauthenticated(ctx, now, "missing API key: send Authorization: Bearer <key>")
	}
	p, epoch := s.auth.get(tok)
	if p != nil {
		return p, nil
	}
	key, err := s.Store.KeyByHash(storage.HashSecret(tok))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, s.unauthenticated(ctx, now, "the API key is wrong or has been revoked")
	}
	if err != nil {
		s.log.Error("read key", "err", err)
		return nil, errInternal()
	}
	ws, err := s.Store.Workspace(key.Workspace)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, s.unauthenticated(ctx, now, "the API key's workspace no longer exists")
		}
		s.log.Error("read workspace", "err", err)
		return nil, errInternal()
	}
	p = &Principal{Key: key, Workspace: ws, Tenant: key.Tenant()}
	s.auth.put(tok, p, epoch)
	return p, nil
}

// unauthenticated answers a call without valid credentials: 429 once the caller's IP is over
// the unauthenticated limit, else 401.
func (s *Service) unauthenticated(ctx *fasthttp.RequestCtx, now time.Time, msg string) *Error {
	if s.limIP != nil {
		d := s.limIP.allow(ctx.RemoteIP().String(), now)
		if !d.allowed {
			return tooMany(d, fmt.Sprintf("too many unauthenticated requests from this address (limit %d per minute)", d.limit))
		}
	}
	return errUnauthenticated(msg)
}

func tooMany(d decision, msg string) *Error {
	return &Error{Status: 429, Type: TypeTooManyRequests, Message: msg,
		RetryAfter: max(1, int(math.Ceil(d.retryAfter.Seconds())))}
}

// rateLimit applies the per-operation and per-workspace limits and sets the RateLimit headers
// of the tighter one.
func (s *Service) rateLimit(ctx *fasthttp.RequestCtx, op *Operation, p *Principal, now time.Time) *Error {
	ws := strconv.FormatInt(p.Workspace.ID, 10)
	var shown *decision
	if s.limEP != nil {
		d := s.limEP.allow(ws+"|"+op.ID, now)
		if !d.allowed {
			setRateHeaders(ctx, d)
			return tooMany(d, fmt.Sprintf("rate limit of %d requests per minute for this operation exceeded", d.limit))
		}
		shown = &d
	}
	if s.limWS != nil {
		d := s.limWS.allow(ws, now)
		if !d.allowed {
			setRateHeaders(ctx, d)
			return tooMany(d, fmt.Sprintf("rate limit of %d requests per minute for this workspace exceeded", d.limit))
		}
		if shown == nil || d.remaining < shown.remaining {
			shown = &d
		}
	}
	if shown != nil {
		setRateHeaders(ctx, *shown)
	}
	return nil
}

func setRateHeaders(ctx *fasthttp.RequestCtx, d decision) {
	h := &ctx.Response.Header
	h.Set("RateLimit-Limit", strconv.Itoa(d.limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(d.reset.Seconds()))))
}

// authorize checks the key's scopes and the workspace's plan.
func authorize(op *Operation, p *Principal) *Error {
	if op.Scope != "" && !contains(p.Key.Scopes, "*") && !contains(p.Key.Scopes, op.Scope) {
		return &Error{Status: 403, Type: TypeMissingScope, Required: op.Scope,
			Scopes:  append([]string{}, p.Key.Scopes...),
			Message: fmt.Sprintf("this API key lacks the %s scope; it has: %s", op.Scope, scopeList(p.Key.Scopes))}
	}
	if op.Plan != "" && !actors.PlanAtLeast(p.Workspace.Plan, op.Plan) {
		return &Error{Status: 403, Type: TypePlanRequired,
			Message: fmt.Sprintf("this operation needs the %s plan or higher; the workspace is on the %s plan", op.Plan, p.Workspace.Plan)}
	}
	return nil
}

// parseRequest collects path, query and body values (copied out of the pooled request) and
// validates them against the operation's parameters.
func (s *Service) parseRequest(ctx *fasthttp.RequestCtx, op *Operation) (*Request, *Error) {
	if op.FastBody != nil && !bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("multipart/form-data")) {
		if params, ok := op.FastBody(ctx.PostBody()); ok {
			return &Request{Op: op, Params: params}, nil
		}
	}
	var path, query map[string]string
	var body map[string]any
	hasBody := false
	for i := range op.Params {
		switch op.Params[i].In {
		case InPath:
			if path == nil {
				path = map[string]string{}
			}
			if v, ok := ctx.UserValue(op.Params[i].Name).(string); ok {
				path[op.Params[i].Name] = v
			}
		case InQuery:
			if query == nil {
				query = map[string]string{}
			}
			if v := ctx.QueryArgs().Peek(op.Params[i].Name); v != nil {
				query[op.Params[i].Name] = string(v)
			}
		case InBody:
			hasBody = true
		}
	}
	multipartBody := bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("multipart/form-data"))
	if hasBody && op.Multipart && multipartBody {
		form, err := ctx.MultipartForm()
		if err != nil {
			return nil, errBadRequest("the multipart/form-data body cannot be read: " + err.Error())
		}
		body = formValues(op.Params, form)
	} else if raw := ctx.PostBody(); hasBody && len(bytes.TrimSpace(raw)) > 0 {
		// The body is read as JSON whatever Content-Type says (curl -d sends a form type);
		// multipart bodies are refused where JSON is expected.
		if multipartBody {
			return nil, errBadRequest("this operation takes a JSON body, not multipart/form-data")
		}
		var v any
		if err := reqJSON.Unmarshal(raw, &v); err != nil {
			return nil, errBadRequest("the body is not valid JSON: " + err.Error())
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, errBadRequest("the body must be a JSON object")
		}
		body = m
	}
	params, err := validateParams(op.Params, path, query, body, op.Multipart && multipartBody)
	if err != nil {
		return nil, err.(*Error)
	}
	return &Request{Op: op, Params: params}, nil
}

// formValues collects the body parameters of a multipart form: fields as strings (the first
// value), files as []*multipart.FileHeader. A field may also be sent as "name[]".
func formValues(params []Param, form *multipart.Form) map[string]any {
	out := map[string]any{}
	for _, p := range params {
		if p.In != InBody {
			continue
		}
		if p.Kind == KFile {
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

type envelope struct {
	Data any `json:"data"`
	Meta any `json:"meta,omitempty"`
}

// renderResult writes a success and returns the body written.
func (s *Service) renderResult(ctx *fasthttp.RequestCtx, res *Result) []byte {
	status := res.Status
	var v any = envelope{Data: res.Data, Meta: res.Meta}
	if raw, ok := res.Data.(rawJSON); ok {
		v = raw.v
	}
	body, err := respJSON.Marshal(v)
	if err != nil {
		s.log.Error("encode response", "err", err)
		s.writeError(ctx, errInternal())
		return nil
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
	return body
}

// rawJSON marks a result rendered without the {data} envelope (health).
type rawJSON struct{ v any }

type errorBody struct {
	Message       string              `json:"message"`
	Type          string              `json:"type"`
	Details       map[string][]string `json:"details,omitempty"`
	RequiredScope string              `json:"required_scope,omitempty"`
	Scopes        []string            `json:"scopes,omitempty"`
	RequestID     string              `json:"request_id,omitempty"`
}

type errorEnvelope struct {
	Error errorBody `json:"error"`
	// The second layout of spec §7.1, served beside the first for validation errors.
	Message string              `json:"message,omitempty"`
	Errors  map[string][]string `json:"errors,omitempty"`
}

func (s *Service) writeError(ctx *fasthttp.RequestCtx, e *Error) {
	env := errorEnvelope{Error: errorBody{Message: e.Message, Type: e.Type, Details: e.Details,
		RequiredScope: e.Required, Scopes: e.Scopes,
		RequestID: string(ctx.Response.Header.Peek("X-Request-Id"))}}
	if e.Type == TypeValidation {
		env.Message, env.Errors = e.Message, e.Details
	}
	if e.RetryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	body, _ := respJSON.Marshal(env)
	ctx.SetStatusCode(e.Status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
