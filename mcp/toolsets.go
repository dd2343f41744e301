package mcp

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"flipbook/api"
)

// Toolsets (issue 28): hosts cap how many tools they load, so a client may ask for groups of
// tools (?toolsets=books,analytics on the endpoint URL or an X-MCP-Toolsets header, the two
// combined) and for read-only tools only (X-MCP-Readonly: true, or ?readonly=true). Without
// either, tools/list is the spec's 55 tools, as before. Each distinct choice is served by an
// SDK server of its own holding only the chosen tools (made on first use and kept), so
// tools/list and tools/call of the SDK see exactly that set, and the fast path looks tools up
// in the same set's map. docs/API.md, "MCP resources, toolsets and prompts".

// Toolset names besides the domain groups.
const (
	ToolsetDefault = "default" // the spec's 55 tools (every group but extras)
	ToolsetExtras  = "extras"  // tools of extension operations (extraTools)
	ToolsetAll     = "all"     // default + extras
)

// Headers and query parameters choosing the session's tools.
const (
	HeaderToolsets = "X-MCP-Toolsets"
	HeaderReadonly = "X-MCP-Readonly"
	QueryToolsets  = "toolsets"
	QueryReadonly  = "readonly"
)

// domainGroups maps an operation's domain (its ID up to the first dot) to its toolset. A
// domain not listed is grouped by its tool name's first word.
var domainGroups = map[string]string{
	"books": "books", "batches": "books",
	"subscribers": "access", "embed_domains": "access", "tracked_links": "access",
	"brand":     "brand",
	"analytics": "analytics",
	"exports":   "exports",
	"catalogs":  "catalogs", "templates": "catalogs",
	"webhooks": "webhooks",
	"health":   "account", "me": "account",
}

// extraTools name the tools of extension operations (which have no tool in the table), by
// operation ID. An entry whose operation is not in the table is skipped.
var extraTools = []struct{ tool, op string }{
	{"books_get_page_text", "books.page"},
	{"books_get_outline", "books.outline"},
	{"analytics_get_page_heatmap", "analytics.page_heatmap"},
	{"books_list_pages", "books.pages"},
	{"books_search", "books.search"},
	{"workspace_search", "search"},
}

// groupOf is the toolset of a tool of the spec (not an extra).
func groupOf(op *api.Operation) string {
	domain, _, _ := strings.Cut(op.ID, ".")
	if g, ok := domainGroups[domain]; ok {
		return g
	}
	g, _, _ := strings.Cut(op.Tool, "_")
	return g
}

// toolset is one choice of tools and the SDK server that serves it.
type toolset struct {
	key    string
	tools  map[string]*api.Operation
	server *sdk.Server
}

// toolsetOf is the request's choice of tools: nil for the default (no toolsets asked for and
// not read-only), or a 400 for an unknown toolset or a readonly value that is not a boolean.
// The default costs a few header and query lookups and allocates nothing (the fast path).
func (s *Server) toolsetOf(ctx *fasthttp.RequestCtx) (*toolset, *api.Error) {
	hSets := ctx.Request.Header.Peek(HeaderToolsets)
	hRO := ctx.Request.Header.Peek(HeaderReadonly)
	q := ctx.QueryArgs()
	qSets, qRO := q.Peek(QueryToolsets), q.Peek(QueryReadonly)
	if len(bytes.TrimSpace(hSets)) == 0 && len(bytes.TrimSpace(qSets)) == 0 && len(hRO) == 0 && len(qRO) == 0 {
		return nil, nil
	}
	readonly := false
	for _, v := range [][]byte{hRO, qRO} {
		switch strings.ToLower(strings.TrimSpace(string(v))) {
		case "":
		case "true", "1", "yes":
			readonly = true
		case "false", "0", "no":
		default:
			return nil, &api.Error{Status: 400, Type: api.TypeBadRequest,
				Message: HeaderReadonly + " (or ?readonly=) must be true or false, not " + string(v),
				Details: map[string][]string{"readonly": {"must be true or false"}}}
		}
	}
	var names []string
	for _, v := range [][]byte{hSets, qSets} {
		for name := range strings.SplitSeq(string(v), ",") {
			if name = strings.ToLower(strings.TrimSpace(name)); name != "" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	var unknown []string
	for _, n := range names {
		if !s.groups[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		known := s.groupNames()
		return nil, &api.Error{Status: 400, Type: api.TypeBadRequest,
			Message: "unknown toolset " + strings.Join(unknown, ", ") + "; the toolsets are: " + strings.Join(known, ", "),
			Details: map[string][]string{"toolsets": {"unknown: " + strings.Join(unknown, ", "), "known: " + strings.Join(known, ", ")}}}
	}
	if len(names) == 0 {
		names = []string{ToolsetDefault}
	}
	sort.Strings(names)
	key := strings.Join(names, ",")
	if readonly {
		key += "|readonly"
	}
	if key == ToolsetDefault {
		return nil, nil
	}
	if ts, ok := s.toolsets.Load(key); ok {
		return ts.(*toolset), nil
	}
	ts := s.buildToolset(key, names, readonly)
	if s.toolsetCount.Load() >= maxCachedToolsets {
		return ts, nil // a client trying every combination: served, not kept
	}
	actual, loaded := s.toolsets.LoadOrStore(key, ts)
	if !loaded {
		s.toolsetCount.Add(1)
	}
	return actual.(*toolset), nil
}

// maxCachedToolsets bounds the SDK servers kept for toolset choices (2^11 × 2 are possible).
const maxCachedToolsets = 256

// buildToolset makes the toolset of the named groups, read-only tools only when readonly.
func (s *Server) buildToolset(key string, names []string, readonly bool) *toolset {
	ts := &toolset{key: key, tools: map[string]*api.Operation{}}
	var chosen []*api.Operation
	for _, op := range s.allTools {
		g := s.toolGroup[op.Tool]
		in := slices.Contains(names, ToolsetAll) || slices.Contains(names, g) ||
			(g != ToolsetExtras && slices.Contains(names, ToolsetDefault))
		if in && (!readonly || op.ReadOnly) {
			ts.tools[op.Tool] = op
			chosen = append(chosen, op)
		}
	}
	ts.server = s.newSDKServer(chosen)
	return ts
}

// groupNames are the toolsets a client may name, sorted.
func (s *Server) groupNames() []string {
	out := make([]string, 0, len(s.groups))
	for g := range s.groups {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}
