package viewer

// The viewer's scripts and styles, prepared once (issue 29, docs/VIEWER.md "Assets and
// caching"): minified (tdewolff/minify), named by a hash of their content
// (viewer.3f2a9c1b.js) so a page can let browsers keep them a year, and compressed ahead with
// brotli and gzip so a request costs no compression.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io/fs"
	"mime"
	"path"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/tdewolff/minify/v2"
	"github.com/tdewolff/minify/v2/css"
	"github.com/tdewolff/minify/v2/js"
)

// AssetPrefix is the address under which the viewer's assets are served.
const AssetPrefix = "/viewer/assets/"

// hashLen is the number of hex digits of the content hash in an asset's name.
const hashLen = 8

// Asset is one file of assets/, ready to serve.
type Asset struct {
	Name        string // its name in assets/ (viewer.js)
	Hashed      string // its name with the hash of its content (viewer.3f2a9c1b.js)
	Hash        string // the hash (hashLen hex digits of the SHA-256 of Body)
	ContentType string
	// Body is what is served: the minified file (scripts and styles), or the file as it is.
	// Brotli and Gzip are Body compressed (brotli level 11, gzip level 9); nil when compressing
	// does not make it smaller.
	Body, Brotli, Gzip []byte
	// Original is the size of the file before minification; MinifyErr says why a script or a
	// style is served as it is (a minifier that fails on an asset: a test keeps it nil).
	Original  int
	MinifyErr error
}

// AssetSet is every asset, by plain and by hashed name.
type AssetSet struct {
	byName   map[string]*Asset
	byHashed map[string]*Asset
	names    []string
}

// Assets returns the prepared assets: the work is done once, at the first call (the service
// calls it at start-up).
var Assets = sync.OnceValue(func() *AssetSet { return mustPrepare(AssetFiles) })

func mustPrepare(files fs.FS) *AssetSet {
	set, err := prepareAssets(files)
	if err != nil {
		panic(err) // the embedded directory cannot be read: a broken build
	}
	return set
}

// prepareAssets minifies, hashes and compresses every file of the assets/ directory of files.
func prepareAssets(files fs.FS) (*AssetSet, error) {
	entries, err := fs.ReadDir(files, "assets")
	if err != nil {
		return nil, err
	}
	m := minify.New()
	m.Add("text/css", &css.Minifier{})
	m.Add("text/javascript", &js.Minifier{Version: 2019}) // no syntax newer than the viewer's browsers run
	set := &AssetSet{byName: map[string]*Asset{}, byHashed: map[string]*Asset{}}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		raw, err := fs.ReadFile(files, path.Join("assets", e.Name()))
		if err != nil {
			return nil, err
		}
		a := prepareAsset(m, e.Name(), raw)
		set.byName[a.Name], set.byHashed[a.Hashed] = a, a
		set.names = append(set.names, a.Name)
	}
	return set, nil
}

// prepareAsset minifies (scripts and styles), hashes and compresses one file.
func prepareAsset(m *minify.M, name string, raw []byte) *Asset {
	a := &Asset{Name: name, Original: len(raw), Body: raw}
	a.ContentType = mime.TypeByExtension(path.Ext(name))
	if a.ContentType == "" {
		a.ContentType = "application/octet-stream"
	}
	if mt := minifyType(name); mt != "" {
		if out, err := m.Bytes(mt, raw); err != nil {
			a.MinifyErr = fmt.Errorf("minify %s: %w", name, err)
		} else if len(out) < len(raw) {
			a.Body = out
		}
	}
	sum := sha256.Sum256(a.Body)
	a.Hash = hex.EncodeToString(sum[:])[:hashLen]
	a.Hashed = hashedName(name, a.Hash)
	if b := compressBrotli(a.Body); len(b) < len(a.Body) {
		a.Brotli = b
	}
	if g := compressGzip(a.Body); len(g) < len(a.Body) {
		a.Gzip = g
	}
	return a
}

// minifyType is the media type the minifier knows a file by, "" for files served as they are.
func minifyType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript"
	case ".css":
		return "text/css"
	}
	return ""
}

// hashedName puts hash before the extension: viewer.js → viewer.3f2a9c1b.js.
func hashedName(name, hash string) string {
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + "." + hash + ext
}

func compressBrotli(b []byte) []byte {
	var buf bytes.Buffer
	w := brotli.NewWriterLevel(&buf, brotli.BestCompression)
	_, _ = w.Write(b) // writes to memory cannot fail
	_ = w.Close()
	return buf.Bytes()
}

func compressGzip(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// Lookup finds an asset by its hashed name (current is true) or by its plain name, or by a
// hashed name whose hash is not the current one (a page from before the last deployment:
// current is false, the asset is today's).
func (s *AssetSet) Lookup(name string) (a *Asset, current bool) {
	if a := s.byHashed[name]; a != nil {
		return a, true
	}
	if a := s.byName[name]; a != nil {
		return a, false
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if i := strings.LastIndexByte(stem, '.'); i > 0 && isHex(stem[i+1:]) && len(stem)-i-1 == hashLen {
		return s.byName[stem[:i]+ext], false
	}
	return nil, false
}

// URL is the address of the asset named name under its hashed name; it panics for a name that
// is not an asset (a mistake in a template, caught by any test that renders it).
func (s *AssetSet) URL(name string) string {
	a := s.byName[name]
	if a == nil {
		panic("viewer: no asset " + name)
	}
	return AssetPrefix + a.Hashed
}

// Names lists the assets' plain names.
func (s *AssetSet) Names() []string { return append([]string(nil), s.names...) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// assetURL is the template function "asset": the hashed address of an asset.
func assetURL(name string) string { return Assets().URL(name) }

// Favicon is /favicon.ico, for the pages without an icon of their own (the viewer page
// declares its icon inline and asks for none): two pages side by side, 32×32, as a PNG inside
// an ICO file. Made once.
var Favicon = sync.OnceValue(func() []byte {
	const size = 32
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	blue := color.NRGBA{R: 0x2b, G: 0x6c, B: 0xb0, A: 0xff}
	draw.Draw(img, image.Rect(2, 6, 15, 26), &image.Uniform{C: blue}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(17, 6, 30, 26), &image.Uniform{C: blue}, image.Point{}, draw.Src)
	var p bytes.Buffer
	_ = png.Encode(&p, img) // to memory: cannot fail
	// ICONDIR (reserved, type 1 = icon, 1 image) and its one ICONDIRENTRY: width, height,
	// colours, reserved, planes, bits per pixel, size of the PNG, its offset (6 + 16).
	ico := []byte{0, 0, 1, 0, 1, 0, size, size, 0, 0, 1, 0, 32, 0}
	ico = binary.LittleEndian.AppendUint32(ico, uint32(p.Len()))
	ico = binary.LittleEndian.AppendUint32(ico, 22)
	return append(ico, p.Bytes()...)
})
