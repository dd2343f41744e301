package convert

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/image/webp"
)

// Page renditions (issue 29, docs/VIEWER.md "Page images"): besides its page image (the
// master, a JPEG of DefaultLongEdge pixels), each page gets WebP copies at RenditionWidths,
// which the viewer offers through srcset so a phone downloads a phone-sized page, and a
// placeholder of PlaceholderWidth pixels shown at once while the page loads. They are made by
// libvips' vipsthumbnail, chosen by measurement (docs/DECISIONS.md "Page renditions"): one
// process encodes a whole batch of pages at a width, and it shrinks a JPEG while decoding it.
// They are made after the book is ready (the renditions backfill), so conversion keeps its
// speed; the viewer shows the master until they exist.

// RenditionWidths are the widths, in pixels, of a page's WebP renditions: a page on a phone
// (400: one page on a 390-px screen at device scale 1; 800 at scale 2), one page of a desktop
// spread (800, 1200 on dense screens). A page gets a rendition only of the widths at most
// renditionMaxFraction of its own: a WebP almost as wide as the page image saves little and
// costs as much to make as the smaller ones together (the page image serves instead).
var RenditionWidths = []int{400, 800, 1200}

// renditionMaxFraction is how wide a rendition may be, at most, as a fraction of its page's.
const renditionMaxFraction = 0.85

// RenditionFits says whether a page w pixels wide gets a rendition of width rw.
func RenditionFits(rw, w int) bool { return float64(rw) <= renditionMaxFraction*float64(w) }

// PlaceholderWidth is the width of a page's placeholder, a WebP image of a few hundred bytes
// the viewer inlines and stretches (blurred) until the page's image arrives.
const PlaceholderWidth = 16

// webpQuality and webpEffort are the encoder's settings: quality 75 as the WebP tools default
// to; effort 2 (of 0-6) costs about half the default's time for 5-15% larger files.
const (
	webpQuality = 75
	webpEffort  = 2
)

// vipsthumbnail is the program that makes renditions (Debian package libvips-tools).
const vipsthumbnail = "vipsthumbnail"

// RenditionsUsable reports whether renditions can be made here (vipsthumbnail installed).
func RenditionsUsable() bool {
	_, err := exec.LookPath(vipsthumbnail)
	return err == nil
}

// ErrNoVips is returned by MakeRenditions when vipsthumbnail is not installed.
var ErrNoVips = errors.New("page renditions need libvips-tools (vipsthumbnail), which is not installed")

// MadeRendition is one rendition file of a page.
type MadeRendition struct {
	Path          string
	Width, Height int
}

// PageRenditions are the renditions made of one page image.
type PageRenditions struct {
	WebP        []MadeRendition // by increasing width
	Placeholder []byte          // a WebP image PlaceholderWidth wide
}

// MakeRenditions makes the renditions of the page images masters (JPEG files of width
// widths[i] pixels each; names unique in the batch) under dir, one vipsthumbnail process per
// width for the whole batch, each single-threaded and at a lower priority (nice 10). The result
// is in the order of masters.
func MakeRenditions(ctx context.Context, masters []string, masterWidths []int, dir string) ([]PageRenditions, error) {
	if !RenditionsUsable() {
		return nil, ErrNoVips
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	out := make([]PageRenditions, len(masters))
	widths := append(append([]int(nil), RenditionWidths...), PlaceholderWidth)
	for _, w := range widths {
		var batch []int // indexes of the masters wider than w
		for i, mw := range masterWidths {
			if RenditionFits(w, mw) || w == PlaceholderWidth {
				batch = append(batch, i)
			}
		}
		if len(batch) == 0 {
			continue
		}
		if err := vipsBatch(ctx, masters, batch, w, dir); err != nil {
			return nil, err
		}
		for _, i := range batch {
			p := renditionPath(dir, masters[i], w)
			if w == PlaceholderWidth {
				data, err := os.ReadFile(p)
				if err != nil {
					return nil, err
				}
				out[i].Placeholder = data
				continue
			}
			rw, rh, err := webpSize(p)
			if err != nil {
				return nil, err
			}
			out[i].WebP = append(out[i].WebP, MadeRendition{Path: p, Width: rw, Height: rh})
		}
	}
	return out, nil
}

// vipsBatch runs one vipsthumbnail over the masters of batch at width w.
func vipsBatch(ctx context.Context, masters []string, batch []int, w int, dir string) error {
	q := webpQuality
	if w == PlaceholderWidth {
		q = 30
	}
	args := make([]string, 0, len(batch)+3)
	for _, i := range batch {
		args = append(args, masters[i])
	}
	// -s Wx100000: w wide whatever the height; %s is each input's name without extension.
	args = append(args, "-s", strconv.Itoa(w)+"x100000", "-o",
		filepath.Join(dir, "%s-w"+strconv.Itoa(w)+".webp")+
			"[Q="+strconv.Itoa(q)+",effort="+strconv.Itoa(webpEffort)+",strip]")
	// One thread (VIPS_CONCURRENCY), at a lower priority than conversions and requests (nice):
	// renditions are background work.
	args = append([]string{"VIPS_CONCURRENCY=1", "nice", "-n", "10", vipsthumbnail}, args...)
	_, err := command(ctx, "env", args...)
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			return fail("the page renditions could not be made (" + firstLines(te.stderr, 1) + ")")
		}
		return err
	}
	for _, i := range batch {
		if _, err := os.Stat(renditionPath(dir, masters[i], w)); err != nil {
			return fail("the page renditions could not be made (" + filepath.Base(masters[i]) + " has none)")
		}
	}
	return nil
}

// renditionPath is where vipsthumbnail writes master's rendition of width w in dir.
func renditionPath(dir, master string, w int) string {
	base := strings.TrimSuffix(filepath.Base(master), filepath.Ext(master))
	return filepath.Join(dir, base+"-w"+strconv.Itoa(w)+".webp")
}

// webpSize reads the width and height of a WebP file.
func webpSize(path string) (int, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	cfg, err := webp.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0, fail("a page rendition is not a WebP image: " + err.Error())
	}
	return cfg.Width, cfg.Height, nil
}
