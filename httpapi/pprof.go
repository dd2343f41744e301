package httpapi

import (
	"net/http/pprof"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// pprofHandler serves net/http/pprof's handlers at /debug/pprof/{name} (Config.PProf, behind
// the admin token): the index at /debug/pprof/, cmdline, profile (CPU, ?seconds=N), symbol,
// trace, and every runtime profile by name (heap, goroutine, allocs, mutex, block, ...; an
// unknown name is 404). fasthttp's pprofhandler is not used: it answers 404 for the index's
// own address, /debug/pprof/.
func pprofHandler() fasthttp.RequestHandler {
	index := fasthttpadaptor.NewFastHTTPHandlerFunc(pprof.Index) // the index, and named profiles
	named := map[string]fasthttp.RequestHandler{
		"cmdline": fasthttpadaptor.NewFastHTTPHandlerFunc(pprof.Cmdline),
		"profile": fasthttpadaptor.NewFastHTTPHandlerFunc(pprof.Profile),
		"symbol":  fasthttpadaptor.NewFastHTTPHandlerFunc(pprof.Symbol),
		"trace":   fasthttpadaptor.NewFastHTTPHandlerFunc(pprof.Trace),
	}
	return func(ctx *fasthttp.RequestCtx) {
		name, _ := ctx.UserValue("name").(string)
		if h := named[name]; h != nil {
			h(ctx)
			return
		}
		index(ctx)
	}
}
