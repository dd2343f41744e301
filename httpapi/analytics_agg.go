package httpapi

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/errs"
)

// The aggregate analytics operations of spec §4.4: page performance, book flow, readers,
// reader pages, reading session pages and reader journey. The SQL is in analytics/aggregates.go
// (shared with the CSV exports); every measure is defined in docs/ANALYTICS.md.

// analyticsCtx bounds one analytics query. The context is only cancelled once the query is
// done (docs/DEPENDENCIES.md: a DuckDB query cancelled midway can keep the file open).
func analyticsCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), analyticsTimeout)
}

// pagePerformance is GET /analytics/page-performance: one page summary per page of the book.
func (s *analyticsService) PagePerformance(r *api.Request, q *api.AnalyticsQuery) (*api.Data[[]analytics.PageSummary], error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := analyticsCtx()
	defer cancel()
	data := []analytics.PageSummary{}
	err = analytics.PagePerformance(ctx, s.Analytics.Query(), f, b.PageCount, func(p analytics.PageSummary) error {
		data = append(data, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return api.OK(data), nil
}

// bookFlow is GET /analytics/book-flow.
func (s *analyticsService) BookFlow(r *api.Request, q *api.AnalyticsQuery) (*api.Data[analytics.BookFlow], error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	ctx, cancel := analyticsCtx()
	defer cancel()
	flow, err := analytics.GetBookFlow(ctx, s.Analytics.Query(), f, b.PageCount)
	if err != nil {
		return nil, err
	}
	return api.OK(*flow), nil
}

// readerPages is GET /analytics/reader-pages: per reader and page, identified readers only
// unless include_anonymous is set or session_id names a session.
func (s *analyticsService) ReaderPages(r *api.Request, q *api.AnalyticsQuery) (*api.Data[[]analytics.ReaderPage], error) {
	f, _, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	anon := q.Anonymous
	ctx, cancel := analyticsCtx()
	defer cancel()
	data := []analytics.ReaderPage{}
	err = analytics.ReaderPages(ctx, s.Analytics.Query(), f, anon, func(p analytics.ReaderPage) error {
		data = append(data, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return api.OK(data), nil
}

// readersCursor is the payload of a readers cursor: the walk's snapshot (an event id), the
// sort value and the key of the last row.
func readersCursor(snapshot int64, pos analytics.ReaderPosition) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(snapshot))
	b = binary.BigEndian.AppendUint64(b, uint64(pos.Value))
	return append(b, pos.Key...)
}

func readersCursorFrom(b []byte) (int64, analytics.ReaderPosition, bool) {
	if len(b) < 17 {
		return 0, analytics.ReaderPosition{}, false
	}
	return int64(binary.BigEndian.Uint64(b)), analytics.ReaderPosition{Value: int64(binary.BigEndian.Uint64(b[8:])),
		Key: string(b[16:])}, true
}

// listReaders is GET /analytics/readers: one summary per reader, cursor paginated. A walk reads
// one snapshot of the events (the cursor carries it), so it returns every reader once.
func (s *analyticsService) ListReaders(r *api.Request, q *api.AnalyticsQuery) (*api.Reply[[]analytics.ReaderSummary, api.CursorMeta], error) {
	f, _, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	o := analytics.ReadersQuery{Sort: analytics.SortRecent, Limit: q.RowLimit() + 1, IncludeAnonymous: q.Anonymous}
	if q.Sort != "" {
		o.Sort = q.Sort
	}
	binding := filterBinding("readers|"+o.Sort+"|"+strconv.FormatBool(o.IncludeAnonymous), f)
	if q.Cursor != "" {
		payload, err := s.cursors.decode(binding, q.Cursor)
		snap, pos, ok := readersCursorFrom(payload)
		if err != nil || !ok {
			return nil, api.FieldError("cursor", "is not a cursor issued for this query; use meta.next_cursor of the previous page with the same filters and sort")
		}
		o.Snapshot, o.After = snap, &pos
	}
	ctx, cancel := analyticsCtx()
	defer cancel()
	data := []analytics.ReaderSummary{}
	snapshot, err := analytics.Readers(ctx, s.Analytics.Query(), f, o, func(row analytics.ReaderSummary) error {
		data = append(data, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	meta := api.CursorMeta{Limit: o.Limit - 1}
	if len(data) > meta.Limit {
		data = data[:meta.Limit]
		last := data[len(data)-1]
		c := s.cursors.encode(binding, readersCursor(snapshot, analytics.ReaderPosition{Value: last.SortValue, Key: last.ID}))
		meta.HasMore, meta.NextCursor = true, &c
	}
	return api.With(data, meta), nil
}

// readingSessionPages is GET /analytics/reading-session-pages: the pages of one reading
// session (data) and its view event (meta).
func (s *analyticsService) ReadingSessionPages(r *api.Request, q *api.AnalyticsQuery) (*api.Reply[[]analytics.SessionPage, api.ViewEvent], error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	id := q.ViewEventID
	ctx, cancel := analyticsCtx()
	defer cancel()
	v, err := analytics.GetViewEvent(ctx, s.Analytics.Query(), f, id)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, api.ErrNotFound("view event")
	}
	if err != nil {
		return nil, err
	}
	data := []analytics.SessionPage{}
	err = analytics.SessionPages(ctx, s.Analytics.Query(), f, v, func(p analytics.SessionPage) error {
		data = append(data, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	meta := api.ViewEvent{ID: v.ID, BookID: v.BookID, BookTitle: b.Name, ViewerID: nullInt(v.ViewerID),
		ViewerEmail: v.ViewerEmail, SourceHost: nullStr(v.SourceHost), FromEmbedded: v.FromEmbedded,
		Impressions: v.Impressions, Reads: v.Reads, Clicks: v.Clicks, PagesViewed: v.PagesViewed,
		DurationSeconds: v.DurationSeconds, EngagementScore: v.EngagementScore, Country: nullStr(v.Country),
		Region: nullStr(v.Region), City: nullStr(v.City), Latitude: nullFloat(v.Latitude),
		Longitude: nullFloat(v.Longitude), TrackedLink: s.linkRefs(b)(v.TrackedLinkID), SessionID: v.SessionID,
		RecordedAt: fmtTime(v.RecordedAt), UpdatedAt: fmtTime(v.UpdatedAt)}
	return api.With(data, meta), nil
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// durationSeconds is milliseconds as whole seconds, rounded half up, as a string.
func durationSeconds(ms int64) string { return itoa64((ms + 500) / 1000) }

// readerJourney is GET /analytics/reader-journey: one identified reader (viewer_id) or one
// anonymous session (session_id) across every book of the workspace.
func (s *analyticsService) ReaderJourney(r *api.Request, q *api.AnalyticsQuery) (*api.Data[api.Journey], error) {
	if (q.ViewerID != 0) == (q.SessionID != "") {
		v := api.Validation{}
		v.Add("viewer_id", "give exactly one of viewer_id and session_id")
		v.Add("session_id", "give exactly one of viewer_id and session_id")
		return nil, v.Err()
	}
	f, _, err := s.analyticsFilter(r, q, false)
	if err != nil {
		return nil, err
	}
	// A viewer is one of the workspace's: an unknown id (or another workspace's) is a 404, a
	// known one with no visits in range is itself with empty lists.
	var viewer api.JourneyViewer
	if id := q.ViewerID; id != 0 {
		email, err := s.Store.ViewerEmail(r.Auth.Tenant, id)
		if errors.Is(err, errs.ErrNotFound) {
			return nil, api.ErrNotFound("viewer")
		}
		if err != nil {
			return nil, err
		}
		viewer = api.JourneyViewer{ID: itoa64(id), Email: email}
	}
	ctx, cancel := analyticsCtx()
	defer cancel()
	j, err := analytics.ReaderJourney(ctx, s.Analytics.Query(), f)
	if err != nil {
		return nil, err
	}
	titles := map[string]string{}
	title := func(rid string) string {
		t, ok := titles[rid]
		if !ok {
			// A book deleted since keeps its activity, with an empty title.
			if b, err := s.Store.GetBook(r.Auth.Tenant, rid); err == nil {
				t = b.Name
			} else if !errors.Is(err, errs.ErrNotFound) {
				s.log.Warn("reader journey: book title", "book", rid, "err", err)
			}
			titles[rid] = t
		}
		return t
	}
	out := api.Journey{Viewer: viewer, Books: []api.JourneyBook{}, Timeline: []api.JourneyVisit{}}
	if j.ViewerID != 0 {
		out.Viewer = api.JourneyViewer{ID: itoa64(j.ViewerID), Email: j.ViewerEmail}
	}
	var pages int64
	for _, b := range j.Books {
		pages += b.PagesViewed
		out.Books = append(out.Books, api.JourneyBook{BookID: b.BookID, Title: title(b.BookID), Visits: itoa64(b.Visits),
			PagesViewed: itoa64(b.PagesViewed), DurationSeconds: durationSeconds(b.ActiveMs),
			EngagementScore: analytics.Score(b.Engagement), LastVisit: *fmtTime(b.LastVisit)})
	}
	for _, v := range j.Visits {
		out.Timeline = append(out.Timeline, api.JourneyVisit{ViewEventID: itoa64(v.ViewEventID), BookID: v.BookID,
			Title: title(v.BookID), SessionID: v.SessionID, StartedAt: *fmtTime(v.StartedAt), EndedAt: *fmtTime(v.EndedAt),
			PagesViewed: itoa64(v.PagesViewed), DurationSeconds: durationSeconds(v.ActiveMs),
			EngagementScore: analytics.Score(v.Engagement)})
	}
	out.Aggregates = api.JourneyAggregates{TotalBooks: itoa64(int64(len(j.Books))), TotalPagesViewed: itoa64(pages),
		TotalDurationSeconds: durationSeconds(j.TotalActiveMs), OverallEngagementScore: analytics.Score(j.OverallEngagement()),
		TotalVisits: itoa64(j.TotalVisits)}
	return api.OK(out), nil
}
