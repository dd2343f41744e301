package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"mime/multipart"
	"strconv"
	"sync"
	"time"

	"github.com/bytedance/sonic"

	"flipbook/actors"
	"flipbook/errs"
	"flipbook/storage"
)

// Bearer is the credential of an Authorization header value "Bearer <credential>" (the scheme
// is case-insensitive, RFC 9110 §11.1), "" for any other value. REST and MCP read it alike.
func Bearer(authorization []byte) string {
	if len(authorization) > 7 && bytes.EqualFold(authorization[:7], []byte("Bearer ")) {
		return string(bytes.TrimSpace(authorization[7:]))
	}
	return ""
}

// Defaults of CallerOptions (spec §8).
const (
	DefaultRateWorkspace       = 1000 // requests per minute per workspace
	DefaultRateEndpoint        = 100  // per minute per workspace and operation
	DefaultRateUnauthenticated = 10   // per minute per IP, for calls without valid credentials
	// MaxIdempotencyKey is the longest Idempotency-Key accepted.
	MaxIdempotencyKey = 255
	// IdempotencyKeyArg is the tool argument that carries an Idempotency-Key on write tools.
	IdempotencyKeyArg = "idempotency_key"
)

// CallerOptions configure a Caller. Rate limits are requests per minute; 0 turns one off.
type CallerOptions struct {
	RateWorkspace       int
	RateEndpoint        int
	RateUnauthenticated int
	// AdminToken authenticates AuthAdmin operations; "" refuses them all.
	AdminToken string
	Logger     *slog.Logger
	// Tokens verifies OAuth access tokens (nil: only API keys are accepted).
	Tokens TokenVerifier
	// RESTResource and MCPResource are the resource URLs an access token must be issued for
	// (RFC 8707) to call the REST API and the MCP endpoint.
	RESTResource, MCPResource string
	// SyncGlobal, in cluster mode, waits until this node's copy of the global table holds what
	// other nodes wrote before it was called: a credential not found is looked up once more
	// after it (a key or token made through another node a moment ago).
	SyncGlobal func() error
}

// TokenVerifier checks OAuth access tokens (package oauth).
type TokenVerifier interface {
	// IsToken reports whether a bearer credential has the form of an access token.
	IsToken(credential string) bool
	// Verify checks an access token: ErrInvalidToken-like errors mean 401.
	Verify(ctx context.Context, credential string) (*TokenGrant, error)
}

// TokenGrant is what a valid access token grants: the key that approved it and the scopes and
// resources it was issued for.
type TokenGrant struct {
	ClientID  string
	KeyID     int64
	Scopes    []string
	Audience  []string
	ExpiresAt time.Time
}

// TokenInfo is the OAuth side of a principal authenticated by an access token.
type TokenInfo struct {
	ClientID  string
	Audience  []string
	ExpiresAt time.Time
}

// Caller runs operations: Call is the one path every transport takes.
type Caller struct {
	store               *storage.Store
	log                 *slog.Logger
	limWS, limEP, limIP *Limiter
	adminHash           []byte
	sync                func() error // CallerOptions.SyncGlobal
	auth                authCache
	inflight            inflight
	tokens              TokenVerifier
	restRes, mcpRes     string
}

// NewCaller returns a Caller that authenticates against st.
func NewCaller(st *storage.Store, o CallerOptions) *Caller {
	c := &Caller{store: st, log: o.Logger, tokens: o.Tokens, restRes: o.RESTResource, mcpRes: o.MCPResource, sync: o.SyncGlobal,
		limWS: NewLimiter(o.RateWorkspace), limEP: NewLimiter(o.RateEndpoint), limIP: NewLimiter(o.RateUnauthenticated)}
	if c.log == nil {
		c.log = slog.Default()
	}
	if o.AdminToken != "" {
		h := sha256.Sum256([]byte(o.AdminToken))
		c.adminHash = h[:]
	}
	return c
}

// Input is one call of an operation.
type Input struct {
	Op *Operation
	// Credential is the bearer token (API key or admin token) as presented; Principal, when
	// set, is a caller the transport already authenticated with Authenticate (Credential is
	// then unused). Call sets Principal once it authenticated the credential (the transport's
	// log line names the caller's workspace). Credential is never logged.
	Credential string
	Principal  *Principal
	Args       Args
	// Decode, when set, fills Args from the transport's body once the caller is authorized
	// and its Idempotency-Key is not a replay (a REST JSON or multipart body: decoding it
	// before would answer 400 to a caller that should get 401).
	Decode Decoder
	// IdempotencyKey is the Idempotency-Key of a write ("" for none).
	IdempotencyKey string
	IP             string // the caller's address (unauthenticated and public per-IP limits)
	RequestID      string // for the log line of a failure
	Extra          any    // handed to the handler as Request.Extra
}

