package httpapi

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkGetBook measures the handler path of GET /books/{book} without the network.
func BenchmarkGetBook(b *testing.B) {
	h := newHarness(b, nil)
	key := h.workspace(b, "company", "live")
	rid := h.konva(b, key, "bench", "draft")
	handler := h.svc.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.SetRequestURI("/api/v1/books/" + rid)
			ctx.Request.Header.Set("Authorization", "Bearer "+key)
			handler(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}
