package bench

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestViewerScenarioRuns keeps the viewer scenario working: one round against service child
// processes (this test binary acting as `flipbook serve`) with pdfcpu's CenterOfWhy.pdf, in
// Chromium, before (--no-renditions) and after. Every view ends with the images of its pages
// on show loaded, and its figures hold together: the bytes include at least one page image,
// nothing is subtracted in the second after, the last image of a spread loads no sooner than
// the first. (The targets are judged by make bench.)
func TestViewerScenarioRuns(t *testing.T) {
	if os.Getenv("FLIPBOOK_SKIP_BROWSER_TESTS") == "1" {
		t.Skip("FLIPBOOK_SKIP_BROWSER_TESTS=1: browser tests skipped")
	}
	asChild(t)
	// The baseline is measured only when the service has the flag: the detection reads
	// `serve --help` (here this test binary's, which has --no-page-text).
	require.True(t, serveHasFlag(context.Background(), "no-page-text"))
	require.False(t, serveHasFlag(context.Background(), "no-page"))
	var out, log bytes.Buffer
	rep, sides, err := runViewer(context.Background(), ViewerOptions{Rounds: 1, Log: &log}, &out)
	require.NoError(t, err, "%s\nservice log:\n%s", out.String(), log.String())
	t.Log(out.String())
	require.Equal(t, "viewer", rep.Scenario)
	require.NotEmpty(t, sides)
	for _, s := range sides {
		require.Equal(t, 25, s.pages, "CenterOfWhy.pdf has 25 pages")
		for i, v := range viewerViews {
			f := s.best[i]
			require.Greater(t, f.ImageBytes, int64(2000), "%s, %s: a page image was received", s.label, v.name)
			require.Greater(t, f.Bytes, f.ImageBytes, "%s, %s: the page, scripts and styles too", s.label, v.name)
			require.GreaterOrEqual(t, f.Later, f.Bytes, "%s, %s", s.label, v.name)
			require.Positive(t, f.FirstImage, "%s, %s", s.label, v.name)
			require.GreaterOrEqual(t, f.AllImages, f.FirstImage, "%s, %s", s.label, v.name)
		}
	}
	for _, want := range []string{"phone 390x844 @3x, cover", "desktop 1400x900 @1x, #page=2 (spread 2-3)", "first page image"} {
		require.Contains(t, out.String(), want)
	}
	// This binary's service has --no-renditions: before (the one JPEG a page) and after (every
	// page with its WebP renditions in its srcset) are both measured, and on a desktop, where the
	// viewer picks a rendition narrower than the JPEG, fewer image bytes come after.
	require.Len(t, sides, 2, out.String())
	require.Equal(t, "before", sides[0].label)
	require.Equal(t, "after", sides[1].label)
	require.Contains(t, out.String(), "pages with srcset: 25 of 25")
	require.Contains(t, out.String(), "before/after: bytes to the pages shown")
	for i := 2; i < 4; i++ {
		require.Less(t, sides[1].best[i].ImageBytes, sides[0].best[i].ImageBytes, viewerViews[i].name)
	}
}
