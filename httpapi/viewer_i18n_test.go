package httpapi

// The viewer in nine languages (issue 29, docs/VIEWER.md "Languages (issue 29)"): the
// catalogue is complete, the language is chosen from ?lang= or Accept-Language, and no
// user-visible English is left in the scripts or the templates.

import (
	"encoding/json"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/httpapi/viewer"
)

var placeholderRe = regexp.MustCompile(`\{[a-z]+\}`)

// placeholders is the sorted set of a text's placeholders ({n}, {total}).
func placeholders(s string) []string {
	seen := map[string]bool{}
	for _, p := range placeholderRe.FindAllString(s, -1) {
		seen[p] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// TestViewerI18nCatalogue: every language has every key of English, no other, with the same
// placeholders, and is a translation (not English copied); every key the scripts and templates
// use is in the catalogue.
func TestViewerI18nCatalogue(t *testing.T) {
	cat := viewer.Catalogue()
	require.Len(t, cat, 9)
	en := cat[viewer.English]
	for _, l := range viewer.Languages {
		texts, ok := cat[l]
		require.True(t, ok, "language %s", l)
		same := 0
		for k, e := range en {
			s, ok := texts[k]
			require.True(t, ok, "%s lacks %q", l, k)
			require.NotEmpty(t, strings.TrimSpace(s), "%s %q", l, k)
			require.Equal(t, placeholders(e), placeholders(s), "%s %q: placeholders of %q", l, k, s)
			require.LessOrEqual(t, len([]rune(s)), 3*len([]rune(e))+20, "%s %q is short", l, k)
			if s == e {
				same++
			}
		}
		for k := range texts {
			_, ok := en[k]
			require.True(t, ok, "%s has %q, which English has not", l, k)
		}
		if l != viewer.English {
			require.Less(t, same, len(en)/6, "%s: %d of %d texts are English", l, same, len(en))
		}
	}
	for _, k := range viewer.ScriptKeys() {
		require.Contains(t, en, k, "script key")
	}

	// Keys used: t("…") in the scripts must be script keys; .L.T "…" and lang.T("…") in the
	// templates and handlers must be in the catalogue.
	scriptKeys := map[string]bool{}
	for _, k := range viewer.ScriptKeys() {
		scriptKeys[k] = true
	}
	used := 0
	for _, name := range viewerScripts(t) {
		src := viewerAsset(t, name)
		for _, m := range regexp.MustCompile(`\bt\("([a-z_]+)"`).FindAllStringSubmatch(src, -1) {
			require.True(t, scriptKeys[m[1]], "%s uses %q, which the page does not give it", name, m[1])
			used++
		}
		for _, m := range regexp.MustCompile(`\{ (\d+): "([a-z_]+)"|, \d+: "([a-z_]+)"`).FindAllStringSubmatch(src, -1) {
			for _, k := range m[2:] {
				if k != "" {
					require.True(t, scriptKeys[k], "%s uses %q", name, k)
				}
			}
		}
		for _, m := range regexp.MustCompile(`"(search_[a-z_]+)"`).FindAllStringSubmatch(src, -1) {
			require.True(t, scriptKeys[m[1]], "%s uses %q", name, m[1])
		}
	}
	require.Greater(t, used, 20, "the scripts' words come from t()")
	for _, name := range []string{"page.html", "textpage.html"} {
		src := viewerTemplate(t, name)
		for _, m := range regexp.MustCompile(`\.L\.T "([a-z_]+)"`).FindAllStringSubmatch(src, -1) {
			require.Contains(t, en, m[1], "%s", name)
		}
	}
}

// viewerScripts are the viewer's own scripts (not the vendored page-flip).
func viewerScripts(t *testing.T) []string {
	var out []string
	require.NoError(t, fs.WalkDir(viewer.AssetFiles, "assets", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".js") && strings.HasPrefix(d.Name(), "viewer") {
			out = append(out, d.Name())
		}
		return err
	}))
	require.ElementsMatch(t, []string{"viewer.js", "viewer-text.js", "viewer-tools.js"}, out)
	return out
}

func viewerAsset(t *testing.T, name string) string {
	b, err := fs.ReadFile(viewer.AssetFiles, "assets/"+name)
	require.NoError(t, err)
	return string(b)
}

// viewerTemplate reads a template from the source tree (the package embeds it unexported).
func viewerTemplate(t *testing.T, name string) string {
	b, err := fs.ReadFile(os.DirFS("viewer"), name)
	require.NoError(t, err)
	return string(b)
}

