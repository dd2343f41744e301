package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html/template"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"flipbook/api"
	"flipbook/errs"
	"flipbook/httpapi/viewer"
	"flipbook/search"
	"flipbook/storage"
)

// Search engines and readers without JavaScript (issue 28): the text of a book's first pages in
// the viewer page, a server-rendered page per book page (/view/{book}/page/{n}) and the noindex
// rules; then the viewer's text and search endpoints, and the sitemaps. docs/VIEWER.md "Text
// without JavaScript" and docs/DECISIONS.md "Search engines and the no-JavaScript viewer
// (issue 28)" say what and why.

// Bounds of what the pages carry.
const (
	seoTextPages     = 3        // pages whose text the viewer page carries
	seoTextBytes     = 24 << 10 // at most this much of their text
	descriptionRunes = 160      // <meta name="description">
	altRunes         = 125      // an image's alt text
	headingRunes     = 80       // a one-line block up to this long reads as a heading
	seoCacheControl  = "public, max-age=300"
	robotsNoIndex    = "noindex" // X-Robots-Tag and <meta name="robots">
)

// noindexReason is why search engines must not index a book's pages ("" when they may): a test
// book, a gated one (email access list), an unlisted one (pdf_privacy_status other than
// "public"), one only meant to be read where it is embedded (embed domains), one past its
// billing grace (the viewer shows "expired"), or one not published (draft, scheduled, past
// expires_at: those pages are 404s).
func noindexReason(b *storage.Book, now time.Time) string {
	switch {
	case !shownPublicly(b, now):
		return "not published"
	case b.Mode == storage.ModeTest:
		return "test mode"
	case b.Settings.EODEnabled:
		return "gated"
	case unlisted(b):
		return "unlisted"
	case b.Settings.DomainsEnabled:
		return "embed only"
	case billingExpired(b, now):
		return "expired"
	}
	return ""
}

// unlisted reports whether a book's privacy (pdf_privacy_status, free text) asks for anything
// but public: only no value and "public" are listed.
func unlisted(b *storage.Book) bool {
	p := strings.ToLower(strings.TrimSpace(deref(b.Settings.Privacy)))
	return p != "" && p != "public"
}

// setNoIndex tells search engines not to index the answer.
func setNoIndex(ctx *fasthttp.RequestCtx) { ctx.Response.Header.Set("X-Robots-Tag", robotsNoIndex) }

// textBlocks splits a page's text into blocks (separated by blank lines), each block's lines
// joined by spaces; a block of one short line that does not end a sentence is a heading.
func textBlocks(text string) []viewer.Block {
	var out []viewer.Block
	for _, raw := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		t := strings.Join(strings.Fields(raw), " ")
		if t == "" {
			continue
		}
		oneLine := !strings.Contains(strings.TrimSpace(raw), "\n")
		last, _ := utf8.DecodeLastRuneInString(t)
		heading := oneLine && utf8.RuneCountInString(t) <= headingRunes && !strings.ContainsRune(".,;:!?", last) &&
			strings.IndexFunc(t, unicode.IsLetter) >= 0
		out = append(out, viewer.Block{Heading: heading, Text: t})
	}
	return out
}

// summary is text on one line, cut at a word boundary to at most n runes ("…" when cut).
func summary(text string, n int) string {
	t := strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(t) <= n {
		return t
	}
	runes, end, space := 0, len(t), 0
	for i := range t {
		if runes == n-1 {
			end = i
			break
		}
		if t[i] == ' ' {
			space = i
		}
		runes++
	}
	if space > 0 {
		end = space
	}
	return t[:end] + "…"
}

// pagePath is the address of a book page's own page; viewerPath the viewer's.
func pagePath(rid string, n int) string { return "/view/" + rid + "/page/" + strconv.Itoa(n) }
func viewerPath(rid string) string      { return "/view/" + rid }

