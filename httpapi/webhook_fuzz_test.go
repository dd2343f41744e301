package httpapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"flipbook/api"
)

// Fuzzing of the webhook subscription input of a real service (issue 27): the bodies of POST
// /webhook-subscriptions and PUT /webhook-subscriptions/{subscription}, through the parameter
// table and webhookInput (webhooks.go: event types, the target URL's guard, filters that must
// belong to the workspace).

// webhookFields are the body fields a refusal may name.
var webhookFields = []string{"name", "provider", "target_url", "event_types", "signing_secret", "filters", "is_active"}

// webhookSent is what a fuzzed body asks for, as encoding/json reads it.
type webhookSent struct {
	Name          *string         `json:"name"`
	Provider      *string         `json:"provider"`
	TargetURL     *string         `json:"target_url"`
	EventTypes    []any           `json:"event_types"`
	SigningSecret json.RawMessage `json:"signing_secret"`
	IsActive      *bool           `json:"is_active"`
}

// FuzzWebhookSubscription posts fuzzed subscription bodies (create, or update of one
// subscription). Property: a success is the subscription as asked (name trimmed, provider,
// target URL, the distinct event types, whether a signing secret is set, is_active); a refusal
// is a 4xx in the error envelope naming fields of the body; never a 5xx.
func FuzzWebhookSubscription(f *testing.F) {
	h := newHarness(f, nil)
	key := h.workspace(f, "company", "live")
	rid := h.konva(f, key, "hooked", "publish")
	l := h.do(f, "POST", "/api/v1/books/"+rid+"/tracked-links", key, map[string]any{"name": "Newsletter", "slug": "fz-nl"})
	if l.Status != 201 {
		f.Fatalf("tracked link: %d %s", l.Status, l.Body)
	}
	link := itoa(fzNum(l.data()["id"]))
	// A public IP address: accepted without a DNS lookup, and nothing is ever delivered (no
	// reader event happens in this service).
	target := "https://93.184.216.34/hooks/in"
	w := h.do(f, "POST", "/api/v1/webhook-subscriptions", key, map[string]any{"name": "crm", "provider": "generic",
		"target_url": target, "event_types": []string{"flipbook_opened"}})
	if w.Status != 201 {
		f.Fatalf("webhook: %d %s", w.Status, w.Body)
	}
	sub := itoa(fzNum(w.data()["id"]))
	for _, s := range []string{
		`{"name":"crm","provider":"generic","target_url":"` + target + `","event_types":["flipbook_opened","page_dwelled","session_ended"],` +
			`"signing_secret":"whsec_0123456789abcdef"}`,
		`{"name":" Zap ","provider":"zapier","target_url":"https://93.184.216.34:8443/z?x=1","event_types":[{"value":"cta_submitted","label":"CTA"},"cta_submitted"],` +
			`"filters":{"book_ids":["` + rid + `","` + rid + `"],"tracked_link_ids":[` + link + `],"recipient_emails":[" Ann@Example.com ","ann@example.com"]},"is_active":false}`,
		`{"name":"n","provider":"generic","target_url":"https://[2606:2800:220:1:248:1893:25c8:1946]/h","event_types":["access_requested","access_granted","access_denied",` +
			`"flipbook_opened","page_dwelled","link_clicked","download_requested","cta_submitted","session_ended"],"filters":null,"signing_secret":null}`,
		`{"name":"x","provider":"generic","target_url":"http://127.0.0.1:8080/h","event_types":["flipbook_opened"]}`,
		`{"name":"x","provider":"generic","target_url":"https://hooks.invalid/h","event_types":["flipbook_opened"]}`,
		`{"name":"x","provider":"generic","target_url":"https://user:pw@93.184.216.34/h","event_types":["nope",{"value":1},{}]}`,
		`{"name":"   ","provider":"slack","target_url":"ftp://x","event_types":[],"signing_secret":"short"}`,
		`{"name":"x","provider":"generic","target_url":"` + target + `","event_types":["flipbook_opened"],"filters":{"book_ids":["nope"],"tracked_link_ids":[999999]}}`,
		`{"is_active":true}`, `{"signing_secret":null}`, `{"filters":{}}`, `{"name":null}`, `[]`, `{`, ``,
	} {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(1), []byte(s))
	}
	f.Fuzz(func(t *testing.T, sel uint8, body []byte) {
		method, path, create := "POST", "/api/v1/webhook-subscriptions", sel%2 == 0
		if !create {
			method, path = "PUT", "/api/v1/webhook-subscriptions/"+sub
		}
		r := h.do(t, method, path, key, body)
		what := method + " " + path + " " + strings.ReplaceAll(string(body), "\n", " ")
		if r.Status != 200 && r.Status != 201 {
			checkEnvelope(t, what, r, webhookFields...)
			return
		}
		if want := map[bool]int{true: 201, false: 200}[create]; r.Status != want {
			t.Fatalf("%s: %d, want %d: %s", what, r.Status, want, r.Body)
		}
		var in webhookSent
		if json.Unmarshal(body, &in) != nil {
			return // a body encoding/json reads otherwise (the service's decoder accepted it)
		}
		got := r.data()
		str := func(k string) string { s, _ := got[k].(string); return s }
		if in.Name != nil && str("name") != strings.TrimSpace(*in.Name) {
			t.Fatalf("%s: name %q, asked %q", what, str("name"), *in.Name)
		}
		if in.Provider != nil && str("provider") != *in.Provider {
			t.Fatalf("%s: provider %q, asked %q", what, str("provider"), *in.Provider)
		}
		if in.TargetURL != nil && str("target_url") != *in.TargetURL {
			t.Fatalf("%s: target_url %q, asked %q", what, str("target_url"), *in.TargetURL)
		}
		if in.EventTypes != nil {
			var want, have []string
			for _, e := range in.EventTypes {
				v, _ := e.(string)
				if m, ok := e.(map[string]any); ok {
					v, _ = m["value"].(string)
				}
				if !slices.Contains(want, v) {
					want = append(want, v)
				}
			}
			for _, e := range got["event_types"].([]any) {
				have = append(have, e.(map[string]any)["value"].(string))
			}
			slices.Sort(want)
			slices.Sort(have)
			if !slices.Equal(want, have) || !slices.IsSorted(want) {
				t.Fatalf("%s: event types %q, asked %q", what, have, want)
			}
			for _, v := range have {
				if !slices.Contains(api.WebhookEventValues(), v) {
					t.Fatalf("%s: event type %q is not one of the nine", what, v)
				}
			}
		}
		if in.SigningSecret != nil {
			var sec *string
			_ = json.Unmarshal(in.SigningSecret, &sec)
			if has, _ := got["has_signing_secret"].(bool); has != (sec != nil && *sec != "") {
				t.Fatalf("%s: has_signing_secret %v", what, has)
			}
		}
		if active, _ := got["is_active"].(bool); in.IsActive != nil && active != *in.IsActive || in.IsActive == nil && create && !active {
			t.Fatalf("%s: is_active %v", what, active)
		}
	})
}
