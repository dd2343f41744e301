package httpapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bytedance/sonic"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/ingest"
	"flipbook/storage"
)

// The collector (POST /collect) and the email gate (POST /view/{book}/access): the public
// routes through which reader events enter the event log. Neither is part of the spec's API;
// both are declared in the operation table (Internal) to share its validation.

// Collector limits: the one place both readers of a batch take them from, the table's
// parameters (collectParams, the generic path) and the fast path (collectfast.go).
const (
	DefaultRateCollect = 600 // requests per minute per IP
	MaxCollectEvents   = 500
	MaxActiveMs        = 24 * 60 * 60 * 1000
	maxClockSkewAhead  = 5 * time.Minute
	maxEventAge        = 7 * 24 * time.Hour

	maxCollectBookID      = 64
	maxCollectSessionID   = 255
	maxCollectReaderToken = 2048
	maxCollectLinkSlug    = 255
	maxCollectSourceHost  = 255
	maxCollectPage        = 100000
	maxCollectURL         = 2048
	maxCollectExitReason  = 255
)

// TypeAccessDenied is the error type of a reader refused by the email gate or the collector.
const TypeAccessDenied = "AccessDenied"

func collectParams() []api.Param {
	return []api.Param{
		api.Str("book_id", api.InBody, maxCollectBookID).Req(),
		api.Str("session_id", api.InBody, maxCollectSessionID).Req().MinLength(1),
		api.Str("reader_token", api.InBody, maxCollectReaderToken),
		api.Str("tracked_link", api.InBody, maxCollectLinkSlug),
		api.Str("source_host", api.InBody, maxCollectSourceHost),
		{Name: "events", In: api.InBody, Kind: api.KArray, Required: true, MinItems: 1, MaxItems: MaxCollectEvents,
			Items: &api.Param{Kind: api.KObject, Props: []api.Param{
				api.Enum("type", api.InBody, ingest.CollectTypes...).Req(),
				api.Int("page_number", api.InBody, 1, maxCollectPage),
				{Name: "active_ms", In: api.InBody, Kind: api.KInt, Min: api.F64(0), Max: api.F64(MaxActiveMs)},
				api.Time("occurred_at", api.InBody),
				api.Str("url", api.InBody, maxCollectURL),
				api.Str("exit_reason", api.InBody, maxCollectExitReason),
				{Name: "form", In: api.InBody, Kind: api.KObject, Nullable: true},
				{Name: "x", In: api.InBody, Kind: api.KNumber, Min: api.F64(0), Max: api.F64(1),
					Desc: "page_clicked: where across the page, from 0 (left) to 1 (right)"},
				{Name: "y", In: api.InBody, Kind: api.KNumber, Min: api.F64(0), Max: api.F64(1),
					Desc: "page_clicked: where down the page, from 0 (top) to 1 (bottom)"},
				{Name: "zoom", In: api.InBody, Kind: api.KNumber, Min: api.F64(1), Max: api.F64(10),
					Desc: "page_clicked: the viewer's zoom (1: the page fits)"},
			}}},
	}
}

// readerIdentity is who is reading: from a valid reader token, or anonymous.
type readerIdentity struct {
	viewer int64
	email  string
}