// TestViewerNoEnglishInCode: the scripts set no text, label, title, placeholder or alt from a
// string literal with letters, and build no markup with text; the templates have no words
// outside template actions, in their text or in aria-label, title, placeholder and alt.
func TestViewerNoEnglishInCode(t *testing.T) {
	lit := `"[^"\n]*[A-Za-z][^"\n]*"|'[^'\n]*[A-Za-z][^'\n]*'`
	bad := []*regexp.Regexp{
		regexp.MustCompile(`\.(textContent|innerText|innerHTML|title|placeholder|alt|ariaLabel)\s*=\s*(` + lit + `)`),
		regexp.MustCompile(`setAttribute\("(aria-label|title|placeholder|alt|aria-description)",\s*(` + lit + `)`),
		regexp.MustCompile(`(say|showToast|announce|createTextNode)\((` + lit + `)`),
		regexp.MustCompile(`new Error\("[^"\n]* [^"\n]*"`),                             // a message a reader sees (not an internal tag)
		regexp.MustCompile(`(textContent|label|text)\s*[:=][^;\n]*"[A-Z][a-z]+ [a-z]`), // "Page " + n and the like
		regexp.MustCompile(`innerHTML\s*=`),
	}
	for _, name := range viewerScripts(t) {
		for i, line := range strings.Split(viewerAsset(t, name), "\n") {
			code := line
			if c := strings.Index(code, "// "); c >= 0 {
				code = code[:c]
			}
			for _, re := range bad {
				require.False(t, re.MatchString(code), "%s:%d has a user-visible string: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
	// Templates: strip comments, scripts, styles and actions; what is left of the text and the
	// named attributes has no letters. A little English that is not a word for readers is
	// allowed: the doctype.
	actions := regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	blocks := regexp.MustCompile(`(?is)<(script|style)[^>]*>.*?</(script|style)>|<!--.*?-->|<!doctype html>`)
	attr := regexp.MustCompile(`\s(aria-label|title|placeholder|alt)="([^"]*)"`)
	tag := regexp.MustCompile(`(?s)<[^>]*>`)
	letters := regexp.MustCompile(`\p{L}`)
	for _, name := range []string{"page.html", "textpage.html"} {
		src := actions.ReplaceAllString(blocks.ReplaceAllString(viewerTemplate(t, name), ""), "")
		named := attr.FindAllStringSubmatch(src, -1)
		require.GreaterOrEqual(t, len(named), 3, name)
		for _, m := range named {
			require.False(t, letters.MatchString(m[2]), "%s: %s=%q", name, m[1], m[2])
		}
		text := tag.ReplaceAllString(src, " ")
		require.False(t, letters.MatchString(text), "%s has words outside the catalogue: %q", name,
			strings.Join(strings.Fields(text), " "))
	}
}

// TestViewerLanguagePick: ?lang= when supported, else Accept-Language by q-value and primary
// subtag, else English.
func TestViewerLanguagePick(t *testing.T) {
	cases := []struct {
		query, accept string
		want          viewer.Lang
	}{
		{"", "", "en"},
		{"de", "", "de"},
		{"DE", "fr", "de"},
		{"pt-BR", "", "pt"},
		{"zz", "fr", "fr"}, // an unsupported ?lang= falls back to the header
		{"", "fr-CA,fr;q=0.9", "fr"},
		{"", "de-AT", "de"},
		{"", "zh-CN,zh;q=0.9", "en"}, // no language of the catalogue
		{"", "*", "en"},
		{"", "en;q=0.5, ja;q=0.8", "ja"},
		{"", "nl;q=0, pl;q=0.1", "pl"},   // q=0 refuses
		{"", "es;q=0.7, it;q=0.7", "es"}, // ties keep the header's order
		{"", "it;q=abc, nl", "nl"},       // a malformed weight ignores its tag
		{"", "  ja-JP ; q=1 ", "ja"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, viewer.Pick(c.query, c.accept), "?lang=%s Accept-Language: %s", c.query, c.accept)
	}
	require.Equal(t, "Page 3 of 12", viewer.English.T("page_of", "n", 3, "total", 12))
	require.Equal(t, "Seiten 2 und 3 von 12", viewer.Lang("de").T("pages_of", "a", 2, "b", 3, "total", 12))
	require.Equal(t, "12ページ中3ページ", viewer.Lang("ja").T("page_of", "n", 3, "total", 12))
	require.Equal(t, "Page {n}", viewer.English.T("page_n"), "no value: the placeholder stays")
	require.Equal(t, "no_such_key", viewer.Lang("de").T("no_such_key"))
}

// TestViewerLanguagesServed: the viewer page, a page's own page and the 404 pages in the
// language asked for, with Vary: Accept-Language; the scripts and styles are the same in every
// language.
func TestViewerLanguagesServed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, _ := h.workspaceKey(t, "company", "live", "*")
	batch, rid := h.uploadOK(t, key, "elephants.pdf", seoPDF(t))
	require.Equal(t, "completed", h.waitBatch(t, key, batch)["status"])
	require.Equal(t, 200, h.do(t, "PUT", "/api/v1/books/"+rid, key, map[string]any{"status": "publish", "title": "Wild <Africa>"}).Status)

	get := func(path, accept string) (string, string) {
		res, body := h.rawGet(t, path, "", "Accept-Language", accept)
		require.Contains(t, strings.Join(res.Header.Values("Vary"), ", "), "Accept-Language", path)
		return string(body), res.Header.Get("Content-Type")
	}
	de, _ := get("/view/"+rid+"?lang=de", "fr")
	require.Contains(t, de, `<html lang="de">`)
	require.Contains(t, de, `<button id="next" aria-label="Nächste Seite">`)
	require.Contains(t, de, `aria-controls="search-panel">Suchen</button>`)
	require.Contains(t, de, `<section aria-label="Seite 1">`, "the text of the first pages")
	require.Contains(t, de, `<h2>Seiten</h2>`)
	require.NotContains(t, de, "Next page")
	strs := scriptStrings(t, de)
	require.Equal(t, "Seiten {a} und {b} von {total}", strs["pages_of"])
	require.Len(t, strs, len(viewer.ScriptKeys()))

	fr, _ := get("/view/"+rid, "fr-CA,fr;q=0.9")
	require.Contains(t, fr, `<html lang="fr">`)
	require.Contains(t, fr, `aria-label="Page suivante"`)
	require.Equal(t, "Pages {a} et {b} sur {total}", scriptStrings(t, fr)["pages_of"])

	for _, accept := range []string{"", "sv-SE,sv;q=0.9", "*"} {
		en, _ := get("/view/"+rid+"?lang=xx", accept)
		require.Contains(t, en, `<html lang="en">`, accept)
		require.Contains(t, en, `aria-label="Next page"`, accept)
		require.Equal(t, "Pages {a} and {b} of {total}", scriptStrings(t, en)["pages_of"])
	}

	// The same asset names (content hashes) in every language: the words are in the page.
	assets := regexp.MustCompile(`/viewer/assets/[a-z.-]+\.[0-9a-f]{8}\.(js|css)`)
	require.Equal(t, assets.FindAllString(fr, -1), assets.FindAllString(de, -1))
	require.Len(t, assets.FindAllString(de, -1), 5)

	ja, _ := get("/view/"+rid+"/page/2", "ja,en;q=0.5")
	require.Contains(t, ja, `<html lang="ja">`)
	require.Contains(t, ja, `<h1 id="page-title">Wild &lt;Africa&gt;、4ページ中2ページ</h1>`)
	require.Contains(t, ja, `alt="2ページ: Page two tells of the Okavango delta."`)
	require.Contains(t, ja, `rel="next">次のページ</a>`)
	require.Contains(t, ja, `フリップブックで2ページを開く`)
	pl, _ := get("/view/"+rid+"/page/9?lang=pl", "")
	require.Contains(t, pl, "Tej strony nie ma we flipbooku")
	it, _ := get("/view/nosuchbook?lang=it", "")
	require.Contains(t, it, `<html lang="it">`)
	require.Contains(t, it, "Questo flipbook non è disponibile")
}

var scriptStringsRe = regexp.MustCompile(`<script id="strings" type="application/json">([^<]*)</script>`)

// scriptStrings is the JSON object of the scripts' words in a viewer page.
func scriptStrings(t *testing.T, page string) map[string]string {
	m := scriptStringsRe.FindStringSubmatch(page)
	require.NotNil(t, m, "the page gives the scripts their words")
	var out map[string]string
	require.NoError(t, json.Unmarshal([]byte(m[1]), &out))
	return out
}
