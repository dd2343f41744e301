package httpapi

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"flipbook/api"
)

// Fuzzing of multipart/form-data bodies (issue 27): POST /books (one file, converted in the
// background) and the brand writes (fields and a logo), parsed by the body reader of body.go
// and readArgs/formValues of rest.go in a real service, with a fixed boundary.

const fuzzBoundary = "FuzzBoundary7MA4YWxkTrZu0gW"

// fuzzUploadCap is the body cap of POST /books in the fuzzed service (Config.MaxBodyBytes):
// small, so that fuzzed bodies cross it.
const fuzzUploadCap = 4096

// Ways a body is sent (rawDo).
const (
	sendLength      = iota // with a Content-Length
	sendChunked            // chunked
	sendChunkedSlow        // chunked, its last chunk after a pause (as over a slow network)
)

// slowEnd is a reader that pauses before its end.
type slowEnd struct{ r io.Reader }

func (s slowEnd) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		time.Sleep(50 * time.Millisecond) // sleep: the client under test is slow to send its last chunk
	}
	return n, err
}

// rawDo sends body as is with Content-Type ctype through client, as send says.
func (h *harness) rawDo(t *testing.T, client *http.Client, method, path, key, ctype string, body []byte, send int) *resp {
	t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	switch send {
	case sendChunked:
		rd = io.MultiReader(rd) // no length known: sent chunked
	case sendChunkedSlow:
		rd = slowEnd{rd}
	}
	chunked := send != sendLength
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), tbKey{}, t), method, h.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if chunked {
		req.ContentLength = -1
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	out := &resp{Status: res.StatusCode, Header: res.Header, Body: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		var v any
		if err := reqJSON.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: %d answered invalid JSON: %q", method, path, res.StatusCode, raw)
		}
		out.JSON, _ = v.(map[string]any)
	}
	return out
}

// tinyPNG is a real 2×2 PNG.
func tinyPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// fuzzForm is a multipart body with the fixed boundary: fields, then files (name, filename,
// content).
func fuzzForm(fields [][2]string, files ...[3]string) []byte {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.SetBoundary(fuzzBoundary)
	for _, f := range fields {
		_ = w.WriteField(f[0], f[1])
	}
	for _, f := range files {
		p, _ := w.CreateFormFile(f[0], f[1])
		_, _ = p.Write([]byte(f[2]))
	}
	_ = w.Close()
	return b.Bytes()
}

// uploadRoutes are the multipart operations fuzzed, with the body fields their 422s may name.
var uploadRoutes = []struct {
	method, path string
	cap          int // 0: no cap asserted
	fields       []string
}{
	{"POST", "/api/v1/books", fuzzUploadCap, []string{"files", "original_filename", "status", "auto_links_enabled"}},
	{"PATCH", "/api/v1/books", 0, nil}, // an upload with the wrong method: 405
	{"POST", "/api/v1/brand", api.MaxLogoBytes + 1<<20, brandFields},
	{"PUT", "/api/v1/brand", api.MaxLogoBytes + 1<<20, brandFields},
}

var brandFields = []string{"id", "company_name", "about_brand", "contact_number", "facebook", "google_analytics", "instagram",
	"linkedin", "pinterest", "primary_color", "secondary_color", "tertiary_color", "twitter", "youtube", "website_url", "file",
	"brand"} // brand: "already exists" (POST) or "does not exist" (PUT)

