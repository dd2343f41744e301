package httpapi

import (
	"runtime"
	"strconv"
	"sync"

	"flipbook/actors"
	"flipbook/actors/convert"
	"flipbook/storage"
)

// createKonva creates a book from editor content (spec §4.1.3): every page image is decoded and
// checked (422 per bad index), stored as the book's pages, and a thumbnail is stored or made.
func (s *Service) CreateKonva(r *Request) (*Result, error) {
	raws := r.Params["page_images"].([]any)
	pages := make([]*convert.Image, len(raws))
	errs := make([]error, len(raws))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range raws {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			pages[i], errs[i] = convert.DecodeBase64Image(raws[i].(string))
		}(i)
	}
	var thumb *convert.Image
	v := Validation{}
	if t, ok := r.Params["thumbnail"].(string); ok && t != "" {
		var err error
		if thumb, err = convert.DecodeBase64Image(t); err != nil {
			v.Add("thumbnail", err.Error())
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			v.Add("page_images."+strconv.Itoa(i), err.Error())
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}

	b := newBook(r.Str("title"), "konva", r.Str("status"))
	applyKonvaSettings(b, r.Params["settings"])
	b.Settings.Downloadable = false // no source PDF (spec §4.1.3)
	created, err := s.createBookFromImages(r.Auth.Tenant, b, pages, thumb)
	if err != nil {
		return nil, err
	}
	return &Result{Status: 201, Data: s.bookWire(created)}, nil
}

// newBook is a book record with the service's default settings (not yet stored).
func newBook(name, source, status string) *storage.Book {
	if status == "" {
		status = storage.StatusDraft
	}
	return &storage.Book{
		RandomID: actors.NewRandomID(), Name: name, Source: source, Status: status,
		PageImagesStatus: storage.PagesReady,
		Settings:         storage.Settings{FullscreenEnabled: true, SoundEnabled: true, ShareSocialMedia: true, AnimationType: "flip"},
	}
}

// createBookFromImages stores pages (and thumb, or one made from page 1) as b's files and creates
// the book through its workspace actor. On failure the files are removed again.
func (s *Service) createBookFromImages(t storage.Tenant, b *storage.Book, pages []*convert.Image, thumb *convert.Image) (*storage.Book, error) {
	rid := b.RandomID
	ok := false
	defer func() {
		if !ok {
			_ = s.Store.Blobs.DeleteBook(rid)
		}
	}()
	b.Pages = b.Pages[:0]
	for i, p := range pages {
		name, err := s.Store.Blobs.Put(rid, p.Data, p.Ext)
		if err != nil {
			return nil, err
		}
		b.Pages = append(b.Pages, storage.Page{Number: i + 1, File: name, Width: p.Width, Height: p.Height})
	}
	b.PageCount = len(b.Pages)
	var err error
	if thumb != nil {
		b.Thumbnail, err = s.Store.Blobs.Put(rid, thumb.Data, thumb.Ext)
	} else if len(pages) > 0 {
		var data []byte
		if data, err = convert.Thumbnail(pages[0].Img); err == nil {
			b.Thumbnail, err = s.Store.Blobs.Put(rid, data, "jpg")
		}
	}
	if err != nil {
		return nil, err
	}
	created, err := s.Actors.CreateBook(t, b)
	if err != nil {
		return nil, err
	}
	ok = true
	return created, nil
}

func applyKonvaSettings(b *storage.Book, raw any) {
	m, _ := raw.(map[string]any)
	if m == nil {
		return
	}
	boolOf := func(k string, dst *bool) {
		if v, ok := m[k].(bool); ok {
			*dst = v
		}
	}
	strOf := func(k string, dst **string) {
		if v, ok := m[k].(string); ok {
			*dst = &v
		}
	}
	boolOf("allow_fullscreen", &b.Settings.FullscreenEnabled)
	boolOf("flip_sound", &b.Settings.SoundEnabled)
	boolOf("share_social_media", &b.Settings.ShareSocialMedia)
	boolOf("auto_links_enabled", &b.Extra.AutoLinksEnabled)
	boolOf("open_fullscreen_by_default", &b.Extra.OpenFullscreenByDefault)
	if v, ok := m["animation_type"].(string); ok && v != "" {
		b.Settings.AnimationType = v
	}
	strOf("mobile_animation_type", &b.Settings.MobileAnimationType)
	strOf("image_display", &b.Settings.ImageDisplay)
	strOf("background", &b.Settings.Background)
	strOf("pdf_privacy_status", &b.Settings.Privacy)
	if v, ok := m["pdf_password"].(string); ok && v != "" {
		b.Extra.PDFPasswordSalt = []byte(actors.RandomString(16))
		b.Extra.PDFPasswordHash = actors.HashPassword(b.Extra.PDFPasswordSalt, v)
	}
	// eod_enabled and domains_enabled are derived from the access lists: ignored here.
}
