// Package convert turns source material into page images: decoded and checked images (editor
// uploads), and thumbnails.
package convert

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // decoders registered for image.Decode
	"image/jpeg"
	_ "image/png"
	"io"
	"strings"
	"sync"

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp"

	"flipbook/storage"
)

// MaxPixels bounds the decoded size of one image (a guard against decompression bombs).
const MaxPixels = 60_000_000

// DecodeBudgetPixels bounds the pixels CheckImage holds decoded at once across the process,
// whatever the number of requests checking images: one image of MaxPixels, or several smaller
// ones, are decoded at a time (about 240 MB of 8-bit RGBA; 16-bit PNGs take twice that).
const DecodeBudgetPixels = MaxPixels

// ThumbWidth is the width of generated thumbnails.
const ThumbWidth = 400

// Image is a decoded, checked page image.
type Image struct {
	Data   []byte // the original encoded bytes
	Ext    string // png, jpg, gif, webp
	Width  int
	Height int
	Img    image.Image
	// Links are the clickable areas of a template page (the products' urls).
	Links []storage.Link
	// Text is a template page's text: the words it was drawn with, with their boxes.
	Text *storage.PageText
}

// Header is what an encoded image's header says: its format (as a file extension) and size.
type Header struct {
	Ext           string // png, jpg, gif, webp
	Width, Height int
	// Cost is what decoding the image holds, in pixels of RGBA (4 bytes): its pixels, and for
	// a progressive JPEG its coefficients as well (jpegCost).
	Cost int64
}

// Pixels is the header's width times height.
func (h Header) Pixels() int64 { return int64(h.Width) * int64(h.Height) }

// Errors of DecodeBase64Image, phrased for a field message.
var (
	ErrNotBase64 = errors.New("is not valid base64")
	ErrNotImage  = errors.New("is not a PNG, JPEG, GIF or WebP image")
	ErrTooLarge  = fmt.Errorf("is larger than %d megapixels", MaxPixels/1_000_000)
)

// DecodeBase64Image decodes a base64 image, optionally given as a data URL, and checks that it
// is a whole, decodable image.
func DecodeBase64Image(s string) (*Image, error) {
	data, err := DecodeBase64(s)
	if err != nil {
		return nil, err
	}
	return DecodeImage(data)
}

// DecodeBase64 returns the bytes of a base64 image, optionally given as a data URL (padding
// optional, surrounding space ignored). Nothing is decoded beyond the base64.
func DecodeBase64(s string) ([]byte, error) {
	if strings.HasPrefix(s, "data:") {
		i := strings.Index(s, ",")
		if i < 0 || !strings.Contains(s[:i], ";base64") {
			return nil, ErrNotBase64
		}
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if data, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			return nil, ErrNotBase64
		}
	}
	return data, nil
}

// ImageHeader reads only the header of an encoded image (no pixels are decoded): its format
// must be PNG, JPEG, GIF or WebP and its size at most MaxPixels.
func ImageHeader(data []byte) (Header, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Header{}, ErrNotImage
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return Header{}, ErrNotImage
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return Header{}, ErrTooLarge
	}
	ext := map[string]string{"png": "png", "jpeg": "jpg", "gif": "gif", "webp": "webp"}[format]
	if ext == "" {
		return Header{}, ErrNotImage
	}
	h := Header{Ext: ext, Width: cfg.Width, Height: cfg.Height}
	h.Cost = h.Pixels()
	if ext == "jpg" {
		if h.Cost, err = jpegCost(data, h.Width, h.Height); err != nil {
			return Header{}, err
		}
	}
	return h, nil
}

// DecodeImage decodes and checks an encoded image (its header first: an image over MaxPixels
// is refused before its pixels are decoded).
func DecodeImage(data []byte) (*Image, error) {
	h, err := ImageHeader(data)
	if err != nil {
		return nil, err
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, ErrNotImage
	}
	return &Image{Data: data, Ext: h.Ext, Width: h.Width, Height: h.Height, Img: img}, nil
}

// CheckImage decodes data, whose header ImageHeader read as h, to prove that it is a whole
// image (ErrNotImage otherwise), and hands the decoded image to use (if not nil), which must
// not keep it. While the image is decoded and used, its pixels are taken from the process-wide
// budget of DecodeBudgetPixels, waiting for them as long as ctx allows (then ctx.Err()).
func CheckImage(ctx context.Context, data []byte, h Header, use func(image.Image) error) error {
	if err := decodeBudget.acquire(ctx, h.Cost); err != nil {
		return err
	}
	defer decodeBudget.release(h.Cost)
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return ErrNotImage
	}
	if use != nil {
		return use(img)
	}
	return nil
}

// decodeBudget is the pixels CheckImage may hold decoded at once.
var decodeBudget = newPixelBudget(DecodeBudgetPixels)

// pixelBudget is a weighted semaphore, first come first served (a large request is not
// overtaken forever by smaller ones). A request larger than the whole budget waits for all of
// it.
type pixelBudget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when n is granted
}

func newPixelBudget(size int64) *pixelBudget { return &pixelBudget{size: size} }

func (b *pixelBudget) acquire(ctx context.Context, n int64) error {
	n = min(n, b.size)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.size {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		b.used -= n
	default:
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grant()
	return ctx.Err()
}

func (b *pixelBudget) release(n int64) {
	n = min(n, b.size)
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant hands the budget to the waiters in order while it lasts (b.mu held).
func (b *pixelBudget) grant() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.size {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

func decodeConfig(r io.Reader) (image.Config, error) {
	cfg, _, err := image.DecodeConfig(r)
	return cfg, err
}

// Thumbnail scales img to ThumbWidth wide (never up) and encodes it as JPEG.
func Thumbnail(img image.Image) ([]byte, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > ThumbWidth {
		h = h * ThumbWidth / w
		w = ThumbWidth
	}
	if h < 1 {
		h = 1
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(dst, dst.Bounds(), image.White, image.Point{}, draw.Src) // flatten transparency on white
	xdraw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Over, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 80}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
