package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// ConvertOptions configure the convert scenario.
type ConvertOptions struct {
	Pages    int // pages of the speed test PDF (200)
	BigPages int // pages of the memory test PDF (1,000)
	LongEdge int
	Runs     int // timed conversions per side; the best is kept
	Scanned  int // pages of the scanned (image-only) PDF read by OCR (10)
}

// Targets of the convert scenario (issue: conversion).
const (
	TargetConvertVsPdftoppm = 0.8       // service pages/s at least this share of pdftoppm's on all cores
	TargetConvertPeakBytes  = 600 << 20 // peak memory converting the big PDF
	// TargetConvertTextVsNone: pages/s keeping each page's text (pdftotext) at least this
	// share of pages/s without it (issue 28).
	TargetConvertTextVsNone = 0.85
)

// Convert measures the service converting a PDF (upload to pages ready, through the API of a
// `flipbook serve` child process) beside pdftoppm rendering the same pages at the same size on
// all cores in the same run, and the service's peak memory converting a big PDF.
func Convert(ctx context.Context, o ConvertOptions, out io.Writer) (*Report, error) {
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		return nil, fmt.Errorf("convert: pdftoppm (poppler-utils) is not installed")
	}
	dir, err := os.MkdirTemp("", "flipbook-bench-convert-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	small, big := filepath.Join(dir, "small.pdf"), filepath.Join(dir, "big.pdf")
	if err := WritePDF(small, o.Pages); err != nil {
		return nil, err
	}
	if err := WritePDF(big, o.BigPages); err != nil {
		return nil, err
	}
	cores := runtime.NumCPU()
	rep := &Report{Scenario: "convert"}

	c, err := startChild(ctx, filepath.Join(dir, "data"), "--page-long-edge", strconv.Itoa(o.LongEdge))
	if err != nil {
		return nil, err
	}
	defer c.stop()
	// The same service without page text (issue 28), for the cost of keeping it.
	// Without renditions either: they would run in the background into the next measurement.
	bare, err := startChild(ctx, filepath.Join(dir, "data-notext"), "--page-long-edge", strconv.Itoa(o.LongEdge), "--no-page-text", "--no-renditions")
	if err != nil {
		return nil, err
	}
	defer bare.stop()

	// Baselines (pdftoppm in one process, and split across all cores) and the service, run in
	// turns: the machines are shared and their speed drifts, so each round measures all three
	// close together, and the best of the rounds is kept for each.
	one, all, svc, noText, rend := time.Duration(1<<62), time.Duration(1<<62), time.Duration(1<<62), time.Duration(1<<62), time.Duration(1<<62)
	for r := 0; r < o.Runs; r++ {
		d, err := pdftoppm(ctx, small, o.Pages, 1, o.LongEdge, filepath.Join(dir, "base1-"+strconv.Itoa(r)))
		if err != nil {
			return nil, err
		}
		one = min(one, d)
		d, err = pdftoppm(ctx, small, o.Pages, cores, o.LongEdge, filepath.Join(dir, "baseN-"+strconv.Itoa(r)))
		if err != nil {
			return nil, err
		}
		all = min(all, d)
		d, _, book, err := c.convertBook(ctx, small)
		if err != nil {
			return nil, err
		}
		svc = min(svc, d)
		// The renditions follow in the background (issue 29): waited for, so that they do not
		// run into the next measurement, and timed.
		if d, err = c.waitRenditions(ctx, book); err != nil {
			return nil, err
		}
		rend = min(rend, d)
		d, _, err = bare.convert(ctx, small)
		if err != nil {
			return nil, err
		}
		noText = min(noText, d)
	}
	pps := func(d time.Duration) float64 { return float64(o.Pages) / d.Seconds() }
	fmt.Fprintf(out, "  pdftoppm, 1 process             %7.1f pages/s (%d pages in %s)\n", pps(one), o.Pages, one.Round(time.Millisecond))
	fmt.Fprintf(out, "  pdftoppm, %d processes           %7.1f pages/s (%d pages in %s)\n", cores, pps(all), o.Pages, all.Round(time.Millisecond))
	fmt.Fprintf(out, "  service, upload to pages ready  %7.1f pages/s (%d pages in %s)\n", pps(svc), o.Pages, svc.Round(time.Millisecond))
	fmt.Fprintf(out, "  service without page text       %7.1f pages/s (%d pages in %s)\n", pps(noText), o.Pages, noText.Round(time.Millisecond))
	fmt.Fprintf(out, "  renditions, after pages ready   %7.1f pages/s (%d pages in %s, in the background)\n", pps(rend), o.Pages, rend.Round(time.Millisecond))
	if err := convertScanned(ctx, c, bare, dir, o, out); err != nil {
		return nil, err
	}

	// Memory: convert the big PDF while sampling the service's process tree.
	var peakTree int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if r := treeRSS(c.cmd.Process.Pid); r > peakTree {
					peakTree = r
				}
			}
		}
	}()
	bigD, bigPages, err := c.convert(ctx, big)
	close(stop)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	hwm := peakRSS(c.cmd.Process.Pid)
	fmt.Fprintf(out, "  service, %d-page PDF           %7.1f pages/s; peak RSS: service %d MB, with its renderer processes %d MB\n",
		bigPages, float64(bigPages)/bigD.Seconds(), hwm>>20, peakTree>>20)

	rep.checkValue(out, "service pages/s / pdftoppm pages/s (all cores)", all.Seconds()/svc.Seconds(), ">=", TargetConvertVsPdftoppm, "x")
	rep.checkValue(out, "pages/s with page text / without", noText.Seconds()/svc.Seconds(), ">=", TargetConvertTextVsNone, "x")
	rep.checkValue(out, fmt.Sprintf("peak memory, %d-page PDF (service + renderers)", o.BigPages), float64(max(hwm, peakTree))/(1<<20), "<=", TargetConvertPeakBytes>>20, " MB")
	return rep, nil
}

