package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"flipbook/analytics"
	"flipbook/api"
	"flipbook/storage"
)

// The aggregate exports (page-performance, reader-pages, readers): the rows of the matching
// JSON operations, computed by the same functions (analytics/aggregates.go), which hand over
// one row at a time through a callback. A producer goroutine formats the rows into 64 KB
// buffers and passes them to the response through a channel of two; when the client goes away
// the next row's callback fails, which ends the query. Their columns are the records' JSON
// fields, in order.

// defaultReadersExportBatch is how many readers one query of the readers export computes: the
// readers are read in keyset batches over one snapshot, like the JSON list's pages
// (Config.ReadersExportBatch; Service.readersBatch, which tests lower on a running service).
const defaultReadersExportBatch = 65536

// errExportStopped ends a producer whose stream was closed.
var errExportStopped = errors.New("export stopped")

// structColumn is one column of a record struct: its JSON name and how its value is written.
type structColumn struct {
	name  string
	index int
	write func(dst []byte, v reflect.Value) []byte
}

var timeType = reflect.TypeOf(analytics.Time{})

// structColumns are the columns of a record struct: its exported fields with a JSON name, in
// field order, written by the CSV rule (csv.go).
func structColumns(t reflect.Type) []structColumn {
	var cols []structColumn
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		c := structColumn{name: name, index: i, write: valueWriter(f.Type)}
		if c.write == nil {
			panic(fmt.Sprintf("csv: no writer for %s.%s (%s)", t.Name(), f.Name, f.Type))
		}
		cols = append(cols, c)
	}
	return cols
}

func valueWriter(t reflect.Type) func([]byte, reflect.Value) []byte {
	if t == timeType {
		return func(b []byte, v reflect.Value) []byte {
			tm := v.Interface().(analytics.Time)
			if tm.IsZero() {
				return b
			}
			return appendTimestamp(b, tm.Time)
		}
	}
	switch t.Kind() {
	case reflect.Int64, reflect.Int, reflect.Int32:
		return func(b []byte, v reflect.Value) []byte { return strconv.AppendInt(b, v.Int(), 10) }
	case reflect.Float64:
		return func(b []byte, v reflect.Value) []byte { return strconv.AppendFloat(b, v.Float(), 'f', -1, 64) }
	case reflect.Bool:
		return func(b []byte, v reflect.Value) []byte { return strconv.AppendBool(b, v.Bool()) }
	case reflect.String:
		return func(b []byte, v reflect.Value) []byte { return appendCSVString(b, v.String()) }
	case reflect.Pointer:
		elem := valueWriter(t.Elem())
		if elem == nil {
			return nil
		}
		return func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return b
			}
			return elem(b, v.Elem())
		}
	}
	return nil
}

// structHeader is the header row of a record struct's columns.
func structHeader(cols []structColumn) []byte {
	var b []byte
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCSVString(b, c.name)
	}
	return append(b, '\r', '\n')
}

// appendStructRow appends one record as a CSV row.
func appendStructRow(b []byte, v reflect.Value, cols []structColumn) []byte {
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = c.write(b, v.Field(c.index))
	}
	return append(b, '\r', '\n')
}

// producerStream is an export whose rows come from a callback-driven query run on a producer
// goroutine.
type producerStream struct {
	header []byte
	cols   []structColumn
	guard  *analytics.ExportGuard
	chunks chan []byte
	result chan error
	stop   chan struct{}
	first  []byte
	ended  bool  // the producer finished before the response started
	err    error // its result then
	wg     sync.WaitGroup
	closed sync.Once
}

// startProducerExport runs produce (which calls emit once per record of type T, in order) and
// waits for the first 64 KB of rows or the end, so that a failing query answers with the
// JSON error envelope (an export shorter than 64 KB is complete before the status is sent).
func startProducerExport[T any](s *analyticsService, produce func(ctx context.Context, emit func(T) error) error) (*producerStream, error) {
	guard, err := s.Analytics.GuardExport()
	if errors.Is(err, analytics.ErrExportsBusy) {
		return nil, errExportsBusy()
	}
	if err != nil {
		return nil, err
	}
	cols := structColumns(reflect.TypeFor[T]())
	p := &producerStream{header: structHeader(cols), cols: cols, guard: guard,
		chunks: make(chan []byte, 2), result: make(chan error, 1), stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer guard.Done()
		defer close(p.chunks)
		buf := make([]byte, 0, csvBufferSize+4096)
		send := func() error {
			select {
			case p.chunks <- buf:
				buf = make([]byte, 0, csvBufferSize+4096)
				return nil
			case <-p.stop:
				return errExportStopped
			case <-guard.Closing():
				return analytics.ErrClosed
			}
		}
		// No context reaches DuckDB that could be cancelled (docs/DEPENDENCIES.md); the
		// producer stops through its callback instead.
		err := produce(context.Background(), func(rec T) error {
			buf = appendStructRow(buf, reflect.ValueOf(&rec).Elem(), cols)
			guard.Rows(1)
			if len(buf) >= csvBufferSize {
				return send()
			}
			return nil
		})
		if err == nil && len(buf) > 0 {
			err = send()
		}
		p.result <- err
	}()
	if c, ok := <-p.chunks; ok {
		p.first = c
		return p, nil
	}
	p.ended = true
	if p.err = <-p.result; p.err != nil {
		p.Close()
		return nil, p.err
	}
	return p, nil
}

