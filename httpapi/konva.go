package httpapi

import (
	"context"
	"errors"
	"fmt"
	"image"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"flipbook/actors"
	"flipbook/actors/convert"
	"flipbook/api"
	"flipbook/storage"
)

// KonvaMaxPixels bounds the pixels of all page images of one editor book together (beside
// convert.MaxPixels for each): the most pages a book may have (250) at the service's own page
// size (1600 px on the long edge, 1.8 megapixels for A4) fit, with room. The pages are decoded
// one after another, so this bounds a request's CPU time (about 8 s of one core at 60
// megapixels a second), not its memory: that is bounded by convert.DecodeBudgetPixels.
const KonvaMaxPixels = 500_000_000

// CreateKonva creates a book from editor content (spec §4.1.3). Every image's header is read
// first: a bad one, one over convert.MaxPixels (422 on its index) or pages over KonvaMaxPixels
// in all (422 on page_images) refuse the request before any pixel is decoded. Then each page is
// decoded to prove it whole (under the process-wide decode budget), dropped, and stored as
// sent; a given thumbnail is kept as sent, else one is made from page 1 while it is decoded.
func (s *bookService) CreateKonva(r *api.Request, in *api.KonvaCreate) (*api.Data[api.Raw[api.Book]], error) {
	raws := in.PageImages
	var thumbRaw string
	if in.Thumbnail != nil {
		thumbRaw = *in.Thumbnail
	}
	v := api.Validation{}
	heads := make([]convert.Header, len(raws))
	var total int64
	for i, raw := range raws {
		h, err := konvaHeader(raw)
		if err != nil {
			v.Add("page_images."+strconv.Itoa(i), err.Error())
			continue
		}
		heads[i] = h
		total += h.Pixels()
	}
	if total > KonvaMaxPixels {
		v.Add("page_images", fmt.Sprintf("hold %d megapixels in all, more than the %d accepted in one request",
			total/1_000_000, KonvaMaxPixels/1_000_000))
	}
	var thumbHead convert.Header
	if thumbRaw != "" {
		var err error
		if thumbHead, err = konvaHeader(thumbRaw); err != nil {
			v.Add("thumbnail", err.Error())
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}

	b := newBook(in.Title, "konva", in.Status)
	applySettings(b, in.Settings)
	b.Settings.Downloadable = false // no source PDF (spec §4.1.3)
	ctx := r.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	created, err := s.createKonvaBook(ctx, r.Auth.Tenant, b, raws, heads, thumbRaw, thumbHead)
	if err != nil {
		return nil, err
	}
	return &api.Data[api.Raw[api.Book]]{Status: 201, Data: api.Raw[api.Book](s.bookWire(created))}, nil
}

// konvaHeader reads the header of a base64 editor image (nothing is kept: the bytes are
// decoded again when the image is checked, so a request never holds all its images' bytes).
func konvaHeader(raw string) (convert.Header, error) {
	data, err := convert.DecodeBase64(raw)
	if err != nil {
		return convert.Header{}, err
	}
	return convert.ImageHeader(data)
}

// createKonvaBook checks and stores the pages (headers already read), at most GOMAXPROCS at
// once, each image decoded only while it is checked; then the thumbnail; then creates b. A page
// that does not decode is a 422 on its index (all such pages are reported); once one has failed
// no more pages are stored. On any failure b's files are removed again.
func (s *bookService) createKonvaBook(ctx context.Context, t storage.Tenant, b *storage.Book, raws []string,
	heads []convert.Header, thumbRaw string, thumbHead convert.Header) (*storage.Book, error) {
	rid := b.RandomID
	ok := false
	defer func() {
		if !ok {
			_ = s.Store.Blobs.DeleteBook(rid)
		}
	}()
	k := &konvaPages{s: s, ctx: ctx, rid: rid, raws: raws, heads: heads, makeThumb: thumbRaw == "",
		pages: make([]storage.Page, len(raws)), bad: make([]error, len(raws))}
	wg := k.start()
	v := api.Validation{}
	var thumbData []byte
	if thumbRaw != "" {
		var err error
		if thumbData, err = convert.DecodeBase64(thumbRaw); err != nil {
			k.fatal(err)
		} else if err = convert.CheckImage(ctx, thumbData, thumbHead, nil); errors.Is(err, convert.ErrNotImage) {
			v.Add("thumbnail", err.Error())
			k.failed.Store(true)
		} else if err != nil {
			k.fatal(err)
		}
	}
	wg.Wait()
	if k.internal != nil {
		return nil, k.internal
	}
	for i, err := range k.bad {
		if err != nil {
			v.Add("page_images."+strconv.Itoa(i), err.Error())
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}

	b.Pages, b.PageCount = k.pages, len(k.pages)
	var err error
	if thumbRaw != "" {
		b.Thumbnail, err = s.Store.Blobs.Put(rid, thumbData, thumbHead.Ext)
	} else {
		b.Thumbnail, err = s.Store.Blobs.Put(rid, k.thumb, "jpg")
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

// konvaPages checks an editor book's page images (decoded whole, under the decode budget) and
// stores them, as many at a time as there are cores; once one fails the others are checked but
// not stored.
type konvaPages struct {
	s         *bookService
	ctx       context.Context
	rid       string
	raws      []string
	heads     []convert.Header
	makeThumb bool // make the thumbnail from page 1 while it is decoded

	pages    []storage.Page
	bad      []error // the page does not decode (422)
	thumb    []byte
	failed   atomic.Bool // a page is bad or an internal error happened
	mu       sync.Mutex  // guards internal
	internal error
}

// start checks every page, each in a goroutine; it returns when the last has started.
func (k *konvaPages) start() *sync.WaitGroup {
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range k.raws {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			k.check(i)
		}(i)
	}
	return &wg
}

// fatal records an internal error (the first one is answered).
func (k *konvaPages) fatal(err error) {
	k.failed.Store(true)
	k.mu.Lock()
	if k.internal == nil {
		k.internal = err
	}
	k.mu.Unlock()
}

// check decodes page i and stores it unless a page failed already.
func (k *konvaPages) check(i int) {
	data, err := convert.DecodeBase64(k.raws[i])
	if err != nil { // the header pass decoded it
		k.fatal(err)
		return
	}
	var use func(image.Image) error
	if i == 0 && k.makeThumb {
		use = func(img image.Image) (err error) { k.thumb, err = convert.Thumbnail(img); return err }
	}
	if err := convert.CheckImage(k.ctx, data, k.heads[i], use); err != nil {
		if errors.Is(err, convert.ErrNotImage) {
			k.bad[i] = err
			k.failed.Store(true)
		} else {
			k.fatal(err)
		}
		return
	}
	if k.failed.Load() {
		return
	}
	name, err := k.s.Store.Blobs.Put(k.rid, data, k.heads[i].Ext)
	if err != nil {
		k.fatal(err)
		return
	}
	k.pages[i] = storage.Page{Number: i + 1, File: name, Width: k.heads[i].Width, Height: k.heads[i].Height}
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
func (s *bookService) createBookFromImages(t storage.Tenant, b *storage.Book, pages []*convert.Image, thumb *convert.Image) (*storage.Book, error) {
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
		if p.Text != nil && !s.noText {
			b.Texts = append(b.Texts, *p.Text) // a template page's drawn text
		}
	}
	if len(b.Texts) != len(b.Pages) {
		b.Texts = nil // all or none: the backfill reads the others by OCR
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

// applySettings sets on b the settings given (books.create_konva, catalogs.render).
func applySettings(b *storage.Book, o *api.KonvaSettings) {
	if o == nil {
		return
	}
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&b.Settings.FullscreenEnabled, o.AllowFullscreen)
	set(&b.Settings.SoundEnabled, o.FlipSound)
	set(&b.Settings.ShareSocialMedia, o.ShareSocialMedia)
	set(&b.Extra.AutoLinksEnabled, o.AutoLinksEnabled)
	set(&b.Extra.OpenFullscreenByDefault, o.OpenFullscreenByDefault)
	if o.AnimationType != "" {
		b.Settings.AnimationType = o.AnimationType
	}
	for dst, v := range map[**string]*string{&b.Settings.MobileAnimationType: o.MobileAnimationType,
		&b.Settings.ImageDisplay: o.ImageDisplay, &b.Settings.Background: o.Background, &b.Settings.Privacy: o.PDFPrivacyStatus} {
		if v != nil {
			*dst = v
		}
	}
	if o.PDFPassword != nil && *o.PDFPassword != "" {
		b.Extra.PDFPasswordSalt = []byte(actors.RandomString(16))
		b.Extra.PDFPasswordHash = actors.HashPassword(b.Extra.PDFPasswordSalt, *o.PDFPassword)
	}
	// eod_enabled and domains_enabled are derived from the access lists: ignored here.
}
