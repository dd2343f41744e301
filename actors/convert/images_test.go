package convert

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// noisy is an image that does not compress, so truncating its encoding cuts pixel data.
func noisy(w, h int) *image.NRGBA {
	rng := rand.New(rand.NewSource(int64(w*7919 + h)))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng.Read(img.Pix)
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	return img
}

func encodePNG(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, png.Encode(&buf, img))
	return buf.Bytes()
}

func encodeJPEG(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}))
	return buf.Bytes()
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

func TestDecodeBase64ImageAccepts(t *testing.T) {
	t.Parallel()
	pngData := encodePNG(t, noisy(64, 32))
	jpgData := encodeJPEG(t, noisy(48, 40))
	var gifBuf bytes.Buffer
	require.NoError(t, gif.Encode(&gifBuf, noisy(8, 6), nil))

	for _, tc := range []struct {
		name, in, ext string
		w, h          int
		data          []byte
	}{
		{"png", b64(pngData), "png", 64, 32, pngData},
		{"jpeg", b64(jpgData), "jpg", 48, 40, jpgData},
		{"gif", b64(gifBuf.Bytes()), "gif", 8, 6, gifBuf.Bytes()},
		{"png data url", "data:image/png;base64," + b64(pngData), "png", 64, 32, pngData},
		{"jpeg data url", "data:image/jpeg;base64," + b64(jpgData), "jpg", 48, 40, jpgData},
		{"data url with wrong media type", "data:image/jpeg;base64," + b64(pngData), "png", 64, 32, pngData},
		{"unpadded", base64.RawStdEncoding.EncodeToString(pngData), "png", 64, 32, pngData},
		{"surrounding whitespace", "\n  " + b64(jpgData) + "\r\n", "jpg", 48, 40, jpgData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			img, err := DecodeBase64Image(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.ext, img.Ext)
			require.Equal(t, tc.w, img.Width)
			require.Equal(t, tc.h, img.Height)
			require.Equal(t, tc.data, img.Data, "the original bytes are kept")
			require.Equal(t, image.Rect(0, 0, tc.w, tc.h), img.Img.Bounds())
		})
	}

	// Decoded PNG pixels are the encoded ones.
	src := noisy(5, 5)
	img, err := DecodeBase64Image(b64(encodePNG(t, src)))
	require.NoError(t, err)
	for y := 0; y < 5; y++ {
		for x := 0; x < 5; x++ {
			require.Equal(t, color.NRGBAModel.Convert(src.At(x, y)), color.NRGBAModel.Convert(img.Img.At(x, y)))
		}
	}
}

// pngHeader is a PNG signature and IHDR chunk claiming w×h, with nothing after it.
func pngHeader(w, h uint32) []byte {
	var buf bytes.Buffer
	buf.Write([]byte("\x89PNG\r\n\x1a\n"))
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := append([]byte("IHDR"), ihdr...)
	_ = binary.Write(&buf, binary.BigEndian, uint32(len(ihdr)))
	buf.Write(chunk)
	_ = binary.Write(&buf, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return buf.Bytes()
}

func TestDecodeBase64ImageRejects(t *testing.T) {
	t.Parallel()
	pngData := encodePNG(t, noisy(200, 200))
	jpgData := encodeJPEG(t, noisy(200, 200))
	for _, tc := range []struct {
		name string
		in   string
		want error
	}{
		{"garbage", "!!! not base64 ###", ErrNotBase64},
		{"empty", "", ErrNotImage},
		{"data url without base64", "data:image/png," + b64(pngData), ErrNotBase64},
		{"data url without comma", "data:image/png;base64", ErrNotBase64},
		{"text", b64([]byte("hello, this is not an image at all")), ErrNotImage},
		{"truncated png", b64(pngData[:len(pngData)/2]), ErrNotImage},
		{"png header only", b64(pngData[:40]), ErrNotImage},
		{"truncated jpeg", b64(jpgData[:len(jpgData)/3]), ErrNotImage},
		{"corrupt png body", b64(corrupt(pngData)), ErrNotImage},
		{"too many pixels", b64(pngHeader(10000, 10000)), ErrTooLarge},
		{"zero width", b64(pngHeader(0, 10)), ErrNotImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			img, err := DecodeBase64Image(tc.in)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, img)
		})
	}
}

// corrupt flips bytes in the middle of an encoding (the PNG CRCs then fail).
func corrupt(data []byte) []byte {
	out := append([]byte(nil), data...)
	for i := len(out) / 2; i < len(out)/2+64; i++ {
		out[i] ^= 0x5a
	}
	return out
}

func TestThumbnailScalesDown(t *testing.T) {
	t.Parallel()
	src := image.NewRGBA(image.Rect(0, 0, 1600, 1200))
	for y := 0; y < 1200; y++ {
		for x := 0; x < 1600; x++ {
			c := color.RGBA{R: 200, G: 30, B: 30, A: 255}
			if x >= 800 {
				c = color.RGBA{R: 30, G: 30, B: 200, A: 255}
			}
			src.SetRGBA(x, y, c)
		}
	}
	data, err := Thumbnail(src)
	require.NoError(t, err)
	img, format, err := image.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, "jpeg", format)
	require.Equal(t, ThumbWidth, img.Bounds().Dx())
	require.Equal(t, 1200*ThumbWidth/1600, img.Bounds().Dy())

	// The content is scaled, not cropped: red on the left, blue on the right.
	r, _, b, _ := img.At(ThumbWidth/4, 100).RGBA()
	require.Greater(t, r, b)
	r, _, b, _ = img.At(3*ThumbWidth/4, 100).RGBA()
	require.Greater(t, b, r)

	// It is also a valid input for DecodeImage.
	dec, err := DecodeImage(data)
	require.NoError(t, err)
	require.Equal(t, "jpg", dec.Ext)
}

func TestThumbnailNeverUpscales(t *testing.T) {
	t.Parallel()
	for _, size := range []image.Point{{100, 50}, {ThumbWidth, 30}, {1, 1}, {37, 900}} {
		data, err := Thumbnail(noisy(size.X, size.Y))
		require.NoError(t, err)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		require.NoError(t, err)
		require.Equal(t, "jpeg", format)
		require.Equal(t, size.X, cfg.Width, "width of %v", size)
		require.Equal(t, size.Y, cfg.Height, "height of %v", size)
	}
}

func TestThumbnailExtremeAspectAndOffsetBounds(t *testing.T) {
	t.Parallel()
	// A very wide strip keeps at least one row.
	data, err := Thumbnail(noisy(4000, 2))
	require.NoError(t, err)
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, ThumbWidth, cfg.Width)
	require.Equal(t, 1, cfg.Height)

	// A sub-image whose bounds do not start at 0,0.
	sub := noisy(1000, 1000).SubImage(image.Rect(200, 300, 1000, 700))
	data, err = Thumbnail(sub)
	require.NoError(t, err)
	cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, ThumbWidth, cfg.Width)
	require.Equal(t, 200, cfg.Height)

	// Transparency is flattened on white.
	transparent := image.NewNRGBA(image.Rect(0, 0, 10, 10))
	data, err = Thumbnail(transparent)
	require.NoError(t, err)
	img, err := jpeg.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	r, g, b, _ := img.At(5, 5).RGBA()
	require.Greater(t, r, uint32(0xf000))
	require.Greater(t, g, uint32(0xf000))
	require.Greater(t, b, uint32(0xf000))
}
