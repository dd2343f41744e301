package httpapi

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/internal/testutil"
)

// csvExport is a downloaded export.
type csvExport struct {
	resp   *resp
	header []string
	rows   []map[string]string
	raw    [][]string
}

// export downloads an export and parses it with encoding/csv.
func (h *harness) export(t *testing.T, key, path string) *csvExport {
	t.Helper()
	r := h.do(t, "GET", path, key, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
	cr := csv.NewReader(bytes.NewReader(r.Body))
	recs, err := cr.ReadAll()
	require.NoError(t, err, "%s", r.Body)
	require.NotEmpty(t, recs, "the header row is always there")
	require.True(t, bytes.HasSuffix(r.Body, []byte("\r\n")), "records end with CRLF")
	e := &csvExport{resp: r, header: recs[0], raw: recs[1:]}
	for _, rec := range recs[1:] {
		require.Len(t, rec, len(e.header))
		m := map[string]string{}
		for i, name := range e.header {
			m[name] = rec[i]
		}
		e.rows = append(e.rows, m)
	}
	return e
}

// cellOf is how a JSON value appears in a CSV cell (docs/API.md "Exports").
func cellOf(t *testing.T, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		b, err := json.Marshal(x)
		require.NoError(t, err)
		return string(b)
	}
}

// sameValue compares a CSV cell with a JSON value: objects and arrays as JSON, the rest as text.
func sameValue(t *testing.T, cell string, v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		var got any
		if json.Unmarshal([]byte(cell), &got) != nil {
			return false
		}
		return reflect.DeepEqual(got, v)
	}
	return cell == cellOf(t, v)
}

// requireSameRows checks that the CSV rows are the JSON rows, in order, column by column; col
// (optional) maps a CSV column to the JSON value it shows, else it is the JSON field of the
// same name.
func requireSameRows(t *testing.T, e *csvExport, want []map[string]any, col func(name string, row map[string]any) (any, bool)) {
	t.Helper()
	require.Len(t, e.rows, len(want))
	for i, row := range want {
		for _, name := range e.header {
			var v any
			ok := false
			if col != nil {
				v, ok = col(name, row)
			}
			if !ok {
				v, ok = row[name]
			}
			require.True(t, ok, "column %s is not a field of the JSON row", name)
			require.True(t, sameValue(t, e.rows[i][name], v), "row %d column %s: csv %q, json %#v", i, name, e.rows[i][name], v)
		}
	}
}

// golden checks an export's header row against testdata/exports/<name>.golden.csv (-update
// rewrites it: golden_test.go).
func golden(t *testing.T, name string, e *csvExport) {
	t.Helper()
	line, _, _ := bytes.Cut(e.resp.Body, []byte("\r\n"))
	checkGolden(t, "exports/"+name+".golden.csv", append(line, '\r', '\n'))
}

// Values that need quoting: commas, quotes, newlines, UTF-8.
const (
	trickyName    = `Zoë "Ziggy" Müller, Jr.`
	trickyNote    = "line one,\nline \"two\"\r\n— ünïcödé ✓"
	trickyURL     = `https://example.com/buy?a=1,b=2&c="x"`
	trickyCompany = "Ünïcode GmbH, 東京"
)

// exportFixture posts a fixed event set through the email gate and /collect: an access
// rejection and a grant; an identified session with a lead form and a click; an anonymous
// session through a tracked link on an embedding site with a download, a checkout redirect
// and a lead form without an address; and a session two days earlier.
type exportFixture struct {
	h      *harness
	key    string
	ws     int64
	rid    string
	link   string // the tracked link's id
	viewer float64
	day    string // the UTC day of the recent events
	old    string // the UTC day of the earlier session
}