func (s *Service) collect(r *api.Request) (*api.Result, error) {
	if err := s.limitPublic(r); err != nil {
		return nil, err
	}
	b, err := s.publicBook(r.Str("book_id"), r.Now)
	if err != nil {
		return nil, err
	}
	if billingExpired(b, r.Now) {
		return nil, errBookGone
	}
	o, err := s.collectOrigin(r, b)
	if err != nil {
		return nil, err
	}
	raw := collectEvents(r)
	events := make([]ingest.Event, 0, len(raw))
	v := api.Validation{}
	session := r.Str("session_id")
	for i := range raw {
		events = append(events, o.event(r, b, session, i, &raw[i], v))
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := s.appendEvents(events); err != nil {
		return nil, err
	}
	return &api.Result{Status: 202, Data: map[string]any{"accepted": len(events)}}, nil
}

// collectOrigin is where a batch of reader events comes from: the embedding site, the reader
// and the tracked link, each checked against the book.
type collectOrigin struct {
	host   string
	who    readerIdentity
	linkID int64
	source string // direct, embed or tracked_link
}

// collectOrigin checks the batch's source_host (the book's embed domains), reader_token (the
// email gate) and tracked_link (one of the book's links; another's is ignored).
func (s *Service) collectOrigin(r *api.Request, b *storage.Book) (collectOrigin, error) {
	o := collectOrigin{host: strings.ToLower(r.Str("source_host")), source: "direct"}
	if o.host != "" {
		ok, err := s.hostAllowed(b, o.host)
		if err != nil {
			return o, err
		}
		if !ok {
			return o, &api.Error{Status: 403, Type: TypeAccessDenied, Message: "this site may not embed the flipbook"}
		}
	}
	if tok := r.Str("reader_token"); tok != "" {
		c, ok, err := s.verifyReader(tok, b, r.Now)
		if err != nil {
			return o, err
		}
		if !ok {
			return o, &api.Error{Status: 403, Type: TypeAccessDenied, Message: "the reader token is not valid for this flipbook"}
		}
		o.who = readerIdentity{viewer: c.Viewer, email: c.Email}
	} else if b.Settings.EODEnabled {
		return o, &api.Error{Status: 403, Type: TypeAccessDenied, Message: "this flipbook is gated: pass the email gate first"}
	}
	if slug := r.Str("tracked_link"); slug != "" {
		if l, err := s.Store.TrackedLinkBySlug(slug); err == nil && l.BookID == b.RandomID {
			o.linkID = l.ID
		}
	}
	switch {
	case o.linkID != 0:
		o.source = "tracked_link"
	case o.host != "":
		o.source = "embed"
	}
	return o, nil
}

// event is event i of a batch (m) as the log stores it; what is wrong with it is added to v.
func (o *collectOrigin) event(r *api.Request, b *storage.Book, session string, i int, m *collectEvent, v api.Validation) ingest.Event {
	e := ingest.Event{
		Workspace: b.Workspace, Mode: byte(b.Mode), BookID: b.RandomID, SessionID: session,
		ViewerID: o.who.viewer, ViewerEmail: o.who.email, TrackedLinkID: o.linkID, SourceHost: o.host, SourceType: o.source,
		OccurredAt: r.Now, ReceivedAt: r.Now, BookPages: int32(b.PageCount),
		Type: m.typ, PageNumber: int32(m.page), ActiveMs: m.activeMs, URL: m.url, ExitReason: m.exit,
	}
	readerGeo(r).apply(&e)
	if t := m.at; m.hasAt {
		if t.After(r.Now.Add(maxClockSkewAhead)) || t.Before(r.Now.Add(-maxEventAge)) {
			v.Add(fmt.Sprintf("events.%d.occurred_at", i), "must be within the last 7 days and not in the future")
		}
		e.OccurredAt = t
	}
	if len(m.form) > 0 {
		data, err := sonic.ConfigStd.Marshal(m.form)
		if err == nil {
			e.Metadata = string(data)
		}
	}
	if m.typ == ingest.PageClicked && m.hasXY {
		e.Metadata = fmt.Sprintf(`{"x":%.4f,"y":%.4f,"zoom":%.2f}`, m.x, m.y, max(m.zoom, 1))
	}
	field := func(name, msg string) { v.Add(fmt.Sprintf("events.%d.%s", i, name), msg) }
	if msg := ingest.URLProblem(e.URL); e.URL != "" && msg != "" {
		field("url", msg)
	}
	switch e.Type {
	case ingest.PageSegmentCompleted:
		if e.PageNumber == 0 {
			field("page_number", "is required for page_segment_completed")
		}
		if !m.hasActiveMs {
			field("active_ms", "is required for page_segment_completed")
		}
	case ingest.LinkClicked, ingest.CheckoutRedirectClicked:
		if e.URL == "" {
			field("url", "is required for "+e.Type)
		}
	case ingest.PageClicked:
		if e.PageNumber == 0 {
			field("page_number", "is required for page_clicked")
		}
		if !m.hasXY {
			field("x", "x and y are required for page_clicked")
		}
	}
	if e.PageNumber > 0 && b.PageCount > 0 && int(e.PageNumber) > b.PageCount {
		field("page_number", fmt.Sprintf("is beyond the book's %d pages", b.PageCount))
	}
	return e
}

// Intake pacing (appendEvents).
const (
	// DefaultIngestBacklog is two row groups (analytics.RowGroupSize): about 0.4 s of
	// intake at 160k events/s. Measured in the ingest benchmark (40 s, closed loop): 65,536
	// gave the same events/s as 131,072 (168k vs 166k) with half the 202-to-visible time
	// (p99 0.76 s vs 1.34 s).
	DefaultIngestBacklog = 2 * analytics.RowGroupSize
	// IngestWait is the longest a request waits for the backlog to shrink; then it appends
	// anyway, so a stalled consumer slows intake but never loses events (the log is the
	// buffer).
	IngestWait = 2 * time.Second
)

// appendEvents puts events into the log durably (the 202 means they are stored).
//
// When DuckDB is more than IngestBacklog events behind what this process appended, the request
// first waits (at most IngestWait) until the consumer has stored up to that bound. Readers
// then see a slower 202 instead of the backlog, and with it the time from 202 to queryable,
// growing without bound while intake outpaces DuckDB; intake settles at the rate DuckDB
// stores, and the log's untrimmed events stay in Pebble's memtable (storage
// .DefaultMemTableBytes) instead of being flushed and compacted.
func (s *Service) appendEvents(events []ingest.Event) error {
	s.pace()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.events.Append(ctx, events); err != nil {
		s.log.Error("append events", "err", err)
		return &api.Error{Status: 503, Type: api.TypeUnavailable, Message: "events could not be stored; retry shortly"}
	}
	s.appended.Add(uint64(len(events)))
	s.consumer.Wake()
	return nil
}

// pace waits while the consumer is more than IngestBacklog events behind this process's
// appends (see appendEvents). Events the log held before the process started are not counted:
// the consumer stores them first, which only makes the wait shorter.
func (s *Service) pace() {
	limit := uint64(s.cfg.IngestBacklog)
	appended := s.appended.Load()
	if limit == 0 || appended <= limit {
		return
	}
	target := appended - limit
	if s.consumer.Stats().Events >= target {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), IngestWait)
	defer cancel()
	_ = s.consumer.WaitStored(ctx, target) // a timeout or a stopped consumer: append anyway
}