// pdftoppm renders pages 1..n of pdf with procs processes over equal page ranges.
func pdftoppm(ctx context.Context, pdf string, n, procs, longEdge int, dir string) (time.Duration, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, procs)
	for i := 0; i < procs; i++ {
		first, last := i*n/procs+1, (i+1)*n/procs
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// The same rendering as the service's: crop box, JPEG quality 85, long edge.
			errs[i] = exec.CommandContext(ctx, "pdftoppm", "-cropbox", "-jpeg", "-jpegopt", "quality=85", "-scale-to", strconv.Itoa(longEdge),
				"-f", strconv.Itoa(first), "-l", strconv.Itoa(last), pdf, filepath.Join(dir, "p")).Run()
		}(i)
	}
	wg.Wait()
	d := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return d, os.RemoveAll(dir)
}

// convert uploads pdf and waits until its batch has completed; it returns the time taken and
// the page count of the book.
func (c *child) convert(ctx context.Context, pdf string) (time.Duration, int, error) {
	d, n, _, err := c.convertBook(ctx, pdf)
	return d, n, err
}

// convertBook is convert, also giving the book's id.
func (c *child) convertBook(ctx context.Context, pdf string) (time.Duration, int, string, error) {
	data, err := os.ReadFile(pdf)
	if err != nil {
		return 0, 0, "", err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("files[]", filepath.Base(pdf))
	fw.Write(data)
	mw.Close()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, "POST", c.base+"/api/v1/books", &body)
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var up struct {
		Data struct {
			BatchID string `json:"batch_id"`
		} `json:"data"`
	}
	if err := doJSON(req, 202, &up); err != nil {
		return 0, 0, "", err
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/api/v1/batches/"+up.Data.BatchID, nil)
		req.Header.Set("Authorization", "Bearer "+c.key)
		var b struct {
			Data struct {
				Status string `json:"status"`
				Files  []struct {
					Pages  int     `json:"page_count"`
					Error  *string `json:"error"`
					BookID string  `json:"book_id"`
				} `json:"files"`
			} `json:"data"`
		}
		if err := doJSON(req, 200, &b); err != nil {
			return 0, 0, "", err
		}
		switch b.Data.Status {
		case "completed":
			return time.Since(start), b.Data.Files[0].Pages, b.Data.Files[0].BookID, nil
		case "failed", "cancelled":
			reason := ""
			if b.Data.Files[0].Error != nil {
				reason = *b.Data.Files[0].Error
			}
			return 0, 0, "", fmt.Errorf("convert: batch %s: %s", b.Data.Status, reason)
		}
		select {
		case <-ctx.Done():
			return 0, 0, "", ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitRenditions waits until every page of a book wider than the smallest rendition has its
// renditions (GET /books/{book}/pages), and says how long that took.
func (c *child) waitRenditions(ctx context.Context, book string) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < 5*time.Minute {
		req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/api/v1/books/"+book+"/pages", nil)
		req.Header.Set("Authorization", "Bearer "+c.key)
		var p struct {
			Data []struct {
				Width      int   `json:"width"`
				Renditions []any `json:"renditions"`
			} `json:"data"`
		}
		if err := doJSON(req, 200, &p); err != nil {
			return 0, err
		}
		missing := 0
		for _, pg := range p.Data {
			if pg.Width > 400 && len(pg.Renditions) == 0 {
				missing++
			}
		}
		if missing == 0 && len(p.Data) > 0 {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("convert: the renditions of book %s were not made within 5 minutes", book)
}

func doJSON(req *http.Request, want int, out any) error {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %.300s", req.Method, req.URL.Path, res.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// convertScanned converts a PDF of page images without text (a scan) with and without page
// text: the difference is the OCR's, reported as OCR pages/s (no target: Tesseract's speed
// is the page's density; docs/DECISIONS.md "OCR").
func convertScanned(ctx context.Context, c, bare *child, dir string, o ConvertOptions, out io.Writer) error {
	if o.Scanned <= 0 {
		return nil
	}
	if _, err := exec.LookPath("tesseract"); err != nil {
		fmt.Fprintln(out, "  scanned PDF: skipped, tesseract (tesseract-ocr) is not installed")
		return nil
	}
	scan := filepath.Join(dir, "scanned.pdf")
	if err := WriteScannedPDF(ctx, scan, o.Scanned, filepath.Join(dir, "scan")); err != nil {
		return err
	}
	withText, _, book, err := c.convertBook(ctx, scan)
	if err != nil {
		return err
	}
	if _, err := c.waitRenditions(ctx, book); err != nil {
		return err
	}
	without, _, err := bare.convert(ctx, scan)
	if err != nil {
		return err
	}
	ocr := withText - without
	fmt.Fprintf(out, "  scanned PDF, %d pages            %7.1f pages/s with OCR, %.1f pages/s without text; OCR %.2f pages/s (%.2f s a page on %d cores)\n",
		o.Scanned, float64(o.Scanned)/withText.Seconds(), float64(o.Scanned)/without.Seconds(),
		float64(o.Scanned)/ocr.Seconds(), ocr.Seconds()*float64(runtime.NumCPU())/float64(o.Scanned), runtime.NumCPU())
	return nil
}
