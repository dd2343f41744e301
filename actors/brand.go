package actors

import (
	"errors"

	"flipbook/errs"
	"flipbook/storage"
)

// Brand writes go through the tenant's workspace actor, so a create, an update and a toggle of
// one tenant never interleave (one brand per workspace and mode).

// BrandField names a brand field an update sets.
type BrandField string

// The brand's text fields (spec §4.6).
const (
	BrandCompanyName     BrandField = "company_name"
	BrandAboutBrand      BrandField = "about_brand"
	BrandContactNumber   BrandField = "contact_number"
	BrandWebsiteURL      BrandField = "website_url"
	BrandGoogleAnalytics BrandField = "google_analytics"
	BrandPrimaryColor    BrandField = "primary_color"
	BrandSecondaryColor  BrandField = "secondary_color"
	BrandTertiaryColor   BrandField = "tertiary_color"
	BrandTwitter         BrandField = "twitter"
	BrandLinkedin        BrandField = "linkedin"
	BrandFacebook        BrandField = "facebook"
	BrandYoutube         BrandField = "youtube"
	BrandInstagram       BrandField = "instagram"
	BrandPinterest       BrandField = "pinterest"
)

// BrandFields lists every text field in the order of the spec's request.
var BrandFields = []BrandField{BrandCompanyName, BrandAboutBrand, BrandContactNumber, BrandFacebook,
	BrandGoogleAnalytics, BrandInstagram, BrandLinkedin, BrandPinterest, BrandPrimaryColor,
	BrandSecondaryColor, BrandTertiaryColor, BrandTwitter, BrandYoutube, BrandWebsiteURL}

// SaveBrand → *BrandSaved: create the tenant's brand (Create) or update it (ID must be the
// brand's). Fields given are set (nil clears one); fields not given keep their value. Logo, when
// not "", is the name of the new logo file, already stored in the tenant's brand folder.
type SaveBrand struct {
	Create bool
	ID     int64
	Fields map[BrandField]*string
	Logo   string
}

// BrandSaved is the saved brand and the logo file it no longer uses ("" for none).
type BrandSaved struct {
	Brand   *storage.Brand
	OldLogo string
}

// ToggleTakeOver → *storage.Brand: flip take_over_branding (errs.ErrNotFound without a brand; a
// plan without take-over branding may only turn it off).
type ToggleTakeOver struct{ Plan string }

func (w *workspace) saveBrand(m *SaveBrand) (*BrandSaved, error) {
	st := w.s.Store
	now := w.s.now()
	b, err := st.Brand(w.t)
	switch {
	case err == nil && m.Create:
		return nil, errs.Invalid("brand", "already exists; change it with PUT /brand")
	case errors.Is(err, errs.ErrNotFound) && !m.Create:
		return nil, errs.ErrNotFound
	case err == nil && b.ID != m.ID:
		return nil, errs.ErrNotFound
	case errors.Is(err, errs.ErrNotFound):
		id, err := st.NextIDFor(w.t.Workspace, "brand")
		if err != nil {
			return nil, err
		}
		b = &storage.Brand{ID: id, Workspace: w.t.Workspace, Mode: w.t.Mode, CreatedAt: now}
		b.Color = storage.BrandColor{ID: id, CreatedAt: now}
		b.Social = storage.BrandSocial{ID: id, CreatedAt: now}
	case err != nil:
		return nil, err
	}
	for f, v := range m.Fields {
		*brandField(b, f) = v
	}
	old := ""
	if m.Logo != "" && m.Logo != b.Logo {
		old, b.Logo = b.Logo, m.Logo
	}
	b.UpdatedAt, b.Color.UpdatedAt, b.Social.UpdatedAt = now, now, now
	batch := st.NewBatch()
	if err := batch.PutBrand(b); err != nil {
		batch.Close()
		return nil, err
	}
	if err := batch.Commit(); err != nil {
		return nil, err
	}
	return &BrandSaved{Brand: b, OldLogo: old}, nil
}

func brandField(b *storage.Brand, f BrandField) **string {
	switch f {
	case BrandCompanyName:
		return &b.CompanyName
	case BrandAboutBrand:
		return &b.AboutBrand
	case BrandContactNumber:
		return &b.ContactNumber
	case BrandWebsiteURL:
		return &b.WebsiteURL
	case BrandGoogleAnalytics:
		return &b.GoogleAnalytics
	case BrandPrimaryColor:
		return &b.Color.Primary
	case BrandSecondaryColor:
		return &b.Color.Secondary
	case BrandTertiaryColor:
		return &b.Color.Tertiary
	case BrandTwitter:
		return &b.Social.Twitter
	case BrandLinkedin:
		return &b.Social.Linkedin
	case BrandFacebook:
		return &b.Social.Facebook
	case BrandYoutube:
		return &b.Social.Youtube
	case BrandInstagram:
		return &b.Social.Instagram
	case BrandPinterest:
		return &b.Social.Pinterest
	}
	panic("actors: unknown brand field " + string(f))
}

func (w *workspace) toggleTakeOver(m *ToggleTakeOver) (*storage.Brand, error) {
	b, err := w.s.Store.Brand(w.t)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, errs.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if !b.TakeOverBranding && !Plans[m.Plan].TakeOverBrand {
		return nil, &errs.PlanError{Message: "take-over branding needs the pro plan or higher; the workspace is on the " + m.Plan + " plan"}
	}
	now := w.s.now()
	b.TakeOverBranding, b.UpdatedAt = !b.TakeOverBranding, now
	batch := w.s.Store.NewBatch()
	if err := batch.PutBrand(b); err != nil {
		batch.Close()
		return nil, err
	}
	return b, batch.Commit()
}

// SaveBrand creates or updates a tenant's brand.
func (s *System) SaveBrand(t storage.Tenant, m *SaveBrand) (*BrandSaved, error) {
	return askT[*BrandSaved](s, s.workspace(t), m)
}

// ToggleTakeOver flips a tenant's take-over branding.
func (s *System) ToggleTakeOver(t storage.Tenant, plan string) (*storage.Brand, error) {
	return askT[*storage.Brand](s, s.workspace(t), &ToggleTakeOver{Plan: plan})
}
