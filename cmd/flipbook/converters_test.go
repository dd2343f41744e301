package main

import (
	"bytes"
	"encoding/base64"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Started without poppler or LibreOffice on PATH, the service says so at start-up and in
// /health, and an upload needing them fails at once with the reason; images still convert.
func TestServeWithoutConverters(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no pdfinfo, pdftoppm, pdftotext, soffice
	dir := t.TempDir()
	s := startServe(t, serveArgs(dir), nil)
	key := s.firstKey(t)
	logs := s.stderr.String()
	require.Contains(t, logs, "this server cannot convert PDF files: pdfinfo, pdftoppm, pdftotext are not installed")
	require.Contains(t, logs, "apt-get install poppler-utils")
	require.Contains(t, logs, "this server cannot convert Word, Excel and PowerPoint files")

	h := call(t, "GET", s.base+"/api/v1/health", "", nil)
	require.Equal(t, 200, h.status, "%s", h.raw)
	require.Equal(t, "degraded", h.json["status"], "%s", h.raw)
	convs := h.json["details"].(map[string]any)["converters"].([]any)
	missing := map[string][]any{}
	for _, c := range convs {
		m := c.(map[string]any)
		missing[m["name"].(string)] = m["missing"].([]any)
	}
	require.Equal(t, []any{"pdfinfo", "pdftoppm", "pdftotext"}, missing["pdf"])
	require.Contains(t, missing["office"], "soffice")
	require.Empty(t, missing["images"])

	upload := func(name string, content []byte) *reply {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		fw, err := w.CreateFormFile("files[]", name)
		require.NoError(t, err)
		_, _ = fw.Write(content)
		require.NoError(t, w.Close())
		req, err := http.NewRequest("POST", s.base+"/api/v1/books", &body)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", w.FormDataContentType())
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		return decodeReply(t, res)
	}
	pdf := upload("brochure.pdf", []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"))
	require.Equal(t, 503, pdf.status, "%s", pdf.raw)
	require.Equal(t, "ServiceUnavailable", pdf.errField("type"))
	msg, _ := pdf.errField("message").(string)
	require.True(t, strings.Contains(msg, "cannot convert PDF files") && strings.Contains(msg, "poppler-utils"), msg)

	png, err := base64.StdEncoding.DecodeString(pngBase64(t, 40, 30))
	require.NoError(t, err)
	img := upload("photo.png", png)
	require.Equal(t, 202, img.status, "an image needs no external converter: %s", img.raw)
}
