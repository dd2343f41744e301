package httpapi

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/actors"
	"flipbook/api"
)

// /me reports a feature exactly when its operations answer on the workspace's plan, and an
// unlimited published-book limit as null.
func TestMePlanFeaturesAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	pathParam := regexp.MustCompile(`\{[^}]+\}`)
	for _, plan := range actors.PlanNames {
		t.Run(plan, func(t *testing.T) {
			key := h.workspace(t, plan, "live")
			me := h.do(t, "GET", "/api/v1/me", key, nil)
			require.Equal(t, 200, me.Status, "%s", me.Body)
			p := me.data()["plan"].(map[string]any)
			require.Equal(t, plan, p["name"])
			if limit := actors.Plans[plan].PublishedBooks; limit == 0 {
				require.Contains(t, p, "published_book_limit")
				require.Nil(t, p["published_book_limit"], "an unlimited plan reports null")
			} else {
				require.Equal(t, float64(limit), p["published_book_limit"])
			}
			require.Equal(t, h.base+"/.well-known/oauth-authorization-server",
				me.data()["endpoints"].(map[string]any)["oauth"])
			for _, f := range planFeatures {
				on, ok := p[f.name].(bool)
				require.True(t, ok, "feature %s reported", f.name)
				n := 0
				for _, op := range h.svc.Operations() {
					if !f.match(op.ID) {
						continue
					}
					n++
					path := pathParam.ReplaceAllString(op.Base+op.Path, "1")
					var body any
					if op.Method != "GET" && op.Method != "DELETE" {
						body = map[string]any{}
					}
					r := h.do(t, op.Method, path, key, body)
					planErr := r.Status == 403 && r.errType() == api.TypePlanRequired
					require.Equal(t, !on, planErr, "%s on plan %s: /me says %s=%v, the operation answered %d %s",
						op.ID, plan, f.name, on, r.Status, r.Body)
					require.NotContains(t, string(r.Body), "no route for", op.ID)
				}
				require.Positive(t, n, "feature %s stands for no operation", f.name)
			}
		})
	}
}