// pageText reads the stored text of a page, nil when it has none.
func (s *Service) pageText(b *storage.Book, n int) (*storage.PageText, error) {
	pt, err := s.Store.PageText(b.Tenant(), b.RandomID, n)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, nil
	}
	return pt, err
}

// viewerIndexing is what the viewer page of a book shows without JavaScript and tells search
// engines: the text of its first pages (capped at seoTextBytes; none for a gated or expired
// book), links to every page's own page, a description, the canonical address and JSON-LD.
func (s *Service) viewerIndexing(b *storage.Book, now time.Time) (viewer.Indexing, error) {
	ix := viewer.Indexing{Canonical: s.previewURL(b.RandomID), NoIndex: noindexReason(b, now) != ""}
	if billingExpired(b, now) || b.PageImagesStatus != storage.PagesReady {
		return ix, nil
	}
	for n := 1; n <= b.PageCount; n++ {
		ix.Pages = append(ix.Pages, viewer.PageLink{Number: n, URL: pagePath(b.RandomID, n)})
	}
	first := ""
	if !b.Settings.EODEnabled { // a gated book's text is for readers who passed the gate
		budget := seoTextBytes
		for n := 1; n <= min(seoTextPages, b.PageCount) && budget > 0; n++ {
			pt, err := s.pageText(b, n)
			if err != nil {
				return ix, err
			}
			if pt == nil || strings.TrimSpace(pt.Text) == "" {
				continue
			}
			if first == "" {
				first = pt.Text
			}
			sec := viewer.Section{Number: n, URL: pagePath(b.RandomID, n)}
			sec.Blocks, budget = capBlocks(textBlocks(pt.Text), budget)
			ix.Sections = append(ix.Sections, sec)
		}
		ix.Description = bookDescription(b, first)
	}
	ix.JSONLD = jsonLD(s.bookLD(b, ix.Description))
	return ix, nil
}

// capBlocks keeps blocks up to budget bytes of text (the last one cut on a rune boundary) and
// returns what is left of the budget.
func capBlocks(blocks []viewer.Block, budget int) ([]viewer.Block, int) {
	for i := range blocks {
		if len(blocks[i].Text) <= budget {
			budget -= len(blocks[i].Text)
			continue
		}
		t := blocks[i].Text[:budget]
		for len(t) > 0 && !utf8.ValidString(t) {
			t = t[:len(t)-1]
		}
		blocks[i].Text = t + "…"
		return blocks[:i+1], 0
	}
	return blocks, budget
}

// bookDescription is the book's description, else the start of its first page's text.
func bookDescription(b *storage.Book, firstText string) string {
	if d := strings.TrimSpace(deref(b.Description)); d != "" {
		return summary(d, descriptionRunes)
	}
	return summary(firstText, descriptionRunes)
}

// jsonLD encodes a schema.org object for a <script type="application/ld+json"> element:
// encoding/json escapes "<", ">" and "&", so the text cannot end the element.
func jsonLD(v any) template.JS {
	out, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return template.JS(out)
}

// bookLD is the schema.org Book a flipbook is: its viewer is the Book's URL, each page's own
// page a WebPage that isPartOf it (pageLD).
func (s *Service) bookLD(b *storage.Book, description string) map[string]any {
	u := s.previewURL(b.RandomID)
	ld := map[string]any{"@context": "https://schema.org", "@type": "Book", "@id": u, "url": u, "name": b.Name,
		"bookFormat": "https://schema.org/EBook", "dateModified": b.UpdatedAt.UTC().Format(time.RFC3339)}
	if b.PageCount > 0 {
		ld["numberOfPages"] = b.PageCount
	}
	if description != "" {
		ld["description"] = description
	}
	if b.Thumbnail != "" && !b.Settings.EODEnabled { // a gated book shows nothing of its pages
		ld["image"] = s.fileURL(b.RandomID, b.Thumbnail)
	}
	if b.PublishedDate != nil {
		ld["datePublished"] = b.PublishedDate.UTC().Format(time.RFC3339)
	}
	if name := s.brandForViewer(b).name; name != "" {
		ld["publisher"] = map[string]any{"@type": "Organization", "name": name}
	}
	return ld
}

