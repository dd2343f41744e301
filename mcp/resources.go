package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flipbook/api"
)

// Resources (issue 28): a book and a page's text as resource templates, the workspace's books
// as resources/list. Every read is a call of the REST operation (books.get, books.page,
// books.list) through api.Caller.Call with the request's caller, so the scope (books:read),
// plan, rate limits and tenancy are the tools' own; a refusal is a JSON-RPC error carrying
// the error envelope a tool call would have returned. docs/API.md.

// The resource templates and the scheme of their URIs.
const (
	BookTemplate = "flipbook://books/{book_id}"
	PageTemplate = "flipbook://books/{book_id}/pages/{page}"
	bookURI      = "flipbook://books/"
)

// JSON-RPC error codes of resources/read, prompts/get and completion/complete.
const (
	// codeResourceNotFound is a resource that does not exist or is another workspace's
	// (the MCP specification's -32002 "Resource not found").
	codeResourceNotFound = -32002
	// codeRefused is a call the API refused for another reason than its arguments (a missing
	// scope, the plan, a rate limit): the message is the API's, the data its error envelope.
	codeRefused = -32001
)

// maxResourcePage is the most books of one resources/list page (books.list's largest limit).
const maxResourcePage = 200

// addResources declares the resource templates on srv and answers resources/list (the
// workspace's books, one resource each) in place of the SDK's list of static resources.
// The middleware sees every request the SDK server receives (the type tells the method).
func (s *Server) addResources(srv *sdk.Server) {
	if s.byID["books.get"] != nil {
		srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "book", Title: "Flipbook", URITemplate: BookTemplate,
			MIMEType: "application/json",
			Description: "A flipbook of the workspace: the JSON books_get returns ({\"data\": book}). " +
				"book_id is the book's random_id. Needs scope books:read."}, s.readResource)
	}
	if s.byID["books.page"] != nil {
		srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "book-page", Title: "Flipbook page text", URITemplate: PageTemplate,
			MIMEType: "application/json",
			Description: "One page's text (page numbers from 1): the JSON of GET /books/{book}/pages/{page}, " +
				"{\"data\": {number, source, text, words, problem}}; data.text is the page's text, words its words " +
				"with their boxes in fractions of the page. Needs scope books:read."}, s.readResource)
	}
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch r := req.(type) {
			case *sdk.ListResourcesRequest:
				return s.listResources(ctx, r)
			case *sdk.ReadResourceRequest:
				// Any URI outside the templates is not found with the same error (the SDK's
				// own answers -32602).
				if _, _, ok := parseBookURI(r.Params.URI); !ok {
					return nil, notFound(r.Params.URI)
				}
			}
			return next(ctx, method, req)
		}
	})
}

// readResource reads a book or a page.
func (s *Server) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	p, err := principalFrom(req.Extra)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	book, page, ok := parseBookURI(uri)
	if !ok {
		return nil, notFound(uri)
	}
	opID, values := "books.get", map[string]any{"book": book}
	if page != "" {
		opID, values = "books.page", map[string]any{"book": book, "page": page}
	}
	body, aerr := s.callOp(ctx, p, opID, values, requestID(req.Extra))
	if aerr != nil {
		return nil, rpcErrorOf(aerr, uri)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
}

// parseBookURI splits flipbook://books/{book_id}[/pages/{page}] (the values unescaped).
func parseBookURI(uri string) (book, page string, ok bool) {
	rest, found := strings.CutPrefix(uri, bookURI)
	if !found || rest == "" || strings.ContainsAny(rest, "?#") {
		return "", "", false
	}
	book, tail, hasTail := strings.Cut(rest, "/")
	if hasTail {
		p, found := strings.CutPrefix(tail, "pages/")
		if !found || p == "" || strings.Contains(p, "/") {
			return "", "", false
		}
		page = p
	}
	var err error
	if book, err = url.PathUnescape(book); err != nil || book == "" {
		return "", "", false
	}
	if page, err = url.PathUnescape(page); err != nil {
		return "", "", false
	}
	return book, page, true
}

