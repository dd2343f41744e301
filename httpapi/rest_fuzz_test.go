package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/api"
	"flipbook/storage"
)

// Fuzzing of REST parameter decoding and validation (issue 27): a request's path values, query
// string and JSON body go through readArgs and api.Caller.Call exactly as serveOp sends them
// (the operation's handler replaced by one that keeps the validated parameters), without a
// socket: thousands of inputs a second.
//
// Property: a refusal is a 400 (unreadable body), a 404 (a malformed path id) or a 422 whose
// details name fields of the operation, rendered as the spec's envelope; never anything else
// (no 5xx). An accepted input is idempotent: its typed values, written back as a request
// (path, query string, JSON body), are accepted again as the same values.

// restFuzzOps are the operations fuzzed: the richest bodies and query strings of the table.
var restFuzzOps = []string{
	"books.update", "webhooks.create", "webhooks.update", "catalogs.bulk_upsert", "catalogs.create",
	"catalogs.availability", "catalogs.render", "books.create_from_template", "bulk_settings.create",
	"subscribers.create", "embed_domains.create", "tracked_links.create", "books.list", "subscribers.list",
	"analytics.readers", "analytics.book_view_events", "webhooks.deliveries", "webhooks.dispatch_sample",
	"books.create_konva", "reader.access",
}

// restFuzzTable is the operation table with every handler replaced by one that records the
// validated parameters in *got. Building it needs no service: the table only takes method
// values of the backend.
func restFuzzTable(got *map[string]any) []*api.Operation {
	s := &Service{}
	all := append(api.Table(s.backends(), api.TableOptions{MaxUploadBody: DefaultMaxBodyBytes}), s.readerOperations()...)
	byID := map[string]*api.Operation{}
	for _, op := range all {
		byID[op.ID] = op
	}
	out := make([]*api.Operation, len(restFuzzOps))
	for i, id := range restFuzzOps {
		op := *byID[id]
		op.Handler = func(r *api.Request) (*api.Result, error) {
			*got = r.Params
			return &api.Result{Status: op.SuccessStatus(), Data: map[string]any{"ok": true}}, nil
		}
		out[i] = &op
	}
	return out
}

// restCall runs one REST call of op as serveOp does (readArgs as the Decode step of Call).
func restCall(caller *api.Caller, op *api.Operation, path map[string]string, query string, body []byte) error {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod(op.Method)
	uri := op.Path
	if query != "" {
		uri += "?" + query
	}
	ctx.Request.SetRequestURI(uri)
	ctx.Request.Header.SetContentType("application/json")
	ctx.Request.SetBody(body)
	for k, v := range path {
		ctx.SetUserValue(k, v)
	}
	p := &api.Principal{Key: &storage.APIKey{Scopes: []string{"*"}}, Workspace: &storage.Workspace{ID: 1, Plan: "enterprise"}}
	in := api.Input{Op: op, Principal: p, IP: "127.0.0.1", RequestID: "fuzz"}
	in.Decode = api.DecoderFunc(func(a *api.Args) error { return readArgs(ctx, op, a) })
	_, err := caller.Call(context.Background(), &in)
	return err
}

// splitPath gives the operation's path parameters the /-separated parts of raw, in order (an
// empty part leaves its parameter out, as the router never routes an empty segment).
func splitPath(op *api.Operation, raw string) map[string]string {
	parts := strings.Split(raw, "/")
	out := map[string]string{}
	i := 0
	for _, p := range op.Params {
		if p.In != api.InPath {
			continue
		}
		if i < len(parts) && parts[i] != "" {
			out[p.Name] = parts[i]
		}
		i++
	}
	return out
}

// wireString is a typed path or query value written back as the string a client sends.
func wireString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	case time.Time:
		return x.Format(time.RFC3339Nano), true
	}
	return "", false
}

// asRequest writes validated parameters back as a request: path values, a query string and a
// JSON body.
func asRequest(t *testing.T, op *api.Operation, params map[string]any) (map[string]string, string, []byte) {
	path := map[string]string{}
	q := url.Values{}
	body := map[string]any{}
	for _, p := range op.Params {
		v, ok := params[p.Name]
		if !ok {
			continue
		}
		switch p.In {
		case api.InPath, api.InQuery:
			s, ok := wireString(v)
			if !ok {
				t.Fatalf("%s: %s is a %T, not a value a path or query string carries", op.ID, p.Name, v)
			}
			if p.In == api.InPath {
				path[p.Name] = s
			} else {
				q.Set(p.Name, s)
			}
		case api.InBody:
			body[p.Name] = v
		}
	}
	raw, err := respJSON.Marshal(body)
	if err != nil {
		t.Fatalf("%s: accepted values cannot be written back as JSON: %v\nvalues: %#v", op.ID, err, params)
	}
	return path, q.Encode(), raw
}

// comparableValue makes values of two validations comparable: times by instant (as text).
func comparableValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return "time:" + x.UTC().Format(time.RFC3339Nano)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = comparableValue(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = comparableValue(e)
		}
		return a
	}
	return v
}