// pageLD is the schema.org WebPage of a book page's own page: its image, its place in the Book
// (position, isPartOf).
func (s *Service) pageLD(b *storage.Book, n int, img *storage.Page, description string) map[string]any {
	u := s.publicURL + pagePath(b.RandomID, n)
	book := s.bookLD(b, "")
	delete(book, "@context")
	ld := map[string]any{"@context": "https://schema.org", "@type": "WebPage", "@id": u, "url": u,
		"name": b.Name + ", page " + strconv.Itoa(n), "position": n, "isPartOf": book}
	if description != "" {
		ld["description"] = description
	}
	if img != nil {
		ld["primaryImageOfPage"] = map[string]any{"@type": "ImageObject", "contentUrl": s.fileURL(b.RandomID, img.File),
			"width": img.Width, "height": img.Height}
	}
	return ld
}

// viewTextPage is GET /view/{book}/page/{page}: a page of the book on a page of its own, with
// its image and its text, for search engines and readers without JavaScript. A gated book's
// page says who may read it and shows neither; an expired one says so.
func (s *Service) viewTextPage(ctx *fasthttp.RequestCtx) {
	now := time.Now().UTC()
	rid, _ := ctx.UserValue("book").(string)
	b, err := s.publicBook(rid, now)
	if err != nil {
		s.viewerNotFound(ctx)
		return
	}
	n, err := strconv.Atoi(ctx.UserValue("page").(string))
	if err != nil || n < 1 || n > b.PageCount || b.PageImagesStatus != storage.PagesReady {
		s.pageNotFound(ctx, b)
		return
	}
	csp, err := s.frameAncestors(b)
	if err != nil {
		s.writeError(ctx, api.ErrInternal())
		return
	}
	lang := readerLang(ctx)
	data, err := s.textPageData(b, n, now, lang)
	if errors.Is(err, errs.ErrNotFound) {
		s.pageNotFound(ctx, b)
		return
	}
	if err != nil {
		s.log.Error("text page", "book", rid, "page", n, "err", err)
		s.writeError(ctx, api.ErrInternal())
		return
	}
	var buf bytes.Buffer
	if err := viewer.TextPage.Execute(&buf, viewer.LocalTextPage{TextPageData: data, L: lang}); err != nil {
		s.log.Error("render text page", "err", err)
		s.writeError(ctx, api.ErrInternal())
		return
	}
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", csp)
	h.Set("Cache-Control", seoCacheControl)
	h.Set("Vary", "Accept-Language") // the page's own words (readerLang)
	if b.Settings.EODEnabled {
		h.Set("Cache-Control", "no-store")
	}
	if data.NoIndex {
		setNoIndex(ctx)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(buf.Bytes())
}

// textPageData is what page n's own page shows (errs.ErrNotFound when the book has no such
// page image).
func (s *Service) textPageData(b *storage.Book, n int, now time.Time, lang viewer.Lang) (viewer.TextPageData, error) {
	d := viewer.TextPageData{BookTitle: b.Name, Number: n, Count: b.PageCount, TestMode: b.Mode == storage.ModeTest,
		ViewerURL: viewerPath(b.RandomID) + "#page=" + strconv.Itoa(n)}
	d.Canonical, d.NoIndex = s.publicURL+pagePath(b.RandomID, n), noindexReason(b, now) != ""
	if n > 1 {
		d.Prev = pagePath(b.RandomID, n-1)
	}
	if n < b.PageCount {
		d.Next = pagePath(b.RandomID, n+1)
	}
	if b.Settings.Background != nil && safeCSSColor(*b.Settings.Background) {
		d.Background = *b.Settings.Background
	}
	switch {
	case b.Settings.EODEnabled:
		d.Notice, d.NoticeText = lang.T("gated_title"), lang.T("gated_text")
		d.JSONLD = jsonLD(s.pageLD(b, n, nil, ""))
		return d, nil
	case billingExpired(b, now):
		d.Notice, d.NoticeText = lang.T("expired_title"), lang.T("expired_text")
		return d, nil
	}
	pages, err := s.Store.Pages(b.Tenant(), b.RandomID)
	if err != nil {
		return d, err
	}
	if n > len(pages) {
		return d, errs.ErrNotFound
	}
	img := pages[n-1]
	d.Image, d.Width, d.Height = bookFilePath(b, img.File, ""), img.Width, img.Height
	pt, err := s.pageText(b, n)
	if err != nil {
		return d, err
	}
	d.Alt = lang.T("textpage_caption", "n", n, "title", b.Name)
	if pt != nil && strings.TrimSpace(pt.Text) != "" {
		d.Blocks = textBlocks(pt.Text)
		d.Description = summary(pt.Text, descriptionRunes)
		d.Alt = lang.T("textpage_alt", "n", n, "text", summary(pt.Text, altRunes))
	}
	d.JSONLD = jsonLD(s.pageLD(b, n, &img, d.Description))
	return d, nil
}

// pageNotFound is the 404 of a page a book does not have, in the viewer's style.
func (s *Service) pageNotFound(ctx *fasthttp.RequestCtx, b *storage.Book) {
	ctx.SetStatusCode(404)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("Vary", "Accept-Language")
	setNoIndex(ctx)
	var buf bytes.Buffer
	_ = notFoundPage.Execute(&buf, map[string]any{"Title": b.Name, "Viewer": viewerPath(b.RandomID), "Count": b.PageCount,
		"L": readerLang(ctx)})
	ctx.SetBody(buf.Bytes())
}

var notFoundPage = template.Must(template.New("nopage").Parse(`<!doctype html><html lang="{{.L}}"><head><meta charset="utf-8">` +
	`<meta name="robots" content="noindex"><title>{{.L.T "nopage_title"}}</title></head>` +
	`<body style="font-family:system-ui;text-align:center;padding:4em"><h1>{{.L.T "nopage"}}</h1>` +
	`<p>{{.L.T "nopage_text" "title" .Title "total" .Count}} <a href="{{.Viewer}}">{{.L.T "open_flipbook"}}</a></p></body></html>`))

// etagOf is a strong validator of an answer's bytes.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}

// The viewer's text layer and search (docs/VIEWER.md "Text and search for the viewer").

// Bounds of the viewer's text and search answers.
const (
	textSpanMax         = 20  // pages per GET /view/{book}/text
	viewerHitsMax       = 500 // pages listed per search
	viewerBoxesMax      = 200 // highlighted words per page
	viewerSnippetRadius = 8   // words of a snippet either side of the first match
	readerTextCache     = "public, max-age=300"
	gatedTextCache      = "private, no-cache" // revalidated (ETag): access can be withdrawn
)

// readerBook resolves the book of a viewer text request and checks that the reader may see its
// pages now, by the rules of its page images (fileAccess): published, not past expires_at,
// billing not lapsed, and for a gated book a reader token (X-Reader-Token or ?token=) that the
// access list still covers. It also applies the per-IP limit of the reader routes, and returns
// how caches may keep the answer.
func (s *Service) readerBook(ctx *fasthttp.RequestCtx, now time.Time) (*storage.Book, string, *api.Error) {
	if s.limCollect != nil {
		if d := s.limCollect.Allow(ctx.RemoteIP().String(), now); !d.Allowed {
			return nil, "", api.TooMany(d, "too many requests from this address (limit "+strconv.Itoa(d.Limit)+" per minute)")
		}
	}
	rid, _ := ctx.UserValue("book").(string)
	b, err := s.publicBook(rid, now)
	if err != nil || billingExpired(b, now) {
		return nil, "", errBookGone
	}
	if !b.Settings.EODEnabled {
		return b, readerTextCache, nil
	}
	if _, ok, err := s.verifyReader(readerToken(ctx), b, now); err != nil {
		return nil, "", api.ErrInternal()
	} else if !ok {
		return nil, "", errGate
	}
	return b, gatedTextCache, nil
}

// writeReaderJSON answers {"data", "meta"} with the cache policy, a strong ETag (a matching
// If-None-Match is a 304) and noindex: the JSON is for the viewer, not for search results.
func (s *Service) writeReaderJSON(ctx *fasthttp.RequestCtx, cache string, data, meta any) {
	body, err := respJSON.Marshal(struct {
		Data any `json:"data"`
		Meta any `json:"meta,omitempty"`
	}{data, meta})
	if err != nil {
		s.writeError(ctx, api.ErrInternal())
		return
	}
	h := &ctx.Response.Header
	etag := etagOf(body)
	h.Set("Cache-Control", cache)
	h.Set("ETag", etag)
	h.Set("Vary", "X-Reader-Token")
	h.Set("X-Content-Type-Options", "nosniff")
	setNoIndex(ctx)
	if inm := ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 && bytes.Contains(inm, []byte(etag)) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// readerDenied answers a refused viewer text request (never cached).
func (s *Service) readerDenied(ctx *fasthttp.RequestCtx, e *api.Error) {
	ctx.Response.Header.Set("Cache-Control", "no-store")
	setNoIndex(ctx)
	s.writeError(ctx, e)
}

// readerPageText is a page's text for the viewer: its words with their boxes in fractions of
// the page (0..1, origin top left), in reading order.
type readerPageText struct {
	Page   int            `json:"page"`
	Text   string         `json:"text"`
	Words  []storage.Word `json:"words"`
	Source string         `json:"source,omitempty"`
}

// viewText is GET /view/{book}/text?from=N&to=M: the text and words of pages N..M (at most
// textSpanMax; to defaults to from, from to 1; a to past the last page is the last page).
func (s *Service) viewText(ctx *fasthttp.RequestCtx) {
	now := time.Now().UTC()
	b, cache, denied := s.readerBook(ctx, now)
	if denied != nil {
		s.readerDenied(ctx, denied)
		return
	}
	from, to, bad := pageSpan(ctx.QueryArgs())
	if bad != nil {
		s.readerDenied(ctx, bad)
		return
	}
	if b.PageImagesStatus != storage.PagesReady || from > b.PageCount {
		s.readerDenied(ctx, api.ErrNotFound("page"))
		return
	}
	to = min(to, b.PageCount)
	out := make([]readerPageText, 0, to-from+1)
	for n := from; n <= to; n++ {
		pt, err := s.pageText(b, n)
		if err != nil {
			s.readerDenied(ctx, api.ErrInternal())
			return
		}
		p := readerPageText{Page: n, Words: []storage.Word{}}
		if pt != nil {
			p.Text, p.Source = pt.Text, pt.Source
			if len(pt.Words) > 0 {
				p.Words = pt.Words
			}
		}
		out = append(out, p)
	}
	s.writeReaderJSON(ctx, cache, out, map[string]any{"page_count": b.PageCount, "from": from, "to": to})
}

// pageSpan reads from and to: integers, 1 <= from <= to, to - from < textSpanMax.
func pageSpan(args *fasthttp.Args) (from, to int, bad *api.Error) {
	num := func(name string, def int) (int, bool) {
		v := args.Peek(name)
		if len(v) == 0 {
			return def, true
		}
		n, err := strconv.Atoi(string(v))
		return n, err == nil && n >= 1 && n <= 1<<20
	}
	from, ok := num("from", 1)
	if !ok {
		return 0, 0, api.FieldError("from", "must be a page number (an integer from 1)")
	}
	if to, ok = num("to", from); !ok || to < from {
		return 0, 0, api.FieldError("to", "must be a page number at least from")
	}
	if to-from >= textSpanMax {
		return 0, 0, api.FieldError("to", "at most "+strconv.Itoa(textSpanMax)+" pages at a time")
	}
	return from, to, nil
}

// viewerBox is a highlighted word's box, in fractions of the page.
type viewerBox struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// viewerHit is a page that matches a search: a snippet of its text around the first match, and
// the boxes of every matching word.
type viewerHit struct {
	Page    int         `json:"page"`
	Snippet string      `json:"snippet"`
	Boxes   []viewerBox `json:"boxes"`
}

// viewSearch is GET /view/{book}/search?q=: the pages whose text matches q, in page order
// (viewerMatch says how words match).
func (s *Service) viewSearch(ctx *fasthttp.RequestCtx) {
	now := time.Now().UTC()
	b, cache, denied := s.readerBook(ctx, now)
	if denied != nil {
		s.readerDenied(ctx, denied)
		return
	}
	q := string(ctx.QueryArgs().Peek("q"))
	query, bad := viewerQuery(q)
	if bad != nil {
		s.readerDenied(ctx, bad)
		return
	}
	hits, total := []viewerHit{}, 0
	err := s.Store.EachPageText(b.Tenant(), b.RandomID, func(pt *storage.PageText) error {
		if pt.Page > b.PageCount {
			return errPastLastPage
		}
		if h, ok := viewerMatch(pt, query); ok {
			total++
			if len(hits) < viewerHitsMax {
				hits = append(hits, h)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPastLastPage) {
		s.readerDenied(ctx, api.ErrInternal())
		return
	}
	s.writeReaderJSON(ctx, cache, hits, map[string]any{"query": q, "total": total, "truncated": total > len(hits)})
}

// errPastLastPage stops a walk over a book's page texts at its last page.
var errPastLastPage = errors.New("past the last page")

// viewerQuery reads a viewer search's q with the service's one matching (package search: case
// and accents folded, word prefixes, every word on the page), as a 422 on q when it is unusable.
func viewerQuery(q string) (search.Query, *api.Error) {
	switch {
	case strings.TrimSpace(q) == "":
		return search.Query{}, api.FieldError("q", "is required")
	case !utf8.ValidString(q):
		return search.Query{}, api.FieldError("q", "must be UTF-8 text")
	}
	parsed, err := search.Parse(q)
	if err != nil {
		return search.Query{}, api.FieldError("q", err.Error())
	}
	return parsed, nil
}

// viewerMatch matches a page's words against a query (search.Query.Find): the page is a hit when
// each term begins one of its words, folded alike ("eleph" finds "Éléphants"); every word a
// term matches is highlighted, and the snippet is the words around the first of them.
func viewerMatch(pt *storage.PageText, q search.Query) (viewerHit, bool) {
	words := make([]string, len(pt.Words))
	for i, w := range pt.Words {
		words[i] = w.Text
	}
	sn, matched := q.Find(words, viewerSnippetRadius)
	if matched != q.All() {
		return viewerHit{}, false
	}
	hit := viewerHit{Page: pt.Page, Snippet: sn.Text, Boxes: make([]viewerBox, 0, min(len(sn.Hits), viewerBoxesMax))}
	for _, i := range sn.Hits[:min(len(sn.Hits), viewerBoxesMax)] {
		w := pt.Words[i]
		hit.Boxes = append(hit.Boxes, viewerBox{X: w.X, Y: w.Y, W: w.W, H: w.H})
	}
	return hit, true
}

// Sitemaps (sitemaps.org 0.9): GET /sitemaps/{workspace_slug}.xml.

// Bounds of a sitemap.
const (
	sitemapURLsMax  = 50_000  // the protocol's limit per file
	sitemapBooksMax = 100_000 // published books examined
	sitemapBatch    = 500
	sitemapNS       = "http://www.sitemaps.org/schemas/sitemap/0.9"
	sitemapCache    = "public, max-age=3600"
)

type sitemapURLSet struct {
	XMLName xml.Name     `xml:"urlset"`
	NS      string       `xml:"xmlns,attr"`
	URLs    []sitemapURL `xml:"url"`
}

type sitemapURL struct {
	Loc     string `xml:"loc"`
	LastMod string `xml:"lastmod,omitempty"`
}

// serveSitemap is GET /sitemaps/{file}, file being a workspace's slug and ".xml": the viewer
// and every page's own page of the workspace's books that search engines may index
// (noindexReason), newest book first, up to sitemapURLsMax addresses (a book is listed whole or
// not at all).
func (s *Service) serveSitemap(ctx *fasthttp.RequestCtx) {
	name, _ := ctx.UserValue("file").(string)
	slug, ok := sitemapSlug(name)
	var ws int64
	var err error
	if ok {
		ws, err = s.Store.WorkspaceIDBySlug(slug)
	}
	if !ok || err != nil {
		if err != nil && !errors.Is(err, errs.ErrNotFound) {
			s.writeError(ctx, api.ErrInternal())
			return
		}
		ctx.Response.Header.Set("Cache-Control", "no-store")
		s.writeError(ctx, api.ErrNotFound("sitemap"))
		return
	}
	// Making a sitemap reads up to sitemapBooksMax books, so it counts against the address's
	// limit of the reader routes.
	now := time.Now().UTC()
	if s.limCollect != nil {
		if d := s.limCollect.Allow(ctx.RemoteIP().String(), now); !d.Allowed {
			s.writeError(ctx, api.TooMany(d, "too many requests from this address (limit "+strconv.Itoa(d.Limit)+" per minute)"))
			return
		}
	}
	urls, err := s.sitemapURLs(storage.Tenant{Workspace: ws, Mode: storage.ModeLive}, now)
	if err != nil {
		s.log.Error("sitemap", "workspace", ws, "err", err)
		s.writeError(ctx, api.ErrInternal())
		return
	}
	out, err := xml.Marshal(sitemapURLSet{NS: sitemapNS, URLs: urls})
	if err != nil {
		s.writeError(ctx, api.ErrInternal())
		return
	}
	body := append([]byte(xml.Header), out...)
	etag := etagOf(body)
	h := &ctx.Response.Header
	h.Set("Cache-Control", sitemapCache)
	h.Set("ETag", etag)
	h.Set("X-Content-Type-Options", "nosniff")
	if inm := ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 && bytes.Contains(inm, []byte(etag)) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	ctx.SetContentType("application/xml; charset=utf-8")
	ctx.SetBody(body)
}

// sitemapSlug is the workspace slug a sitemap's file name ("<slug>.xml") names, in lower case.
func sitemapSlug(file string) (string, bool) {
	slug, ok := strings.CutSuffix(file, ".xml")
	return strings.ToLower(slug), ok && slug != "" && len(slug) <= 255
}

// sitemapURLs lists the indexable books of a tenant, newest first: each book's viewer, then its
// pages' own pages.
func (s *Service) sitemapURLs(t storage.Tenant, now time.Time) ([]sitemapURL, error) {
	urls := []sitemapURL{}
	q := storage.BookQuery{Status: storage.StatusPublish, Sort: storage.SortCreated, Desc: true, Limit: sitemapBatch}
	for seen := 0; seen < sitemapBooksMax; {
		page, err := s.Store.ListBooks(t, q)
		if err != nil {
			return nil, err
		}
		for _, b := range page.Books {
			seen++
			if noindexReason(b, now) != "" || b.PageImagesStatus != storage.PagesReady || b.PageCount < 1 {
				continue
			}
			if len(urls)+1+b.PageCount > sitemapURLsMax {
				return urls, nil
			}
			mod := b.UpdatedAt.UTC().Format(time.RFC3339)
			urls = append(urls, sitemapURL{Loc: s.previewURL(b.RandomID), LastMod: mod})
			for n := 1; n <= b.PageCount; n++ {
				urls = append(urls, sitemapURL{Loc: s.publicURL + pagePath(b.RandomID, n), LastMod: mod})
			}
		}
		if !page.HasMore {
			break
		}
		q.After = append([]byte(nil), page.Last...)
	}
	return urls, nil
}
