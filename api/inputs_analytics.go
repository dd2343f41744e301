package api

// AnalyticsQuery is the input of every analytics operation (spec §4.4) and CSV export (spec
// §4.5): the filters they share, declared once. Each operation takes the subset it names
// (analyticsParams); a filter it does not take is the zero value. Integers are at least 1, so
// 0 means absent.
type AnalyticsQuery struct {
	Book          string `param:"book,path,required" max:"64"` // exports name the book in the path
	BookID        string `param:"book_id,query,required" max:"64"`
	Source        string `param:"source,query" enum:"view_events|interaction_events" desc:"view_events (default) or interaction_events"`
	ViewerID      int64  `param:"viewer_id,query" min:"1" max:"9007199254740992"`
	SessionID     string `param:"session_id,query" max:"255"`
	ViewEventID   int64  `param:"view_event_id,query,required" min:"1" max:"4611686018427387904" desc:"the id of a view event (book-view-events)"`
	EventType     string `param:"event_type,query"` // its values are the operation's (analyticsParams)
	PageNumber    int64  `param:"page_number,query" min:"1" max:"100000"`
	Anonymous     bool   `param:"include_anonymous,query" desc:"also readers without an address (anonymous sessions); default false"`
	Date          string `param:"date,query" max:"22" desc:"YYYY-MM-DD or YYYY-MM-DD..YYYY-MM-DD (UTC days, inclusive)"`
	Sort          string `param:"sort,query" enum:"recent|engagement" desc:"recent (default): latest activity first; engagement: highest score first"`
	TrackedLinkID int64  `param:"tracked_link_id,query" min:"1" max:"9007199254740992"`
	SourceHost    string `param:"source_host,query" max:"255"`
	Limit         int64  `param:"limit,query" min:"1" max:"500" desc:"rows per page (default 100)"`
	Cursor        string `param:"cursor,query" max:"512"`
}

// BookRef is the book the query names: its path value (exports) or book_id (analytics).
func (q *AnalyticsQuery) BookRef() string {
	if q.Book != "" {
		return q.Book
	}
	return q.BookID
}

// RowLimit is the page size: limit, or DefaultAnalyticsLimit when absent.
func (q *AnalyticsQuery) RowLimit() int {
	if q.Limit > 0 {
		return int(q.Limit)
	}
	return DefaultAnalyticsLimit
}

// analyticsParams are AnalyticsQuery's parameters called names, in that order; event_type,
// when named, takes the values eventTypes.
func analyticsParams(eventTypes []string, names ...string) []Param {
	all := ParamsOf[AnalyticsQuery]()
	out := make([]Param, 0, len(names))
	for _, n := range names {
		i := paramIndex(all, n)
		if i < 0 {
			panic("api: AnalyticsQuery has no parameter " + n)
		}
		p := all[i]
		if n == "event_type" {
			p.Enum = eventTypes
		}
		out = append(out, p)
	}
	return out
}

func paramIndex(ps []Param, name string) int {
	for i := range ps {
		if ps[i].Name == name {
			return i
		}
	}
	return -1
}
