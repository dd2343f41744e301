package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// tiffIFD0 is a TIFF header in byte order bo ("II" or "MM") whose IFD0 has the given entries
// (tag, SHORT value); the orientation is not necessarily the first entry.
func tiffIFD0(order string, entries ...[2]uint16) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	if order == "MM" {
		bo = binary.BigEndian
	}
	b := []byte(order)
	b = bo.AppendUint16(b, 42)
	b = bo.AppendUint32(b, 8)
	b = bo.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = bo.AppendUint16(b, e[0])
		b = bo.AppendUint16(b, 3) // SHORT
		b = bo.AppendUint32(b, 1)
		b = bo.AppendUint16(b, e[1])
		b = bo.AppendUint16(b, 0)
	}
	return bo.AppendUint32(b, 0)
}

func orientationTIFF(order string, o int) []byte {
	// An ImageWidth entry first, so the reader has to walk the IFD.
	return tiffIFD0(order, [2]uint16{0x0100, 300}, [2]uint16{0x0112, uint16(o)})
}

func testJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h)), nil))
	return buf.Bytes()
}

func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h))))
	return buf.Bytes()
}

// jpegSegment is a JPEG marker segment with its length.
func jpegSegment(marker byte, payload []byte) []byte {
	seg := []byte{0xFF, marker, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	return append(seg, payload...)
}

func insertAfterSOI(data []byte, segs ...[]byte) []byte {
	out := append([]byte{}, data[:2]...)
	for _, s := range segs {
		out = append(out, s...)
	}
	return append(out, data[2:]...)
}

func pngChunk(typ string, data []byte) []byte {
	c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	c = append(c, typ...)
	c = append(c, data...)
	return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
}

// pngInsert puts chunk right after IHDR (afterIHDR) or right before IEND.
func pngInsert(data, chunk []byte, afterIHDR bool) []byte {
	at := 8 + 12 + 13
	if !afterIHDR {
		at = len(data) - 12
	}
	out := append([]byte{}, data[:at]...)
	out = append(out, chunk...)
	return append(out, data[at:]...)
}

func TestOrientationJPEG(t *testing.T) {
	t.Parallel()
	base := testJPEG(t, 6, 4)
	require.Equal(t, 1, Orientation(base), "no EXIF")
	jfif := jpegSegment(0xE0, []byte("JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"))
	for o := 1; o <= 8; o++ {
		for _, order := range []string{"II", "MM"} {
			app1 := jpegSegment(0xE1, append([]byte("Exif\x00\x00"), orientationTIFF(order, o)...))
			require.Equal(t, o, Orientation(insertAfterSOI(base, app1)), "%s orientation %d", order, o)
			require.Equal(t, o, Orientation(insertAfterSOI(base, jfif, app1)), "%s orientation %d after JFIF", order, o)
		}
	}
	// Out-of-range values, other APP1 payloads and EXIF without the tag read as 1.
	bad := jpegSegment(0xE1, append([]byte("Exif\x00\x00"), orientationTIFF("II", 9)...))
	require.Equal(t, 1, Orientation(insertAfterSOI(base, bad)))
	xmp := jpegSegment(0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00<x/>"))
	require.Equal(t, 1, Orientation(insertAfterSOI(base, xmp)))
	noTag := jpegSegment(0xE1, append([]byte("Exif\x00\x00"), tiffIFD0("MM", [2]uint16{0x0100, 1})...))
	require.Equal(t, 1, Orientation(insertAfterSOI(base, noTag)))
	bogusOrder := jpegSegment(0xE1, append([]byte("Exif\x00\x00XX*\x00\x08\x00\x00\x00"), make([]byte, 16)...))
	require.Equal(t, 1, Orientation(insertAfterSOI(base, bogusOrder)))
}

func TestOrientationPNG(t *testing.T) {
	t.Parallel()
	base := testPNG(t, 6, 4)
	require.Equal(t, 1, Orientation(base), "no eXIf")
	for o := 1; o <= 8; o++ {
		for _, order := range []string{"II", "MM"} {
			withExif := pngInsert(base, pngChunk("eXIf", orientationTIFF(order, o)), true)
			require.Equal(t, o, Orientation(withExif), "%s orientation %d", order, o)
			_, err := png.Decode(bytes.NewReader(withExif))
			require.NoError(t, err, "the test PNG stays valid")
		}
	}
	// An eXIf after the image data is not honoured (PNG spec: it must precede IDAT).
	late := pngInsert(base, pngChunk("eXIf", orientationTIFF("II", 6)), false)
	require.Equal(t, 1, Orientation(late))
	require.Equal(t, 1, Orientation([]byte("GIF89a")), "other formats")
}

// Cut-short metadata never panics and reads as upright or as the full value.
func TestOrientationTruncatedInput(t *testing.T) {
	t.Parallel()
	app1 := jpegSegment(0xE1, append([]byte("Exif\x00\x00"), orientationTIFF("MM", 6)...))
	j := insertAfterSOI(testJPEG(t, 4, 4), app1)
	p := pngInsert(testPNG(t, 4, 4), pngChunk("eXIf", orientationTIFF("II", 8)), true)
	for _, data := range [][]byte{j, p} {
		for n := 0; n <= len(data); n++ {
			o := Orientation(data[:n])
			require.True(t, o == 1 || o == Orientation(data), "length %d: %d", n, o)
		}
	}
}

// grid3x2 is a 3×2 image whose six pixels are distinct:
//
//	a b c
//	d e f
func grid3x2() (*image.RGBA, map[string]color.RGBA) {
	px := map[string]color.RGBA{
		"a": {10, 0, 0, 255}, "b": {20, 0, 0, 255}, "c": {30, 0, 0, 255},
		"d": {40, 0, 0, 255}, "e": {50, 0, 0, 255}, "f": {60, 0, 0, 255},
	}
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for i, n := range []string{"a", "b", "c", "d", "e", "f"} {
		img.SetRGBA(i%3, i/3, px[n])
	}
	return img, px
}

func TestOrientAllEight(t *testing.T) {
	t.Parallel()
	// The upright image for each EXIF orientation of the stored grid, row by row.
	want := map[int][]string{
		1: {"abc", "def"},
		2: {"cba", "fed"},     // mirrored left-right
		3: {"fed", "cba"},     // turned 180°
		4: {"def", "abc"},     // mirrored top-bottom
		5: {"ad", "be", "cf"}, // transposed
		6: {"da", "eb", "fc"}, // turned 90° clockwise
		7: {"fc", "eb", "da"}, // transverse
		8: {"cf", "be", "ad"}, // turned 90° counter-clockwise
		0: {"abc", "def"},     // absent
		9: {"abc", "def"},     // out of range
	}
	for o, rows := range want {
		img, px := grid3x2()
		out := Orient(img, o)
		b := out.Bounds()
		require.Equal(t, len(rows[0]), b.Dx(), "orientation %d width", o)
		require.Equal(t, len(rows), b.Dy(), "orientation %d height", o)
		for y, row := range rows {
			for x, name := range row {
				got := color.RGBAModel.Convert(out.At(b.Min.X+x, b.Min.Y+y)).(color.RGBA)
				require.Equal(t, px[string(name)], got, "orientation %d at (%d,%d)", o, x, y)
			}
		}
	}
}

// Orient works on images whose bounds do not start at 0,0 (a sub-image).
func TestOrientSubImage(t *testing.T) {
	t.Parallel()
	big := image.NewRGBA(image.Rect(0, 0, 10, 10))
	img, px := grid3x2()
	for y := 0; y < 2; y++ {
		for x := 0; x < 3; x++ {
			big.SetRGBA(4+x, 5+y, img.RGBAAt(x, y))
		}
	}
	sub := big.SubImage(image.Rect(4, 5, 7, 7))
	out := Orient(sub, 6)
	require.Equal(t, image.Rect(0, 0, 2, 3), out.Bounds())
	require.Equal(t, px["d"], out.At(0, 0))
	require.Equal(t, px["a"], out.At(1, 0))
	require.Equal(t, px["f"], out.At(0, 2))
}

// Photo applies the orientation and keeps an upright JPEG that fits byte for byte.
func TestPhotoOrientationAndSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := image.NewRGBA(image.Rect(0, 0, 300, 200))
	for y := 0; y < 200; y++ {
		for x := 0; x < 300; x++ {
			src.SetRGBA(x, y, color.RGBA{200, 200, 200, 255})
		}
	}
	for y := 0; y < 40; y++ {
		for x := 0; x < 40; x++ {
			src.SetRGBA(x, y, color.RGBA{230, 20, 20, 255})
		}
	}
	var jb bytes.Buffer
	require.NoError(t, jpeg.Encode(&jb, src, &jpeg.Options{Quality: 95}))
	app1 := jpegSegment(0xE1, append([]byte("Exif\x00\x00"), orientationTIFF("II", 6)...))

	run := func(name string, data []byte, longEdge int) (int, int, image.Image, []byte) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		dst := filepath.Join(dir, name+".out.jpg")
		w, h, _, err := Photo(context.Background(), p, longEdge, dst)
		require.NoError(t, err)
		out, err := os.ReadFile(dst)
		require.NoError(t, err)
		img, err := jpeg.Decode(bytes.NewReader(out))
		require.NoError(t, err)
		require.Equal(t, image.Pt(w, h), img.Bounds().Size())
		return w, h, img, out
	}

	w, h, _, out := run("upright.jpg", jb.Bytes(), 1600)
	require.Equal(t, [2]int{300, 200}, [2]int{w, h})
	require.Equal(t, jb.Bytes(), out, "an upright JPEG that fits is kept as sent")

	w, h, img, _ := run("rotated.jpg", insertAfterSOI(jb.Bytes(), app1), 1600)
	require.Equal(t, [2]int{200, 300}, [2]int{w, h})
	r, g, _, _ := img.At(180, 20).RGBA()
	require.True(t, r>>8 > 180 && g>>8 < 80, "red corner is top-right after a 90° clockwise turn")

	w, h, _, _ = run("small.jpg", insertAfterSOI(jb.Bytes(), app1), 150)
	require.Equal(t, [2]int{100, 150}, [2]int{w, h}, "scaled to the long edge after turning")

	// Transparency is flattened on white.
	var tb bytes.Buffer
	require.NoError(t, png.Encode(&tb, image.NewNRGBA(image.Rect(0, 0, 20, 10))))
	w, h, img, _ = run("clear.png", tb.Bytes(), 1600)
	require.Equal(t, [2]int{20, 10}, [2]int{w, h})
	r, g, bl, _ := img.At(10, 5).RGBA()
	require.True(t, r>>8 > 245 && g>>8 > 245 && bl>>8 > 245, "white, not black: %d %d %d", r>>8, g>>8, bl>>8)

	_, _, _, err := Photo(context.Background(), filepath.Join(dir, "missing.jpg"), 100, filepath.Join(dir, "x.jpg"))
	require.Error(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.png"), []byte("\x89PNG\r\n\x1a\nbroken"), 0o600))
	_, _, _, err = Photo(context.Background(), filepath.Join(dir, "bad.png"), 100, filepath.Join(dir, "y.jpg"))
	require.True(t, IsFailure(err), "a damaged image is a customer-facing failure: %v", err)
}
