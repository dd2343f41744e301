package httpapi

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"flipbook/mcp"
)

// MCP prompts and completion (issue 28).

func TestMCPPrompts(t *testing.T) {
	t.Parallel()
	fx := newMCPTextFixture(t, nil)
	ctx := context.Background()
	cs := fx.h.mcpSession(t, fx.key, "")
	require.NotNil(t, cs.InitializeResult().Capabilities.Prompts)
	require.NotNil(t, cs.InitializeResult().Capabilities.Completions)

	list, err := cs.ListPrompts(ctx, nil)
	require.NoError(t, err)
	args := map[string][]string{}
	for _, p := range list.Prompts {
		require.NotEmpty(t, p.Description, p.Name)
		for _, a := range p.Arguments {
			args[p.Name] = append(args[p.Name], a.Name)
		}
	}
	require.Equal(t, map[string][]string{
		mcp.PromptEngagementReport:    {"book_id", "date_from", "date_to"},
		mcp.PromptPublishingChecklist: {"book_id"},
		mcp.PromptAnswerFromBook:      {"book_id", "question"},
	}, args)

	text := func(cs *sdk.ClientSession, name string, a map[string]string) string {
		t.Helper()
		res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: a})
		require.NoError(t, err, name)
		require.Len(t, res.Messages, 1)
		require.Equal(t, sdk.Role("user"), res.Messages[0].Role)
		return res.Messages[0].Content.(*sdk.TextContent).Text
	}
	report := text(cs, mcp.PromptEngagementReport, map[string]string{"book_id": fx.pdf, "date_from": "2026-01-01", "date_to": "2026-01-31"})
	for _, tool := range []string{"books_get", "analytics_list_book_view_events", "analytics_list_page_performance",
		"analytics_get_book_flow", "analytics_list_readers"} {
		require.Contains(t, report, "Call "+tool+" with ", tool)
	}
	require.Contains(t, report, `"date":"2026-01-01..2026-01-31"`)
	require.Contains(t, report, `"book_id":"`+fx.pdf+`"`)
	require.Contains(t, report, `"report`, "the book's name")
	require.NotContains(t, report, "not among this session's tools")

	check := text(cs, mcp.PromptPublishingChecklist, map[string]string{"book_id": fx.pdf})
	require.Contains(t, check, "Call books_get with ")
	require.Contains(t, check, "books_update_settings")
	require.Contains(t, check, "books_list_pages is not among this session's tools: reconnect with the toolset extras")

	answer := text(cs, mcp.PromptAnswerFromBook, map[string]string{"book_id": fx.pdf, "question": "What is below page two?"})
	require.Contains(t, answer, "What is below page two?")
	require.Contains(t, answer, "books_get_page_text")
	require.Contains(t, answer, "flipbook://books/"+fx.pdf+"/pages/{page} (page 1 to 3)")
	// With the extras the page tool is available.
	answer = text(fx.h.mcpSessionAt(t, fx.key, "?toolsets=books,extras"), mcp.PromptAnswerFromBook,
		map[string]string{"book_id": fx.pdf, "question": "Why?"})
	require.Contains(t, answer, "Call books_get_page_text with ")
	require.NotContains(t, answer, "books_get_page_text is not among")

	// Refusals: a missing argument, a bad date, another workspace's book, no books:read.
	for _, bad := range []struct {
		name string
		args map[string]string
		msg  string
	}{
		{mcp.PromptAnswerFromBook, map[string]string{"book_id": fx.pdf}, "question is required"},
		{mcp.PromptPublishingChecklist, map[string]string{}, "book_id is required"},
		{mcp.PromptEngagementReport, map[string]string{"book_id": fx.pdf, "date_from": "January"}, "date_from must be a day"},
		{mcp.PromptEngagementReport, map[string]string{"book_id": fx.pdf, "date_from": "2026-02-01", "date_to": "2026-01-01"}, "after date_to"},
		{mcp.PromptPublishingChecklist, map[string]string{"book_id": fx.otherBook}, "the workspace has no book"},
	} {
		_, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: bad.name, Arguments: bad.args})
		je := rpcErr(t, err)
		require.Equal(t, int64(jsonrpc.CodeInvalidParams), je.Code, bad.msg)
		require.Contains(t, je.Message, bad.msg)
	}
	_, err = fx.h.mcpSession(t, fx.noReadKey, "").GetPrompt(ctx, &sdk.GetPromptParams{Name: mcp.PromptPublishingChecklist,
		Arguments: map[string]string{"book_id": fx.pdf}})
	require.Equal(t, int64(-32001), rpcErr(t, err).Code)
}

