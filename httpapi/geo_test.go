package httpapi

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCollectorLocationAndSessions: with --trust-geo-headers the edge's visitor-location headers
// locate the reader (forged or unknown values are dropped); without it they are ignored. The
// events carry the book's page count, and the session's view event is derived from them.
func TestCollectorLocationAndSessions(t *testing.T) {
	t.Parallel()
	for _, trust := range []bool{true, false} {
		h := newHarness(t, func(c *Config) { c.TrustGeoHeaders = trust })
		key := h.workspace(t, "company", "live")
		rid := h.konva(t, key, "located", "publish") // 2 pages
		body := func(session string) map[string]any {
			b := collectBody(rid,
				map[string]any{"type": "session_started", "page_number": 1},
				map[string]any{"type": "page_segment_completed", "page_number": 1, "active_ms": 4000},
				map[string]any{"type": "page_segment_completed", "page_number": 2, "active_ms": 6000},
				map[string]any{"type": "link_clicked", "page_number": 2, "url": "https://example.com"})
			b["session_id"] = session
			return b
		}
		require.Equal(t, 202, h.do(t, "POST", "/collect", "", body("located"),
			"CloudFront-Viewer-Country", "de", "CloudFront-Viewer-Country-Region", "BE",
			"CloudFront-Viewer-City", "Berlin", "CloudFront-Viewer-Latitude", "52.52",
			"CloudFront-Viewer-Longitude", "13.40").Status)
		require.Equal(t, 202, h.do(t, "POST", "/collect", "", body("tor"),
			"CF-IPCountry", "T1", "CF-IPLatitude", "91", "CF-IPLongitude", "0").Status)
		h.logged(t) // caught up

		type loc struct {
			Country, Region, City sql.NullString
			Lat, Lon              sql.NullFloat64
			Pages                 sql.NullInt32
		}
		read := func(session string) (l loc) {
			require.NoError(t, h.svc.Analytics.Query().QueryRowContext(context.Background(), `SELECT
				any_value(country), any_value(region), any_value(city), any_value(latitude), any_value(longitude),
				min(book_pages) FROM events WHERE session_id = ? AND book_pages = 2`, session).
				Scan(&l.Country, &l.Region, &l.City, &l.Lat, &l.Lon, &l.Pages))
			return l
		}
		located, tor := read("located"), read("tor")
		require.Equal(t, loc{Pages: sql.NullInt32{Int32: 2, Valid: true}}, tor, "unknown country, latitude out of range")
		if trust {
			require.Equal(t, loc{Country: sql.NullString{String: "DE", Valid: true}, Region: sql.NullString{String: "BE", Valid: true},
				City: sql.NullString{String: "Berlin", Valid: true}, Lat: sql.NullFloat64{Float64: 52.52, Valid: true},
				Lon: sql.NullFloat64{Float64: 13.40, Valid: true}, Pages: sql.NullInt32{Int32: 2, Valid: true}}, located)
		} else {
			require.Equal(t, loc{Pages: sql.NullInt32{Int32: 2, Valid: true}}, located, "headers ignored unless trusted")
		}

		var impressions, reads, clicks, pages, seconds int64
		var score string
		var country sql.NullString
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, h.svc.Analytics.Query().QueryRowContext(ctx, `SELECT impressions, reads, clicks,
			pages_viewed, duration_seconds, engagement_score, country FROM view_events WHERE book_id = ? AND session_id = 'located'`, rid).
			Scan(&impressions, &reads, &clicks, &pages, &seconds, &score, &country))
		cancel()
		// 2 of 2 pages, 10 s of the 20 s that count as fully read: 100 × (½ × 1 + ½ × 0.5).
		require.Equal(t, [5]int64{1, 1, 1, 2, 10}, [5]int64{impressions, reads, clicks, pages, seconds})
		require.Equal(t, "75.00", score)
		require.Equal(t, trust, country.Valid)
	}
}