// Decoder fills a call's Args from what the transport received (Input.Decode).
type Decoder interface {
	Decode(*Args) error
}

// DecoderFunc is a function as a Decoder.
type DecoderFunc func(*Args) error

// Decode calls f.
func (f DecoderFunc) Decode(a *Args) error { return f(a) }

// JSON codecs. Requests decode with CopyString (strings must not alias a transport's pooled
// buffers: they are handed to actors and stored) and UseNumber (integers stay exact).
var (
	RequestJSON  = sonic.Config{UseNumber: true, CopyString: true, ValidateString: true}.Froze()
	ResponseJSON = sonic.Config{SortMapKeys: true, NoValidateJSONMarshaler: true}.Froze()
)

// Call runs one operation (DESIGN §4): authentication → rate limits → scope and plan →
// idempotency → validation → handler, and renders the JSON envelope into Result.Body. Every
// failure is an *Error. A Result with a Stream must be closed by the caller (Stream.Close).
func (c *Caller) Call(ctx context.Context, in *Input) (*Result, error) {
	op := in.Op
	now := time.Now().UTC()
	p := in.Principal
	if p == nil {
		var aerr *Error
		if p, aerr = c.authenticate(op.Auth, in.Credential, in.IP, now); aerr != nil {
			return nil, aerr
		}
		in.Principal = p
	}
	var rate *Decision
	if op.Auth == AuthKey {
		var aerr *Error
		if rate, aerr = c.rateLimit(op, p, now); aerr != nil {
			return nil, aerr
		}
		if aerr := Authorize(op, p); aerr != nil {
			aerr.Rate = rate
			return nil, aerr
		}
	}
	res, err := c.call(ctx, in, p, now)
	if err != nil {
		ae := ToError(err)
		if ae.Status >= 500 {
			c.log.Error("operation failed", "op", op.ID, "err", err, "request_id", in.RequestID)
		}
		if ae.Rate == nil {
			ae.Rate = rate
		}
		return nil, ae
	}
	res.Rate = rate
	return res, nil
}

