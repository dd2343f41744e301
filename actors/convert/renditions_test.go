package convert

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/webp"
)

func needVips(t *testing.T) {
	t.Helper()
	if !RenditionsUsable() {
		t.Skip("vipsthumbnail not installed (Debian: libvips-tools; scripts/deps.sh installs it)")
	}
}

// TestMakeRenditions renders a PDF's pages and makes their renditions: a WebP image at each
// width narrower than the page, sized in proportion, smaller than the master, and a placeholder.
func TestMakeRenditions(t *testing.T) {
	needPoppler(t)
	needVips(t)
	dir := t.TempDir()
	pdf := pagesPDF(t, 3)
	ctx := context.Background()
	files, err := RenderPDF(ctx, pdf, 3, RenderOptions{LongEdge: 1600}, filepath.Join(dir, "pages"))
	require.NoError(t, err)
	widths := make([]int, len(files))
	heights := make([]int, len(files))
	for i, f := range files {
		widths[i], heights[i], err = jpegSize(f)
		require.NoError(t, err)
	}
	require.Less(t, widths[0], 1200, "A4 portrait at a 1600-px long edge")
	got, err := MakeRenditions(ctx, files, widths, filepath.Join(dir, "r"))
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, pr := range got {
		require.Len(t, pr.WebP, 2, "400 and 800 are narrower than %d px; 1200 is not", widths[i])
		for j, want := range []int{400, 800} {
			r := pr.WebP[j]
			require.Equal(t, want, r.Width)
			require.InDelta(t, float64(heights[i])*float64(want)/float64(widths[i]), float64(r.Height), 1)
			data, err := os.ReadFile(r.Path)
			require.NoError(t, err)
			im, err := webp.Decode(bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, want, im.Bounds().Dx())
			st, err := os.Stat(files[i])
			require.NoError(t, err)
			require.Less(t, int64(len(data)), st.Size())
		}
		cfg, err := webp.DecodeConfig(bytes.NewReader(pr.Placeholder))
		require.NoError(t, err)
		require.Equal(t, PlaceholderWidth, cfg.Width)
		require.Less(t, len(pr.Placeholder), 1024)
	}
}

// TestMakeRenditionsBadImage fails with a reason when a master is not an image.
func TestMakeRenditionsBadImage(t *testing.T) {
	needVips(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jpg")
	require.NoError(t, os.WriteFile(bad, []byte("not a jpeg"), 0o600))
	_, err := MakeRenditions(context.Background(), []string{bad}, []int{1600}, filepath.Join(dir, "r"))
	var f *Failure
	require.ErrorAs(t, err, &f)
	require.Contains(t, f.Reason, "renditions could not be made")
}

// TestRenditionFits: a page gets the widths at most 85% of its own.
func TestRenditionFits(t *testing.T) {
	fits := func(w int) []int {
		var out []int
		for _, rw := range RenditionWidths {
			if RenditionFits(rw, w) {
				out = append(out, rw)
			}
		}
		return out
	}
	require.Equal(t, []int{400, 800}, fits(1131), "A4 portrait at 1600 px")
	require.Equal(t, []int{400, 800}, fits(1237), "a 1200-px WebP of a 1237-px page would save little")
	require.Equal(t, []int{400, 800, 1200}, fits(1600), "landscape")
	require.Empty(t, fits(450))
}
