package httpapi

import (
	"strconv"
	"testing"
	"time"

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

// collectBenchBody is a viewer-like collector batch of n events (mostly page segments).
func collectBenchBody(rid string, n int) []byte {
	b := []byte(`{"book_id":"` + rid + `","session_id":"3f0c9a8e-2b7d-4c1e-9a55-7c0e1d2f3a4b","events":[`)
	at := time.Now().UTC().Add(-time.Minute)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		ts := at.Add(time.Duration(i) * 40 * time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
		switch {
		case i == 0:
			b = append(b, `{"type":"session_started","page_number":1,"occurred_at":"`+ts+`"}`...)
		case i%25 == 0:
			b = append(b, `{"type":"link_clicked","page_number":2,"url":"https://shop.example.com/products/42","occurred_at":"`+ts+`"}`...)
		default:
			b = append(b, `{"type":"page_segment_completed","page_number":`+strconv.Itoa(i%2+1)+`,"active_ms":`+strconv.Itoa(300+i*97)+`,"occurred_at":"`+ts+`"}`...)
		}
	}
	return append(b, "]}"...)
}

// BenchmarkCollectParse measures decoding and validating a 60-event collector batch (the
// request pipeline's share of POST /collect, without the log append).
func BenchmarkCollectParse(b *testing.B) {
	h := newHarness(b, nil)
	var op *Operation
	for _, o := range h.svc.Operations() {
		if o.ID == "reader.collect" {
			op = o
		}
	}
	body := collectBenchBody("abcdefghijkl", 60)
	b.ReportAllocs()
	b.ResetTimer()
	var ctx fasthttp.RequestCtx
	for i := 0; i < b.N; i++ {
		ctx.Request.Reset()
		ctx.Request.SetBody(body)
		if _, err := h.svc.parseRequest(&ctx, op); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/60, "ns/event")
}