func newExportFixture(t *testing.T) *exportFixture {
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	rid := h.konva(t, key, "Spring, \"Catalogue\"", "publish")
	link := h.do(t, "POST", "/api/v1/books/"+rid+"/tracked-links", key, map[string]any{"name": "Newsletter, May", "slug": "may-news"})
	require.Equal(t, 201, link.Status, "%s", link.Body)

	sub := h.do(t, "POST", "/api/v1/subscribers", key, map[string]any{"book_id": rid, "email": "ann@example.com"})
	require.Equal(t, 201, sub.Status, "%s", sub.Body)
	require.Equal(t, 403, h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": "eve@evil.example", "session_id": "s-eve"}).Status)
	ann := h.do(t, "POST", "/view/"+rid+"/access", "", map[string]any{"email": "ann@example.com", "session_id": "s-ann"})
	require.Equal(t, 200, ann.Status, "%s", ann.Body)
	tok := ann.data()["reader_token"].(string)

	now := time.Now().UTC()
	base := now.Add(-time.Hour).Truncate(time.Second)
	if base.Day() != now.Day() { // keep the recent events on one UTC day
		base = now.Truncate(time.Second).Add(-2 * time.Minute)
	}
	at := func(s int) string { return base.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }
	post := func(session, token, tracked, host string, events ...map[string]any) {
		b := collectBody(rid, events...)
		b["session_id"] = session
		if token != "" {
			b["reader_token"] = token
		}
		if tracked != "" {
			b["tracked_link"] = tracked
		}
		if host != "" {
			b["source_host"] = host
		}
		r := h.do(t, "POST", "/collect", "", b)
		require.Equal(t, 202, r.Status, "%s", r.Body)
	}
	post("s-ann", tok, "", "",
		map[string]any{"type": "session_started", "page_number": 1, "occurred_at": at(0)},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 4000, "occurred_at": at(4)},
		map[string]any{"type": "lead_form_submitted", "page_number": 2, "occurred_at": at(6), "form": map[string]any{
			"Email": "ann.lead@example.com", "name": trickyName, "note": trickyNote, "company": trickyCompany, "employees": 12}},
		map[string]any{"type": "link_clicked", "page_number": 2, "url": trickyURL, "occurred_at": at(7)},
		map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 6500, "occurred_at": at(8)},
		map[string]any{"type": "session_ended", "exit_reason": "closed, by reader", "occurred_at": at(9)})
	// The gate off again (last entry removed), so anonymous readers may post.
	require.Equal(t, 200, h.do(t, "DELETE", "/api/v1/subscribers/"+itoa(int64(sub.data()["id"].(float64))), key, nil).Status)
	post("s-anon", "", "may-news", "partner.example",
		map[string]any{"type": "session_started", "page_number": 1, "occurred_at": at(20)},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 1500, "occurred_at": at(22)},
		map[string]any{"type": "document_downloaded", "page_number": 1, "occurred_at": at(23)},
		map[string]any{"type": "checkout_redirect_clicked", "page_number": 1, "url": trickyURL, "occurred_at": at(24)},
		map[string]any{"type": "lead_form_submitted", "page_number": 1, "occurred_at": at(24), "form": map[string]any{"name": "Bo\nBerg", "company": trickyCompany}},
		map[string]any{"type": "form_widget_opened", "page_number": 2, "occurred_at": at(25)})
	earlier := base.Add(-48 * time.Hour)
	post("s-old", "", "", "",
		map[string]any{"type": "session_started", "page_number": 1, "occurred_at": earlier.Format(time.RFC3339)},
		map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 30000, "occurred_at": earlier.Add(30 * time.Second).Format(time.RFC3339)})
	h.logged(t)
	return &exportFixture{h: h, key: key, ws: ws, rid: rid, viewer: ann.data()["viewer_id"].(float64),
		link: itoa(int64(link.data()["id"].(float64))),
		day:  base.Format(time.DateOnly), old: earlier.Format(time.DateOnly)}
}