// limitPublic applies the per-IP limit of the public reader routes.
func (s *Service) limitPublic(r *api.Request) error {
	if s.limCollect == nil {
		return nil
	}
	d := s.limCollect.Allow(r.IP, r.Now)
	if !d.Allowed {
		return api.TooMany(d, fmt.Sprintf("too many requests from this address (limit %d per minute)", d.Limit))
	}
	return nil
}

// accessRequest is the input of reader.access, the email gate.
type accessRequest struct {
	Book      string `param:"book,path,required" max:"64"`
	Email     string `param:"email,body,required" max:"255" format:"email"`
	SessionID string `param:"session_id,body" max:"255"`
}

// viewerAccess is POST /view/{book}/access: the email gate. The address (or its domain, or a
// parent domain) must be on the book's access list. Each attempt is recorded as
// access_requested, then access_granted or access_rejected.
// accessGranted is the email gate's answer: the reader token the viewer sends with its events.
type accessGranted struct {
	Granted     bool   `json:"granted"`
	ReaderToken string `json:"reader_token"`
	ViewerID    int64  `json:"viewer_id"`
}

func (s *Service) viewerAccess(r *api.Request, in *accessRequest) (*api.Data[accessGranted], error) {
	if err := s.limitPublic(r); err != nil {
		return nil, err
	}
	b, err := s.publicBook(in.Book, r.Now)
	if err != nil {
		return nil, err
	}
	// The address as the access list stores it (normalizeAccessEntry: the domain in ASCII), so
	// "ada@bücher.example" finds the entry it was listed as (found by a review: it was refused).
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if e, _, ok := normalizeAccessEntry(email, "email"); ok {
		email = e
	}
	ok, reason, err := s.accessMatch(b, email)
	if err != nil {
		return nil, err
	}
	if !b.Settings.EODEnabled {
		ok, reason = true, "the flipbook is not gated"
	}
	var viewer int64
	if ok {
		if viewer, err = s.Actors.ViewerFor(b.Tenant(), email); err != nil {
			return nil, err
		}
	}
	base := ingest.Event{Workspace: b.Workspace, Mode: byte(b.Mode), BookID: b.RandomID, SessionID: in.SessionID,
		ViewerID: viewer, ViewerEmail: email, SourceType: "direct", OccurredAt: r.Now, ReceivedAt: r.Now,
		BookPages: int32(b.PageCount)}
	readerGeo(r).apply(&base)
	req, res := base, base
	req.Type = ingest.AccessRequested
	res.Type, res.Reason = ingest.AccessRejected, reason
	if ok {
		res.Type = ingest.AccessGranted
	}
	if err := s.appendEvents([]ingest.Event{req, res}); err != nil {
		return nil, err
	}
	if !ok {
		return nil, &api.Error{Status: 403, Type: TypeAccessDenied, Message: "this address has no access to the flipbook"}
	}
	tok := s.readers.sign(readerClaims{Workspace: b.Workspace, Mode: byte(b.Mode), Book: b.RandomID,
		Viewer: viewer, Email: email, Expires: r.Now.Add(ReaderTokenTTL).Unix()})
	return api.OK(accessGranted{Granted: true, ReaderToken: tok, ViewerID: viewer}), nil
}
