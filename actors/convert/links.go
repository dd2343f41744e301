package convert

import (
	"bufio"
	"bytes"
	"context"
	"html"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"flipbook/storage"
)

// PDFLinks finds the clickable areas of each page (auto_links_enabled): the PDF's link
// annotations with a URI (read with pdfcpu) and URLs written in the text (word boxes from
// pdftotext -bbox). Areas are fractions of the displayed page, origin top-left. The result is
// indexed by page (0-based). Link extraction never fails a conversion: a PDF whose
// annotations cannot be read just has fewer links.
func PDFLinks(ctx context.Context, path string, boxes []PageBox) [][]storage.Link {
	links := make([][]storage.Link, len(boxes))
	annotationLinks(path, boxes, links)
	textLinks(ctx, path, boxes, links)
	return links
}

func annotationLinks(path string, boxes []PageBox, links [][]storage.Link) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	m, err := api.Annotations(f, nil, conf)
	if err != nil {
		return
	}
	for page, byType := range m {
		if page < 1 || page > len(boxes) {
			continue
		}
		annots, ok := byType[model.AnnLink]
		if !ok {
			continue
		}
		for _, r := range annots.Map {
			var la *model.LinkAnnotation
			switch v := r.(type) {
			case model.LinkAnnotation:
				la = &v
			case *model.LinkAnnotation:
				la = v
			}
			if la == nil || !webURL(la.URI) {
				continue
			}
			box := boxes[page-1]
			rect := la.Rect
			if l, ok := fromUserSpace(box, rect.LL.X, rect.LL.Y, rect.UR.X, rect.UR.Y, la.URI); ok {
				links[page-1] = append(links[page-1], l)
			}
		}
	}
}

// fromUserSpace maps a rectangle in PDF user space (origin bottom-left of the media box) to
// fractions of the displayed crop box, origin top-left, applying the page rotation.
func fromUserSpace(b PageBox, x0, y0, x1, y1 float64, url string) (storage.Link, bool) {
	w, h := b.X1-b.X0, b.Y1-b.Y0
	if w <= 0 || h <= 0 {
		return storage.Link{}, false
	}
	// Unrotated fractions, top-left origin.
	fx0, fx1 := (math.Min(x0, x1)-b.X0)/w, (math.Max(x0, x1)-b.X0)/w
	fy0, fy1 := (b.Y1-math.Max(y0, y1))/h, (b.Y1-math.Min(y0, y1))/h
	var l storage.Link
	switch b.Rotate {
	case 90: // displayed turned clockwise
		l = storage.Link{X: 1 - fy1, Y: fx0, W: fy1 - fy0, H: fx1 - fx0}
	case 180:
		l = storage.Link{X: 1 - fx1, Y: 1 - fy1, W: fx1 - fx0, H: fy1 - fy0}
	case 270:
		l = storage.Link{X: fy0, Y: 1 - fx1, W: fy1 - fy0, H: fx1 - fx0}
	default:
		l = storage.Link{X: fx0, Y: fy0, W: fx1 - fx0, H: fy1 - fy0}
	}
	l.URL = url
	return clampLink(l)
}

func clampLink(l storage.Link) (storage.Link, bool) {
	x0, y0 := math.Max(0, l.X), math.Max(0, l.Y)
	x1, y1 := math.Min(1, l.X+l.W), math.Min(1, l.Y+l.H)
	if x1 <= x0 || y1 <= y0 {
		return storage.Link{}, false
	}
	r := func(v float64) float64 { return math.Round(v*1e5) / 1e5 }
	return storage.Link{X: r(x0), Y: r(y0), W: r(x1 - x0), H: r(y1 - y0), URL: l.URL}, true
}

func webURL(u string) bool {
	low := strings.ToLower(u)
	return strings.HasPrefix(low, "http://") || strings.HasPrefix(low, "https://")
}

var (
	pageRe = regexp.MustCompile(`<page width="([0-9.]+)" height="([0-9.]+)">`)
	wordRe = regexp.MustCompile(`<word xMin="([0-9.]+)" yMin="([0-9.]+)" xMax="([0-9.]+)" yMax="([0-9.]+)">([^<]*)</word>`)
	urlRe  = regexp.MustCompile(`(?i)^(https?://|www\.)[^\s]+\.[^\s]+$`)
)

// textLinks adds URLs written in the page text (not already covered by an annotation).
func textLinks(ctx context.Context, path string, boxes []PageBox, links [][]storage.Link) {
	out, err := command(ctx, "pdftotext", "-bbox", "-cropbox", "-enc", "UTF-8", path, "-")
	if err != nil {
		return
	}
	page := -1
	var pw, ph float64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := pageRe.FindStringSubmatch(line); m != nil {
			page++
			pw, _ = strconv.ParseFloat(m[1], 64)
			ph, _ = strconv.ParseFloat(m[2], 64)
			continue
		}
		m := wordRe.FindStringSubmatch(line)
		if m == nil || page < 0 || page >= len(boxes) || pw <= 0 || ph <= 0 {
			continue
		}
		// pdftotext gives the unrotated page size but word boxes on the displayed page.
		w, h := pw, ph
		if r := boxes[page].Rotate; r == 90 || r == 270 {
			w, h = ph, pw
		}
		word := strings.TrimRight(html.UnescapeString(m[5]), ".,;:!?)]}>'\"")
		if !urlRe.MatchString(word) {
			continue
		}
		url := word
		if strings.HasPrefix(strings.ToLower(url), "www.") {
			url = "https://" + url
		}
		x0, _ := strconv.ParseFloat(m[1], 64)
		y0, _ := strconv.ParseFloat(m[2], 64)
		x1, _ := strconv.ParseFloat(m[3], 64)
		y1, _ := strconv.ParseFloat(m[4], 64)
		l, ok := clampLink(storage.Link{X: x0 / w, Y: y0 / h, W: (x1 - x0) / w, H: (y1 - y0) / h, URL: url})
		if !ok || covered(links[page], l) {
			continue
		}
		links[page] = append(links[page], l)
	}
}

// covered reports whether an area with the same URL already overlaps l.
func covered(existing []storage.Link, l storage.Link) bool {
	for _, e := range existing {
		if e.URL == l.URL && e.X < l.X+l.W && l.X < e.X+e.W && e.Y < l.Y+l.H && l.Y < e.Y+e.H {
			return true
		}
	}
	return false
}