// FuzzMultipartUpload posts fuzzed multipart bodies (with pad bytes of epilogue appended, sent
// with a Content-Length or chunked, the last chunk at once or late) over one keep-alive
// connection. Property: a body that
// declares a length over the route's cap is a 413 in the error envelope; a chunked one whose
// form (up to the closing boundary) is over the cap is a 413, or a 400 when it is malformed
// before the cap is reached, never a success; a body within the cap is never a 413; every
// refusal is a 4xx in the envelope naming fields of the form; never a 5xx; and the connection
// is left usable: a request that follows on it is answered as itself (no byte of the upload is
// left on the connection to be read as the start of the next request).
func FuzzMultipartUpload(f *testing.F) {
	h := newHarness(f, func(c *Config) { c.MaxBodyBytes = fuzzUploadCap; c.ConversionWorkers = 1 })
	key := h.workspace(f, "company", "live")
	// One connection, kept alive between requests: the probe after each upload goes over the
	// connection the upload used, unless the service closed it. Answers of /api/v1 are checked
	// against the OpenAPI document, as the harness's client does.
	conn := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &contractTransport{h: h, next: conn}}
	probe := &http.Client{Timeout: 30 * time.Second, Transport: conn} // its answer is checked below
	img := string(tinyPNG())
	seeds := []struct {
		route int
		body  []byte
		pad   uint16
	}{
		{0, fuzzForm([][2]string{{"status", "draft"}, {"original_filename", "cover.png"}, {"auto_links_enabled", "true"}}, [3]string{"files", "cover.png", img}), 0},
		{0, fuzzForm(nil, [3]string{"files[]", "page.png", img}), 0},
		{0, fuzzForm([][2]string{{"status", "publish"}}, [3]string{"files", "notes.txt", "plain text is not a document"}), 0},
		{0, fuzzForm([][2]string{{"status", "draft"}}), 0},
		{0, fuzzForm(nil, [3]string{"files", "a.png", img}, [3]string{"files", "b.png", img}), 0},
		{0, fuzzForm(nil, [3]string{"files", "empty.pdf", ""}), 0},
		{0, fuzzForm([][2]string{{"status", "nope"}, {"auto_links_enabled", "maybe"}}, [3]string{"files", "x.png", img}), 0},
		{0, fuzzForm(nil, [3]string{"files", "big.png", img}), fuzzUploadCap},
		{0, []byte("--" + fuzzBoundary + "\r\nContent-Disposition: form-data; name=\"files\"; filename=\"x.png\"\r\n\r\n" + img), 0},
		{0, []byte("not multipart at all"), 0},
		{1, fuzzForm(nil, [3]string{"files", "cover.png", img}), 0},
		{1, fuzzForm(nil, [3]string{"files", "cover.png", img}), 100},
		{1, fuzzForm(nil, [3]string{"files", "cover.png", img}), 20000},
		{2, fuzzForm([][2]string{{"company_name", "Acme"}, {"primary_color", "#1a2b3c"}, {"website_url", "https://acme.example/"},
			{"about_brand", "We make\nthings"}}, [3]string{"file", "logo.png", img}), 0},
		{2, fuzzForm([][2]string{{"company_name", ""}}), 0},
		{3, fuzzForm([][2]string{{"id", "1"}, {"company_name", "Acme Group"}, {"twitter", "@acme"}}), 0},
		{3, fuzzForm([][2]string{{"id", "x"}}, [3]string{"file", "logo.gif", "GIF89a"}), 0},
	}
	for _, s := range seeds {
		f.Add(uint8(s.route), s.body, s.pad)
		f.Add(uint8(s.route|0x80), s.body, s.pad) // chunked
	}
	f.Add(uint8(0xe0), seeds[0].body, uint16(0)) // chunked, the last chunk late
	f.Fuzz(func(t *testing.T, sel uint8, body []byte, pad uint16) {
		route := uploadRoutes[int(sel&0x1f)%len(uploadRoutes)]
		chunked := sel&0x80 != 0
		full := append(append([]byte(nil), body...), bytes.Repeat([]byte("x"), int(pad))...)
		send := sendLength
		if chunked {
			send = sendChunked
			if sel&0xe0 == 0xe0 {
				send = sendChunkedSlow
			}
		}
		r := h.rawDo(t, client, route.method, route.path, key, "multipart/form-data; boundary="+fuzzBoundary, full, send)
		what := route.method + " " + route.path + " (" + strconv.Itoa(len(full)) + " bytes, " +
			[]string{"with a Content-Length", "chunked", "chunked, the last chunk late"}[send] + ")"
		if r.Status >= 500 {
			t.Fatalf("%s: %d %s\nbody: %q", what, r.Status, r.Body, clip(full, 2000))
		}
		if probe := h.rawDo(t, probe, "GET", "/api/v1/health", "", "", nil, sendLength); probe.Status != 200 || probe.JSON["status"] == nil {
			t.Fatalf("%s answered %d; the next request on the connection (GET /api/v1/health) was answered %d: %.300s\nbody: %q",
				what, r.Status, probe.Status, probe.Body, clip(full, 2000))
		}
		if route.cap == 0 {
			if r.Status < 400 {
				t.Fatalf("%s: %d: %s", what, r.Status, r.Body)
			}
			checkEnvelope(t, what, r)
			return
		}
		over := len(full) > route.cap
		// A chunked body is read as far as the form goes: the epilogue after the closing
		// boundary is never read (RFC 2046 §5.1.1: it is to be ignored), so only the form up to
		// the closing boundary counts against the cap.
		form := full
		if i := bytes.Index(full, []byte("--"+fuzzBoundary+"--")); i >= 0 {
			form = full[:i+len(fuzzBoundary)+4]
		}
		switch {
		case over && !chunked && r.Status != 413:
			t.Fatalf("%s: over the cap of %d bytes but answered %d: %s", what, route.cap, r.Status, r.Body)
		case chunked && len(form) > route.cap && r.Status != 413 && r.Status != 400:
			t.Fatalf("%s: a form of %d bytes, over the cap of %d, answered %d: %s", what, len(form), route.cap, r.Status, r.Body)
		case !over && r.Status == 413:
			t.Fatalf("%s: within the cap of %d bytes but answered 413: %s", what, route.cap, r.Body)
		}
		if r.Status == 413 && r.errType() != api.TypePayloadTooLarge {
			t.Fatalf("%s: 413 of type %q: %s", what, r.errType(), r.Body)
		}
		if r.Status >= 400 {
			checkEnvelope(t, what, r, route.fields...)
		}
	})
}