// TestExports: every export parses back (encoding/csv) to the rows of its JSON operation with
// the same filters, in the same order; headers are golden; values with commas, quotes,
// newlines and UTF-8 survive; Content-Type and Content-Disposition; gates; parameters.
func TestExports(t *testing.T) {
	t.Parallel()
	fx := newExportFixture(t)
	h, key, rid := fx.h, fx.key, fx.rid
	today := time.Now().UTC().Format(time.DateOnly)
	books := "/api/v1/exports/books/" + rid

	t.Run("interaction-events", func(t *testing.T) {
		e := h.export(t, key, books+"/interaction-events")
		golden(t, "interaction-events", e)
		require.Equal(t, `attachment; filename=`+rid+`-interaction-events-`+today+`.csv`, e.resp.Header.Get("Content-Disposition"))
		want := h.walk(t, key, "/api/v1/analytics/interaction-events?book_id="+rid, 500)
		require.Len(t, want, 14)
		requireSameRows(t, e, want, nil)
		for _, q := range []string{"session_id=s-anon", "event_type=lead_form_submitted", "page_number=2",
			"viewer_id=" + itoa(int64(fx.viewer)), "date=" + fx.old, "date=" + fx.old + ".." + fx.day, "tracked_link_id=" + fx.link,
			"session_id=s-ann&event_type=page_segment_completed&page_number=1"} {
			f := h.export(t, key, books+"/interaction-events?"+q)
			want := h.walk(t, key, "/api/v1/analytics/interaction-events?book_id="+rid+"&"+q, 500)
			requireSameRows(t, f, want, nil)
		}
		// The same rows through the analytics export.
		a := h.export(t, key, "/api/v1/exports/analytics/"+rid+"?source=interaction_events")
		require.Equal(t, e.header, a.header)
		require.Equal(t, e.raw, a.raw)
		require.Contains(t, a.resp.Header.Get("Content-Disposition"), rid+"-analytics-interaction-events-")
	})

	t.Run("audit-log", func(t *testing.T) {
		e := h.export(t, key, books+"/audit-log")
		golden(t, "audit-log", e)
		want := h.walk(t, key, "/api/v1/analytics/audit-log?book_id="+rid, 500)
		require.Len(t, want, 10)
		requireSameRows(t, e, want, nil)
		for _, q := range []string{"event_type=lead_form_submitted", "event_type=access_rejected", "viewer_id=" + itoa(int64(fx.viewer)),
			"date=" + fx.day, "tracked_link_id=" + fx.link} {
			requireSameRows(t, h.export(t, key, books+"/audit-log?"+q),
				h.walk(t, key, "/api/v1/analytics/audit-log?book_id="+rid+"&"+q, 500), nil)
		}
	})

	t.Run("access-audit", func(t *testing.T) {
		e := h.export(t, key, books+"/access-audit")
		golden(t, "access-audit", e)
		var want []map[string]any
		for _, row := range h.walk(t, key, "/api/v1/analytics/audit-log?book_id="+rid, 500) {
			if strings.HasPrefix(row["event_type"].(string), "access_") {
				want = append(want, row)
			}
		}
		require.Len(t, want, 4)
		requireSameRows(t, e, want, nil)
		require.Equal(t, []string{"access_requested", "access_rejected", "access_requested", "access_granted"},
			[]string{e.rows[0]["event_type"], e.rows[1]["event_type"], e.rows[2]["event_type"], e.rows[3]["event_type"]})
		require.Equal(t, "eve@evil.example", e.rows[1]["viewer_email"])
		require.Empty(t, e.rows[1]["viewer_id"])
		require.NotEmpty(t, e.rows[1]["reason"])
		requireSameRows(t, h.export(t, key, books+"/access-audit?event_type=access_granted"),
			h.walk(t, key, "/api/v1/analytics/audit-log?book_id="+rid+"&event_type=access_granted", 500), nil)
	})

	t.Run("leads", func(t *testing.T) {
		e := h.export(t, key, books+"/leads")
		golden(t, "leads", e)
		// The lead form submissions of the interaction events, oldest first.
		want := h.walk(t, key, "/api/v1/analytics/interaction-events?book_id="+rid+"&event_type=lead_form_submitted", 500)
		slices.Reverse(want)
		require.Len(t, want, 2)
		requireSameRows(t, e, want, leadColumn)
		ann, bo := e.rows[0], e.rows[1]
		require.Equal(t, "ann.lead@example.com", ann["email"], "the form's Email field, matched ignoring case")
		require.Equal(t, trickyName, ann["name"])
		require.Equal(t, "ann@example.com", ann["viewer_email"])
		require.Equal(t, "", bo["email"])
		require.Equal(t, "Bo\nBerg", bo["name"], "a raw newline in a value")
		require.Equal(t, "partner.example", bo["source_host"])
		// Quoting, byte for byte as RFC 4180 has it.
		body := string(e.resp.Body)
		require.Contains(t, body, `,"Zoë ""Ziggy"" Müller, Jr.",`)
		require.Contains(t, body, ",\"Bo\nBerg\",")
		require.Contains(t, body, `""note"":""line one,\nline \""two\""\r\n— ünïcödé ✓""`)
		// Filters.
		for _, q := range []string{"session_id=s-anon", "viewer_id=" + itoa(int64(fx.viewer)), "date=" + fx.old, "tracked_link_id=" + fx.link} {
			want := h.walk(t, key, "/api/v1/analytics/interaction-events?book_id="+rid+"&event_type=lead_form_submitted&"+q, 500)
			slices.Reverse(want)
			requireSameRows(t, h.export(t, key, books+"/leads?"+q), want, leadColumn)
		}
	})

	t.Run("analytics view events", func(t *testing.T) {
		e := h.export(t, key, "/api/v1/exports/analytics/"+rid)
		golden(t, "analytics-view-events", e)
		require.Equal(t, `attachment; filename=`+rid+`-analytics-view-events-`+today+`.csv`, e.resp.Header.Get("Content-Disposition"))
		want := h.walk(t, key, "/api/v1/analytics/book-view-events?book_id="+rid, 500)
		require.Len(t, want, 3)
		requireSameRows(t, e, want, viewEventColumn)
		require.Equal(t, h.export(t, key, "/api/v1/exports/analytics/"+rid+"?source=view_events").raw, e.raw)
		anon := e.rows[1]
		require.Equal(t, "s-anon", anon["session_id"])
		require.Equal(t, []string{fx.link, "Newsletter, May", "may-news", "true"},
			[]string{anon["tracked_link_id"], anon["tracked_link_name"], anon["tracked_link_slug"], anon["from_embedded"]})
		require.Equal(t, "Spring, \"Catalogue\"", anon["book_title"])
		for _, q := range []string{"source_host=partner.example", "viewer_id=" + itoa(int64(fx.viewer)), "date=" + fx.old, "tracked_link_id=" + fx.link} {
			requireSameRows(t, h.export(t, key, "/api/v1/exports/analytics/"+rid+"?"+q),
				h.walk(t, key, "/api/v1/analytics/book-view-events?book_id="+rid+"&"+q, 500), viewEventColumn)
		}
	})

	// The aggregate exports: the rows of the unpaginated operations, and of the readers list
	// walked fully.
	list := func(t *testing.T, path string) []map[string]any {
		r := h.do(t, "GET", path, key, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		var out []map[string]any
		for _, row := range r.list() {
			out = append(out, row.(map[string]any))
		}
		return out
	}
	t.Run("page-performance", func(t *testing.T) {
		e := h.export(t, key, books+"/page-performance")
		golden(t, "page-performance", e)
		require.Contains(t, e.resp.Header.Get("Content-Disposition"), rid+"-page-performance-"+today+".csv")
		want := list(t, "/api/v1/analytics/page-performance?book_id="+rid)
		require.Len(t, want, 2, "one row per page")
		requireSameRows(t, e, want, nil)
		for _, q := range []string{"date=" + fx.old, "tracked_link_id=" + fx.link, "date=2020-01-01"} {
			requireSameRows(t, h.export(t, key, books+"/page-performance?"+q),
				list(t, "/api/v1/analytics/page-performance?book_id="+rid+"&"+q), nil)
		}
	})

	t.Run("reader-pages", func(t *testing.T) {
		e := h.export(t, key, books+"/reader-pages")
		golden(t, "reader-pages", e)
		want := list(t, "/api/v1/analytics/reader-pages?book_id="+rid)
		require.Len(t, want, 2, "Ann's two pages")
		requireSameRows(t, e, want, nil)
		// Keyset batches of two rows (across readers, identified and anonymous) give every row once.
		defer h.svc.readersBatch.Store(defaultReadersExportBatch)
		for _, batch := range []int{65536, 2, 1} {
			h.svc.readersBatch.Store(int64(batch))
			for _, q := range []string{"include_anonymous=true", "session_id=s-anon", "viewer_id=" + itoa(int64(fx.viewer)),
				"page_number=1&include_anonymous=true", "date=" + fx.old + "&include_anonymous=true", "tracked_link_id=" + fx.link} {
				requireSameRows(t, h.export(t, key, books+"/reader-pages?"+q),
					list(t, "/api/v1/analytics/reader-pages?book_id="+rid+"&"+q), nil)
			}
		}
	})

	t.Run("readers", func(t *testing.T) {
		e := h.export(t, key, books+"/readers")
		golden(t, "readers", e)
		want := h.walk(t, key, "/api/v1/analytics/readers?book_id="+rid, 500)
		require.Len(t, want, 1, "Ann")
		requireSameRows(t, e, want, nil)
		// Keyset batches of two readers over one snapshot walk every reader once.
		h.svc.readersBatch.Store(2)
		defer h.svc.readersBatch.Store(defaultReadersExportBatch)
		for _, q := range []string{"include_anonymous=true", "include_anonymous=true&sort=engagement", "session_id=s-old",
			"viewer_id=" + itoa(int64(fx.viewer)), "include_anonymous=true&date=" + fx.day, "tracked_link_id=" + fx.link + "&include_anonymous=true"} {
			want := h.walk(t, key, "/api/v1/analytics/readers?book_id="+rid+"&"+q, 1)
			requireSameRows(t, h.export(t, key, books+"/readers?"+q), want, nil)
		}
		require.Len(t, h.export(t, key, books+"/readers?include_anonymous=true").rows, 3)
	})

	t.Run("empty", func(t *testing.T) {
		e := h.export(t, key, books+"/interaction-events?date=2020-01-01")
		require.Empty(t, e.rows)
		golden(t, "interaction-events", e)
	})

	t.Run("gates", func(t *testing.T) {
		all := []string{"/api/v1/exports/analytics/" + rid, books + "/access-audit", books + "/audit-log",
			books + "/interaction-events", books + "/leads", books + "/page-performance", books + "/reader-pages",
			books + "/readers"}
		pro, proWS := h.workspaceKey(t, "pro", "live", "*")
		proBook := h.konva(t, pro, "pro book", "publish")
		exportsOnly := h.key(t, fx.ws, "live", "exports:read")
		analyticsOnly := h.key(t, fx.ws, "live", "analytics:read")
		other := h.workspace(t, "company", "live")
		test := h.key(t, fx.ws, "test", "*")
		for _, p := range all {
			require.Equal(t, 200, h.do(t, "GET", p, exportsOnly, nil).Status, p)
			r := h.do(t, "GET", p, analyticsOnly, nil)
			require.Equal(t, 403, r.Status, p)
			require.Equal(t, api.TypeMissingScope, r.errType())
			require.Equal(t, 404, h.do(t, "GET", p, other, nil).Status, "another workspace's book: %s", p)
			require.Equal(t, 404, h.do(t, "GET", p, test, nil).Status, "the test sandbox: %s", p)
			pp := strings.Replace(p, rid, proBook, 1)
			r = h.do(t, "GET", pp, pro, nil)
			if strings.HasSuffix(p, "/leads") {
				require.Equal(t, 200, r.Status, "leads on any plan: %s", r.Body)
			} else {
				require.Equal(t, 403, r.Status, pp)
				require.Equal(t, api.TypePlanRequired, r.errType())
			}
		}
		require.Equal(t, 404, h.do(t, "GET", books+"x/leads", key, nil).Status)
		require.Equal(t, 200, h.do(t, "GET", "/api/v1/exports/books/"+proBook+"/leads", h.key(t, proWS, "live", "exports:read"), nil).Status)
	})

	t.Run("parameters", func(t *testing.T) {
		runValidation(t, h, key, rid, []vcase{
			{"bad date", "GET", books + "/interaction-events?date=yesterday", nil, 422, "date"},
			{"reversed range", "GET", books + "/audit-log?date=2026-02-01..2026-01-01", nil, 422, "date"},
			{"bad type", "GET", books + "/interaction-events?event_type=access_granted", nil, 422, "event_type"},
			{"audit type", "GET", books + "/audit-log?event_type=session_started", nil, 422, "event_type"},
			{"access type", "GET", books + "/access-audit?event_type=link_clicked", nil, 422, "event_type"},
			{"page 0", "GET", books + "/interaction-events?page_number=0", nil, 422, "page_number"},
			{"viewer 0", "GET", books + "/leads?viewer_id=0", nil, 422, "viewer_id"},
			{"viewer not int", "GET", books + "/leads?viewer_id=abc", nil, 422, "viewer_id"},
			{"session too long", "GET", books + "/interaction-events?session_id=" + long(256), nil, 422, "session_id"},
			{"bad source", "GET", "/api/v1/exports/analytics/{book}?source=readers", nil, 422, "source"},
			{"link not int", "GET", "/api/v1/exports/analytics/{book}?tracked_link_id=x", nil, 422, "tracked_link_id"},
			{"anonymous not bool", "GET", books + "/readers?include_anonymous=maybe", nil, 422, "include_anonymous"},
			{"bad sort", "GET", books + "/readers?sort=name", nil, 422, "sort"},
			{"reader pages page 0", "GET", books + "/reader-pages?page_number=0", nil, 422, "page_number"},
			{"page performance date", "GET", books + "/page-performance?date=2026-13-01", nil, 422, "date"},
			{"ok", "GET", books + "/interaction-events?date=2026-01-01..2026-01-31&page_number=1", nil, 200, ""},
		})
	})
}

// leadColumn maps the leads export's columns to an interaction event (JSON) of a lead form.
func leadColumn(name string, row map[string]any) (any, bool) {
	fields := map[string]any{}
	for _, f := range row["metadata"].([]any) {
		f := f.(map[string]any)
		fields[f["name"].(string)] = f["value"]
	}
	switch name {
	case "fields":
		return fields, true
	case "email":
		for k, v := range fields {
			if strings.EqualFold(k, "email") {
				return v, true
			}
		}
		return "", true
	case "name":
		if v, ok := fields["name"]; ok {
			return v, true
		}
		return "", true
	}
	return nil, false
}

// viewEventColumn maps the view events export's tracked link columns to the JSON's object.
func viewEventColumn(name string, row map[string]any) (any, bool) {
	link, _ := row["tracked_link"].(map[string]any)
	field, ok := strings.CutPrefix(name, "tracked_link_")
	if !ok {
		return nil, false
	}
	if link == nil {
		return nil, true
	}
	if field == "name" || field == "slug" {
		return link[field], true
	}
	return link[field], true
}

// bigExport is a book with n synthetic interaction events (straight into DuckDB) in a new
// company workspace: its key, the book and the workspace id.
func bigExport(t testing.TB, h *harness, n int) (key, rid string, ws int64) {
	key, ws = h.workspaceKey(t, "company", "live", "*")
	rid = h.konva(t, key, "big", "publish")
	require.NoError(t, h.svc.Analytics.InsertSynthetic(analytics.Synthetic{Workspace: ws, BookID: rid, Events: n,
		Start: time.Now().UTC().Add(-24 * time.Hour), Step: 50 * time.Microsecond}))
	return key, rid, ws
}

// rawGet sends a GET on a fresh connection and reads the response head and the start of the
// body (n bytes in all); the caller decides what happens to the connection.
func rawGet(t *testing.T, h *harness, path, key string, n int) (net.Conn, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	require.NoError(t, err)
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: flipbook\r\nAuthorization: Bearer %s\r\n\r\n", path, key)
	require.NoError(t, err)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, n)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(buf, []byte("HTTP/1.1 200 OK\r\n")), "%s", buf[:min(n, 300)])
	return c, buf
}

