package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"flipbook/api"
	"flipbook/mcp"
)

// MCP resources (issue 28): the workspace's books as resources, a book and a page's text as
// resource templates, every read under the tools' scope and tenancy.

// headerTransport adds the API key and extra headers to every request of the MCP client.
type headerTransport struct {
	key     string
	headers []string // name, value, ...
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.key)
	for i := 0; i+1 < len(t.headers); i += 2 {
		r.Header.Set(t.headers[i], t.headers[i+1])
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSessionAt connects the official Go SDK client to the endpoint with query appended to its
// URL ("" or "?toolsets=...") and extra headers on every request.
func (h *harness) mcpSessionAt(tb testing.TB, key, query string, headers ...string) *sdk.ClientSession {
	tb.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: h.base + mcp.Path + query,
		HTTPClient: &http.Client{Timeout: 60 * time.Second, Transport: headerTransport{key: key, headers: headers}}}
	cs, err := client.Connect(context.Background(), tr, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// mcpTextFixture is a company workspace with a converted PDF of three pages with text and
// konva books, and a second workspace with a book of its own.
type mcpTextFixture struct {
	h         *harness
	key       string
	ws        int64
	pdf       string   // the PDF's book
	books     []string // every book of the workspace
	otherKey  string
	otherBook string
	noReadKey string // a key of the workspace without books:read
	pageTexts []string
}

func newMCPTextFixture(t *testing.T, mod func(*Config)) *mcpTextFixture {
	t.Helper()
	h := newHarness(t, mod)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	batch, pdf := h.uploadOK(t, key, "report.pdf", samplePDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	fx := &mcpTextFixture{h: h, key: key, ws: ws, pdf: pdf, books: []string{pdf},
		pageTexts: []string{"Page one: a document with text and an image.", "Page two has a link annotation below."}}
	for _, name := range []string{"Spring", "Summer", "Autumn", "Winter"} {
		fx.books = append(fx.books, h.konva(t, key, name, "draft"))
	}
	fx.otherKey = h.workspace(t, "company", "live")
	fx.otherBook = h.konva(t, fx.otherKey, "Not yours", "publish")
	fx.noReadKey = h.key(t, ws, "live", "analytics:read")
	return fx
}

// rpcErr is the JSON-RPC error of err.
func rpcErr(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	require.Error(t, err)
	var je *jsonrpc.Error
	require.True(t, errors.As(err, &je), "a JSON-RPC error: %v", err)
	return je
}

func TestMCPResourcesListAndTemplates(t *testing.T) {
	t.Parallel()
	fx := newMCPTextFixture(t, func(c *Config) { c.MCPPageSize = 2 })
	cs := fx.h.mcpSession(t, fx.key, "")
	caps := cs.InitializeResult().Capabilities
	require.NotNil(t, caps.Resources, "resources are declared")
	require.False(t, caps.Resources.Subscribe)
	require.False(t, caps.Resources.ListChanged)

	// resources/list pages through the workspace's books, newest first, one per book.
	var uris []string
	pages, cursor := 0, ""
	for {
		res, err := cs.ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: cursor})
		require.NoError(t, err)
		pages++
		require.LessOrEqual(t, len(res.Resources), 2)
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
			require.Equal(t, "application/json", r.MIMEType)
			require.NotEmpty(t, r.Name)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	require.Equal(t, 3, pages, "5 books, 2 a page")
	var want []string
	for _, rid := range fx.books {
		want = append(want, "flipbook://books/"+rid)
	}
	sort.Strings(want)
	sort.Strings(uris)
	require.Equal(t, want, uris, "every book of the workspace once, none of another")

	// A cursor that books.list did not issue is an invalid argument.
	_, err := cs.ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: "bogus"})
	require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr(t, err).Code)

	// resources/list of the other workspace: its own book only.
	other, err := fx.h.mcpSession(t, fx.otherKey, "2025-11-25").ListResources(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, other.Resources, 1)
	require.Equal(t, "flipbook://books/"+fx.otherBook, other.Resources[0].URI)

	tmpl, err := cs.ListResourceTemplates(context.Background(), nil)
	require.NoError(t, err)
	var got []string
	for _, rt := range tmpl.ResourceTemplates {
		got = append(got, rt.URITemplate)
		require.NotEmpty(t, rt.Description)
	}
	sort.Strings(got)
	require.Equal(t, []string{mcp.BookTemplate, mcp.PageTemplate}, got)
}