// listResources is resources/list: one page of the workspace's books (books.list, newest
// first), the MCP cursor being books.list's next_cursor.
func (s *Server) listResources(ctx context.Context, req *sdk.ListResourcesRequest) (*sdk.ListResourcesResult, error) {
	p, err := principalFrom(req.Extra)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	values := map[string]any{"limit": json.Number(strconv.Itoa(min(s.opts.PageSize, maxResourcePage)))}
	if req.Params != nil && req.Params.Cursor != "" {
		values["cursor"] = req.Params.Cursor
	}
	body, aerr := s.callOp(ctx, p, "books.list", values, requestID(req.Extra))
	if aerr != nil {
		return nil, rpcErrorOf(aerr, "")
	}
	var page struct {
		Data []struct {
			RandomID    string  `json:"random_id"`
			Name        string  `json:"name"`
			Description *string `json:"description"`
			Status      *string `json:"status"`
			PageCount   int     `json:"page_count"`
		} `json:"data"`
		Meta struct {
			NextCursor *string `json:"next_cursor"`
		} `json:"meta"`
	}
	if err := fastJSON.Unmarshal(body, &page); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "books.list: " + err.Error()}
	}
	res := &sdk.ListResourcesResult{Resources: make([]*sdk.Resource, 0, len(page.Data))}
	res.CacheScope = "private" // the caller's workspace
	for _, b := range page.Data {
		desc := fmt.Sprintf("Flipbook %s, %d pages", b.RandomID, b.PageCount)
		if b.Status != nil {
			desc += ", " + *b.Status
		}
		if b.Description != nil && *b.Description != "" {
			desc += ": " + *b.Description
		}
		name := b.Name
		if name == "" {
			name = b.RandomID
		}
		res.Resources = append(res.Resources, &sdk.Resource{URI: bookURI + url.PathEscape(b.RandomID), Name: name, Title: b.Name,
			MIMEType: "application/json", Description: desc})
	}
	if page.Meta.NextCursor != nil {
		res.NextCursor = *page.Meta.NextCursor
	}
	return res, nil
}

// callOp calls the table's operation opID for p with values (by parameter name, as tool
// arguments are bound) and returns the REST body.
func (s *Server) callOp(ctx context.Context, p *api.Principal, opID string, values map[string]any, reqID string) ([]byte, *api.Error) {
	op := s.byID[opID]
	if op == nil {
		return nil, &api.Error{Status: 404, Type: api.TypeNotFound, Message: "the operation " + opID + " does not exist"}
	}
	res, err := s.caller.Call(ctx, &api.Input{Op: op, Principal: p, Args: api.Args{Values: values}, RequestID: reqID})
	if err != nil {
		return nil, api.ToError(err)
	}
	if res.Body == nil && len(res.Raw) > 0 {
		return api.FrameData(make([]byte, 0, len(res.Raw)+10), res.Raw), nil
	}
	return res.Body, nil
}

// rpcErrorOf is an API error as the JSON-RPC error of a resource read (uri set), a prompt or
// a completion: not found (404: missing, or another workspace's) is -32002 "Resource not
// found"; invalid arguments -32602; a server failure -32603; any other refusal (a missing
// scope, the plan, a rate limit) codeRefused. Except for not found, the data is the error
// envelope a tool call would have returned (with its status).
func rpcErrorOf(e *api.Error, uri string) error {
	switch {
	case e.Status == 404 && uri != "":
		return notFound(uri)
	case e.Status >= 500:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: e.Message}
	case e.Status == 400 || e.Status == 422:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + e.Message, Data: e.Envelope("", true)}
	case e.Status == 404:
		return &jsonrpc.Error{Code: codeResourceNotFound, Message: e.Message, Data: e.Envelope("", true)}
	}
	return &jsonrpc.Error{Code: codeRefused, Message: e.Message, Data: e.Envelope("", true)}
}

// notFound is the MCP specification's "Resource not found" error for uri.
func notFound(uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: codeResourceNotFound, Message: "Resource not found", Data: data}
}

// requestID is the request's X-Request-Id (Serve sets it to the one the response carries).
func requestID(extra *sdk.RequestExtra) string {
	if extra == nil || extra.Header == nil {
		return ""
	}
	return extra.Header.Get("X-Request-Id")
}
