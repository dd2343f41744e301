// Package mcp is the service's MCP endpoint (spec §1, §4.11): the official MCP Go SDK's
// Streamable HTTP server, mounted on the fasthttp front end, with one tool per operation of
// the table (package api) that names a tool. A tool call is api.Caller.Call, as a REST request
// is, so scopes, plans, limits, idempotency, validation and errors are the same.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"flipbook/api"
)

// Path is where the endpoint is served (spec §1).
const Path = "/mcp/public-api"

// Defaults of Options.
const (
	DefaultPageSize  = 100     // tools per tools/list page
	DefaultInlineCSV = 1 << 20 // the largest CSV an export tool returns inline (bytes)
)

// Options configure the endpoint.
type Options struct {
	Name, Version string
	// ExportDir is the root of the workspaces' export areas (output_path of the export tools).
	ExportDir string
	// PutExport, when set, keeps stored exports in an object store instead of under ExportDir:
	// it is given the object key ("<area>/<path>") and a finished temporary file to move there.
	PutExport func(key, file string) error
	// ExportUsage, with PutExport, tells how many objects and bytes an export area holds and
	// whether rel is one of them (the quota, export.go); without it the files under ExportDir
	// are counted.
	ExportUsage func(area, rel string) (files int, bytes int64, exists bool, err error)
	// PageSize is the number of tools per tools/list page (DefaultPageSize when 0).
	PageSize int
	// InlineCSV is the largest CSV returned inline (DefaultInlineCSV when 0).
	InlineCSV int
	// MaxBody caps a request body (bytes).
	MaxBody int64
	// ReadBody, when set, reads the request body once the caller is authenticated: the front
	// end streams bodies, and nothing of one is read before this (a 401 leaves it unread).
	ReadBody func(*fasthttp.RequestCtx) *api.Error
	// AllowedOrigins are the browser origins (scheme://host[:port]) allowed besides the
	// service's own host; a request with any other Origin header is refused with 403.
	AllowedOrigins []string
	// SDKOnly turns the tools/call fast path off (fast.go): every message goes through the
	// SDK. For comparing the two in tests and for debugging a client.
	SDKOnly bool
	// PublicHost is the service's own host (host[:port]) as browsers see it, accepted as Origin.
	PublicHost string
	// ResourceMetadata is the endpoint's OAuth protected-resource metadata URL (RFC 9728),
	// named in the WWW-Authenticate header of every 401.
	ResourceMetadata string
	Logger           *slog.Logger
	// Observe, when set, is told what the transport's request log and metrics need: the
	// caller once authenticated (tool nil), then the tool once a tools/call names a known one
	// (the fast path, or a tools/call going to the SDK).
	Observe func(ctx *fasthttp.RequestCtx, p *api.Principal, tool *api.Operation)
}

// Server is the MCP endpoint.
type Server struct {
	caller *api.Caller
	opts   Options
	log    *slog.Logger
	server *sdk.Server
	http   fasthttp.RequestHandler
	// tools are the default toolset's: the tools of the spec (toolsets.go).
	tools   map[string]*api.Operation
	origins map[string]bool
	// allTools are every tool, the spec's then the extras (operations of extraTools, given
	// their tool names); toolGroup names each one's toolset; groups are the toolset names a
	// client may ask for; toolsets hold the SDK servers of the choices made so far.
	allTools  []*api.Operation
	toolGroup map[string]string
	groups    map[string]bool
	toolsets  sync.Map // key → *toolset
	// toolsetCount is how many toolsets holds.
	toolsetCount atomic.Int32
	// sdkTools are the tools' descriptions and handlers, made once and shared by the servers.
	sdkTools map[string]sdkTool
	// byID are the table's operations by ID (resources, prompts and completion call them).
	byID map[string]*api.Operation
	// serverMeta is the _meta member of 2026-07-28 results (serveFast).
	serverMeta []byte
	impl       *sdk.Implementation
}

// sdkTool is a tool's description and handler for the SDK's servers.
type sdkTool struct {
	tool    *sdk.Tool
	handler sdk.ToolHandler
}

// toolsetKey is the request's user value (and context value) holding its toolset, when it
// is not the default.
type toolsetKey struct{}