// within runs f and fails the test if it takes longer than d (a restart that hangs in DuckDB's
// instance cache would otherwise hang the test).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not finish within %s", what, d)
	}
}

// TestExportClientDisconnect: a client that reads 64 KB of a 400,000-row export and closes its
// connection stops the export: it stops reading rows (the counters stop far below the
// export's size, and no further windows are queried) and gives back its DuckDB connection at
// once. The service then still answers, and restarts in-process without hanging (no context
// was ever cancelled inside DuckDB).
func TestExportClientDisconnect(t *testing.T) {
	t.Parallel()
	const total = 400_000
	h := newHarness(t, nil)
	key, rid, _ := bigExport(t, h, total)
	path := "/api/v1/exports/books/" + rid + "/interaction-events"
	db := h.svc.Analytics
	before := db.ExportStats()

	c, _ := rawGet(t, h, path, key, 64<<10)
	require.NoError(t, c.Close())
	start := time.Now()
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if st := db.ExportStats(); st.Running != 0 {
			return fmt.Errorf("the export has not let go of its connection: %+v", st)
		}
		return nil
	})
	stopped := time.Since(start)
	after := db.ExportStats()
	rows, queries := after.Rows-before.Rows, after.Queries-before.Queries
	t.Logf("stopped %s after the client closed; %d of %d rows read, %d queries", stopped, rows, total, queries)
	require.Less(t, rows, int64(total/4), "the export stopped reading rows")
	require.LessOrEqual(t, queries, int64(4), "count, cut points and at most two of the seven windows")
	time.Sleep(200 * time.Millisecond) // sleep: a quiet window in which nothing may run after the stop (a negative check: no event to wait for)
	require.Equal(t, after, db.ExportStats(), "nothing runs after the stop")

	// The service still answers, exports included.
	r := h.do(t, "GET", path+"?session_id=syn-7", key, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, 9, bytes.Count(r.Body, []byte("\r\n")), "header + the session's 8 events")

	within(t, 60*time.Second, "restart", func() { h.restart(t) })
	r = h.do(t, "GET", path+"?session_id=syn-7", key, nil)
	require.Equal(t, 200, r.Status)
}

