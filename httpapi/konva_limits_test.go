package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/actors/convert"
	"flipbook/api"
)

// headerOnlyPNG is a base64 PNG signature and IHDR chunk claiming w×h and nothing else: its
// header reads, decoding its pixels fails. A request of these shows which check refused it.
func headerOnlyPNG(w, h uint32) string {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := append([]byte("IHDR"), ihdr...)
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	_ = binary.Write(&buf, binary.BigEndian, uint32(len(ihdr)))
	buf.Write(chunk)
	_ = binary.Write(&buf, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func repeatImage(s string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestKonvaPixelLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	post := func(imgs []any, thumb string) *resp {
		t.Helper()
		b := konvaBody("limits", "", 1)
		b["page_images"] = imgs
		if thumb != "" {
			b["thumbnail"] = thumb
		}
		return h.do(t, "POST", "/api/v1/books/konva", key, b)
	}
	fields := func(r *resp) []string {
		t.Helper()
		require.Equal(t, 422, r.Status, "%s", r.Body)
		require.Equal(t, api.TypeValidation, r.errType())
		var out []string
		for f := range r.details() {
			out = append(out, f)
		}
		return out
	}
	msg := func(r *resp, field string) string {
		l, _ := r.details()[field].([]any)
		require.Len(t, l, 1, "%s", r.Body)
		return l[0].(string)
	}
	good := pngBase64(30, 40)

	// One image over convert.MaxPixels: refused from its header, on its index.
	r := post([]any{good, headerOnlyPNG(100_000, 100_000), good}, "")
	require.ElementsMatch(t, []string{"page_images.1"}, fields(r))
	require.Equal(t, "is larger than 60 megapixels", msg(r, "page_images.1"))

	// Nine pages of 7745×7745 (60 MP each, 540 in all) are over KonvaMaxPixels: one error on
	// page_images, from the headers alone. Had any page been decoded, its missing pixels would
	// have been reported on its index too.
	r = post(repeatImage(headerOnlyPNG(7745, 7745), 9), "")
	require.ElementsMatch(t, []string{"page_images"}, fields(r))
	require.Equal(t, "hold 539 megapixels in all, more than the 500 accepted in one request", msg(r, "page_images"))
	require.Contains(t, r.JSON["error"].(map[string]any)["message"], "page_images hold 539 megapixels")
	// Per-image errors are reported with the total.
	r = post(append(repeatImage(headerOnlyPNG(7745, 7745), 9), "aGVsbG8="), "")
	require.ElementsMatch(t, []string{"page_images", "page_images.9"}, fields(r))

	// Eight (480 MP) are within the budget: each is then decoded, one after another, and each
	// is refused for its missing pixels.
	r = post(repeatImage(headerOnlyPNG(7745, 7745), 8), "")
	require.Len(t, fields(r), 8, "%s", r.Body)
	for i := 0; i < 8; i++ {
		require.Equal(t, convert.ErrNotImage.Error(), msg(r, "page_images."+itoa(int64(i))))
	}
	// A good page before a bad one is not kept either.
	r = post([]any{good, headerOnlyPNG(500, 500)}, "")
	require.ElementsMatch(t, []string{"page_images.1"}, fields(r))

	// The thumbnail has the per-image limit (it is not counted in the pages' total).
	r = post([]any{good}, headerOnlyPNG(100_000, 100_000))
	require.ElementsMatch(t, []string{"thumbnail"}, fields(r))
	r = post([]any{good}, headerOnlyPNG(7745, 7745))
	require.ElementsMatch(t, []string{"thumbnail"}, fields(r))
	require.Equal(t, convert.ErrNotImage.Error(), msg(r, "thumbnail"))

	// Nothing was created, and refused requests left no files.
	require.Empty(t, h.do(t, "GET", "/api/v1/books", key, nil).list())
	entries, err := os.ReadDir(h.dataPath("blobs"))
	if err == nil {
		require.Empty(t, entries, "refused editor books leave no files")
	}

	// Within every limit the book is made, its thumbnail from page 1.
	r = post([]any{good, pngBase64(50, 20)}, "")
	require.Equal(t, 201, r.Status, "%s", r.Body)
	require.EqualValues(t, 2, r.data()["page_count"])
	require.True(t, strings.HasSuffix(r.data()["thumbnail_url"].(string), ".jpg"))
}

// The pages of an editor book are decoded one after another and dropped, not all held until
// the request ends: 24 pages of 2500×2500 would be 600 MB of decoded RGBA at once.
func TestKonvaDecodesOnePageAtATime(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 48 megapixels")
	}
	h := newHarness(t, nil)
	h.http.Timeout = 2 * time.Minute // decoding under -race on a busy machine
	key := h.workspace(t, "company", "live")
	// 12 pages of 2000² (192 MB decoded in all): light enough for -race on a loaded machine
	// (24 pages of 2500² took over the client's 30 s there), heavy enough to tell the two apart.
	const side, pages = 2000, 12
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	for i := 0; i < len(img.Pix); i += 4 { // bands: compresses well, decodes to full RGBA
		y := i / 4 / side
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(y/10), uint8(y/3), 200, 255
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	img = nil
	b := konvaBody("big pages", "", 1)
	b["page_images"] = repeatImage(base64.StdEncoding.EncodeToString(buf.Bytes()), pages)

	// Pages decoded and dropped are garbage until the next collection: with the default GOGC
	// the peak measured how many the collector let pile up (77 to 123 MB for the same code,
	// by when it ran), not how many the handler held. Collecting often makes the peak what is
	// held; all 12 pages held would still be 183 MB.
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	r := h.do(t, "POST", "/api/v1/books/konva", key, b)
	close(stop)
	wg.Wait()
	require.Equal(t, 201, r.Status, "%s", r.Body)
	require.EqualValues(t, pages, r.data()["page_count"])
	grew := int64(peak) - int64(base)
	t.Logf("heap in use grew by %d MB at most (all pages decoded: %d MB)", grew>>20, side*side*4*pages>>20)
	require.Less(t, grew, int64(120<<20), "the decoded pages are not all held at once")
}