// call is Call after authorization: idempotency, validation, the handler and rendering.
func (c *Caller) call(ctx context.Context, in *Input, p *Principal, now time.Time) (*Result, error) {
	op := in.Op
	var ref idemRef
	var fp []byte
	useIdem := op.Write && p != nil && in.IdempotencyKey != ""
	if useIdem {
		// Errors name the key as the caller sent it: a header in REST, an argument of a tool
		// (whose errors name arguments, docs/API.md: found by a review).
		field := "Idempotency-Key"
		if in.Args.Values != nil {
			field = IdempotencyKeyArg
		}
		if len(in.IdempotencyKey) > MaxIdempotencyKey {
			return nil, FieldError(field, fmt.Sprintf("must not be longer than %d characters", MaxIdempotencyKey))
		}
		ref = idemRef{t: p.Tenant, key: in.IdempotencyKey}
		if in.Args.Fingerprint != nil {
			var err error
			if fp, err = in.Args.Fingerprint(); err != nil {
				return nil, err
			}
		} else {
			fp = valuesFingerprint(op, in.Args.Values)
		}
		if !c.inflight.begin(ref) {
			return nil, &Error{Status: 409, Type: TypeIdempotencyConflict,
				Message: "a request with this Idempotency-Key is still in progress"}
		}
		defer c.inflight.end(ref)
		stored, err := c.store.Idem(ref.t, ref.key, now)
		switch {
		case err == nil && !bytes.Equal(stored.Fingerprint, fp):
			return nil, FieldError(field, "was already used with a different request")
		case err == nil:
			return &Result{Status: stored.Status, ContentType: stored.ContentType, Body: stored.Body, Replayed: true}, nil
		case !errors.Is(err, errs.ErrNotFound):
			return nil, fmt.Errorf("read idempotency entry: %w", err)
		}
	}
	if in.Decode != nil {
		if err := in.Decode.Decode(&in.Args); err != nil {
			return nil, err
		}
	}
	params := in.Args.Valid
	var bound any
	if params == nil && op.direct != nil && in.Args.Body == nil {
		bound = op.direct(&in.Args)
	}
	if params == nil && bound == nil {
		var err error
		if params, err = Validate(op.Params, &in.Args); err != nil {
			return nil, err
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := op.Handler(&Request{Ctx: ctx, Op: op, Auth: p, Params: params, In: bound, Now: now, IP: in.IP, Extra: in.Extra})
	if err != nil {
		return nil, err
	}
	if res.Status == 0 {
		res.Status = 200
	}
	if res.Stream != nil {
		return res, nil
	}
	res.ContentType = "application/json"
	if len(res.Raw) > 0 && !useIdem {
		// Framed by the transport as it writes (FrameData): no copy of the body here.
		if op.Bare {
			res.Body = res.Raw
		}
		return res, nil
	}
	body, err := encodeResult(op, res)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	res.Body = body
	if useIdem && res.Status >= 200 && res.Status < 300 {
		e := &storage.IdemEntry{Fingerprint: fp, Status: res.Status,
			ContentType: res.ContentType, Body: body, CreatedAt: now}
		if err := c.store.PutIdem(ref.t, ref.key, e); err != nil {
			c.log.Error("store idempotent response", "err", err)
		}
	}
	return res, nil
}

// FrameData appends raw, the data already encoded, framed as the {data} envelope.
func FrameData(dst, raw []byte) []byte {
	dst = append(dst, `{"data":`...)
	dst = append(dst, raw...)
	return append(dst, '}')
}

// encodeResult renders a result: the {data, meta} envelope, or Data itself for a Bare
// operation. Data that is already JSON without meta (a cached book) is framed, not encoded.
func encodeResult(op *Operation, res *Result) ([]byte, error) {
	raw := res.Raw
	if r, ok := res.Data.(json.RawMessage); ok && res.Meta == nil && raw == nil {
		raw = r
	}
	if op.Bare {
		if raw != nil {
			return raw, nil
		}
		return ResponseJSON.Marshal(res.Data)
	}
	if len(raw) > 0 {
		return FrameData(make([]byte, 0, len(raw)+10), raw), nil
	}
	return ResponseJSON.Marshal(envelope{Data: res.Data, Meta: res.Meta})
}

type envelope struct {
	Data any `json:"data"`
	Meta any `json:"meta,omitempty"`
}

// valuesFingerprint identifies a call made with typed values (MCP): the operation and the
// values as canonical JSON (encoding/json sorts map keys). A file is identified by its name
// and the SHA-256 of its content, as REST fingerprints a multipart body (httpapi hashForm):
// a FileHeader's exported fields are only name, headers and size, so two files of one size
// would otherwise be "the same request".
func valuesFingerprint(op *Operation, values map[string]any) []byte {
	h := sha256.New()
	h.Write([]byte(op.ID))
	h.Write([]byte{0})
	canon, cloned := values, false
	for k, v := range values {
		fs, ok := v.([]*multipart.FileHeader)
		if !ok {
			continue
		}
		if !cloned { // the values are the call's: files are replaced in a copy
			canon, cloned = maps.Clone(values), true
		}
		canon[k] = fileDigests(fs)
	}
	b, _ := json.Marshal(canon)
	h.Write(b)
	return h.Sum(nil)
}

// fileDigest is how a file enters a fingerprint.
type fileDigest struct {
	Filename string `json:"filename"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

// fileDigests identifies files by name, size and content hash. A file that cannot be read
// hashes as empty with its size: its call fails in the handler, and failures are not stored.
func fileDigests(fs []*multipart.FileHeader) []fileDigest {
	out := make([]fileDigest, len(fs))
	for i, fh := range fs {
		sum := sha256.New()
		if f, err := fh.Open(); err == nil {
			_, _ = io.Copy(sum, f)
			_ = f.Close()
		}
		out[i] = fileDigest{Filename: fh.Filename, Size: fh.Size, SHA256: hex.EncodeToString(sum.Sum(nil))}
	}
	return out
}

// Authenticate resolves an API key to its caller (for transports that check credentials
// before they know the operation, as MCP does for the whole endpoint).
func (c *Caller) Authenticate(credential, ip string) (*Principal, *Error) {
	return c.authenticateFor(AuthKey, credential, ip, time.Now(), c.mcpRes)
}

// AuthenticateAdmin checks the admin token for routes outside the operation table (GET
// /metrics, /debug/pprof/) exactly as for AuthAdmin operations: a failure is 401 and counts
// against the per-IP limit of unauthenticated calls (429 once over it).
func (c *Caller) AuthenticateAdmin(credential, ip string) *Error {
	_, aerr := c.authenticate(AuthAdmin, credential, ip, time.Now())
	return aerr
}

func (c *Caller) authenticate(auth Auth, tok, ip string, now time.Time) (*Principal, *Error) {
	return c.authenticateFor(auth, tok, ip, now, c.restRes)
}

// authenticateFor resolves a credential for a call to resource (an access token must have been
// issued for it).
func (c *Caller) authenticateFor(auth Auth, tok, ip string, now time.Time, resource string) (*Principal, *Error) {
	switch auth {
	case AuthNone:
		return nil, nil
	case AuthAdmin:
		sum := sha256.Sum256([]byte(tok))
		if c.adminHash != nil && tok != "" && hmac.Equal(sum[:], c.adminHash) {
			return nil, nil
		}
		return nil, c.unauthenticated(ip, now, "missing or wrong admin token")
	}
	if tok == "" {
		return nil, c.unauthenticated(ip, now, "missing API key: send Authorization: Bearer <key>")
	}
	p, epoch := c.auth.get(tok)
	if p != nil && (p.Token == nil || now.Before(p.Token.ExpiresAt)) {
		return p, c.checkAudience(p, ip, now, resource)
	}
	if c.tokens != nil && c.tokens.IsToken(tok) {
		p, aerr := c.authenticateToken(tok, ip, now, resource, epoch, c.sync == nil)
		if p == nil && aerr == nil && c.sync() == nil { // not known here yet: once more
			p, aerr = c.authenticateToken(tok, ip, now, resource, epoch, true)
		}
		return p, aerr
	}
	key, err := c.store.KeyByHash(storage.HashSecret(tok))
	if errors.Is(err, errs.ErrNotFound) && c.sync != nil && c.sync() == nil {
		key, err = c.store.KeyByHash(storage.HashSecret(tok))
	}
	if errors.Is(err, errs.ErrNotFound) {
		return nil, c.unauthenticated(ip, now, "the API key is wrong or has been revoked")
	}
	if err != nil {
		c.log.Error("read key", "err", err)
		return nil, ErrInternal()
	}
	ws, err := c.store.Workspace(key.Workspace)
	if err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return nil, c.unauthenticated(ip, now, "the API key's workspace no longer exists")
		}
		c.log.Error("read workspace", "err", err)
		return nil, ErrInternal()
	}
	p = &Principal{Key: key, Workspace: ws, Tenant: key.Tenant()}
	c.auth.put(tok, p, epoch)
	return p, nil
}

// authenticateToken resolves an OAuth access token: a principal like its key's, with the
// token's scopes. A token this node does not know is refused when last, else (nil, nil): the
// caller looks again once its copy of the global table caught up.
func (c *Caller) authenticateToken(tok, ip string, now time.Time, resource string, epoch uint64, last bool) (*Principal, *Error) {
	g, err := c.tokens.Verify(context.Background(), tok)
	if err != nil && !last {
		return nil, nil
	}
	if err != nil {
		e := c.unauthenticated(ip, now, "the access token is invalid, expired or revoked")
		e.OAuthError = "invalid_token"
		return nil, e
	}
	key, err := c.store.KeyByID(g.KeyID)
	if err != nil {
		e := c.unauthenticated(ip, now, "the API key that approved this access token was revoked")
		e.OAuthError = "invalid_token"
		return nil, e
	}
	ws, err := c.store.Workspace(key.Workspace)
	if err != nil {
		e := c.unauthenticated(ip, now, "the access token's workspace no longer exists")
		e.OAuthError = "invalid_token"
		return nil, e
	}
	k := *key
	k.Scopes = g.Scopes
	k.Hash = nil
	p := &Principal{Key: &k, Workspace: ws, Tenant: key.Tenant(),
		Token: &TokenInfo{ClientID: g.ClientID, Audience: g.Audience, ExpiresAt: g.ExpiresAt}}
	c.auth.put(tok, p, epoch)
	return p, c.checkAudience(p, ip, now, resource)
}

// checkAudience refuses an access token used for a resource it was not issued for (RFC 8707).
func (c *Caller) checkAudience(p *Principal, ip string, now time.Time, resource string) *Error {
	if p.Token == nil || resource == "" || Contains(p.Token.Audience, resource) {
		return nil
	}
	e := c.unauthenticated(ip, now, "the access token was not issued for "+resource)
	e.OAuthError = "invalid_token"
	return e
}

// InvalidateAuth forgets every cached credential: every change to keys or workspaces calls it
// before it answers, so a revoked key fails at once.
func (c *Caller) InvalidateAuth() { c.auth.invalidate() }

// Sweep drops rate-limit state that carries nothing (housekeeping, once a minute).
func (c *Caller) Sweep(now time.Time) {
	for _, l := range []*Limiter{c.limWS, c.limEP, c.limIP} {
		if l != nil {
			l.Sweep(now)
		}
	}
}

// unauthenticated answers a call without valid credentials: 429 once the caller's IP is over
// the unauthenticated limit, else 401.
func (c *Caller) unauthenticated(ip string, now time.Time, msg string) *Error {
	if c.limIP != nil {
		d := c.limIP.Allow(ip, now)
		if !d.Allowed {
			return TooMany(d, fmt.Sprintf("too many unauthenticated requests from this address (limit %d per minute)", d.Limit))
		}
	}
	return ErrUnauthenticated(msg)
}

// TooMany is the 429 of a denied rate-limit decision.
func TooMany(d Decision, msg string) *Error {
	return &Error{Status: 429, Type: TypeTooManyRequests, Message: msg, Rate: &d,
		RetryAfter: max(1, int(math.Ceil(d.RetryAfter.Seconds())))}
}

// rateLimit applies the per-operation and per-workspace limits and returns the state of the
// tighter one (what the RateLimit headers report).
func (c *Caller) rateLimit(op *Operation, p *Principal, now time.Time) (*Decision, *Error) {
	var shown *Decision
	if c.limEP == nil && c.limWS == nil {
		return nil, nil
	}
	ws := strconv.FormatInt(p.Workspace.ID, 10)
	if c.limEP != nil {
		d := c.limEP.Allow(ws+"|"+op.ID, now)
		if !d.Allowed {
			return nil, TooMany(d, fmt.Sprintf("rate limit of %d requests per minute for this operation exceeded", d.Limit))
		}
		shown = &d
	}
	if c.limWS != nil {
		d := c.limWS.Allow(ws, now)
		if !d.Allowed {
			return nil, TooMany(d, fmt.Sprintf("rate limit of %d requests per minute for this workspace exceeded", d.Limit))
		}
		if shown == nil || d.Remaining < shown.Remaining {
			shown = &d
		}
	}
	return shown, nil
}

// Authorize checks the key's scopes and the workspace's plan.
func Authorize(op *Operation, p *Principal) *Error {
	for _, scope := range []string{op.Scope, op.AlsoScope} {
		if scope != "" && !Contains(p.Key.Scopes, "*") && !Contains(p.Key.Scopes, scope) {
			who := "API key"
			if p.Token != nil {
				who = "access token"
			}
			return &Error{Status: 403, Type: TypeMissingScope, Required: scope,
				Scopes:  append([]string{}, p.Key.Scopes...),
				Message: fmt.Sprintf("this %s lacks the %s scope; it has: %s", who, scope, ScopeList(p.Key.Scopes))}
		}
	}
	if op.Plan != "" && !actors.PlanAtLeast(p.Workspace.Plan, op.Plan) {
		return &Error{Status: 403, Type: TypePlanRequired,
			Message: fmt.Sprintf("this operation needs the %s plan or higher; the workspace is on the %s plan", op.Plan, p.Workspace.Plan)}
	}
	return nil
}

// inflight tracks idempotency keys whose first request is still running (409 for a second).
type inflight struct {
	mu sync.Mutex
	m  map[idemRef]struct{}
}

type idemRef struct {
	t   storage.Tenant
	key string
}

func (f *inflight) begin(r idemRef) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[idemRef]struct{}{}
	}
	if _, busy := f.m[r]; busy {
		return false
	}
	f.m[r] = struct{}{}
	return true
}

func (f *inflight) end(r idemRef) {
	f.mu.Lock()
	delete(f.m, r)
	f.mu.Unlock()
}

// InFlight reports whether a call with this Idempotency-Key is running (any tenant).
func (c *Caller) InFlight(key string) bool {
	c.inflight.mu.Lock()
	defer c.inflight.mu.Unlock()
	for r := range c.inflight.m {
		if r.key == key {
			return true
		}
	}
	return false
}
