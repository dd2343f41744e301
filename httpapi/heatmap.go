package httpapi

import (
	"context"
	"fmt"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/storage"
)

// heatmapFilter is the filter of a page heatmap: a page of the book is required.
func (s *analyticsService) heatmapFilter(r *api.Request, q *api.AnalyticsQuery) (analytics.Filter, *storage.Book, error) {
	f, b, err := s.analyticsFilter(r, q, true) // another workspace's book: 404 first
	if err != nil {
		return f, nil, err
	}
	if q.PageNumber == 0 {
		return f, nil, api.FieldError("page_number", "is required: the page of the heatmap")
	}
	if b.PageCount > 0 && int(q.PageNumber) > b.PageCount {
		return f, nil, api.FieldError("page_number", fmt.Sprintf("is beyond the book's %d pages", b.PageCount))
	}
	return f, b, nil
}

// PageHeatmap is GET /analytics/page-heatmap (an extension, issue 29): the clicks of a page on
// a grid, from the viewer's page_clicked events.
func (s *analyticsService) PageHeatmap(r *api.Request, q *api.AnalyticsQuery) (*api.Data[api.PageHeatmap], error) {
	f, b, err := s.heatmapFilter(r, q)
	if err != nil {
		return nil, err
	}
	ctx, cancel := analyticsCtx()
	defer cancel()
	h, err := analytics.PageHeatmap(ctx, s.Analytics.Query(), f)
	if err != nil {
		return nil, err
	}
	return api.OK(api.PageHeatmap{BookID: b.RandomID, PageNumber: int(q.PageNumber), Grid: analytics.HeatmapGrid,
		Total: h.Total, Cells: h.Cells}), nil
}

// ExportPageHeatmap is GET /exports/books/{book}/page-heatmap: the heatmap's cells as CSV rows,
// top to bottom, left to right, every cell (zero included) so the grid is whole.
func (s *analyticsService) ExportPageHeatmap(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.heatmapFilter(r, q)
	if err != nil {
		return nil, err
	}
	return aggregateExport(s, r, b, "page-heatmap", func(ctx context.Context, emit func(analytics.HeatmapCell) error) error {
		h, err := analytics.PageHeatmap(ctx, s.Analytics.Query(), f)
		if err != nil {
			return err
		}
		for row, cells := range h.Cells {
			for col, n := range cells {
				c := analytics.HeatmapCell{BookID: b.RandomID, PageNumber: int64(f.PageNumber), Row: row, Column: col, Clicks: n}
				if err := emit(c); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
