package convert

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// progressiveScanBomb is a valid progressive JPEG of w×h pixels with ncomp components (1 grey, 3 YCbCr, 4 Adobe CMYK), all at full
// resolution, made of scans AC scans (cycling through the components) that each code nothing
// but end-of-band runs over every block: about 100 bytes per scan, each of which Go's decoder
// walks block by block over the whole image (copying every block's 64 coefficients in and out),
// keeping 64 int32 coefficients per 8×8 block of every component until the end (4 bytes per
// pixel and component).
func progressiveScanBomb(w, h, scans, ncomp int) []byte {
	var b bytes.Buffer
	seg := func(marker byte, payload []byte) {
		b.Write([]byte{0xFF, marker, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)})
		b.Write(payload)
	}
	b.Write([]byte{0xFF, 0xD8})
	if ncomp == 4 {
		seg(0xEE, []byte("Adobe\x00\x64\x00\x00\x00\x00\x00")) // Adobe APP14, no transform: CMYK
	}
	seg(0xDB, append([]byte{0x00}, bytes.Repeat([]byte{1}, 64)...))
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(ncomp)}
	for c := 1; c <= ncomp; c++ {
		sof = append(sof, byte(c), 0x11, 0)
	}
	seg(0xC2, sof)
	// AC table 0: EOB0..EOB14 (0x00, 0x10, ..., 0xE0), 4-bit codes 0..14 in that order.
	counts := make([]byte, 16)
	counts[3] = 15
	ac := append([]byte{0x10}, counts...)
	for r := 0; r <= 14; r++ {
		ac = append(ac, byte(r<<4))
	}
	seg(0xC4, ac)
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	for s := 0; s < scans; s++ {
		// One component, AC 1..63, no successive approximation.
		seg(0xDA, []byte{1, byte(1 + s%ncomp), 0x00, 1, 63, 0x00})
		var acc byte
		var n uint
		put := func(v, bits int) {
			for k := bits - 1; k >= 0; k-- {
				acc, n = acc<<1|byte(v>>k&1), n+1
				if n == 8 {
					b.WriteByte(acc)
					if acc == 0xFF {
						b.WriteByte(0)
					}
					acc, n = 0, 0
				}
			}
		}
		for left := blocks; left > 0; { // EOBr + r bits: a run of (1<<r)|bits blocks
			run := min(left, 32767)
			r := 0
			for 1<<(r+1) <= run {
				r++
			}
			put(r, 4)
			put(run-1<<r, r)
			left -= run
		}
		for n != 0 {
			put(1, 1)
		}
	}
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// A JPEG's scans are counted before any pixel is decoded: a progressive JPEG of many empty scans
// (a few KB that kept a core for seconds per scan-kilobyte, holding the whole decode budget) and
// one whose coefficients outweigh twice MaxPixels (591 bytes of CMYK that allocated 1.4 GB) are
// refused by their header; a real progressive JPEG (vips, libjpeg's progression of 10 scans) is
// weighed with its coefficients and decodes; a baseline JPEG costs its pixels.
func TestJPEGCost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"600 empty scans over 60 megapixels", progressiveScanBomb(8000, 7500, 600, 1), errJPEGScans},
		{"101 scans of a small image", progressiveScanBomb(64, 64, 101, 1), errJPEGScans},
		{"90 scans over every block", progressiveScanBomb(800, 600, 90, 1), errJPEGVisits},
		{"CMYK, 60 megapixels", progressiveScanBomb(8000, 7500, 4, 4), errJPEGWeight},
		{"YCbCr 4:4:4, 31 megapixels", progressiveScanBomb(6400, 4900, 3, 3), errJPEGWeight},
	} {
		start := time.Now()
		_, err := ImageHeader(c.data)
		require.ErrorIs(t, err, c.want, c.name)
		require.Less(t, time.Since(start), time.Second, c.name)
	}

	// 24 scans of 3 components at full resolution: within the limits, weighed by its
	// coefficients (64 a block of each component), and decoded.
	ok := progressiveScanBomb(640, 480, 24, 3)
	h, err := ImageHeader(ok)
	require.NoError(t, err)
	require.Equal(t, int64(640*480+3*64*(80*60)), h.Cost)
	_, err = jpeg.Decode(bytes.NewReader(ok))
	require.NoError(t, err)

	prog, err := os.ReadFile(filepath.Join("testdata", "progressive.jpg"))
	require.NoError(t, err)
	h, err = ImageHeader(prog)
	require.NoError(t, err)
	require.Greater(t, h.Cost, h.Pixels(), "a progressive JPEG holds its coefficients too")
	require.NoError(t, CheckImage(context.Background(), prog, h, nil))

	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 300, 200)), nil))
	h, err = ImageHeader(buf.Bytes())
	require.NoError(t, err)
	require.Equal(t, int64(300*200), h.Cost)
}

// A photo upload decodes within the same budget: a photo waits while an editor book holds it,
// and gives up when its conversion is cancelled.
func TestPhotoWaitsForTheDecodeBudget(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "p.jpg")
	require.NoError(t, os.WriteFile(src, progressiveScanBomb(640, 480, 3, 3), 0o600))
	require.NoError(t, decodeBudget.acquire(context.Background(), DecodeBudgetPixels))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _, _, err := Photo(ctx, src, 1600, filepath.Join(dir, "out.jpg"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	decodeBudget.release(DecodeBudgetPixels)
	w, h, _, err := Photo(context.Background(), src, 1600, filepath.Join(dir, "out.jpg"))
	require.NoError(t, err)
	require.Equal(t, [2]int{640, 480}, [2]int{w, h})
}
