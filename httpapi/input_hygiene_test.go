package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/actors"
	"flipbook/api"
	"flipbook/ingest"
	"flipbook/storage"
)

// Input hygiene (issue 25, docs/DECISIONS.md "Input hygiene"): what the outside audit got
// through, refused with a 422 naming the field, on REST and MCP alike.

// Control characters, bidi overrides and unpaired surrogates in lines (titles, slugs, names,
// secrets); free text keeps tabs, line breaks and bidi controls; background holds to its syntax.
func TestInputHygieneText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key := h.workspace(t, "company", "live")
	rid := h.konva(t, key, "clean", "draft")
	put := "/api/v1/books/" + rid

	// Raw JSON, so escapes reach the decoder as a client wrote them.
	for _, c := range []struct{ name, body, field string }{
		{"NUL in title", `{"title":"a\u0000b"}`, "title"},
		{"escape in title", `{"title":"a\u001bb"}`, "title"},
		{"DEL in title", `{"title":"a\u007fb"}`, "title"},
		{"C1 in title", `{"title":"a\u0085b"}`, "title"},
		{"line break in title", `{"title":"a\nb"}`, "title"},
		{"U+2028 in title", `{"title":"a\u2028b"}`, "title"},
		{"RLO in title", `{"title":"invoice\u202efdp.exe"}`, "title"},
		{"isolate in title", `{"title":"a\u2066b"}`, "title"},
		{"lone high surrogate in title", `{"title":"a\ud800b"}`, "title"},
		{"lone low surrogate in title", `{"title":"a\udfffb"}`, "title"},
		{"NUL in slug", `{"slug":"a\u0000"}`, "slug"},
		{"RLO in slug", `{"slug":"a\u202e"}`, "slug"},
		{"tab in watermark", `{"watermark":"a\tb"}`, "watermark"},
		{"NUL in description", `{"description":"a\u0000b"}`, "description"},
		{"surrogate in description", `{"description":"a\udc00b"}`, "description"},
		{"NUL in background", `{"background":"#fff\u0000"}`, "background"},
		{"CSS injection in background", `{"background":"red;}body{display:none"}`, "background"},
		{"script URL in background", `{"background":"javascript:alert(1)"}`, "background"},
		{"expression in background", `{"background":"expression(alert(1))"}`, "background"},
		{"url() breakout in background", `{"background":"https://x.example/a.png\")"}`, "background"},
		{"not a colour", `{"background":"xxxx"}`, "background"},
		{"short hex", `{"background":"#12"}`, "background"},
	} {
		r := h.do(t, "PUT", put, key, `{"status":"draft",`+c.body[1:])
		require.Equal(t, 422, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, api.TypeValidation, r.errType(), c.name)
		require.Equal(t, []string{c.field}, keys(r.details()), "%s: %s", c.name, r.Body)
	}
	b := h.do(t, "GET", put, key, nil).data()
	require.Equal(t, "clean", b["name"], "nothing was stored")

	for _, c := range []struct{ name, body string }{
		{"paired surrogates (an emoji)", `{"title":"Spring \ud83c\udf38"}`},
		{"right-to-left text and marks", `{"title":"\u05e9\u05dc\u05d5\u05dd \u200f!"}`},
		{"free text keeps lines, tabs and bidi", `{"description":"line 1\r\n\tline 2 \u202bRTL\u202c"}`},
		{"magic link message on lines", `{"magic_link_message":"Hello,\nask us for access."}`},
		{"hex colour", `{"background":"#1A2b3C"}`},
		{"hex colour with alpha", `{"background":"#1a2b3c80"}`},
		{"rgb()", `{"background":"rgb(10, 20, 30)"}`},
		{"hsla()", `{"background":"hsla(120deg 50% 50% / 0.5)"}`},
		{"named colour", `{"background":"RebeccaPurple"}`},
		{"image URL", `{"background":"https://cdn.example/bg.png?v=2"}`},
		{"cleared", `{"background":null}`},
	} {
		r := h.do(t, "PUT", put, key, `{"status":"draft",`+c.body[1:])
		require.Equal(t, 200, r.Status, "%s: %s", c.name, r.Body)
	}

	// Names and secrets elsewhere.
	r := h.do(t, "POST", "/api/v1/books/"+rid+"/tracked-links", key, `{"name":"news\u202e"}`)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "name")
	r = h.do(t, "POST", "/api/v1/webhook-subscriptions", key, `{"name":"a\u0000","provider":"generic",`+
		`"target_url":"https://hooks.example/x","event_types":["link_clicked"],"signing_secret":"0123456789abcdef\u0000\u202e0123456789"}`)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "name")
	require.Contains(t, r.details(), "signing_secret")
	r = h.do(t, "POST", "/api/v1/books/konva", key, `{"title":"t\u202e","canvas":{"width":600,"height":800,"objects":[{}]},`+
		`"page_images":["x"],"settings":{"background":"url(javascript:x)"}}`)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "title")
	require.Contains(t, r.details(), "settings.background")

	// MCP: the same rules, the same field names.
	cs := h.mcpSession(t, key, "")
	res, out := callTool(t, cs, "books_update_settings", map[string]any{"book_id": rid, "status": "draft",
		"title": "a\u202eb", "slug": "x\x00", "background": "red;}", "description": "ok\nstill ok"})
	require.True(t, res.IsError, "%v", out)
	e := toolErr(out)
	require.EqualValues(t, 422, e["status"], "%v", out)
	d := e["details"].(map[string]any)
	require.Contains(t, d, "title")
	require.Contains(t, d, "slug")
	require.Contains(t, d, "background")
	require.NotContains(t, d, "description")
	res, out = callTool(t, cs, "books_update_settings", map[string]any{"book_id": rid, "status": "draft",
		"title": "Tidy", "background": "#abc"})
	require.False(t, res.IsError, "%v", out)
}

