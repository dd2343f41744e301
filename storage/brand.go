package storage

import (
	"fmt"
	"time"
)

// Brand is a tenant's branding (spec §2.4): at most one per workspace and mode. Its logo is a
// file in the tenant's brand folder of the blob store (BrandFolder).
type Brand struct {
	ID               int64       `json:"id"`
	Workspace        int64       `json:"workspace_id"`
	Mode             Mode        `json:"mode"`
	CompanyName      *string     `json:"company_name"`
	Logo             string      `json:"logo"` // blob name in BrandFolder, "" for none
	ContactNumber    *string     `json:"contact_number"`
	WebsiteURL       *string     `json:"website_url"`
	GoogleAnalytics  *string     `json:"google_analytics"`
	AboutBrand       *string     `json:"about_brand"`
	TakeOverBranding bool        `json:"take_over_branding"`
	Color            BrandColor  `json:"brand_color"`
	Social           BrandSocial `json:"brand_social_media"`
	CreatedAt        time.Time   `json:"created_at"`
	UpdatedAt        time.Time   `json:"updated_at"`
}

// BrandColor is a brand's colours (spec §2.4), CSS hex colours.
type BrandColor struct {
	ID        int64     `json:"id"`
	Primary   *string   `json:"primary_color"`
	Secondary *string   `json:"secondary_color"`
	Tertiary  *string   `json:"tertiary_color"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// BrandSocial is a brand's social media accounts (spec §2.4).
type BrandSocial struct {
	ID        int64     `json:"id"`
	Twitter   *string   `json:"twitter"`
	Linkedin  *string   `json:"linkedin"`
	Facebook  *string   `json:"facebook"`
	Youtube   *string   `json:"youtube"`
	Instagram *string   `json:"instagram"`
	Pinterest *string   `json:"pinterest"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Tenant of the brand.
func (b *Brand) Tenant() Tenant { return Tenant{Workspace: b.Workspace, Mode: b.Mode} }

func brandKey(t Tenant) []byte { return cat(t.prefix(), []byte("brand")) }

// BrandFolder is the blob folder of a tenant's brand files (the logo). Book folders are random
// ids without "-", so the names cannot collide.
func BrandFolder(t Tenant) string { return fmt.Sprintf("brand-%d-%s", t.Workspace, t.Mode.String()) }

// IsBrandFolder reports whether a blob folder holds brand files (kept by the orphan sweep).
func IsBrandFolder(name string) bool { return len(name) > 6 && name[:6] == "brand-" }

// PutBrand stages a tenant's brand.
func (bt *Batch) PutBrand(b *Brand) error { return bt.setJSON(brandKey(b.Tenant()), b) }

// Brand reads a tenant's brand (errs.ErrNotFound when it has none).
func (s *Store) Brand(t Tenant) (*Brand, error) {
	var b Brand
	if err := s.getJSON(brandKey(t), &b); err != nil {
		return nil, err
	}
	return &b, nil
}
