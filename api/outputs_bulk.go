package api

// The answers of the bulk settings operations (spec §4.1, §4.1.1), as Go types: httpapi builds
// them, and their response schemas are derived from them (SchemaOf).

// BulkBatch is spec §4.1's bulk batch object.
type BulkBatch struct {
	ID             string         `json:"id"`
	Status         string         `json:"status" enum:"queued|running|completed|completed_with_errors|failed|cancelled"` // BulkStatuses
	CreatedAt      *string        `json:"created_at" format:"date-time"`
	StartedAt      *string        `json:"started_at" format:"date-time"`
	FinishedAt     *string        `json:"finished_at" format:"date-time"`
	CancelledAt    *string        `json:"cancelled_at" format:"date-time"`
	Items          []BulkItem     `json:"items"`
	Progress       BulkProgress   `json:"progress"`
	RetryOfBatchID *string        `json:"retry_of_batch_id"`
	Settings       map[string]any `json:"settings" type:"object"` // the settings the batch applies, as given
}

// BulkItem is one book of a bulk batch and its outcome.
type BulkItem struct {
	BookID                  string         `json:"book_id"`
	SettingsRevision        string         `json:"settings_revision"`
	Status                  string         `json:"status" enum:"pending|succeeded|failed|cancelled"` // BulkItemStatuses
	Error                   *BulkItemError `json:"error"`
	NewSettingsRevision     *string        `json:"new_settings_revision"`
	CurrentSettingsRevision *string        `json:"current_settings_revision"`
	FinishedAt              *string        `json:"finished_at" format:"date-time"`
}

// BulkItemError is why a book of a bulk batch failed.
type BulkItemError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// BulkProgress is how far a bulk batch is.
type BulkProgress struct {
	Finished string     `json:"finished"` // a count, as the spec types it: a string
	Percent  int        `json:"percent"`
	Total    int        `json:"total"`
	Counts   BulkCounts `json:"counts"`
}

// BulkCounts counts a bulk batch's books by status.
type BulkCounts struct {
	Pending   int `json:"pending"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// BulkAcceptedMeta is the meta of bulk_settings.create and bulk_settings.retry: an empty object.
type BulkAcceptedMeta struct{}

// BulkSummary is the data of bulk_settings.summary: each book's settings, and the settings the
// books share (common) and those that differ (differing: each key's distinct values).
type BulkSummary struct {
	Books    []BulkSummaryBook   `json:"books"`
	Settings BulkSummarySettings `json:"settings"`
}

// BulkSummaryBook is one book of a settings summary.
type BulkSummaryBook struct {
	ID               string           `json:"id"`
	Name             string           `json:"name"`
	SettingsRevision string           `json:"settings_revision"`
	Settings         BulkBookSettings `json:"settings"`
}

// BulkSummarySettings are the keys of spec §4.1.1 every book of a summary has alike (common:
// key → value) and the others (differing: key → the distinct values).
type BulkSummarySettings struct {
	Common    map[string]any `json:"common" type:"object"`
	Differing map[string]any `json:"differing" type:"object"`
}

// BulkBookSettings is every key of spec §4.1.1 as a book has it: the values a batch would set
// (pdf_password: whether one is set; eod_lists: the first entries of the access list). The
// keys are in alphabetical order.
type BulkBookSettings struct {
	AllowFullscreen         bool     `json:"allow_fullscreen"`
	AnimationType           string   `json:"animation_type"`
	Background              *string  `json:"background"`
	CopyrightEnabled        bool     `json:"copyright_enabled"`
	Description             *string  `json:"description"`
	DownloadablePDF         string   `json:"downloadable_pdf" enum:"false|full|single|spread"` // DownloadablePDFModes
	EODEnabled              bool     `json:"eod_enabled"`
	EODLists                []string `json:"eod_lists"`
	FlipSound               bool     `json:"flip_sound"`
	ImageDisplay            *string  `json:"image_display"`
	MadeWithBadgeEnabled    bool     `json:"made_with_badge_enabled"`
	MagicLinkErrorMessage   *string  `json:"magic_link_error_message"`
	MagicLinkMessage        *string  `json:"magic_link_message"`
	MobileAnimationType     *string  `json:"mobile_animation_type"`
	OpenFullscreenByDefault bool     `json:"open_fullscreen_by_default"`
	PDFPassword             bool     `json:"pdf_password"`
	PDFPrivacyStatus        *string  `json:"pdf_privacy_status"`
	ShareSocialMedia        bool     `json:"share_social_media"`
	Title                   string   `json:"title"`
	Watermark               *string  `json:"watermark"`
}

// BulkSummaryMeta is the meta of bulk_settings.summary.
type BulkSummaryMeta struct {
	Count int `json:"count"`
}
