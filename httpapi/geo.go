package httpapi

import (
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"flipbook/api"
	"flipbook/ingest"
)

// Reader location (spec §2.8: country, region, city, latitude, longitude, "when known").
//
// The service has no IP-geolocation database of its own; the location is known when the
// service runs behind an edge that adds visitor-location headers (Cloudflare, CloudFront) and
// the operator says so with --trust-geo-headers. Without that flag the headers are ignored:
// any client could send them. docs/DECISIONS.md, "Reader location".

// geo is a reader's location as the edge reported it.
type geo struct {
	country, region, city string
	hasLatLong            bool
	lat, lon              float64
}

// readerGeo is the location the REST adapter took from trusted edge headers, or nil.
func readerGeo(r *api.Request) *geo { g, _ := r.Extra.(*geo); return g }

// geoHeaders lists, per field, the headers read in order (first non-empty wins).
var geoHeaders = struct{ country, region, city, lat, lon []string }{
	country: []string{"CloudFront-Viewer-Country", "CF-IPCountry"},
	region:  []string{"CloudFront-Viewer-Country-Region", "CF-Region-Code"},
	city:    []string{"CloudFront-Viewer-City", "CF-IPCity"},
	lat:     []string{"CloudFront-Viewer-Latitude", "CF-IPLatitude"},
	lon:     []string{"CloudFront-Viewer-Longitude", "CF-IPLongitude"},
}

// geoFromHeaders copies the location out of the request's headers (the RequestCtx is pooled:
// nothing here aliases it). Unknown values (Cloudflare's "XX" and "T1" for Tor) are dropped.
func geoFromHeaders(h *fasthttp.RequestHeader) *geo {
	first := func(names []string, maxLen int) string {
		for _, n := range names {
			if v := strings.TrimSpace(string(h.Peek(n))); v != "" {
				if len(v) > maxLen {
					return ""
				}
				return v
			}
		}
		return ""
	}
	g := geo{
		country: strings.ToUpper(first(geoHeaders.country, 2)),
		region:  first(geoHeaders.region, 64),
		city:    first(geoHeaders.city, 128),
	}
	if len(g.country) != 2 || g.country == "XX" || g.country == "T1" || !isAlpha(g.country) {
		g.country = ""
	}
	lat, errLat := strconv.ParseFloat(first(geoHeaders.lat, 32), 64)
	lon, errLon := strconv.ParseFloat(first(geoHeaders.lon, 32), 64)
	if errLat == nil && errLon == nil && lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180 {
		g.hasLatLong, g.lat, g.lon = true, lat, lon
	}
	if g == (geo{}) {
		return nil
	}
	return &g
}

func isAlpha(s string) bool {
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// apply sets the event's location fields.
func (g *geo) apply(e *ingest.Event) {
	if g == nil {
		return
	}
	e.Country, e.Region, e.City = g.country, g.region, g.city
	e.HasLatLong, e.Latitude, e.Longitude = g.hasLatLong, g.lat, g.lon
}