// checkAPIError checks a refusal of op: its status, type and envelope.
func checkAPIError(t *testing.T, op *api.Operation, err error, input string) {
	t.Helper()
	ae, ok := err.(*api.Error)
	if !ok {
		t.Fatalf("%s: an error that is not an *api.Error: %T %v\ninput: %s", op.ID, err, err, input)
	}
	switch ae.Status {
	case 400:
		if ae.Type != api.TypeBadRequest {
			t.Fatalf("%s: 400 of type %s\ninput: %s", op.ID, ae.Type, input)
		}
	case 404:
		hasPath := false
		for _, p := range op.Params {
			hasPath = hasPath || p.In == api.InPath
		}
		if ae.Type != api.TypeNotFound || !hasPath {
			t.Fatalf("%s: 404 of type %s (path parameters: %v)\ninput: %s", op.ID, ae.Type, hasPath, input)
		}
	case 422:
		if ae.Type != api.TypeValidation || len(ae.Details) == 0 {
			t.Fatalf("%s: 422 without field details: %+v\ninput: %s", op.ID, ae, input)
		}
		for field, msgs := range ae.Details {
			root, _, _ := strings.Cut(field, ".")
			known := false
			for _, p := range op.Params {
				known = known || p.Name == root
			}
			if !known || len(msgs) == 0 {
				t.Fatalf("%s: 422 names %q, not a parameter of the operation (messages %v)\ninput: %s", op.ID, field, msgs, input)
			}
		}
	default:
		t.Fatalf("%s: status %d (%s: %s)\ninput: %s", op.ID, ae.Status, ae.Type, ae.Message, input)
	}
	if ae.Message == "" {
		t.Fatalf("%s: %d without a message\ninput: %s", op.ID, ae.Status, input)
	}
	var env struct {
		Error struct {
			Message string              `json:"message"`
			Type    string              `json:"type"`
			Details map[string][]string `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(ae.Envelope("fuzz", false), &env); err != nil || env.Error.Type != ae.Type || env.Error.Message != ae.Message ||
		len(env.Error.Details) != len(ae.Details) {
		t.Fatalf("%s: the envelope does not carry the error: %s (%v)", op.ID, ae.Envelope("fuzz", false), err)
	}
}

func restFuzzSeeds() [][4]string {
	item := `{"external_product_id":"p1","external_variant_id":"v1","title":"Mug","price":"10.00","currency":"EUR",` +
		`"image":"https://shop.example/mug.png","gallery":["https://shop.example/1.png"],"categories":["kitchen"],` +
		`"payload":[{"k":1}],"stock_quantity":3,"available":true,"description":"line one\nline two"}`
	return [][4]string{
		{"books.update", "abcdefghijkl", "", `{"status":"publish","title":"Spring catalogue","description":"New\tthings","slug":"spring",` +
			`"published_date":"2026-03-01T09:00:00Z","expires_at":null,"allow_fullscreen":true,"animation_type":"flip",` +
			`"mobile_animation_type":null,"background":"#1a2b3c","image_display":"center/cover","magic_link_message":"Hi",` +
			`"pdf_password":null,"watermark":"draft","domain_lists":[],"eod_lists":[{"email":"a@example.com"}]}`},
		{"books.update", "abcdefghijkl", "", `{"status":"schedule","published_date":"2026-03-01T09:00:00.123456789+05:30","background":"https://cdn.example.com/bg.png"}`},
		{"books.update", "abcdefghijkl", "", `{"status":"draft","background":"rgba(10, 20, 30, 0.5)","title":""}`},
		{"webhooks.create", "", "", `{"name":"crm","provider":"generic","target_url":"https://hooks.example.com/in",` +
			`"event_types":["flipbook_opened","page_dwelled",{"value":"session_ended"}],"signing_secret":"whsec_0123456789abcdef",` +
			`"filters":{"book_ids":["abcdefghijkl"],"tracked_link_ids":[1,2],"recipient_emails":["ada@example.com"]},"is_active":true}`},
		{"webhooks.update", "7", "", `{"name":"renamed","signing_secret":null,"filters":null,"is_active":false}`},
		{"webhooks.update", "9223372036854775807", "", `{"event_types":["cta_submitted"]}`},
		{"catalogs.bulk_upsert", "3", "", `{"items":[` + item + `,{"external_product_id":"p2","title":"Cap","template_id":2}]}`},
		{"catalogs.create", "", "", `{"name":"Shop","source":"shopify","external_id":"shop-1","source_url":"https://shop.example/",` +
			`"metadata":[{"feed":"main"}],"template_key":"classic","items":[` + item + `]}`},
		{"catalogs.availability", "3", "", `{"items":[{"external_product_id":"p3","available":false,"stock_quantity":0,"availability":[{"loc":"A","n":2}]}],` +
			`"snapshot_at":"2026-05-01T10:00:00+02:00"}`},
		{"catalogs.render", "3", "", `{"items":["12","p1","p2:v1"],"template_id":2,"status":"draft","title":"Spring",` +
			`"cover":{"title":"Spring","description":"New things","website":"https://shop.example/"},"settings":{"flip_sound":true,"background":"white"}}`},
		{"books.create_from_template", "", "", `{"source":"woocommerce","source_type":"products","template_id":null,` +
			`"content":[{"id":"1","title":"Mug","price":"10","image":"https://shop.example/mug.png","gallery":null,"categories":["a"],` +
			`"url":"https://shop.example/mug","content":"<p>hi</p>"}],"metadata":{"site_name":"Shop","site_url":"https://shop.example/","currency":"EUR"}}`},
		{"bulk_settings.create", "", "", `{"books":[{"id":"abcdefghijkl","settings_revision":"r1"}],"settings":{"flip_sound":false,"title":"x"}}`},
		{"subscribers.create", "", "", `{"book_id":"abcdefghijkl","email":"ada@example.com","type":"email"}`},
		{"subscribers.create", "", "", `{"book_id":"abcdefghijkl","email":"example.co.uk","type":"domain"}`},
		{"embed_domains.create", "abcdefghijkl", "", `{"domain":"blog.example.org"}`},
		{"tracked_links.create", "abcdefghijkl", "", `{"name":"Newsletter","slug":"nl-1","channel":"email","kind":"manual","metadata":{"campaign":"spring","n":1.5}}`},
		{"books.list", "", "filter%5Bstatus%5D=publish&filter%5Bname%5D=spring&sort=-updated_at&limit=200&cursor=AQID", ""},
		{"books.list", "", "limit=01&sort=name&limit=2", ""},
		{"subscribers.list", "", "pagination%5Bper_page%5D=25&pagination%5Bpage%5D=2&filter=example.com&type=domain", ""},
		{"analytics.readers", "", "book_id=abcdefghijkl&date=2026-01-01..2026-01-31&limit=500&include_anonymous=true&sort=engagement", ""},
		{"analytics.book_view_events", "", "book_id=abcdefghijkl&viewer_id=9007199254740992&tracked_link_id=1&session_id=s1&date=2026-02-03", ""},
		{"webhooks.deliveries", "12", "limit=100&status=failed&cursor=xyz", ""},
		{"webhooks.dispatch_sample", "", "", `{"event":"subscriber.added","url":"https://hooks.example.com/x","payload":[{"email":"a@example.com"}]}`},
		{"books.create_konva", "", "", `{"title":"Editor","canvas":{"width":600,"height":800,"orientation":"portrait","objects":[{"type":"image"}]},` +
			`"page_images":["iVBORw0KGgo="],"thumbnail":null,"status":"draft","settings":{"allow_fullscreen":true,"pdf_password":"x"}}`},
		{"reader.access", "abcdefghijkl", "", `{"email":"reader@example.com","session_id":"s1"}`},
		{"webhooks.create", "", "", `[1,2]`},
		{"catalogs.bulk_upsert", "0", "", `{"items":[]}`},
	}
}

// FuzzRESTValidation fuzzes the path, query string and JSON body of the operations of
// restFuzzOps through readArgs and Call.
func FuzzRESTValidation(f *testing.F) {
	for _, s := range restFuzzSeeds() {
		sel := -1
		for i, id := range restFuzzOps {
			if id == s[0] {
				sel = i
			}
		}
		if sel < 0 {
			f.Fatalf("seed for unknown operation %s", s[0])
		}
		f.Add(uint8(sel), s[1], s[2], []byte(s[3]))
	}
	var got map[string]any
	ops := restFuzzTable(&got)
	caller := api.NewCaller(nil, api.CallerOptions{Logger: slog.New(slog.DiscardHandler)})
	f.Fuzz(func(t *testing.T, sel uint8, rawPath, query string, body []byte) {
		op := ops[int(sel)%len(ops)]
		path := splitPath(op, rawPath)
		input := func() string {
			return op.ID + " path=" + strconv.Quote(rawPath) + " query=" + strconv.Quote(query) + " body=" + strconv.Quote(string(body))
		}
		got = nil
		if err := restCall(caller, op, path, query, body); err != nil {
			checkAPIError(t, op, err, input())
			return
		}
		first := got
		if first == nil {
			t.Fatalf("%s: accepted without reaching the handler\ninput: %s", op.ID, input())
		}
		want := comparableValue(first)
		p2, q2, b2 := asRequest(t, op, first)
		got = nil
		if err := restCall(caller, op, p2, q2, b2); err != nil {
			t.Fatalf("%s: accepted values are refused when sent again: %v\ninput: %s\nagain: path=%v query=%q body=%s",
				op.ID, err, input(), p2, q2, b2)
		}
		if again := comparableValue(got); !reflect.DeepEqual(want, again) {
			t.Fatalf("%s: accepted values differ when sent again\ninput: %s\nfirst %#v\nagain %#v", op.ID, input(), want, again)
		}
	})
}
