package convert

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/draw"
	"image/jpeg"
	"os"

	xdraw "golang.org/x/image/draw"
)

// Photo makes the single page of a JPG or PNG upload: EXIF orientation applied, scaled down so
// its longer side is at most longEdge. An upright JPEG that already fits is kept byte for byte;
// anything else is re-encoded as JPEG (transparency flattened on white). The image is decoded
// within the process-wide decode budget, as editor pages are (CheckImage).
func Photo(ctx context.Context, src string, longEdge int, dst string) (w, h int, img image.Image, err error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return 0, 0, nil, err
	}
	head, err := ImageHeader(data)
	if err != nil {
		return 0, 0, nil, fail("the image " + err.Error() + " (it may be damaged)")
	}
	err = CheckImage(ctx, data, head, func(decoded image.Image) error {
		w, h, img, err = photoPage(data, head.Ext, decoded, longEdge, dst)
		return err
	})
	if errors.Is(err, ErrNotImage) {
		return 0, 0, nil, fail("the image " + err.Error() + " (it may be damaged)")
	}
	return w, h, img, err
}

// photoPage writes the page of a decoded photo to dst and returns its size and image (at most
// longEdge on its longer side: the decoded image is not kept).
func photoPage(data []byte, ext string, decoded image.Image, longEdge int, dst string) (w, h int, img image.Image, err error) {
	o := Orientation(data)
	upright := Orient(decoded, o)
	b := upright.Bounds()
	w, h = b.Dx(), b.Dy()
	if o <= 1 && ext == "jpg" && max(w, h) <= longEdge {
		return w, h, upright, os.WriteFile(dst, data, 0o640)
	}
	if s := max(w, h); s > longEdge {
		w, h = w*longEdge/s, h*longEdge/s
		w, h = max(w, 1), max(h, 1)
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	xdraw.CatmullRom.Scale(out, out.Bounds(), upright, b, draw.Over, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, out, &jpeg.Options{Quality: 85}); err != nil {
		return 0, 0, nil, err
	}
	return w, h, out, os.WriteFile(dst, buf.Bytes(), 0o640)
}
