package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"flipbook/api"
)

// Prompts (issue 28): common jobs as messages that name the tools to call, in order, with
// their arguments. prompts/get checks the book through books.get (the caller's scope and
// workspace: another workspace's book is an invalid argument, as a missing one is) and names
// only tools of the session's toolset, saying how to get the others. completion/complete
// offers the caller's book ids (books.list) for book_id, and page numbers for the page of
// the page template. docs/API.md.

// Prompt names.
const (
	PromptEngagementReport    = "book_engagement_report"
	PromptPublishingChecklist = "publishing_checklist"
	PromptAnswerFromBook      = "answer_from_book"
)

// Completion limits: the MCP specification's 100 values at most; the book ids considered are
// the workspace's newest completionScan books (pages of books.list).
const (
	maxCompletions = 100
	completionScan = 1000
)

// bookIDArg is the book argument of the prompts and templates.
var bookIDArg = &sdk.PromptArgument{Name: "book_id", Title: "Book", Required: true,
	Description: "the flipbook's random_id (completion/complete lists the workspace's)"}

// prompts are the prompts and their arguments.
var prompts = []*sdk.Prompt{
	{Name: PromptEngagementReport, Title: "Book engagement report",
		Description: "An engagement report of one flipbook for a date range: sessions, readers, time per page, flow and drop-off, clicks and downloads (analytics tools: scope analytics:read, company plan).",
		Arguments: []*sdk.PromptArgument{bookIDArg,
			{Name: "date_from", Title: "From", Description: "first day, YYYY-MM-DD (UTC; default 30 days before date_to)"},
			{Name: "date_to", Title: "To", Description: "last day, YYYY-MM-DD (UTC, inclusive; default today)"}}},
	{Name: PromptPublishingChecklist, Title: "Publishing checklist",
		Description: "Check a flipbook before it goes live (conversion, pages and their text, settings, access, embedding, tracked links, branding) and publish it once the user agrees.",
		Arguments:   []*sdk.PromptArgument{bookIDArg}},
	{Name: PromptAnswerFromBook, Title: "Answer from a book",
		Description: "Answer a question from a flipbook's text, citing the pages (search and page text: the extras toolset, or the page resources).",
		Arguments: []*sdk.PromptArgument{bookIDArg,
			{Name: "question", Title: "Question", Required: true, Description: "what to answer from the book"}}},
}

// addPrompts declares the prompts on srv; tools are the server's (its toolset).
func (s *Server) addPrompts(srv *sdk.Server, tools []*api.Operation) {
	have := map[string]bool{}
	for _, op := range tools {
		have[op.Tool] = true
	}
	for _, pr := range prompts {
		srv.AddPrompt(pr, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return s.getPrompt(ctx, req, have)
		})
	}
}

// getPrompt checks the arguments and the book and writes the prompt's message.
func (s *Server) getPrompt(ctx context.Context, req *sdk.GetPromptRequest, have map[string]bool) (*sdk.GetPromptResult, error) {
	args := req.Params.Arguments
	for _, pr := range prompts {
		if pr.Name != req.Params.Name {
			continue
		}
		for _, a := range pr.Arguments {
			if a.Required && strings.TrimSpace(args[a.Name]) == "" {
				return nil, invalidParams(a.Name + " is required")
			}
		}
	}
	p, err := principalFrom(req.Extra)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	bookID := strings.TrimSpace(args["book_id"])
	body, aerr := s.callOp(ctx, p, "books.get", map[string]any{"book": bookID}, requestID(req.Extra))
	if aerr != nil {
		if aerr.Status == 404 || aerr.Status == 422 {
			return nil, invalidParams("book_id: the workspace has no book " + strconv.Quote(bookID))
		}
		return nil, rpcErrorOf(aerr, "")
	}
	var book struct {
		Data struct {
			Name      string `json:"name"`
			PageCount int    `json:"page_count"`
		} `json:"data"`
	}
	_ = fastJSON.Unmarshal(body, &book) // the service's own JSON
	w := &promptWriter{have: have, group: s.toolGroup, book: bookID}
	title := fmt.Sprintf("the flipbook %q (book_id %s, %d pages)", book.Data.Name, bookID, book.Data.PageCount)
	var text string
	switch req.Params.Name {
	case PromptEngagementReport:
		from, to, perr := dateRange(args["date_from"], args["date_to"], time.Now().UTC())
		if perr != nil {
			return nil, perr
		}
		text = w.engagement(title, from, to)
	case PromptPublishingChecklist:
		text = w.checklist(title)
	case PromptAnswerFromBook:
		text = w.answer(title, strings.TrimSpace(args["question"]), book.Data.PageCount)
	}
	desc := ""
	for _, pr := range prompts {
		if pr.Name == req.Params.Name {
			desc = pr.Description
		}
	}
	return &sdk.GetPromptResult{Description: desc,
		Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}}}, nil
}