// TestExportShutdownStalledClient: a client that stops reading mid-export (its socket buffers
// full, the export blocked writing) does not hold up Shutdown beyond its timeout: the stream is
// aborted, its connection returned, DuckDB closed, and the service starts again in-process.
func TestExportShutdownStalledClient(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, rid, _ := bigExport(t, h, 400_000)
	c, _ := rawGet(t, h, "/api/v1/exports/books/"+rid+"/interaction-events", key, 4096)
	defer c.Close()
	db := h.svc.Analytics
	prevRows := int64(-1) // the rows handed out at the previous look, 100 ms earlier
	testutil.Eventually(t, 10*time.Second, 100*time.Millisecond, func() error {
		rows := db.ExportStats().Rows
		if rows != prevRows {
			err := fmt.Errorf("the export does not block on the stalled client: %d rows handed out, %d 100 ms before", rows, prevRows)
			prevRows = rows
			return err
		}
		return nil
	})
	require.EqualValues(t, 1, db.ExportStats().Running)

	within(t, 30*time.Second, "shutdown", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		require.NoError(t, h.svc.Shutdown(ctx))
		h.svc = nil
	})
	require.Zero(t, db.ExportStats().Running)
	within(t, 60*time.Second, "start", func() { h.start(t) })
	require.Equal(t, 200, h.do(t, "GET", "/api/v1/exports/books/"+rid+"/leads", key, nil).Status)
}

// TestExportAggregateDisconnect: the same for an aggregate export (readers, on the producer
// goroutine): the client's disconnect ends the query's row callbacks long before the first of
// the two keyset batches (67,667 readers) is through.
func TestExportAggregateDisconnect(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, rid, _ := bigExport(t, h, 800_000)
	db := h.svc.Analytics
	before := db.ExportStats()
	c, _ := rawGet(t, h, "/api/v1/exports/books/"+rid+"/readers?include_anonymous=true", key, 16<<10)
	require.NoError(t, c.Close())
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
		if st := db.ExportStats(); st.Running != 0 {
			return fmt.Errorf("the export has not ended: %+v", st)
		}
		return nil
	})
	rows := db.ExportStats().Rows - before.Rows
	t.Logf("%d readers written of 67,667", rows)
	require.Less(t, rows, int64(defaultReadersExportBatch), "the export stopped within its first batch")

	r := h.do(t, "GET", "/api/v1/exports/books/"+rid+"/readers?session_id=syn-7", key, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, 2, bytes.Count(r.Body, []byte("\r\n")), "header + one anonymous reader")
	within(t, 60*time.Second, "restart", func() { h.restart(t) })
}