// newSDKServer is an SDK server with the given tools, the resources, prompts and completion.
func (s *Server) newSDKServer(tools []*api.Operation) *sdk.Server {
	srv := sdk.NewServer(s.impl,
		&sdk.ServerOptions{
			PageSize: s.opts.PageSize,
			Instructions: "Tools of a flipbook publishing service: upload documents that become page-turning " +
				"flipbooks, manage their settings, access lists, embed allowlists, tracked links and branding, " +
				"and read reader analytics and CSV exports. Every tool acts on the workspace of the API key; " +
				"each needs the scope of its REST operation. Path values are book_id and batch_id. " +
				"Resources flipbook://books/{book_id} and flipbook://books/{book_id}/pages/{page} hold a book and a page's text; " +
				"prompts chain the tools for common jobs. Ask for fewer tools with ?toolsets= (or X-MCP-Toolsets) and " +
				"X-MCP-Readonly: true; the toolset extras adds page text and search tools.",
			Logger:            discard(),
			CompletionHandler: s.complete,
			// The SDK infers tools: {listChanged: true} from the tools added (and the same of
			// prompts and resources). The lists never change while the process runs, and a
			// stateless server answering in JSON has no stream to carry list_changed
			// notifications: advertise them without it (and resources without subscribe).
			// logging stays (the SDK's default): logging/setLevel is answered, and no log
			// notification is ever sent (docs/CLIENTS.md).
			//lint:ignore SA1019 logging is deprecated by SEP-2577 (2026-07-28), not removed; hosts of older protocol versions still call logging/setLevel
			Capabilities: &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}, Tools: &sdk.ToolCapabilities{},
				Resources: &sdk.ResourceCapabilities{}, Prompts: &sdk.PromptCapabilities{}, Completions: &sdk.CompletionCapabilities{}},
		})
	for _, op := range tools {
		t := s.sdkTools[op.Tool]
		srv.AddTool(t.tool, t.handler)
	}
	s.addResources(srv)
	s.addPrompts(srv, tools)
	return srv
}

// New builds the endpoint over the operations of ops that name a tool.
func New(caller *api.Caller, ops []*api.Operation, o Options) *Server {
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.InlineCSV == 0 {
		o.InlineCSV = DefaultInlineCSV
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{caller: caller, opts: o, log: o.Logger, tools: map[string]*api.Operation{}, origins: map[string]bool{},
		toolGroup: map[string]string{}, groups: map[string]bool{ToolsetDefault: true, ToolsetAll: true, ToolsetExtras: true},
		sdkTools: map[string]sdkTool{}, byID: map[string]*api.Operation{}}
	for _, origin := range o.AllowedOrigins {
		s.origins[strings.ToLower(strings.TrimRight(origin, "/"))] = true
	}
	impl := &sdk.Implementation{Name: o.Name, Title: "Flipbook service", Version: o.Version}
	info, _ := json.Marshal(impl)
	s.serverMeta = append(append([]byte(`"_meta":{"io.modelcontextprotocol/serverInfo":`), info...), '}')
	s.impl = impl
	var spec []*api.Operation
	for _, op := range ops {
		s.byID[op.ID] = op
		if op.Tool == "" || op.Internal {
			continue
		}
		s.tools[op.Tool] = op
		s.toolGroup[op.Tool] = groupOf(op)
		s.groups[groupOf(op)] = true
		spec = append(spec, op)
	}
	s.allTools = spec
	for _, x := range extraTools {
		op := s.byID[x.op]
		if op == nil || op.Internal || s.tools[x.tool] != nil {
			continue // not in this table (yet)
		}
		named := *op // the table's entry has no tool name: this copy carries it
		named.Tool = x.tool
		s.toolGroup[x.tool] = ToolsetExtras
		s.allTools = append(s.allTools, &named)
	}
	for _, op := range s.allTools {
		s.sdkTools[op.Tool] = sdkTool{toolOf(op), s.handler(op)}
	}
	s.server = s.newSDKServer(spec)
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		if ts, ok := r.Context().Value(toolsetKey{}).(*toolset); ok {
			return ts.server
		}
		return s.server
	},
		&sdk.StreamableHTTPOptions{
			// Stateless serves both revisions: 2025-11-25 and older with initialize (no
			// Mcp-Session-Id is issued: every request carries what it needs), and 2026-07-28
			// with server/discover and the per-request protocol version. docs/DECISIONS.md.
			Stateless:           true,
			JSONResponse:        true,
			MaxRequestBodyBytes: o.MaxBody,
			Logger:              discard(),
			// The Origin check is done here (checkOrigin), for every host, not only loopback.
			DisableLocalhostProtection: true,
		})
	verified := sdkauth.RequireBearerToken(s.verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	s.http = fasthttpadaptor.NewFastHTTPHandler(verified)
	return s
}

// principalKey is where verify leaves the caller in the SDK's token info.
const principalKey = "principal"

// authenticatedKey is the request's user value (and so its context value, through
// fasthttpadaptor) holding the caller Serve authenticated: the SDK's verify takes it instead
// of authenticating the same token a second time.
type authenticatedKey struct{}

// verify resolves the bearer token for the SDK (its TokenInfo reaches every tool call): the
// caller Serve authenticated for this request, or (a handler called without Serve) the
// token's own.
func (s *Server) verify(ctx context.Context, token string, r *http.Request) (*sdkauth.TokenInfo, error) {
	p, ok := ctx.Value(authenticatedKey{}).(*api.Principal)
	if !ok {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		var aerr *api.Error
		if p, aerr = s.caller.Authenticate(token, host); aerr != nil {
			if aerr.Status == 401 || aerr.Status == 429 {
				return nil, sdkauth.ErrInvalidToken
			}
			return nil, aerr
		}
	}
	return &sdkauth.TokenInfo{Scopes: p.Key.Scopes, UserID: fmt.Sprintf("%d/%s", p.Tenant.Workspace, p.Tenant.Mode),
		Extra: map[string]any{principalKey: p}}, nil
}