// dateRange checks the report's days (YYYY-MM-DD): to defaults to today, from to 30 days
// before to.
func dateRange(fromArg, toArg string, now time.Time) (string, string, error) {
	to := now
	if s := strings.TrimSpace(toArg); s != "" {
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return "", "", invalidParams("date_to must be a day YYYY-MM-DD")
		}
		to = t
	}
	from := to.AddDate(0, 0, -30)
	if s := strings.TrimSpace(fromArg); s != "" {
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return "", "", invalidParams("date_from must be a day YYYY-MM-DD")
		}
		from = t
	}
	if from.After(to) {
		return "", "", invalidParams("date_from must not be after date_to")
	}
	return from.Format(time.DateOnly), to.Format(time.DateOnly), nil
}

func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + msg}
}

// promptWriter writes the steps of a prompt, naming a tool the session lacks as such.
type promptWriter struct {
	have  map[string]bool
	group map[string]string // the toolset of every tool
	book  string
	b     strings.Builder
	n     int
}

// step adds a numbered step calling tool with args (JSON) for what.
func (w *promptWriter) step(tool string, args map[string]any, what string) {
	w.n++
	a, _ := json.Marshal(args)
	fmt.Fprintf(&w.b, "%d. Call %s with %s: %s", w.n, tool, a, what)
	if !w.have[tool] {
		fmt.Fprintf(&w.b, " (%s is not among this session's tools: reconnect with the toolset %s, or all, to use it; skip the step otherwise)", tool, w.group[tool])
	}
	w.b.WriteString("\n")
}

func (w *promptWriter) engagement(title, from, to string) string {
	date := from + ".." + to
	fmt.Fprintf(&w.b, "Write an engagement report for %s, from %s to %s (UTC days, inclusive).\n\n", title, from, to)
	w.b.WriteString("Gather the figures with these tool calls, following meta.next_cursor where a list has more pages:\n")
	w.step("books_get", map[string]any{"book_id": w.book}, "its name, status, publication date and page count.")
	w.step("analytics_list_book_view_events", map[string]any{"book_id": w.book, "date": date, "limit": 500},
		"one row per reading session: count the sessions, the readers and the time spent, and group them by source host and tracked link.")
	w.step("analytics_list_readers", map[string]any{"book_id": w.book, "date": date, "sort": "engagement", "include_anonymous": true},
		"the readers, most engaged first.")
	w.step("analytics_list_page_performance", map[string]any{"book_id": w.book, "date": date},
		"per-page readers and active time: the pages that hold attention and those skipped.")
	w.step("analytics_get_book_flow", map[string]any{"book_id": w.book, "date": date},
		"reach and drop-off per page, page-to-page moves, downloads and link clicks.")
	w.step("analytics_list_interaction_events", map[string]any{"book_id": w.book, "date": date, "event_type": "link_clicked"},
		"which links were clicked, on which pages.")
	w.b.WriteString("\nThen write the report: a three-line summary; sessions and readers; time spent; the five strongest and " +
		"the five weakest pages; where readers drop off; clicks and downloads; two or three concrete recommendations. " +
		"Use only the tools' figures. The analytics tools need the analytics:read scope and the company plan: if one answers " +
		"an error, say which figures are missing and why instead of estimating them.\n")
	return w.b.String()
}

func (w *promptWriter) checklist(title string) string {
	fmt.Fprintf(&w.b, "Check whether %s is ready to publish, then publish it if the user agrees.\n\n", title)
	w.step("books_get", map[string]any{"book_id": w.book},
		"page_images_status must be ready and page_count above 0; note the status, name, description, expiry dates and settings (downloads, sharing, accessibility_enabled, SEO).")
	w.step("books_list_pages", map[string]any{"book_id": w.book},
		"every page should have has_text true (readers' search, screen readers and search engines need it); list the pages without text.")
	w.step("books_list_embed_domains", map[string]any{"book_id": w.book}, "the sites allowed to embed it (none: embeddable anywhere).")
	w.step("books_list_tracked_links", map[string]any{"book_id": w.book}, "the tracked links for the campaign, if any.")
	w.step("subscribers_list", map[string]any{"filter": w.book}, "whether an email gate guards it (its access-list entries).")
	w.step("brand_get", map[string]any{}, "the workspace branding the viewer shows.")
	w.b.WriteString("\nAnswer with a checklist, each line ✅ or ❌ with the reason and the fix. Do not change anything yet. " +
		"Only when every blocking item passes and the user confirms, call books_update_settings with " +
		`{"book_id": "` + w.book + `", "status": "publish"}` + " (a fresh idempotency_key), then books_get again and give the preview_url.\n")
	return w.b.String()
}