func TestMCPResourcesRead(t *testing.T) {
	t.Parallel()
	fx := newMCPTextFixture(t, nil)
	for _, version := range []string{"", "2025-11-25"} {
		cs := fx.h.mcpSession(t, fx.key, version)
		ctx := context.Background()

		// The book: the JSON books_get returns.
		uri := "flipbook://books/" + fx.pdf
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		require.NoError(t, err)
		require.Len(t, res.Contents, 1)
		require.Equal(t, uri, res.Contents[0].URI)
		require.Equal(t, "application/json", res.Contents[0].MIMEType)
		_, tool := callTool(t, cs, "books_get", map[string]any{"book_id": fx.pdf})
		require.JSONEq(t, mustJSON(t, tool), res.Contents[0].Text)
		var book map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &book))
		require.Equal(t, fx.pdf, book["data"].(map[string]any)["random_id"])
		require.EqualValues(t, 3, book["data"].(map[string]any)["page_count"])

		// A page: its text and words (the REST body of GET /books/{book}/pages/{page}).
		for i, want := range fx.pageTexts {
			puri := uri + "/pages/" + itoa(int64(i+1))
			res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: puri})
			require.NoError(t, err)
			require.Equal(t, puri, res.Contents[0].URI)
			rest := fx.h.do(t, "GET", "/api/v1/books/"+fx.pdf+"/pages/"+itoa(int64(i+1)), fx.key, nil)
			require.Equal(t, 200, rest.Status)
			require.JSONEq(t, string(rest.Body), res.Contents[0].Text)
			var page struct {
				Data struct {
					Number int
					Text   string
					Words  []map[string]any
				}
			}
			require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &page))
			require.Equal(t, i+1, page.Data.Number)
			require.Contains(t, page.Data.Text, want)
			require.NotEmpty(t, page.Data.Words)
		}

		// Not found: a page past the end or that is no page number (as REST answers 404 for a
		// path value that is not an id), a missing book, another workspace's book, a URI
		// outside the templates: -32002 "Resource not found" with the URI.
		for _, missing := range []string{uri + "/pages/4", uri + "/pages/first", uri + "/pages/0", "flipbook://books/nosuchbook", "flipbook://books/" + fx.otherBook,
			"flipbook://books/" + fx.otherBook + "/pages/1", "flipbook://elsewhere/1", "https://example.com/"} {
			_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: missing})
			je := rpcErr(t, err)
			require.Equal(t, int64(-32002), je.Code, missing)
			require.Equal(t, "Resource not found", je.Message, missing)
			require.JSONEq(t, mustJSON(t, map[string]string{"uri": missing}), string(je.Data), missing)
		}
	}
}

// TestMCPResourcesNeedBooksRead: a key without books:read is refused a read and a list with
// the error a tool call gets (MissingScope, 403), as a JSON-RPC error.
func TestMCPResourcesNeedBooksRead(t *testing.T) {
	t.Parallel()
	fx := newMCPTextFixture(t, nil)
	cs := fx.h.mcpSession(t, fx.noReadKey, "")
	ctx := context.Background()
	res, tool := callTool(t, cs, "books_get", map[string]any{"book_id": fx.pdf})
	require.True(t, res.IsError)
	toolErr := tool["error"].(map[string]any)
	require.Equal(t, api.TypeMissingScope, toolErr["type"])

	for _, uri := range []string{"flipbook://books/" + fx.pdf, "flipbook://books/" + fx.pdf + "/pages/1"} {
		_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		je := rpcErr(t, err)
		require.Equal(t, int64(-32001), je.Code)
		require.Equal(t, toolErr["message"], je.Message)
		var data map[string]any
		require.NoError(t, json.Unmarshal(je.Data, &data))
		require.Equal(t, tool, data, "the envelope a tool call returns")
	}
	_, err := cs.ListResources(ctx, nil)
	je := rpcErr(t, err)
	require.Equal(t, int64(-32001), je.Code)
	require.True(t, strings.Contains(string(je.Data), `"required_scope":"books:read"`), "%s", je.Data)
}
