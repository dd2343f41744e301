package convert

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"flipbook/storage"
)

// OCR reads the words of page images with Tesseract (tesseract-ocr, Debian's package, with its
// language data), for the pages that carry no text of their own: photos, scanned PDF pages and
// catalog renders (issue 28). Each run is one process on one core (OMP_THREAD_LIMIT=1): pages
// run side by side instead, as many as the shared renderer slots allow.

// DefaultOCRLanguages is the Tesseract language Options.OCRLanguages defaults to.
const DefaultOCRLanguages = "eng"

// OCRMax is the most of Tesseract's TSV output read for one page: a dense page of some 600
// words is about 40 KB, so this only stops a runaway process.
const OCRMax = 8 << 20

// OCRTimeout bounds the OCR of one page (a dense 1600 px page takes about a second).
const OCRTimeout = time.Minute

// OCRMinConfidence is the lowest Tesseract confidence (0..100) of a word kept: below it the
// "words" are mostly specks, textures and pictures read as letters.
const OCRMinConfidence = 30

// ErrNoTesseract is the reason a page has no OCR text where Tesseract is not installed.
var ErrNoTesseract = fail("Tesseract, which reads the text of page images, is not installed; on Debian: apt-get install tesseract-ocr tesseract-ocr-eng")

// ocrLanguagesPattern is what Options.OCRLanguages may hold: Tesseract language names joined
// by "+" ("eng", "eng+deu", "chi_sim").
var ocrLanguagesPattern = regexp.MustCompile(`^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$`)

// OCR reads the words of the image at imagePath (JPEG or PNG) in English: see OCRIn.
func OCR(ctx context.Context, imagePath string) (storage.PageText, error) {
	return OCRIn(ctx, imagePath, DefaultOCRLanguages)
}

// OCRIn reads the words of the image at imagePath with Tesseract in the given languages
// ("eng+deu"; "": DefaultOCRLanguages), with their boxes in fractions of the image, in reading
// order, Text joined like PDFText's (a space within a line, a newline between lines, a blank
// line between blocks and paragraphs) and Source "ocr". Words under OCRMinConfidence are left
// out. Page is 1. Errors are *Failure (a reason for the customer), ctx.Err() when cancelled,
// or ErrNoTesseract.
func OCRIn(ctx context.Context, imagePath, langs string) (storage.PageText, error) {
	return ocrImage(ctx, imagePath, langs, OCRMax)
}

// ocrImage is OCRIn reading at most limit bytes of Tesseract's output.
func ocrImage(ctx context.Context, imagePath, langs string, limit int64) (storage.PageText, error) {
	if langs == "" {
		langs = DefaultOCRLanguages
	}
	if !ocrLanguagesPattern.MatchString(langs) {
		return storage.PageText{}, fail(fmt.Sprintf("%q is not a list of Tesseract languages (eng+deu)", langs))
	}
	bin, err := exec.LookPath("tesseract")
	if err != nil {
		return storage.PageText{}, ErrNoTesseract
	}
	octx, cancel := context.WithTimeout(ctx, OCRTimeout)
	defer cancel()
	// env sets OMP_THREAD_LIMIT for Tesseract alone (the runner passes the service's
	// environment): Debian's build uses OpenMP, which would otherwise start a thread per core
	// in every process and make concurrent pages fight over the cores.
	out, err := cappedCommand(octx, limit, "env", "OMP_THREAD_LIMIT=1", bin, imagePath, "-", "-l", langs, "tsv")
	if err != nil {
		var te *toolError
		switch {
		case ctx.Err() != nil:
			return storage.PageText{}, ctx.Err()
		case octx.Err() != nil:
			return storage.PageText{}, fail(fmt.Sprintf("OCR took longer than %s", OCRTimeout))
		case errors.Is(err, errOutputTooLarge):
			return storage.PageText{}, fail(fmt.Sprintf("the OCR output is longer than %d MiB", limit>>20))
		case errors.As(err, &te):
			return storage.PageText{}, fail("Tesseract failed (" + firstLines(te.stderr, 1) + ")")
		}
		return storage.PageText{}, err
	}
	pt, err := parseTSV(out)
	if err != nil {
		return storage.PageText{}, fail("Tesseract's output could not be read (" + err.Error() + ")")
	}
	return pt, nil
}

// TSV levels of Tesseract's rows.
const (
	tsvPage = 1
	tsvLine = 4
	tsvWord = 5
)

