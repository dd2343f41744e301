package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"regexp"

	"flipbook/actors"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/storage"
)

// Brand (spec §2.4, §4.6): one per workspace and mode. Writes take multipart/form-data (the
// logo is a file part) or JSON; decisions in docs/DECISIONS.md, "Brand".

// logoTypes are the accepted logo formats, by content, with their file extension. SVG is not
// accepted: it can carry scripts and is served from the service's own origin.
var logoTypes = map[string]string{"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}

var hexColor = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// logoURL is the public URL of a brand's logo, or nil.
func (s links) logoURL(b *storage.Brand) *string {
	if b.Logo == "" {
		return nil
	}
	u := s.publicURL + "/files/" + storage.BrandFolder(b.Tenant()) + "/" + b.Logo
	return &u
}

func (s links) brandJSON(b *storage.Brand, ws *storage.Workspace) api.Brand {
	c, so := b.Color, b.Social
	return api.Brand{
		ID: b.ID, WorkspaceID: b.Workspace, CompanyName: b.CompanyName, Logo: s.logoURL(b),
		ContactNumber: b.ContactNumber, WebsiteURL: b.WebsiteURL, GoogleAnalytics: b.GoogleAnalytics,
		AboutBrand: b.AboutBrand, TakeOverBranding: b.TakeOverBranding,
		BrandColor: api.BrandColor{ID: c.ID, BrandID: b.ID, Primary: c.Primary, Secondary: c.Secondary,
			Tertiary: c.Tertiary, CreatedAt: fmtTime(c.CreatedAt), UpdatedAt: fmtTime(c.UpdatedAt)},
		BrandSocialMedia: api.BrandSocial{ID: so.ID, BrandID: b.ID, Twitter: so.Twitter, Linkedin: so.Linkedin,
			Facebook: so.Facebook, Youtube: so.Youtube, Instagram: so.Instagram, Pinterest: so.Pinterest,
			CreatedAt: fmtTime(so.CreatedAt), UpdatedAt: fmtTime(so.UpdatedAt)},
		Workspace: wsJSON(ws), CreatedAt: fmtTime(b.CreatedAt), UpdatedAt: fmtTime(b.UpdatedAt),
	}
}

func brandMeta(ws *storage.Workspace) api.BrandMeta {
	return api.BrandMeta{Plan: ws.Plan, TakeOverBrandingAvailable: actors.Plans[ws.Plan].TakeOverBrand}
}

// brandService runs the brand operations (spec §4.6): the brand in the store, changed through
// the accounts actor; logos in the blob store.
type brandService struct {
	links
	Store  *storage.Store
	Actors *actors.System
	log    *slog.Logger
}

func (s *brandService) GetBrand(r *api.Request) (*api.Reply[api.BrandOrNull, api.BrandMeta], error) {
	b, err := s.Store.Brand(r.Auth.Tenant)
	if errors.Is(err, errs.ErrNotFound) {
		return api.With(api.BrandOrNull{}, brandMeta(r.Auth.Workspace)), nil
	}
	if err != nil {
		return nil, err
	}
	brand := s.brandJSON(b, r.Auth.Workspace)
	return api.With(api.BrandOrNull{Brand: &brand}, brandMeta(r.Auth.Workspace)), nil
}

func (s *brandService) CreateBrand(r *api.Request, in *api.BrandCreate) (*api.Data[api.BrandSaved], error) {
	saved, err := s.saveBrand(r, &actors.SaveBrand{Create: true}, actors.Val(in.CompanyName), &in.BrandProfile)
	if err != nil {
		return nil, err
	}
	return &api.Data[api.BrandSaved]{Status: 201, Data: saved}, nil
}

func (s *brandService) UpdateBrand(r *api.Request, in *api.BrandUpdate) (*api.Reply[api.BrandSaved, api.BrandMeta], error) {
	saved, err := s.saveBrand(r, &actors.SaveBrand{ID: in.ID}, in.CompanyName, &in.BrandProfile)
	if err != nil {
		return nil, err
	}
	return api.With(saved, brandMeta(r.Auth.Workspace)), nil
}

// saveBrand creates or updates the brand m with the fields sent.
func (s *brandService) saveBrand(r *api.Request, m *actors.SaveBrand, company actors.Opt[string], p *api.BrandProfile) (api.BrandSaved, error) {
	m.Fields = map[actors.BrandField]*string{}
	sent := p.Fields()
	sent[actors.BrandCompanyName] = company
	v := api.Validation{}
	for _, f := range actors.BrandFields {
		o := sent[f]
		if !o.Set {
			continue
		}
		val := o.V
		if val == "" { // sent empty (or null): cleared
			m.Fields[f] = nil
			continue
		}
		switch f {
		case actors.BrandPrimaryColor, actors.BrandSecondaryColor, actors.BrandTertiaryColor:
			if !hexColor.MatchString(val) {
				v.Add(string(f), "must be a hex colour such as #1a2b3c")
			}
		}
		m.Fields[f] = &val
	}
	var logo []byte
	var ext string
	if fs := p.File; len(fs) == 1 {
		var msg string
		logo, ext, msg = readLogo(fs[0])
		if msg != "" {
			v.Add("file", msg)
		}
	}
	if err := v.Err(); err != nil {
		return api.BrandSaved{}, err
	}
	t := r.Auth.Tenant
	if logo != nil {
		name, err := s.Store.Blobs.Put(storage.BrandFolder(t), logo, ext)
		if err != nil {
			return api.BrandSaved{}, err
		}
		m.Logo = name
	}
	saved, err := s.Actors.SaveBrand(t, m)
	if err != nil {
		if m.Logo != "" {
			s.dropLogo(t, m.Logo)
		}
		return api.BrandSaved{}, notFoundAs(err, "brand")
	}
	if saved.OldLogo != "" {
		if err := s.Store.Blobs.Remove(storage.BrandFolder(t), saved.OldLogo); err != nil {
			s.log.Warn("remove replaced logo", "err", err)
		}
	}
	return api.BrandSaved{Brand: s.brandJSON(saved.Brand, r.Auth.Workspace)}, nil
}

// dropLogo removes a logo file stored for a brand write that was refused (a second POST, a PUT
// of another brand id), unless the brand uses it (files are named by their content): each
// refused write left up to 2 MB in the brand folder for good (found by a review).
func (s *brandService) dropLogo(t storage.Tenant, name string) {
	b, err := s.Store.Brand(t)
	if (err == nil && b.Logo == name) || (err != nil && !errors.Is(err, errs.ErrNotFound)) {
		return
	}
	if err := s.Store.Blobs.Remove(storage.BrandFolder(t), name); err != nil {
		s.log.Warn("remove refused logo", "err", err)
	}
}

// readLogo reads and checks an uploaded logo: its content decides its type, whatever its name
// or part header says. It returns a message for the field when the file is not acceptable.
func readLogo(fh *multipart.FileHeader) ([]byte, string, string) {
	if fh.Size > api.MaxLogoBytes {
		return nil, "", "must not be larger than 2048 kilobytes"
	}
	f, err := fh.Open()
	if err != nil {
		return nil, "", "could not be read"
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, api.MaxLogoBytes+1))
	if err != nil {
		return nil, "", "could not be read"
	}
	if len(data) > api.MaxLogoBytes {
		return nil, "", "must not be larger than 2048 kilobytes"
	}
	ext, ok := logoTypes[http.DetectContentType(data)]
	if !ok || len(data) == 0 {
		return nil, "", "must be a PNG, JPEG, GIF or WebP image"
	}
	// The bytes must be the image they claim to be, of a size a viewer header can show: the
	// header is read first (a claimed 100,000² logo is refused before anything is decoded),
	// then the whole image (actors/convert, which httpapi imports, registers GIF and WebP).
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "", "is not a readable image"
	}
	if cfg.Width > MaxLogoSide || cfg.Height > MaxLogoSide || cfg.Width < 1 || cfg.Height < 1 {
		return nil, "", fmt.Sprintf("must be at most %d×%d pixels", MaxLogoSide, MaxLogoSide)
	}
	if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
		return nil, "", "is not a readable image"
	}
	return data, ext, ""
}

