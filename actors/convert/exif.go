package convert

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/draw"
)

// The EXIF orientation tag is read by hand: it is one tag of IFD0, the maintained Go EXIF
// libraries pull in far more than this, and the image libraries that apply it
// (disintegration/imaging) read it from JPEG only, while PNG files carry EXIF in an eXIf chunk.

// Orientation returns the EXIF orientation (1-8) of a JPEG or PNG, 1 when absent.
func Orientation(data []byte) int {
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8}):
		return jpegOrientation(data)
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return pngOrientation(data)
	}
	return 1
}

func jpegOrientation(d []byte) int {
	i := 2
	for i+4 <= len(d) {
		if d[i] != 0xFF {
			return 1
		}
		marker := d[i+1]
		if marker == 0xD9 || marker == 0xDA { // end of image, start of scan: no more metadata
			return 1
		}
		size := int(binary.BigEndian.Uint16(d[i+2:]))
		if size < 2 || i+2+size > len(d) {
			return 1
		}
		seg := d[i+4 : i+2+size]
		if marker == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return tiffOrientation(seg[6:])
		}
		i += 2 + size
	}
	return 1
}

func pngOrientation(d []byte) int {
	i := 8
	for i+12 <= len(d) {
		n := int(binary.BigEndian.Uint32(d[i:]))
		typ := string(d[i+4 : i+8])
		if n < 0 || i+12+n > len(d) {
			return 1
		}
		if typ == "eXIf" {
			return tiffOrientation(d[i+8 : i+8+n])
		}
		if typ == "IDAT" || typ == "IEND" {
			return 1 // eXIf must come before the image data
		}
		i += 12 + n
	}
	return 1
}

// tiffOrientation reads tag 0x0112 of IFD0 of a TIFF header.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	off := int(bo.Uint32(t[4:]))
	if off < 8 || off+2 > len(t) {
		return 1
	}
	n := int(bo.Uint16(t[off:]))
	for k := 0; k < n; k++ {
		e := off + 2 + 12*k
		if e+12 > len(t) {
			return 1
		}
		if bo.Uint16(t[e:]) == 0x0112 {
			v := int(bo.Uint16(t[e+8:]))
			if v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}

// Orient returns img turned upright for an EXIF orientation.
func Orient(img image.Image, o int) image.Image {
	if o <= 1 || o > 8 {
		return img
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	src := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(src, src.Bounds(), img, b.Min, draw.Src)
	dw, dh := w, h
	if o >= 5 { // 5-8 swap the axes
		dw, dh = h, w
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var dx, dy int
			switch o {
			case 2: // mirror horizontal
				dx, dy = w-1-x, y
			case 3: // rotate 180
				dx, dy = w-1-x, h-1-y
			case 4: // mirror vertical
				dx, dy = x, h-1-y
			case 5: // transpose
				dx, dy = y, x
			case 6: // rotate 90 clockwise
				dx, dy = h-1-y, x
			case 7: // transverse
				dx, dy = h-1-y, w-1-x
			case 8: // rotate 90 counter-clockwise
				dx, dy = y, w-1-x
			}
			si := src.PixOffset(x, y)
			di := dst.PixOffset(dx, dy)
			copy(dst.Pix[di:di+4], src.Pix[si:si+4])
		}
	}
	return dst
}
