// Package convert turns source material into page images: decoded and checked images (editor
// uploads), and thumbnails.
package convert

import (
	"bytes"
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

	xdraw "golang.org/x/image/draw"
	_ "golang.org/x/image/webp"

	"flipbook/storage"
)

// MaxPixels bounds the decoded size of one image (a guard against decompression bombs).
const MaxPixels = 60_000_000

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
}

// Errors of DecodeBase64Image, phrased for a field message.
var (
	ErrNotBase64 = errors.New("is not valid base64")
	ErrNotImage  = errors.New("is not a PNG, JPEG, GIF or WebP image")
	ErrTooLarge  = fmt.Errorf("is larger than %d megapixels", MaxPixels/1_000_000)
)

// DecodeBase64Image decodes a base64 image, optionally given as a data URL, and checks that it
// is a whole, decodable image.
func DecodeBase64Image(s string) (*Image, error) {
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
	return DecodeImage(data)
}

// DecodeImage decodes and checks an encoded image.
func DecodeImage(data []byte) (*Image, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, ErrNotImage
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, ErrNotImage
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return nil, ErrTooLarge
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, ErrNotImage
	}
	ext := map[string]string{"png": "png", "jpeg": "jpg", "gif": "gif", "webp": "webp"}[format]
	if ext == "" {
		return nil, ErrNotImage
	}
	return &Image{Data: data, Ext: ext, Width: cfg.Width, Height: cfg.Height, Img: img}, nil
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