// Serve answers one request to the endpoint. Credentials and Origin are checked here, in the
// service's own error envelope, before the SDK sees the request.
func (s *Server) Serve(ctx *fasthttp.RequestCtx, reqID string, writeError func(*fasthttp.RequestCtx, *api.Error)) {
	if !s.checkOrigin(ctx) {
		rpcError(ctx, 403, nil, codeInvalidRequest, "Forbidden: Origin "+string(ctx.Request.Header.Peek("Origin"))+" is not allowed")
		return
	}
	tok := bearerToken(ctx)
	if tok == "" {
		if k := ctx.QueryArgs().Peek("api_key"); len(k) > 0 {
			tok = string(k)
			ctx.Request.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	p, aerr := s.caller.Authenticate(tok, ctx.RemoteIP().String())
	if aerr != nil {
		if aerr.Status == 401 {
			h := `Bearer realm="flipbook"`
			if aerr.OAuthError != "" {
				h += `, error="` + aerr.OAuthError + `"`
			}
			if s.opts.ResourceMetadata != "" {
				h += `, resource_metadata="` + s.opts.ResourceMetadata + `"`
			}
			ctx.Response.Header.Set("WWW-Authenticate", h)
		}
		writeError(ctx, aerr)
		return
	}
	ctx.SetUserValue(authenticatedKey{}, p)
	if s.opts.Observe != nil {
		s.opts.Observe(ctx, p, nil)
	}
	if string(ctx.Method()) == "GET" || string(ctx.Method()) == "DELETE" {
		// No server-initiated stream and no sessions to end: say so the JSON-RPC way too.
		ctx.Response.Header.Set("Allow", "POST")
		rpcError(ctx, 405, nil, codeInvalidRequest, "Method Not Allowed: use POST (this endpoint has no SSE stream and no sessions)")
		return
	}
	ts, terr := s.toolsetOf(ctx)
	if terr != nil {
		writeError(ctx, terr)
		return
	}
	tools := s.tools
	if ts != nil {
		tools = ts.tools
		ctx.SetUserValue(toolsetKey{}, ts)
	}
	if s.opts.ReadBody != nil {
		if err := s.opts.ReadBody(ctx); err != nil {
			writeError(ctx, err)
			return
		}
	}
	if !s.opts.SDKOnly && s.serveFast(ctx, p, reqID, tools) {
		return
	}
	answered, fixes := checkMessage(ctx)
	if answered {
		return
	}
	if s.opts.Observe != nil {
		if op := calledTool(ctx.PostBody(), tools); op != nil {
			s.opts.Observe(ctx, p, op)
		}
	}
	if reqID != "" {
		// The SDK's tool handler reads the request id from the request's headers: give it the
		// one the response carries (and the log names), not only a client's.
		ctx.Request.Header.Set("X-Request-Id", reqID)
	}
	s.http(ctx)
	restoreIDs(ctx, fixes)
}

// calledTool is the tool of tools a tools/call body names (nil for any other message or a
// tool not among them), for Observe of a message the SDK answers.
func calledTool(body []byte, tools map[string]*api.Operation) *api.Operation {
	if !bytes.Contains(body, []byte(`"tools/call"`)) {
		return nil
	}
	var m struct {
		Method string `json:"method"`
		Params *struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if fastJSON.Unmarshal(body, &m) != nil || m.Method != "tools/call" || m.Params == nil {
		return nil
	}
	return tools[m.Params.Name]
}

// checkOrigin refuses browser requests from other sites (DNS rebinding, spec of Streamable
// HTTP: "Servers MUST validate the Origin header"). Requests without Origin (non-browser
// clients) pass. A browser origin must be the service's public host or one of
// --mcp-allowed-origins: not merely the request's own Host header, which is exactly what a
// DNS-rebinding page sends (its name, resolved to this server). Only when no public host is
// known is the Host header the reference.
func (s *Server) checkOrigin(ctx *fasthttp.RequestCtx) bool {
	o := ctx.Request.Header.Peek("Origin")
	if len(o) == 0 {
		return true
	}
	origin := strings.ToLower(string(o))
	if s.origins[origin] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if s.opts.PublicHost != "" {
		return u.Host == strings.ToLower(s.opts.PublicHost)
	}
	return u.Host == strings.ToLower(string(ctx.Host()))
}

func bearerToken(ctx *fasthttp.RequestCtx) string {
	return api.Bearer(ctx.Request.Header.Peek("Authorization"))
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// principalOf is the caller verify resolved for this request.
func principalOf(req *sdk.CallToolRequest) (*api.Principal, error) {
	return principalFrom(req.Extra)
}

// principalFrom is the caller verify resolved, from a request's extra (its token info).
func principalFrom(extra *sdk.RequestExtra) (*api.Principal, error) {
	if extra == nil || extra.TokenInfo == nil {
		return nil, errors.New("no credentials reached the call")
	}
	p, ok := extra.TokenInfo.Extra[principalKey].(*api.Principal)
	if !ok {
		return nil, errors.New("no credentials reached the call")
	}
	return p, nil
}