func errExportsBusy() *api.Error {
	return &api.Error{Status: 503, Type: api.TypeUnavailable, RetryAfter: 5,
		Message: fmt.Sprintf("%d exports are running, the most at once; retry shortly", analytics.DefaultMaxExports)}
}

func (p *producerStream) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	if _, err := cw.Write(p.header); err != nil {
		return cw.n, err
	}
	if len(p.first) > 0 {
		if _, err := cw.Write(p.first); err != nil {
			return cw.n, err
		}
	}
	if p.ended {
		return cw.n, p.err
	}
	for c := range p.chunks {
		if _, err := cw.Write(c); err != nil {
			return cw.n, err
		}
	}
	p.ended = true
	return cw.n, <-p.result
}

// Close stops the producer (its next row fails) and waits for it.
func (p *producerStream) Close() error {
	p.closed.Do(func() {
		close(p.stop)
		for range p.chunks {
		}
		p.wg.Wait()
	})
	return nil
}

// aggregateExport sends a producer stream as the CSV file <book>-<name>-<date>.csv.
func aggregateExport[T any](s *analyticsService, r *api.Request, b *storage.Book, name string,
	produce func(ctx context.Context, emit func(T) error) error) (*api.Result, error) {
	st, err := startProducerExport(s, produce)
	if err != nil {
		return nil, err
	}
	return &api.Result{Stream: st, ContentType: csvContentType,
		Filename: b.RandomID + "-" + name + "-" + r.Now.UTC().Format(time.DateOnly) + ".csv"}, nil
}

func (s *analyticsService) ExportPagePerformance(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	return aggregateExport(s, r, b, "page-performance", func(ctx context.Context, emit func(analytics.PageSummary) error) error {
		return analytics.PagePerformance(ctx, s.Analytics.Query(), f, b.PageCount, emit)
	})
}

func (s *analyticsService) ExportReaderPages(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	anon := q.Anonymous
	return aggregateExport(s, r, b, "reader-pages", func(ctx context.Context, emit func(analytics.ReaderPage) error) error {
		// Keyset batches, so the export's memory does not grow with the book's readers.
		batch := int(s.readersBatch.Load())
		var after *analytics.ReaderPageKey
		for {
			var last analytics.ReaderPage
			n, err := analytics.ReaderPagesAfter(ctx, s.Analytics.Query(), f, anon, after, batch, func(row analytics.ReaderPage) error {
				last = row
				return emit(row)
			})
			if err != nil || n < batch {
				return err
			}
			after = &analytics.ReaderPageKey{Reader: last.ReaderID, Page: last.PageNumber}
			if last.ViewerID != nil {
				after.ViewerID = *last.ViewerID
			}
		}
	})
}

func (s *analyticsService) ExportReaders(r *api.Request, q *api.AnalyticsQuery) (*api.Result, error) {
	f, b, err := s.analyticsFilter(r, q, true)
	if err != nil {
		return nil, err
	}
	o := analytics.ReadersQuery{Sort: analytics.SortRecent, Limit: int(s.readersBatch.Load()), IncludeAnonymous: q.Anonymous}
	if q.Sort != "" {
		o.Sort = q.Sort
	}
	return aggregateExport(s, r, b, "readers", func(ctx context.Context, emit func(analytics.ReaderSummary) error) error {
		// Keyset batches over one snapshot, as the JSON list's pages.
		for {
			n := 0
			var last analytics.ReaderSummary
			snap, err := analytics.Readers(ctx, s.Analytics.Query(), f, o, func(row analytics.ReaderSummary) error {
				n++
				last = row
				return emit(row)
			})
			if err != nil || n < o.Limit {
				return err
			}
			o.Snapshot, o.After = snap, &analytics.ReaderPosition{Value: last.SortValue, Key: last.ID}
		}
	})
}