// TestMCPCompletion: book ids of the caller's workspace only, by prefix, for the prompts and
// the templates; page numbers of the page template.
func TestMCPCompletion(t *testing.T) {
	t.Parallel()
	fx := newMCPTextFixture(t, nil)
	ctx := context.Background()
	complete := func(cs *sdk.ClientSession, ref *sdk.CompleteReference, arg, value string, context map[string]string) *sdk.CompleteResult {
		t.Helper()
		p := &sdk.CompleteParams{Ref: ref, Argument: sdk.CompleteParamsArgument{Name: arg, Value: value}}
		if context != nil {
			p.Context = &sdk.CompleteContext{Arguments: context}
		}
		res, err := cs.Complete(ctx, p)
		require.NoError(t, err)
		return res
	}
	mine := append([]string{}, fx.books...)
	sort.Strings(mine)
	for _, version := range []string{"", "2025-11-25"} {
		cs := fx.h.mcpSession(t, fx.key, version)
		for _, ref := range []*sdk.CompleteReference{
			{Type: "ref/prompt", Name: mcp.PromptEngagementReport},
			{Type: "ref/prompt", Name: mcp.PromptAnswerFromBook},
			{Type: "ref/resource", URI: mcp.BookTemplate},
			{Type: "ref/resource", URI: mcp.PageTemplate},
		} {
			res := complete(cs, ref, "book_id", "", nil)
			got := append([]string{}, res.Completion.Values...)
			sort.Strings(got)
			require.Equal(t, mine, got, "every book of the workspace, none of another")
			require.Equal(t, len(mine), res.Completion.Total)
			require.False(t, res.Completion.HasMore)

			// By prefix (case-insensitive): the matching ids only.
			prefix := strings.ToUpper(fx.pdf[:2])
			res = complete(cs, ref, "book_id", prefix, nil)
			require.Contains(t, res.Completion.Values, fx.pdf)
			for _, v := range res.Completion.Values {
				require.True(t, strings.HasPrefix(strings.ToLower(v), strings.ToLower(prefix)), v)
			}
			res = complete(cs, ref, "book_id", fx.otherBook, nil)
			require.Empty(t, res.Completion.Values, "another workspace's id is not offered")
		}
		res := complete(cs, &sdk.CompleteReference{Type: "ref/resource", URI: mcp.PageTemplate}, "page", "", map[string]string{"book_id": fx.pdf})
		require.Equal(t, []string{"1", "2", "3"}, res.Completion.Values)
		res = complete(cs, &sdk.CompleteReference{Type: "ref/prompt", Name: mcp.PromptAnswerFromBook}, "question", "wh", nil)
		require.Empty(t, res.Completion.Values)
	}
	// The other workspace completes its own book only.
	res := complete(fx.h.mcpSession(t, fx.otherKey, ""), &sdk.CompleteReference{Type: "ref/prompt", Name: mcp.PromptPublishingChecklist}, "book_id", "", nil)
	require.Equal(t, []string{fx.otherBook}, res.Completion.Values)
	// Without books:read: the tools' refusal.
	_, err := fx.h.mcpSession(t, fx.noReadKey, "").Complete(ctx, &sdk.CompleteParams{
		Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: mcp.PromptPublishingChecklist}, Argument: sdk.CompleteParamsArgument{Name: "book_id"}})
	require.Equal(t, int64(-32001), rpcErr(t, err).Code)
}
