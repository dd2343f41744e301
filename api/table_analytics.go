package api

import (
	"flipbook/actors"
	"flipbook/analytics"
	"flipbook/ingest"
)

// AnalyticsBackend runs the analytics operations (spec §4.4) and the CSV exports (spec §4.5).
type AnalyticsBackend interface {
	ListViewEvents(*Request, *AnalyticsQuery) (*Reply[[]ViewEvent, CursorMeta], error)
	ListInteractionEvents(*Request, *AnalyticsQuery) (*Reply[[]InteractionEvent, CursorMeta], error)
	ListAuditLog(*Request, *AnalyticsQuery) (*Reply[[]AuditEvent, CursorMeta], error)
	PagePerformance(*Request, *AnalyticsQuery) (*Data[[]analytics.PageSummary], error)
	BookFlow(*Request, *AnalyticsQuery) (*Data[analytics.BookFlow], error)
	ListReaders(*Request, *AnalyticsQuery) (*Reply[[]analytics.ReaderSummary, CursorMeta], error)
	ReaderPages(*Request, *AnalyticsQuery) (*Data[[]analytics.ReaderPage], error)
	ReadingSessionPages(*Request, *AnalyticsQuery) (*Reply[[]analytics.SessionPage, ViewEvent], error)
	ReaderJourney(*Request, *AnalyticsQuery) (*Data[Journey], error)
	PageHeatmap(*Request, *AnalyticsQuery) (*Data[PageHeatmap], error)

	ExportAnalytics(*Request, *AnalyticsQuery) (*Result, error)
	ExportAccessAudit(*Request, *AnalyticsQuery) (*Result, error)
	ExportAuditLog(*Request, *AnalyticsQuery) (*Result, error)
	ExportInteractionEvents(*Request, *AnalyticsQuery) (*Result, error)
	ExportLeads(*Request, *AnalyticsQuery) (*Result, error)
	ExportPagePerformance(*Request, *AnalyticsQuery) (*Result, error)
	ExportReaderPages(*Request, *AnalyticsQuery) (*Result, error)
	ExportReaders(*Request, *AnalyticsQuery) (*Result, error)
	ExportPageHeatmap(*Request, *AnalyticsQuery) (*Result, error)
}

// analyticsOp declares one operation of spec §4.4: its parameters are params (analyticsParams),
// its response and meta those h answers with.
func analyticsOp[D, M any](id, path, tool, summary string, params []Param,
	h func(*Request, *AnalyticsQuery) (*Reply[D, M], error)) *Operation {
	return Define(Operation{ID: "analytics." + id, Method: "GET", Path: "/analytics/" + path, Tool: tool,
		Scope: "analytics:read", Plan: actors.PlanCompany, ReadOnly: true, Summary: summary, Params: params}, h)
}

// analyticsOperations are the operations of spec §4.4.
func analyticsOperations(b AnalyticsBackend) []*Operation {
	return []*Operation{
		analyticsOp("book_view_events", "book-view-events", "analytics_list_book_view_events",
			"View events of a flipbook: one per reading session with its measures, newest first.",
			analyticsParams(nil, "book_id", "date", "limit", "cursor", "source_host", "viewer_id", "tracked_link_id"),
			b.ListViewEvents),
		analyticsOp("interaction_events", "interaction-events", "analytics_list_interaction_events",
			"Raw interaction events of a flipbook, newest first.",
			analyticsParams(ingest.InteractionTypes, "book_id", "viewer_id", "event_type", "page_number",
				"session_id", "date", "tracked_link_id", "limit", "cursor"),
			b.ListInteractionEvents),
		analyticsOp("audit_log", "audit-log", "analytics_list_audit_log",
			"The flipbook's audit log (access attempts, downloads, clicks, forms), oldest first.",
			analyticsParams(analytics.AuditTypes, "book_id", "viewer_id", "event_type", "date", "tracked_link_id",
				"limit", "cursor"),
			b.ListAuditLog),
		analyticsOp("page_performance", "page-performance", "analytics_list_page_performance",
			"Per-page engagement of a flipbook: unique readers, active time (total, per reader, per segment, median) and segments, one row per page.",
			analyticsParams(nil, "book_id", "date", "tracked_link_id"),
			b.PagePerformance),
		analyticsOp("book_flow", "book-flow", "analytics_get_book_flow",
			"How readers move through a flipbook: page-to-page transitions, reach rate and drop-off per page, download and link-click totals.",
			analyticsParams(nil, "book_id", "date", "tracked_link_id"),
			b.BookFlow),
		analyticsOp("readers", "readers", "analytics_list_readers",
			"One summary per reader of a flipbook (sessions, time spent, pages, downloads, link clicks, engagement); identified readers unless include_anonymous.",
			analyticsParams(nil, "book_id", "viewer_id", "session_id", "include_anonymous", "date", "sort", "tracked_link_id", "limit", "cursor"),
			b.ListReaders),
		Define(Operation{ID: "analytics.page_heatmap", Method: "GET", Path: "/analytics/page-heatmap",
			Scope: "analytics:read", Plan: actors.PlanCompany, ReadOnly: true, Extension: true,
			Summary: "Where readers click on a page of a flipbook: counts on a 20 × 20 grid and the total.",
			Params:  analyticsParams(nil, "book_id", "page_number", "date", "tracked_link_id")}, b.PageHeatmap),
		analyticsOp("reader_pages", "reader-pages", "analytics_list_reader_pages",
			"Per-reader, per-page engagement of a flipbook (identified readers unless include_anonymous or session_id).",
			analyticsParams(nil, "book_id", "viewer_id", "session_id", "date", "tracked_link_id", "page_number", "include_anonymous"),
			b.ReaderPages),
		analyticsOp("reading_session_pages", "reading-session-pages", "analytics_list_reading_session_pages",
			"Per-page breakdown of one reading session (data) with its view event (meta).",
			analyticsParams(nil, "book_id", "view_event_id"),
			b.ReadingSessionPages),
		analyticsOp("reader_journey", "reader-journey", "analytics_get_reader_journey",
			"One reader's (viewer_id) or one anonymous session's (session_id) activity across every flipbook of the workspace: totals, per book, and a timeline of visits. Exactly one of viewer_id and session_id.",
			analyticsParams(nil, "viewer_id", "session_id", "date"),
			b.ReaderJourney).withErrors(404), // a viewer_id not among the workspace's readers
	}
}