// Access-list and embed domains are registrable domains (or below): no public suffix, bare name
// or address; addresses are at a registrable domain; one matching rule covers the email gate,
// the embed check and frame-ancestors, and entries stored before it match nothing.
func TestInputHygieneDomains(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	rid := h.konva(t, key, "gated", "publish")
	sub := func(body map[string]any) *resp {
		body["book_id"] = rid
		return h.do(t, "POST", "/api/v1/subscribers", key, body)
	}
	for _, d := range []string{"com", "co.uk", "uk", "github.io", "localhost", "dev.localhost", "intranet",
		"1.2.3.4", "[::1]", "::1", "1.2.3.4.5", "http://[::1]:8080/", "a@b.com", ".com", "exa mple.com"} {
		r := sub(map[string]any{"email": d, "type": "domain"})
		require.Equal(t, 422, r.Status, "domain %q: %s", d, r.Body)
		require.Contains(t, r.details(), "email", d)
		r = h.do(t, "POST", "/api/v1/books/"+rid+"/embed-domains", key, map[string]any{"domain": d})
		require.Equal(t, 422, r.Status, "embed domain %q: %s", d, r.Body)
		require.Contains(t, r.details(), "domain", d)
	}
	for _, a := range []string{"a@b", "x@com", "x@co.uk", "x@localhost", "x@1.2.3.4", "x@[1.2.3.4]", "x@github.io"} {
		for _, typ := range []string{"email", ""} {
			body := map[string]any{"email": a}
			if typ != "" {
				body["type"] = typ
			}
			r := sub(body)
			require.Equal(t, 422, r.Status, "address %q type %q: %s", a, typ, r.Body)
			require.Contains(t, r.details(), "email", a)
		}
		// The gate and webhook filters hold addresses to the same rule.
		r := h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": a})
		require.Equal(t, 422, r.Status, "gate %q: %s", a, r.Body)
	}
	// Without a type, what is not an address is a domain, and must be one.
	r := sub(map[string]any{"email": "not-an-email"})
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details()["email"].([]any)[0], "email address")
	r = sub(map[string]any{"email": "Reader@Acme.co.uk"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	require.Equal(t, "email", r.data()["type"])
	require.Equal(t, "reader@acme.co.uk", r.data()["email"])
	r = sub(map[string]any{"email": "acme.co.uk"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	require.Equal(t, "domain", r.data()["type"])
	r = sub(map[string]any{"email": "@Partner.example"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	require.Equal(t, map[string]any{"email": "partner.example", "type": "domain"},
		map[string]any{"email": r.data()["email"], "type": r.data()["type"]})
	r = sub(map[string]any{"email": "team.example.github.io", "type": "domain"})
	require.Equal(t, 201, r.Status, "below a private suffix is one registrant's: %s", r.Body)

	// An entry stored before the rule (written past the API here) opens nothing.
	tn := storage.Tenant{Workspace: ws, Mode: storage.ModeLive}
	_, err := h.svc.Actors.AddSubscriber(tn, rid, "co.uk", "domain")
	require.NoError(t, err)
	gate := func(email string) int {
		return h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": email}).Status
	}
	require.Equal(t, 200, gate("reader@acme.co.uk"), "the address")
	require.Equal(t, 200, gate("someone@acme.co.uk"), "the domain")
	require.Equal(t, 200, gate("someone@eu.sales.acme.co.uk"), "a subdomain of the domain")
	require.Equal(t, 200, gate("x@partner.example"))
	require.Equal(t, 403, gate("someone@other.co.uk"), "a public-suffix entry covers nothing")
	require.Equal(t, 403, gate("someone@notacme.co.uk"), "a suffix of the name is not a subdomain")
	require.Equal(t, 403, gate("someone@example.github.io"), "a sibling below a private suffix")

	// Embed domains: a pasted URL is reduced to its host; the stored list feeds frame-ancestors
	// and the collector's check with the same rule.
	emb := h.konva(t, key, "embedded", "publish")
	r = h.do(t, "POST", "/api/v1/books/"+emb+"/embed-domains", key, map[string]any{"domain": "https://Shop.Acme.co.uk:8443/page?x=1"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "shop.acme.co.uk", r.data()["domain"])
	_, err = h.svc.Actors.AddEmbedDomain(tn, emb, "com")
	require.NoError(t, err)
	_, err = h.svc.Actors.AddEmbedDomain(tn, emb, "127.0.0.1")
	require.NoError(t, err)
	page := h.getPage(t, "/view/"+emb)
	require.Equal(t, "frame-ancestors 'self' shop.acme.co.uk *.shop.acme.co.uk", page.Header.Get("Content-Security-Policy"))
	for host, want := range map[string]int{"shop.acme.co.uk": 202, "www.shop.acme.co.uk": 202,
		"evil.com": 403, "com": 403, "127.0.0.1": 403, "acme.co.uk": 403} {
		body := collectBody(emb, map[string]any{"type": "session_started"})
		body["source_host"] = host
		require.Equal(t, want, h.do(t, "POST", "/collect", "", body).Status, host)
	}

	// MCP: the same answers.
	cs := h.mcpSession(t, key, "")
	res, out := callTool(t, cs, "subscribers_create", map[string]any{"book_id": rid, "email": "co.uk", "type": "domain"})
	require.True(t, res.IsError, "%v", out)
	require.Contains(t, toolErr(out)["details"], "email")
	res, out = callTool(t, cs, "subscribers_create", map[string]any{"book_id": rid, "email": "not-an-email"})
	require.True(t, res.IsError, "%v", out)
	require.Contains(t, toolErr(out)["details"], "email")
	res, out = callTool(t, cs, "books_create_embed_domain", map[string]any{"book_id": rid, "domain": "com"})
	require.True(t, res.IsError, "%v", out)
	require.Contains(t, toolErr(out)["details"], "domain")
	res, out = callTool(t, cs, "books_create_embed_domain", map[string]any{"book_id": rid, "domain": "[::1]"})
	require.True(t, res.IsError, "%v", out)
	require.Contains(t, toolErr(out)["details"], "domain")
}

// Reader events carry only http, https, mailto and tel URLs, through the collector's generic
// and fast paths alike; one stored before the rule shows as "" in analytics, exports and
// webhook payloads.
func TestInputHygieneLinkURLs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	rid := h.konva(t, key, "links", "publish")
	click := func(u string) *resp {
		return h.do(t, "POST", "/collect", "", collectBody(rid, map[string]any{"type": "link_clicked", "page_number": 1, "url": u}))
	}
	for _, u := range []string{"javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "java\tscript:alert(1)",
		"data:text/html,<script>alert(1)</script>", "vbscript:x", "file:///etc/passwd", "/relative", "//host.example/x",
		"https:evil.example", "https://user:pw@x.example/", "https://x.example/\u202e", "mailto:", "http://"} {
		r := click(u)
		require.Equal(t, 422, r.Status, "%q: %s", u, r.Body)
		require.Contains(t, r.details(), "events.0.url", u)
	}
	// The fast path (no escapes in the body) agrees.
	raw := `{"book_id":"` + rid + `","session_id":"s1","events":[{"type":"link_clicked","page_number":1,"url":"javascript:alert(1)"}]}`
	r := h.do(t, "POST", "/collect", "", raw)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Contains(t, r.details(), "events.0.url")
	// Checkout redirects and other types are held to the same rule.
	r = h.do(t, "POST", "/collect", "", collectBody(rid, map[string]any{"type": "checkout_redirect_clicked", "url": "javascript:x"}))
	require.Equal(t, 422, r.Status, "%s", r.Body)
	for _, u := range []string{"https://shop.example/p?id=1#x", "HTTP://Shop.Example/", "mailto:sales@example.com", "tel:+44-20-7946-0000"} {
		r := click(u)
		require.Equal(t, 202, r.Status, "%q: %s", u, r.Body)
	}

	// An event stored before the rule (written past the collector here).
	bad := ingest.Event{Workspace: ws, Mode: byte(storage.ModeLive), BookID: rid, SessionID: "old", Type: ingest.LinkClicked,
		PageNumber: 1, URL: "javascript:alert(document.cookie)", SourceType: "direct",
		OccurredAt: time.Now().UTC(), ReceivedAt: time.Now().UTC()}
	require.NoError(t, h.svc.appendEvents([]ingest.Event{bad}))
	require.Len(t, h.logged(t), 5)
	list := h.walk(t, key, "/api/v1/analytics/interaction-events?book_id="+rid, 100)
	require.Len(t, list, 5)
	csv := h.export(t, key, "/api/v1/exports/books/"+rid+"/interaction-events")
	require.Len(t, csv.rows, 5)
	for i := range list {
		require.NotContains(t, list[i]["url"], "javascript", "JSON analytics")
		require.NotContains(t, csv.rows[i]["url"], "javascript", "CSV export")
	}
	flow := h.do(t, "GET", "/api/v1/analytics/book-flow?book_id="+rid, key, nil)
	require.Equal(t, 200, flow.Status, "%s", flow.Body)
	require.NotContains(t, string(flow.Body), "javascript", "book-flow's top_urls")
	require.Contains(t, string(flow.Body), "top_urls")
	p := actors.BuildPayload(1, &bad, "links", "https://svc.example/view/"+rid)
	require.Empty(t, p.Data.URL, "webhook payload")
	good := bad
	good.URL = "https://shop.example/"
	require.Equal(t, "https://shop.example/", actors.BuildPayload(1, &good, "links", "").Data.URL)
}

// Tracked-link slugs are case-insensitive and unique across workspaces: stored in lower case,
// found in any case.
func TestInputHygieneSlugCase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	keyA := h.workspace(t, "company", "live")
	keyB := h.workspace(t, "company", "live")
	ridA, ridB := h.konva(t, keyA, "a", "publish"), h.konva(t, keyB, "b", "publish")
	r := h.do(t, "POST", "/api/v1/books/"+ridA+"/tracked-links", keyA, map[string]any{"name": "a", "slug": "SLUG-A-X"})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	require.Equal(t, "slug-a-x", r.data()["slug"])
	require.Equal(t, h.base+"/l/slug-a-x", r.data()["url"])
	for _, s := range []string{"slug-a-x", "Slug-A-X", "SLUG-A-X"} {
		r = h.do(t, "POST", "/api/v1/books/"+ridB+"/tracked-links", keyB, map[string]any{"name": "b", "slug": s})
		require.Equal(t, 422, r.Status, "%s: %s", s, r.Body)
		require.Contains(t, r.details(), "slug")
	}
	cs := h.mcpSession(t, keyB, "")
	res, out := callTool(t, cs, "tracked_links_create", map[string]any{"book_id": ridB, "name": "b", "slug": "sLuG-a-X"})
	require.True(t, res.IsError, "%v", out)
	require.Contains(t, toolErr(out)["details"], "slug")
	res, out = callTool(t, cs, "tracked_links_create", map[string]any{"book_id": ridB, "name": "b", "slug": "Mine-B"})
	require.False(t, res.IsError, "%v", out)
	require.Equal(t, "mine-b", out["data"].(map[string]any)["slug"])

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, s := range []string{"slug-a-x", "SLUG-A-X", "Slug-a-X"} {
		res, err := client.Get(h.base + "/l/" + s)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, 302, res.StatusCode, s)
		require.Equal(t, h.base+"/view/"+ridA+"?tl=slug-a-x", res.Header.Get("Location"), s)
	}
	// The collector attributes a link however its slug is spelled.
	body := collectBody(ridA, map[string]any{"type": "session_started"})
	body["tracked_link"] = "SLUG-A-X"
	require.Equal(t, 202, h.do(t, "POST", "/collect", "", body).Status)
	ev := h.logged(t)
	require.Equal(t, "tracked_link", ev[len(ev)-1].SourceType)
}
