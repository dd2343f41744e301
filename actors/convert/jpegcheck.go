package convert

import (
	"errors"
	"fmt"
)

// A JPEG's header says its size, not what decoding it costs. Go's decoder walks every block of
// a scan's components once per scan, and a progressive JPEG may have any number of scans: an
// empty one is about 100 bytes, so a 60-megapixel image of 600 scans (66 KB) kept a core for
// seconds per request, uninterruptibly, while it held the whole decode budget (found by a
// review). A progressive decode also keeps 64 four-byte coefficients per block of every
// component until the end, beyond the image itself: 1.4 GB for a 591-byte CMYK JPEG of 60
// megapixels. jpegCost walks the markers (no pixel is decoded) to refuse such files and to
// weigh the rest by what they cost.

// Limits of jpegCost.
const (
	// maxJPEGScans bounds a JPEG's scans: encoders write one (baseline), or about 10 for a
	// progressive image (libjpeg's default progression; optimised ones a few more).
	maxJPEGScans = 100
	// maxJPEGVisits bounds the block visits of all scans, in blocks of the image: libjpeg's
	// default progression visits each block about 6 times.
	maxJPEGVisits = 24
	// maxJPEGWeight bounds a progressive JPEG's decoded memory, in 4-byte units: the image and
	// its coefficients within twice MaxPixels (about 480 MB, as a 16-bit PNG of MaxPixels).
	maxJPEGWeight = 2 * MaxPixels
)

// Errors of jpegCost, phrased for a field message.
var (
	errJPEGScans  = fmt.Errorf("is a JPEG of more than %d scans", maxJPEGScans)
	errJPEGVisits = errors.New("is a JPEG whose scans cover the image too many times")
	errJPEGWeight = fmt.Errorf("is a progressive JPEG too large to decode (the image and its coefficients over %d megapixels); save it as a baseline JPEG", maxJPEGWeight/1_000_000)
)

// jpegComponent is one component of a JPEG frame.
type jpegComponent struct {
	id   byte
	h, v int // sampling factors
}

// jpegCost reads a JPEG's markers and returns what decoding it holds, in 4-byte units (one
// pixel of RGBA): the pixels, plus the coefficients of a progressive image. It refuses a JPEG
// whose scans would keep a decoder walking its blocks far longer than its size says. A file
// whose markers cannot be walked is left to the decoder (its cost is its pixels): Go's
// decoder refuses it too, or reads no more scans than are counted here.
func jpegCost(data []byte, width, height int) (int64, error) {
	pixels := int64(width) * int64(height)
	var comps []jpegComponent
	progressive := false
	scans := 0
	var visits int64 // blocks walked by all scans
	blocksOf := func(c jpegComponent, hmax, vmax int) int64 {
		mx := int64((width + 8*hmax - 1) / (8 * hmax))
		my := int64((height + 8*vmax - 1) / (8 * vmax))
		return mx * my * int64(c.h*c.v)
	}
	var hmax, vmax int
	if len(data) < 4 || data[0] != 0xFF || data[1] != 0xD8 {
		return pixels, nil
	}
	for i := 2; ; {
		// The next marker: fill bytes, and bytes that are none (libjpeg, and Go's decoder,
		// skip them), before it.
		for i < len(data) && data[i] != 0xFF {
			i++
		}
		for i < len(data) && data[i] == 0xFF {
			i++
		}
		if i >= len(data) {
			break
		}
		m := data[i]
		i++
		if m == 0xD9 { // end of image
			break
		}
		if m == 0x01 || (m >= 0xD0 && m <= 0xD7) || m == 0x00 {
			continue // no length
		}
		if i+2 > len(data) {
			break
		}
		n := int(data[i])<<8 | int(data[i+1])
		if n < 2 || i+n > len(data) {
			break
		}
		seg := data[i+2 : i+n]
		i += n
		switch {
		case m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC: // a frame
			if len(comps) > 0 {
				return 0, ErrNotImage // a second frame: none of the decoders here reads one
			}
			if comps = jpegFrame(seg); comps == nil {
				return pixels, nil
			}
			progressive = m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE
			for _, c := range comps {
				hmax, vmax = max(hmax, c.h), max(vmax, c.v)
			}
		case m == 0xDA: // a scan, then its entropy-coded data up to the next marker
			if scans++; scans > maxJPEGScans {
				return 0, errJPEGScans
			}
			if len(seg) < 1 {
				return pixels, nil
			}
			for k := 0; k < int(seg[0]) && 1+2*k < len(seg); k++ {
				for _, c := range comps {
					if c.id == seg[1+2*k] {
						visits += blocksOf(c, hmax, vmax)
					}
				}
			}
			i = entropyEnd(data, i)
		}
	}
	if len(comps) == 0 {
		return pixels, nil
	}
	var blocks int64
	for _, c := range comps {
		blocks += blocksOf(c, hmax, vmax)
	}
	if visits > maxJPEGVisits*blocks {
		return 0, errJPEGVisits
	}
	if !progressive {
		return pixels, nil
	}
	weight := pixels + 64*blocks
	if weight > maxJPEGWeight {
		return 0, errJPEGWeight
	}
	return weight, nil
}

// jpegFrame reads the components of a frame header (SOF segment), nil when it is malformed.
func jpegFrame(seg []byte) []jpegComponent {
	if len(seg) < 6 {
		return nil
	}
	nf := int(seg[5])
	if nf < 1 || len(seg) < 6+3*nf {
		return nil
	}
	comps := make([]jpegComponent, nf)
	for k := range comps {
		c := jpegComponent{id: seg[6+3*k], h: int(seg[7+3*k] >> 4), v: int(seg[7+3*k] & 15)}
		if c.h < 1 || c.v < 1 {
			return nil
		}
		comps[k] = c
	}
	return comps
}

// entropyEnd is where the entropy-coded data from i ends: at a marker other than a stuffed
// zero (FF 00) or a restart (FF D0-D7), or the end of data.
func entropyEnd(data []byte, i int) int {
	for ; i+1 < len(data); i++ {
		if data[i] != 0xFF {
			continue
		}
		if b := data[i+1]; b != 0x00 && b != 0xFF && (b < 0xD0 || b > 0xD7) {
			return i
		}
	}
	return len(data)
}