// parseTSV reads Tesseract's TSV output: a header, then one row per page (level 1, its box is
// the image), block (2), paragraph (3), line (4) and word (5), in reading order, with columns
// level page_num block_num par_num line_num word_num left top width height conf text (pixels,
// origin top left). Only the first page of the output is read (an image has one).
func parseTSV(out []byte) (storage.PageText, error) {
	pt := storage.PageText{Page: 1, Source: storage.TextFromOCR, Words: []storage.Word{}}
	var text textBuilder
	var w, h float64
	pages, rows := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 0; sc.Scan(); n++ {
		f := strings.SplitN(sc.Text(), "\t", 12)
		if n == 0 || len(f) == 1 && strings.TrimSpace(f[0]) == "" {
			continue // the header, or an empty line
		}
		if len(f) < 11 {
			return pt, fmt.Errorf("line %d has %d columns", n+1, len(f))
		}
		level, err := strconv.Atoi(f[0])
		if err != nil {
			return pt, fmt.Errorf("line %d: level %q", n+1, f[0])
		}
		var box [4]float64 // left top width height
		for i := range box {
			if box[i], err = strconv.ParseFloat(f[6+i], 64); err != nil {
				return pt, fmt.Errorf("line %d: %q is not a number", n+1, f[6+i])
			}
		}
		rows++
		if level == tsvPage {
			if pages++; pages == 1 {
				if w, h = box[2], box[3]; w <= 0 || h <= 0 {
					return pt, fmt.Errorf("a page of %gx%g", w, h)
				}
			}
			continue
		}
		switch {
		case pages != 1:
			// before the page row, or on a second page
		case level < tsvLine:
			text.br("\n\n")
		case level == tsvLine:
			text.br("\n")
		case level == tsvWord && len(f) == 12:
			word, ok := tsvWordOf(f[10], f[11], box, w, h)
			switch {
			case !ok:
			case len(pt.Words) >= MaxPageWords:
				pt.Problem = tooManyWords
			default:
				pt.Words = append(pt.Words, word)
				text.word(word.Text)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return pt, err
	}
	if pages == 0 && rows > 0 {
		return pt, errors.New("rows without a page")
	}
	pt.Text = text.b.String()
	return pt, nil
}

// tsvWordOf is the word of a TSV row (conf and text columns, box in pixels) on an image of
// w×h pixels, and whether it is kept: not empty, confident enough.
func tsvWordOf(conf, s string, box [4]float64, w, h float64) (storage.Word, bool) {
	s = strings.TrimSpace(s)
	c, err := strconv.ParseFloat(strings.TrimSpace(conf), 64)
	if s == "" || err != nil || math.IsNaN(c) || c < OCRMinConfidence || box[2] <= 0 || box[3] <= 0 {
		return storage.Word{}, false
	}
	x0, y0 := fraction(box[0], w), fraction(box[1], h)
	x1, y1 := fraction(box[0]+box[2], w), fraction(box[1]+box[3], h)
	if x1 <= x0 || y1 <= y0 {
		return storage.Word{}, false
	}
	return storage.Word{Text: s, X: x0, Y: y0, W: round4(x1 - x0), H: round4(y1 - y0)}, true
}

// OCRPages reads the words of several page images at once, as many at a time as slots has
// room for (the renderer slots shared by all conversions; nil: one per core), each in one
// process on one core. It never fails: result i is the text of paths[i], Page i+1; a page
// whose OCR failed (Tesseract missing, a damaged image, cancelled) has no words (an empty,
// non-nil slice) and Problem saying why. langs is as for OCRIn.
func OCRPages(ctx context.Context, paths []string, slots chan struct{}, langs string) []storage.PageText {
	if slots == nil {
		slots = make(chan struct{}, runtime.NumCPU())
	}
	out := make([]storage.PageText, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			for j := i; j < len(paths); j++ {
				out[j] = ocrProblem(j+1, ctx.Err())
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			pt, err := OCRIn(ctx, p, langs)
			if err != nil {
				pt = ocrProblem(i+1, err)
			}
			pt.Page = i + 1
			out[i] = pt
		}()
	}
	wg.Wait()
	return out
}

// ocrProblem is page n without text because its OCR failed with err.
func ocrProblem(n int, err error) storage.PageText {
	reason := "an internal error"
	var f *Failure
	switch {
	case errors.As(err, &f):
		reason = f.Reason
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		reason = "the conversion was stopped"
	}
	return storage.PageText{Page: n, Words: []storage.Word{},
		Problem: "the page's text could not be read by OCR (" + reason + ")"}
}
