package api

import "flipbook/actors"

// Bulk settings limits (spec §4.1, §4.1.1, §8; docs/DECISIONS.md "Bulk settings").
const (
	MaxBulkBooks         = 1000                     // books of one batch, book ids of one summary
	MaxSettingsRevision  = 64                       // characters of a settings_revision
	MaxUnfinishedBulk    = actors.MaxUnfinishedBulk // queued or running batches of a tenant (409 beyond)
	MaxSummaryAccessList = 100                      // eod_lists entries the summary reports per book
)

// DownloadablePDFModes are the values of bulk settings' downloadable_pdf (strings).
var DownloadablePDFModes = []string{"false", "full", "single", "spread"}

// Bulk batch and item statuses.
var (
	BulkStatuses     = []string{"queued", "running", "completed", "completed_with_errors", "failed", "cancelled"}
	BulkItemStatuses = []string{"pending", "succeeded", "failed", "cancelled"}
)

// BulkSettingsBackend runs the bulk settings operations (spec §3.4, §4.1, §4.1.1).
type BulkSettingsBackend interface {
	CreateBulkSettings(*Request, *BulkSettingsCreate) (*Reply[BulkBatch, BulkAcceptedMeta], error)
	GetBulkSettings(*Request, *BulkBatchPath) (*Data[BulkBatch], error)
	CancelBulkSettings(*Request, *BulkBatchPath) (*Data[BulkBatch], error)
	RetryBulkSettings(*Request, *BulkBatchPath) (*Reply[BulkBatch, BulkAcceptedMeta], error)
	BulkSettingsSummary(*Request, *BulkSettingsSummary) (*Reply[BulkSummary, BulkSummaryMeta], error)
}

// BulkSettingsParams are the keys of the bulk settings object (spec §4.1.1), all optional. Keys
// PUT /books/{book} lets clear (null) may be cleared here too.
func BulkSettingsParams() []Param {
	return []Param{
		Bool("allow_fullscreen", InBody),
		Enum("animation_type", InBody, animationTypes...),
		Enum("mobile_animation_type", InBody, animationTypes...).Null(),
		Str("background", InBody, 2048).Null().WithFormat("background"),
		Bool("copyright_enabled", InBody),
		Str("description", InBody, 50000).Null().Lines(),
		Enum("downloadable_pdf", InBody, DownloadablePDFModes...).
			Describe(`a string: "false" turns downloads off; full, single or spread turn them on and set how the viewer offers the PDF`),
		Bool("eod_enabled", InBody).Describe("accepted and ignored: read-only, derived from the access list"),
		{Name: "eod_lists", In: InBody, Kind: KArray, Nullable: true, Desc: "accepted and ignored: access lists change through the subscribers operations"},
		Bool("flip_sound", InBody),
		Enum("image_display", InBody, imageDisplays...).Null(),
		Bool("made_with_badge_enabled", InBody),
		Str("magic_link_error_message", InBody, 1000).Null().Lines(),
		Str("magic_link_message", InBody, 1000).Null().Lines(),
		Bool("open_fullscreen_by_default", InBody),
		Str("pdf_password", InBody, 255).Null().Describe("stored only as a salted hash; empty or null removes it"),
		Str("pdf_privacy_status", InBody, 50).Null(),
		Bool("share_social_media", InBody),
		Str("title", InBody, 255).MinLength(1).Describe("the book's name"),
		Str("watermark", InBody, 2048).Null(),
	}
}

// bulkSettingsOperations are the bulk settings operations of spec §4.1 (no MCP tools: the spec's
// tool list has none).
func bulkSettingsOperations(b BulkSettingsBackend) []*Operation {
	return []*Operation{
		Define(Operation{ID: "bulk_settings.create", Method: "POST", Path: "/books/bulk-settings/batches", Scope: "books:write", Write: true,
			Status: 202,
			Summary: "Apply settings to up to 1,000 books in the background; each book changes only if it still has the settings_revision the client read " +
				"(409 when the workspace already has 10 unfinished batches).",
			Params: Adjust(ParamsOf[BulkSettingsCreate](), "settings", func(p *Param) { p.Props = BulkSettingsParams() }),
			// 1,000 books of 64-character ids and revisions, escaped, plus a 50,000-character
			// description: more than the default 1 MiB in the worst case.
			MaxBody: 2 << 20}, b.CreateBulkSettings),
		Define(Operation{ID: "bulk_settings.get", Method: "GET", Path: "/books/bulk-settings/batches/{batch}", Scope: "books:read", ReadOnly: true,
			Summary: "A bulk settings batch with the outcome of every book."}, b.GetBulkSettings),
		Define(Operation{ID: "bulk_settings.cancel", Method: "DELETE", Path: "/books/bulk-settings/batches/{batch}", Scope: "books:write", Write: true,
			Destructive: true,
			Summary:     "Cancel a queued or running bulk settings batch: books not started are left alone, settings already applied stay (409 when it has finished)."},
			b.CancelBulkSettings),
		Define(Operation{ID: "bulk_settings.retry", Method: "POST", Path: "/books/bulk-settings/batches/{batch}/retry", Scope: "books:write", Write: true,
			Status:  202,
			Summary: "Retry the failed books of a finished bulk settings batch in a new batch (retry_of_batch_id); a conflicting book is retried over the revision it had then (409 when the batch has not finished or nothing failed)."},
			b.RetryBulkSettings),
		Define(Operation{ID: "bulk_settings.summary", Method: "POST", Path: "/books/bulk-settings/summary", Scope: "books:read", ReadOnly: true,
			Summary:     "The settings of up to 1,000 books side by side: each book's settings and settings_revision, the settings they share and those that differ.",
			ExtraErrors: []int{404}}, b.BulkSettingsSummary),
	}
}