func (w *promptWriter) answer(title, question string, pages int) string {
	fmt.Fprintf(&w.b, "Answer this question from the text of %s:\n\n%s\n\n", title, question)
	if w.have["books_search"] {
		w.step("books_search", map[string]any{"book_id": w.book, "q": "<two or three key words of the question>"},
			"hits with their page and a snippet (search folds case and accents and matches word prefixes); try a few wordings.")
	} else {
		fmt.Fprintf(&w.b, "Search is not among this session's tools (the toolset %s adds books_search): read the pages instead.\n", ToolsetExtras)
	}
	w.step("books_get_page_text", map[string]any{"book_id": w.book, "page": 1},
		"the whole text of a page (data.text), for each page a hit names.")
	fmt.Fprintf(&w.b, "The resource flipbook://books/%s/pages/{page} (page 1 to %d) holds the same text as books_get_page_text, "+
		"readable without the extras toolset.\n", w.book, pages)
	w.b.WriteString("\nAnswer only from the book's text, quoting it briefly and citing the page numbers. If the book does not " +
		"answer the question, say so; do not answer from elsewhere.\n")
	return w.b.String()
}

// complete is completion/complete: book ids for book_id (the prompts' and the templates'),
// page numbers for the page template's page once book_id is known. Other arguments get no
// values.
func (s *Server) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	ref, arg := req.Params.Ref, req.Params.Argument
	known := false
	switch ref.Type {
	case "ref/prompt":
		for _, pr := range prompts {
			known = known || pr.Name == ref.Name
		}
	case "ref/resource":
		known = ref.URI == BookTemplate || ref.URI == PageTemplate
	}
	res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}
	if !known {
		return res, nil
	}
	p, err := principalFrom(req.Extra)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	switch {
	case arg.Name == "book_id":
		return s.completeBooks(ctx, p, arg.Value, requestID(req.Extra))
	case arg.Name == "page" && ref.URI == PageTemplate && req.Params.Context != nil && req.Params.Context.Arguments["book_id"] != "":
		return s.completePages(ctx, p, req.Params.Context.Arguments["book_id"], arg.Value, requestID(req.Extra))
	}
	return res, nil
}

// completeBooks are the caller's book ids starting with prefix (case-insensitive), newest
// first, among the workspace's newest completionScan books.
func (s *Server) completeBooks(ctx context.Context, p *api.Principal, prefix, reqID string) (*sdk.CompleteResult, error) {
	res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	cursor, scanned, matched := "", 0, 0
	for scanned < completionScan {
		values := map[string]any{"limit": json.Number(strconv.Itoa(maxResourcePage))}
		if cursor != "" {
			values["cursor"] = cursor
		}
		body, aerr := s.callOp(ctx, p, "books.list", values, reqID)
		if aerr != nil {
			return nil, rpcErrorOf(aerr, "")
		}
		var page struct {
			Data []struct {
				RandomID string `json:"random_id"`
			} `json:"data"`
			Meta struct {
				NextCursor *string `json:"next_cursor"`
			} `json:"meta"`
		}
		if err := fastJSON.Unmarshal(body, &page); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "books.list: " + err.Error()}
		}
		for _, b := range page.Data {
			if strings.HasPrefix(strings.ToLower(b.RandomID), prefix) {
				matched++
				if len(res.Completion.Values) < maxCompletions {
					res.Completion.Values = append(res.Completion.Values, b.RandomID)
				}
			}
		}
		scanned += len(page.Data)
		if page.Meta.NextCursor == nil || len(page.Data) == 0 {
			res.Completion.Total = matched
			res.Completion.HasMore = matched > len(res.Completion.Values)
			return res, nil
		}
		cursor = *page.Meta.NextCursor
	}
	res.Completion.HasMore = true // books beyond the scan may match too
	return res, nil
}

// completePages are the page numbers of the caller's book starting with prefix.
func (s *Server) completePages(ctx context.Context, p *api.Principal, book, prefix, reqID string) (*sdk.CompleteResult, error) {
	body, aerr := s.callOp(ctx, p, "books.get", map[string]any{"book": book}, reqID)
	if aerr != nil {
		return nil, rpcErrorOf(aerr, "")
	}
	var b struct {
		Data struct {
			PageCount int `json:"page_count"`
		} `json:"data"`
	}
	_ = fastJSON.Unmarshal(body, &b)
	res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}
	prefix = strings.TrimSpace(prefix)
	matched := 0
	for n := 1; n <= b.Data.PageCount; n++ {
		if v := strconv.Itoa(n); strings.HasPrefix(v, prefix) {
			matched++
			if len(res.Completion.Values) < maxCompletions {
				res.Completion.Values = append(res.Completion.Values, v)
			}
		}
	}
	res.Completion.Total, res.Completion.HasMore = matched, matched > len(res.Completion.Values)
	return res, nil
}
