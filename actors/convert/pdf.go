package convert

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// PDF rendering uses poppler's command-line tools (pdfinfo, pdftoppm, pdftotext), chosen by
// measurement: see docs/CONVERSION.md.

// PageBox is a page's crop box in PDF points and its rotation.
type PageBox struct {
	X0, Y0, X1, Y1 float64
	Rotate         int
}

// Width and Height of the box as displayed (rotation applied).
func (b PageBox) Width() float64 {
	if b.Rotate == 90 || b.Rotate == 270 {
		return b.Y1 - b.Y0
	}
	return b.X1 - b.X0
}

func (b PageBox) Height() float64 {
	if b.Rotate == 90 || b.Rotate == 270 {
		return b.X1 - b.X0
	}
	return b.Y1 - b.Y0
}

// ErrNoPoppler is returned when poppler-utils is not installed.
var ErrNoPoppler = fail("PDF conversion needs poppler-utils (pdfinfo, pdftoppm), which is not installed")

// checkTrailer rejects a PDF without an end-of-file marker near its end: a truncated upload.
func checkTrailer(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	n := int64(4096)
	if st.Size() < n {
		n = st.Size()
	}
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, st.Size()-n); err != nil && err != io.EOF {
		return err
	}
	if !bytes.Contains(tail, []byte("%%EOF")) {
		return fail("the PDF is truncated: it has no end-of-file marker (was the upload cut short?)")
	}
	return nil
}

// DefaultMaxPages is the most pages a document may have (Options.MaxPages, --max-pages). A
// PDF with more, or an Office document whose PDF has more, fails before any page is rendered.
// 2,000 pages is eight times the editor's 250 and far beyond real catalogues and reports, and
// bounds one file's work: about 25 s of rendering on two cores and some 300-600 MB of page
// images at 1600 px.
const DefaultMaxPages = 2000

// PDFPages reads the page boxes of a PDF (page count = len) of at most DefaultMaxPages pages.
func PDFPages(ctx context.Context, path string) ([]PageBox, error) {
	return PDFPagesMax(ctx, path, DefaultMaxPages)
}

// PDFPagesMax is PDFPages for a PDF of at most maxPages pages (<= 0: DefaultMaxPages): a longer
// one fails with its page count, and pdfinfo reads no more than maxPages page boxes.
func PDFPagesMax(ctx context.Context, path string, maxPages int) ([]PageBox, error) {
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	if _, err := exec.LookPath("pdfinfo"); err != nil {
		return nil, ErrNoPoppler
	}
	if err := checkTrailer(path); err != nil {
		return nil, err
	}
	// "Pages:" is the document's count whatever -l says; boxes are listed for pages 1..-l only.
	out, err := command(ctx, "pdfinfo", "-box", "-f", "1", "-l", strconv.Itoa(maxPages), path)
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			low := strings.ToLower(te.stderr)
			switch {
			case strings.Contains(low, "password"):
				return nil, fail("the PDF is password-protected; upload it without a password")
			default:
				return nil, fail("the PDF is damaged and cannot be read (" + firstLines(te.stderr, 1) + ")")
			}
		}
		return nil, err
	}
	var boxes []PageBox
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// "Pages:           52", "Page    1 CropBox:     0.00     0.00   595.28   841.89" and
		// "Page    1 rot:  0"
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "Pages:" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > maxPages {
				return nil, tooManyPages(n, maxPages)
			}
			continue
		}
		if len(f) < 4 || f[0] != "Page" {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 || n > len(boxes)+1 {
			continue
		}
		if n == len(boxes)+1 {
			boxes = append(boxes, PageBox{})
		}
		b := &boxes[n-1]
		switch f[2] {
		case "CropBox:":
			if len(f) >= 7 {
				b.X0, _ = strconv.ParseFloat(f[3], 64)
				b.Y0, _ = strconv.ParseFloat(f[4], 64)
				b.X1, _ = strconv.ParseFloat(f[5], 64)
				b.Y1, _ = strconv.ParseFloat(f[6], 64)
			}
		case "rot:":
			b.Rotate, _ = strconv.Atoi(f[3])
			b.Rotate = ((b.Rotate % 360) + 360) % 360
		}
	}
	if len(boxes) == 0 {
		return nil, fail("the PDF has no pages")
	}
	return boxes, nil
}

// tooManyPages is the failure of a document of n pages, more than maxPages.
func tooManyPages(n, maxPages int) error {
	return fail(fmt.Sprintf("the document has %d pages; at most %d can be converted (split it into smaller files)", n, maxPages))
}

// RenderOptions configure RenderPDF.
type RenderOptions struct {
	LongEdge int // pixels of the longer side of each page image
	// Slots bounds the renderer processes running at once across all conversions; a
	// conversion takes as many as are free, up to one per chunk.
	Slots chan struct{}
	// Chunk is the most pages one renderer process handles. A document is split into one
	// range per slot (so it uses every core), and into more when ranges would exceed Chunk
	// (so a very long document leaves slots to other conversions between its ranges). Every
	// process start re-reads the document, so ranges are as long as that allows. Cancelling
	// kills the processes, so it is prompt whatever the range length.
	Chunk int
	// OnPages is called with the number of pages just finished (progress).
	OnPages func(n int)
}

// RenderPDF renders pages 1..pages of path to JPEG files under dir and returns their paths in
// page order.
func RenderPDF(ctx context.Context, path string, pages int, o RenderOptions, dir string) ([]string, error) {
	if o.Chunk <= 0 {
		o.Chunk = DefaultChunk
	}
	n := max(cap(o.Slots), 1, (pages+o.Chunk-1)/o.Chunk)
	n = min(n, pages)
	type rng struct{ first, last int }
	ranges := make([]rng, 0, n)
	for i := 0; i < n; i++ {
		ranges = append(ranges, rng{first: i*pages/n + 1, last: (i + 1) * pages / n})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]string, pages)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for i, r := range ranges {
		if o.Slots != nil {
			select {
			case o.Slots <- struct{}{}:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int, r rng) {
			defer wg.Done()
			if o.Slots != nil {
				defer func() { <-o.Slots }()
			}
			sub := filepath.Join(dir, "r"+strconv.Itoa(i))
			err := renderRange(ctx, path, r.first, r.last, o.LongEdge, sub, out)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
				return
			}
			if err == nil && o.OnPages != nil {
				o.OnPages(r.last - r.first + 1)
			}
		}(i, r)
	}
	wg.Wait()
	if err := ctx.Err(); firstErr == nil && err != nil {
		firstErr = err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for i, p := range out {
		if p == "" {
			return nil, fail(fmt.Sprintf("page %d could not be rendered", i+1))
		}
	}
	return out, nil
}

func renderRange(ctx context.Context, path string, first, last, longEdge int, dir string, out []string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	// -cropbox: the page is its crop box (what viewers show), not the media box with bleed.
	_, err := command(ctx, "pdftoppm", "-cropbox", "-jpeg", "-jpegopt", "quality=85", "-scale-to", strconv.Itoa(longEdge),
		"-f", strconv.Itoa(first), "-l", strconv.Itoa(last), path, filepath.Join(dir, "p"))
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			return fail("the PDF could not be rendered (" + firstLines(te.stderr, 1) + ")")
		}
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, name := range names {
		// p-007.jpg: the page number, zero-padded to the width of the document's page count.
		num := strings.TrimSuffix(strings.TrimPrefix(name, "p-"), ".jpg")
		n, err := strconv.Atoi(num)
		if err != nil || n < first || n > last {
			continue
		}
		out[n-1] = filepath.Join(dir, name)
	}
	return nil
}