// exportOperations are the operations of spec §4.5: CSV streams. Their tools take the
// tool-only arguments output_path and output_object_key (the MCP adapter stores the CSV in the
// workspace's export area instead of returning it inline).
func exportOperations(b AnalyticsBackend) []*Operation {
	out := []Param{
		Str("output_path", InTool, 1024).Describe("store the CSV at this path inside the workspace's export area (relative; .. is refused) and return where it is, instead of the CSV itself"),
		Str("output_object_key", InTool, 1024).Describe("like output_path, for object-store style keys (the same export area)"),
	}
	op := func(id, path, tool, plan, summary string, params []Param, h func(*Request, *AnalyticsQuery) (*Result, error)) *Operation {
		return &Operation{ID: "exports." + id, Method: "GET", Path: path, Tool: tool, Scope: "exports:read", Plan: plan,
			ReadOnly: true, CSV: true, Summary: summary, Params: append(analyticsParams(nil, "book"), params...),
			ToolParams: out, Handler: Bind(h)}
	}
	company := actors.PlanCompany
	return []*Operation{
		op("analytics", "/exports/analytics/{book}", "exports_download_book_analytics_csv", company,
			"CSV of a flipbook's analytics: its view events (source view_events, the default; one row per reading session) or its interaction events.",
			analyticsParams(nil, "source", "date", "viewer_id", "tracked_link_id", "session_id", "source_host"),
			b.ExportAnalytics),
		op("access_audit", "/exports/books/{book}/access-audit", "exports_download_book_access_audit_csv", company,
			"CSV of a flipbook's access attempts (email gate: requested, granted, rejected), oldest first.",
			analyticsParams(AccessTypes, "viewer_id", "event_type", "date"),
			b.ExportAccessAudit),
		op("audit_log", "/exports/books/{book}/audit-log", "exports_download_book_audit_log_csv", company,
			"CSV of a flipbook's audit log, oldest first (the rows of GET /analytics/audit-log).",
			analyticsParams(analytics.AuditTypes, "viewer_id", "event_type", "date", "tracked_link_id"),
			b.ExportAuditLog),
		op("interaction_events", "/exports/books/{book}/interaction-events", "exports_download_book_interaction_events_csv", company,
			"CSV of a flipbook's interaction events, newest first (the rows of GET /analytics/interaction-events).",
			analyticsParams(ingest.InteractionTypes, "viewer_id", "event_type", "page_number", "session_id",
				"date", "tracked_link_id"),
			b.ExportInteractionEvents),
		op("leads", "/exports/books/{book}/leads", "exports_download_book_leads_csv", "",
			"CSV of a flipbook's lead form submissions with the form's fields, oldest first.",
			analyticsParams(nil, "viewer_id", "session_id", "date", "tracked_link_id"),
			b.ExportLeads),
		op("page_performance", "/exports/books/{book}/page-performance", "exports_download_book_page_performance_csv", company,
			"CSV of a flipbook's page performance: one page summary per page (the rows of GET /analytics/page-performance).",
			analyticsParams(nil, "date", "tracked_link_id"),
			b.ExportPagePerformance),
		op("reader_pages", "/exports/books/{book}/reader-pages", "exports_download_book_reader_pages_csv", company,
			"CSV of per-reader, per-page engagement (the rows of GET /analytics/reader-pages).",
			analyticsParams(nil, "viewer_id", "session_id", "date", "tracked_link_id", "page_number", "include_anonymous"),
			b.ExportReaderPages),
		op("readers", "/exports/books/{book}/readers", "exports_download_book_readers_csv", company,
			"CSV of a flipbook's readers, one summary per reader (the rows of GET /analytics/readers walked fully).",
			analyticsParams(nil, "viewer_id", "session_id", "include_anonymous", "date", "sort", "tracked_link_id"),
			b.ExportReaders),
		// Extension (issue 29): no tool of its own (the extras toolset has the heatmap).
		extension(op("page_heatmap", "/exports/books/{book}/page-heatmap", "", company,
			"CSV of where readers click on a page: one row per cell of the 20 × 20 grid (the cells of GET /analytics/page-heatmap).",
			analyticsParams(nil, "page_number", "date", "tracked_link_id"),
			b.ExportPageHeatmap)),
	}
}

// extension marks op as an extension of the spec (in the OpenAPI document as x-extension).
func extension(op *Operation) *Operation {
	op.Extension = true
	return op
}
