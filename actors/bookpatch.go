package actors

import (
	"crypto/rand"
	"crypto/sha256"
	"slices"
	"time"

	"flipbook/errs"
	"flipbook/storage"
)

// Opt is an optional field of a patch: unset, set to null, or set to a value.
type Opt[T any] struct {
	Set  bool
	Null bool
	V    T
}

// Val returns an Opt set to v.
func Val[T any](v T) Opt[T] { return Opt[T]{Set: true, V: v} }

// BookPatch is the update of spec §4.1.4 (or a bulk settings item's settings, §4.1.1),
// already validated for types and limits.
type BookPatch struct {
	// Status is the requested status; "" (bulk settings) leaves the status and its rules alone.
	Status                  string
	Title                   Opt[string]
	Description             Opt[string]
	Slug                    Opt[string]
	PublishedDate           Opt[time.Time]
	ExpiresAt               Opt[time.Time]
	AccessibilityEnabled    Opt[bool]
	AllowFullscreen         Opt[bool]
	AutoLinksEnabled        Opt[bool]
	CopyrightEnabled        Opt[bool]
	DownloadablePDF         Opt[bool]
	FlipSound               Opt[bool]
	MadeWithBadgeEnabled    Opt[bool]
	OpenFullscreenByDefault Opt[bool]
	ShareSocialMedia        Opt[bool]
	AnimationType           Opt[string]
	MobileAnimationType     Opt[string]
	Background              Opt[string]
	ImageDisplay            Opt[string]
	MagicLinkMessage        Opt[string]
	MagicLinkErrorMessage   Opt[string]
	PDFPassword             Opt[string]
	// PDFPasswordHashed is a password already hashed (a bulk batch keeps no password); it
	// sets the book's when not nil.
	PDFPasswordHashed *storage.PasswordHash
	PDFPrivacyStatus  Opt[string]
	Watermark         Opt[string]
	// DownloadMode is bulk settings' downloadable_pdf: "false" turns downloads off; full,
	// single or spread turn them on and tell the viewer how to offer the PDF.
	DownloadMode Opt[string]
	// ReadingDirection is ltr or rtl (an extension of the update body, issue 29).
	ReadingDirection Opt[string]
}

func setPtr(dst **string, o Opt[string]) {
	switch {
	case !o.Set:
	case o.Null:
		*dst = nil
	default:
		v := o.V
		*dst = &v
	}
}

func setTime(dst **time.Time, o Opt[time.Time]) {
	switch {
	case !o.Set:
	case o.Null:
		*dst = nil
	default:
		v := o.V.UTC()
		*dst = &v
	}
}

func setBool(dst *bool, o Opt[bool]) {
	if o.Set && !o.Null {
		*dst = o.V
	}
}

// apply changes b by p at time now, enforcing the status rules (docs/DECISIONS.md):
// publish needs an expires_at in the future (or none) and stamps published_date if unset;
// schedule needs a published_date, and one already past publishes at once.
func (p *BookPatch) apply(b *storage.Book, now time.Time) error {
	if p.Title.Set {
		if p.Title.Null {
			return errs.Invalid("title", "must not be null")
		}
		b.Name = p.Title.V
	}
	setPtr(&b.Description, p.Description)
	setPtr(&b.Extra.Slug, p.Slug)
	setTime(&b.PublishedDate, p.PublishedDate)
	setTime(&b.ExpiresAt, p.ExpiresAt)
	setBool(&b.Extra.AccessibilityEnabled, p.AccessibilityEnabled)
	setBool(&b.Settings.FullscreenEnabled, p.AllowFullscreen)
	setBool(&b.Extra.AutoLinksEnabled, p.AutoLinksEnabled)
	setBool(&b.Settings.CopyrightEnabled, p.CopyrightEnabled)
	setBool(&b.Settings.Downloadable, p.DownloadablePDF)
	if o := p.DownloadMode; o.Set && !o.Null {
		b.Settings.Downloadable = o.V != "false"
		b.Extra.DownloadMode = ""
		if b.Settings.Downloadable {
			b.Extra.DownloadMode = o.V
		}
	}
	setBool(&b.Settings.SoundEnabled, p.FlipSound)
	setBool(&b.Extra.MadeWithBadgeEnabled, p.MadeWithBadgeEnabled)
	setBool(&b.Extra.OpenFullscreenByDefault, p.OpenFullscreenByDefault)
	setBool(&b.Settings.ShareSocialMedia, p.ShareSocialMedia)
	if p.AnimationType.Set && !p.AnimationType.Null {
		b.Settings.AnimationType = p.AnimationType.V
	}
	setPtr(&b.Settings.MobileAnimationType, p.MobileAnimationType)
	setPtr(&b.Settings.Background, p.Background)
	setPtr(&b.Settings.ImageDisplay, p.ImageDisplay)
	setPtr(&b.Extra.MagicLinkMessage, p.MagicLinkMessage)
	setPtr(&b.Extra.MagicLinkErrorMessage, p.MagicLinkErrorMessage)
	setPtr(&b.Settings.Privacy, p.PDFPrivacyStatus)
	setPtr(&b.Extra.Watermark, p.Watermark)
	if o := p.ReadingDirection; o.Set && !o.Null {
		b.Extra.ReadingDirection = ""
		if o.V == "rtl" {
			b.Extra.ReadingDirection = "rtl"
		}
	}
	if p.PDFPassword.Set {
		if p.PDFPassword.Null || p.PDFPassword.V == "" {
			b.Extra.PDFPasswordHash, b.Extra.PDFPasswordSalt = nil, nil
		} else {
			b.Extra.PDFPasswordSalt = make([]byte, 16)
			_, _ = rand.Read(b.Extra.PDFPasswordSalt)
			b.Extra.PDFPasswordHash = HashPassword(b.Extra.PDFPasswordSalt, p.PDFPassword.V)
		}
	}
	if h := p.PDFPasswordHashed; h != nil {
		b.Extra.PDFPasswordSalt, b.Extra.PDFPasswordHash = slices.Clone(h.Salt), slices.Clone(h.Hash)
	}
	if p.Status == "" {
		return nil
	}
	return setStatus(b, p.Status, now)
}

// HashPassword is the stored form of a book's PDF password.
func HashPassword(salt []byte, password string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(password))
	return h.Sum(nil)
}

// setStatus moves b to status at now ("" keeps the current status).
func setStatus(b *storage.Book, status string, now time.Time) error {
	if status == "" {
		status = b.Status
	}
	switch status {
	case storage.StatusPublish, storage.StatusSchedule:
		if b.ExpiresAt != nil && !b.ExpiresAt.After(now) {
			return errs.Invalid("expires_at", "has passed; clear it or set a future time to publish the book")
		}
	}
	switch status {
	case storage.StatusPublish:
		if b.PublishedDate == nil {
			t := now
			b.PublishedDate = &t
		}
	case storage.StatusSchedule:
		if b.PublishedDate == nil {
			return errs.Invalid("published_date", "is required when status is schedule")
		}
		if !b.PublishedDate.After(now) {
			status = storage.StatusPublish
		}
	}
	b.Status = status
	return nil
}

// transition applies a book's timed transitions that are due at now; it reports a change.
func transition(b *storage.Book, now time.Time) bool {
	changed := false
	if b.Status == storage.StatusSchedule && b.PublishedDate != nil && !b.PublishedDate.After(now) {
		b.Status = storage.StatusPublish
		changed = true
	}
	if isLive(b.Status) && b.ExpiresAt != nil && !b.ExpiresAt.After(now) {
		b.Status = storage.StatusDraft // the hard unpublish of spec §3.1
		changed = true
	}
	return changed
}