// MaxLogoSide bounds a logo's width and height.
const MaxLogoSide = 4096

func (s *brandService) ToggleTakeOverBranding(r *api.Request) (*api.Data[api.BrandSaved], error) {
	b, err := s.Actors.ToggleTakeOver(r.Auth.Tenant, r.Auth.Workspace.Plan)
	if err != nil {
		return nil, notFoundAs(err, "brand")
	}
	return api.OK(api.BrandSaved{Brand: s.brandJSON(b, r.Auth.Workspace)}), nil
}

// viewerBrand is what the viewer shows of the book's workspace: its brand when take-over
// branding is on (and the plan still has it), else the workspace's name.
type viewerBrand struct {
	takeOver bool
	name     string
	logo     string
	website  string
	color    string
}

func (s *Service) brandForViewer(b *storage.Book) viewerBrand {
	ws, err := s.Store.Workspace(b.Workspace)
	if err != nil {
		return viewerBrand{}
	}
	out := viewerBrand{name: ws.Name}
	br, err := s.Store.Brand(b.Tenant())
	if err != nil || !br.TakeOverBranding || !actors.Plans[ws.Plan].TakeOverBrand {
		return out
	}
	out.takeOver = true
	if br.CompanyName != nil {
		out.name = *br.CompanyName
	}
	if u := s.logoURL(br); u != nil {
		out.logo = *u
	}
	if br.WebsiteURL != nil {
		out.website = *br.WebsiteURL
	}
	if br.Color.Primary != nil && hexColor.MatchString(*br.Color.Primary) {
		out.color = *br.Color.Primary
	}
	return out
}
