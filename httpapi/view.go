package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/api"
	"flipbook/errs"
	"flipbook/httpapi/viewer"
	"flipbook/storage"
)

type viewerPage struct {
	URL    string         `json:"url"`
	Width  int            `json:"width"`
	Height int            `json:"height"`
	Links  []storage.Link `json:"links,omitempty"`
	// SrcSet offers the page's WebP renditions and the page image itself by width (issue 29,
	// docs/VIEWER.md "Page images"), "" until the renditions exist; Placeholder is a data:
	// URL of the page a few pixels wide, shown at once (the first pages only).
	SrcSet      string `json:"srcset,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
}

type viewerConfig struct {
	BookID      string           `json:"book_id"`
	Title       string           `json:"title"`
	Pages       []viewerPage     `json:"pages"`
	Settings    storage.Settings `json:"settings"`
	DocumentURL string           `json:"document_url,omitempty"`
	Gated       bool             `json:"gated"`
	CollectURL  string           `json:"collect_url"`
	AccessURL   string           `json:"access_url"`
	PagesURL    string           `json:"pages_url"`
	TrackedLink string           `json:"tracked_link,omitempty"`
	// Watermark is text drawn across every page; GateError replaces the gate's refusal message;
	// OpenFullscreen asks for full screen at the reader's first gesture.
	Watermark      string `json:"watermark,omitempty"`
	GateError      string `json:"gate_error_message,omitempty"`
	OpenFullscreen bool   `json:"open_fullscreen,omitempty"`
	// Outline is the document's bookmarks (issue 29), the viewer's table of contents; a gated
	// book's comes with its pages, after the gate.
	Outline []storage.OutlineItem `json:"outline,omitempty"`
	// Accessibility (accessibility_enabled) offers the reading mode: the text as HTML.
	Accessibility bool `json:"accessibility_enabled,omitempty"`
	// DownloadMode is how readers may download the PDF (download.go): full, single, spread, "".
	DownloadMode string `json:"download_mode,omitempty"`
	// RTL (reading_direction rtl, issue 29) turns the pages right to left.
	RTL bool `json:"rtl,omitempty"`
}

// viewerPages lists a book's page images (relative URLs, so the viewer works from any host). A
// gated book's URLs carry the reader's token: /files serves them only with it.
func (s *Service) viewerPages(b *storage.Book, token string) ([]viewerPage, error) {
	pages, err := s.Store.Pages(b.Tenant(), b.RandomID)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	out := make([]viewerPage, len(pages))
	for i, p := range pages {
		out[i] = viewerPage{URL: bookFilePath(b, p.File, token), Width: p.Width, Height: p.Height}
		if !s.cfg.NoRenditions {
			out[i].SrcSet, out[i].Placeholder = pageSrcSet(b, &p, token), placeholderURL(p.Placeholder)
		}
		if b.Extra.AutoLinksEnabled {
			out[i].Links = p.Links
		}
	}
	return out, nil
}

// pageSrcSet is the srcset of a page: its renditions by width, then the page image itself at
// its own width; "" when it has no renditions.
func pageSrcSet(b *storage.Book, p *storage.Page, token string) string {
	if len(p.Renditions) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, r := range p.Renditions {
		if r.Width >= p.Width {
			continue
		}
		sb.WriteString(bookFilePath(b, r.File, token) + " " + strconv.Itoa(r.Width) + "w, ")
	}
	sb.WriteString(bookFilePath(b, p.File, token) + " " + strconv.Itoa(p.Width) + "w")
	return sb.String()
}

// placeholderURL is a page placeholder (WebP) as a data: URL, "" for none.
func placeholderURL(webp []byte) string {
	if len(webp) == 0 {
		return ""
	}
	return "data:image/webp;base64," + base64.StdEncoding.EncodeToString(webp)
}

// frameAncestors is the CSP directive of a book: any site, or only the allowlist (with
// subdomains).
func (s *Service) frameAncestors(b *storage.Book) (string, error) {
	if !b.Settings.DomainsEnabled {
		return "frame-ancestors *", nil
	}
	list, err := s.Store.EmbedDomains(b.Tenant(), b.RandomID)
	if err != nil {
		return "", err
	}
	srcs := []string{"'self'"}
	for _, d := range list {
		if api.RegistrableDomain(d.Domain) { // an entry stored before the rule covers nothing
			srcs = append(srcs, d.Domain, "*."+d.Domain)
		}
	}
	return "frame-ancestors " + strings.Join(srcs, " "), nil
}

// viewBook is GET /view/{book}: the page-turning viewer.
func (s *Service) viewBook(ctx *fasthttp.RequestCtx) {
	now := time.Now().UTC()
	rid, _ := ctx.UserValue("book").(string)
	b, err := s.publicBook(rid, now)
	if err != nil {
		s.viewerNotFound(ctx)
		return
	}
	csp, err := s.frameAncestors(b)
	if err != nil {
		s.writeError(ctx, api.ErrInternal())
		return
	}
	cfg := viewerConfig{BookID: b.RandomID, Title: b.Name, Settings: b.Settings, Gated: b.Settings.EODEnabled,
		CollectURL: "/collect", AccessURL: "/view/" + b.RandomID + "/access", PagesURL: "/view/" + b.RandomID + "/pages",
		Pages: []viewerPage{}}
	cfg.Watermark, cfg.GateError = deref(b.Extra.Watermark), deref(b.Extra.MagicLinkErrorMessage)
	cfg.OpenFullscreen = b.Extra.OpenFullscreenByDefault && b.Settings.FullscreenEnabled
	cfg.Accessibility = b.Extra.AccessibilityEnabled
	cfg.DownloadMode = downloadMode(b)
	cfg.RTL = b.Extra.ReadingDirection == "rtl"
	if tl := string(ctx.QueryArgs().Peek("tl")); tl != "" && validSlug(tl) && len(tl) <= 255 {
		cfg.TrackedLink = tl
	}
	if !cfg.Gated { // a gated book's pages and document are listed only to a reader with a token
		if cfg.Pages, err = s.viewerPages(b, ""); err != nil {
			s.writeError(ctx, api.ErrInternal())
			return
		}
		cfg.DocumentURL = documentPath(b, "")
		if cfg.Outline, err = s.Store.Outline(b.Tenant(), b.RandomID); err != nil {
			s.writeError(ctx, api.ErrInternal())
			return
		}
	}
	conf, _ := json.Marshal(cfg)
	brand := s.brandForViewer(b)
	data := viewer.PageData{L: readerLang(ctx),
		Title: b.Name, ConfigJSON: template.JS(conf), TestMode: b.Mode == storage.ModeTest,
		Expired: billingExpired(b, now), Processing: b.PageImagesStatus == storage.PagesProcessing,
		Failed: b.PageImagesStatus == storage.PagesFailed, Brand: brand.name,
		Tools:    !cfg.Gated && b.PageImagesStatus == storage.PagesReady && !billingExpired(b, now),
		TakeOver: brand.takeOver, BrandLogo: brand.logo, BrandURL: brand.website, BrandColor: brand.color,
		MadeWith: b.Extra.MadeWithBadgeEnabled && !brand.takeOver, GateMessage: deref(b.Extra.MagicLinkMessage),
	}
	if data.Tools {
		st := &b.Settings
		data.Shown = viewer.ToolsShown{Fullscreen: st.FullscreenEnabled, Download: cfg.DownloadMode != "",
			Share: st.ShareSocialMedia, Print: !st.CopyrightEnabled, Search: true, Reading: cfg.Accessibility}
	}
	if b.Settings.Background != nil && safeCSSColor(*b.Settings.Background) {
		data.Background = *b.Settings.Background
	}
	if data.SEO, err = s.viewerIndexing(b, now); err != nil { // text without JavaScript (seo.go)
		s.writeError(ctx, api.ErrInternal())
		return
	}
	var buf bytes.Buffer
	if err := viewer.Page.Execute(&buf, data); err != nil {
		s.log.Error("render viewer", "err", err)
		s.writeError(ctx, api.ErrInternal())
		return
	}
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", csp)
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "Accept-Language") // the viewer's words (readerLang)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	if data.SEO.NoIndex {
		setNoIndex(ctx)
	}
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(buf.Bytes())
}

// viewPages is GET /view/{book}/pages: the page list of a gated book for a reader with a token
// (X-Reader-Token header or token query parameter).
func (s *Service) viewPages(ctx *fasthttp.RequestCtx) {
	now := time.Now().UTC()
	rid, _ := ctx.UserValue("book").(string)
	b, err := s.publicBook(rid, now)
	if err != nil {
		s.writeError(ctx, errBookGone)
		return
	}
	tok := ""
	if b.Settings.EODEnabled {
		tok = readerToken(ctx)
		_, ok, err := s.verifyReader(tok, b, now)
		if err != nil {
			s.writeError(ctx, api.ErrInternal())
			return
		}
		if !ok {
			s.writeError(ctx, errGate)
			return
		}
	}
	pages, err := s.viewerPages(b, tok)
	if err != nil {
		s.writeError(ctx, api.ErrInternal())
		return
	}
	outline, err := s.Store.Outline(b.Tenant(), b.RandomID)
	if err != nil {
		s.writeError(ctx, api.ErrInternal())
		return
	}
	data := map[string]any{"pages": pages, "outline": outline}
	if u := documentPath(b, tok); u != "" {
		data["document_url"] = u
	}
	ctx.Response.Header.Set("Cache-Control", "no-store")
	s.renderResult(ctx, &api.Result{Status: 200, Data: data})
}

// errGate answers a gated book's content asked for without a valid reader token.
var errGate = &api.Error{Status: 403, Type: TypeAccessDenied, Message: "pass the email gate first"}

// bookFilePath is the viewer's address of a book file, with the reader token for a gated book.
func bookFilePath(b *storage.Book, name, token string) string {
	u := "/files/" + b.RandomID + "/" + name
	if token != "" {
		u += "?token=" + url.QueryEscape(token)
	}
	return u
}

// documentPath is the address of a book's source document, "" when readers may not download it.
func documentPath(b *storage.Book, token string) string {
	if downloadMode(b) != DownloadFull { // single pages or spreads: only cut by /download
		return ""
	}
	return bookFilePath(b, b.Document, token)
}

func (s *Service) viewerNotFound(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(404)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("Vary", "Accept-Language")
	setNoIndex(ctx)
	var buf bytes.Buffer
	_ = viewerGone.Execute(&buf, map[string]any{"L": readerLang(ctx)})
	ctx.SetBody(buf.Bytes())
}

var viewerGone = template.Must(template.New("gone").Parse(`<!doctype html><html lang="{{.L}}"><head><meta charset="utf-8">` +
	`<meta name="robots" content="noindex"><title>{{.L.T "missing_title"}}</title></head>` +
	`<body style="font-family:system-ui;text-align:center;padding:4em"><h1>{{.L.T "missing"}}</h1>` +
	`<p>{{.L.T "missing_text"}}</p></body></html>`))

// readerLang is the language of the viewer's words for a request: ?lang= when the catalogue has
// it, else Accept-Language, else English (viewer.Pick). Pages that use it vary on
// Accept-Language.
func readerLang(ctx *fasthttp.RequestCtx) viewer.Lang {
	return viewer.Pick(string(ctx.QueryArgs().Peek("lang")), string(ctx.Request.Header.Peek("Accept-Language")))
}

// safeCSSColor accepts colour values that cannot break out of a CSS declaration.
func safeCSSColor(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '#' || c == '(' || c == ')' || c == ',' || c == '.' || c == ' ' || c == '%') {
			return false
		}
	}
	return true
}

// deref is a stored optional text, "" when unset.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
