package analytics

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"flipbook/ingest"
)

// column is one column of the event tables: its DuckDB type, its Arrow type and how a record fills
// it. eventColumns is the single list both the DDL and the Arrow schema are built from, so the
// table and the batches cannot disagree on order.
type column struct {
	name    string
	sqlType string
	// exactly one of the accessors is set; ok=false stores NULL.
	i64 func(*ingest.Record) (v int64, ok bool)
	i32 func(*ingest.Record) (v int32, ok bool)
	f64 func(*ingest.Record) (v float64, ok bool)
	str func(*ingest.Record) (v string, ok bool)
	ts  func(*ingest.Record) time.Time
}

func (c column) nullable() bool { return !strings.Contains(c.sqlType, "NOT NULL") }

// tsType is a timestamp without a time zone (DuckDB TIMESTAMP), microseconds, UTC by
// convention. arrow.FixedWidthTypes.Timestamp_us carries "UTC" and would become TIMESTAMPTZ.
var tsType = &arrow.TimestampType{Unit: arrow.Microsecond}

func (c column) arrowType() arrow.DataType {
	switch {
	case c.i64 != nil:
		return arrow.PrimitiveTypes.Int64
	case c.i32 != nil:
		return arrow.PrimitiveTypes.Int32
	case c.f64 != nil:
		return arrow.PrimitiveTypes.Float64
	case c.str != nil:
		return arrow.BinaryTypes.String
	default:
		return tsType
	}
}

func nonZero64(v int64) (int64, bool)  { return v, v != 0 }
func nonEmpty(s string) (string, bool) { return s, s != "" }
func always(s string) (string, bool)   { return s, true }

// eventColumns: NULL rules (spec §2.8 "integer|null"): viewer_id, tracked_link_id, page_number
// and active_ms are NULL when the event has none (0); source_host, metadata and the geo
// fields are NULL when empty; other strings are stored as given ("" when absent). Times are
// UTC; occurred_at falls back to the server time when the event has no client time.
var eventColumns = []column{
	{name: "id", sqlType: "BIGINT NOT NULL", i64: func(r *ingest.Record) (int64, bool) { return r.ID(), true }},
	{name: "workspace", sqlType: "BIGINT NOT NULL", i64: func(r *ingest.Record) (int64, bool) { return r.Event.Workspace, true }},
	{name: "mode", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return modeString(r.Event.Mode), true }},
	{name: "book_id", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return always(r.Event.BookID) }},
	{name: "session_id", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return always(r.Event.SessionID) }},
	{name: "event_type", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return always(r.Event.Type) }},
	{name: "viewer_id", sqlType: "BIGINT", i64: func(r *ingest.Record) (int64, bool) { return nonZero64(r.Event.ViewerID) }},
	{name: "viewer_email", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return always(r.Event.ViewerEmail) }},
	{name: "tracked_link_id", sqlType: "BIGINT", i64: func(r *ingest.Record) (int64, bool) { return nonZero64(r.Event.TrackedLinkID) }},
	{name: "source_type", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return always(r.Event.SourceType) }},
	{name: "source_host", sqlType: "VARCHAR", str: func(r *ingest.Record) (string, bool) { return nonEmpty(r.Event.SourceHost) }},
	{name: "page_number", sqlType: "INTEGER", i32: func(r *ingest.Record) (int32, bool) { return r.Event.PageNumber, r.Event.PageNumber != 0 }},
	{name: "active_ms", sqlType: "BIGINT", i64: func(r *ingest.Record) (int64, bool) { return nonZero64(r.Event.ActiveMs) }},
	{name: "url", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return always(r.Event.URL) }},
	{name: "exit_reason", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return always(r.Event.ExitReason) }},
	{name: "reason", sqlType: "VARCHAR NOT NULL", str: func(r *ingest.Record) (string, bool) { return always(r.Event.Reason) }},
	{name: "metadata", sqlType: "VARCHAR", str: func(r *ingest.Record) (string, bool) { return nonEmpty(r.Event.Metadata) }},
	{name: "country", sqlType: "VARCHAR", str: func(r *ingest.Record) (string, bool) { return nonEmpty(r.Event.Country) }},
	{name: "region", sqlType: "VARCHAR", str: func(r *ingest.Record) (string, bool) { return nonEmpty(r.Event.Region) }},
	{name: "city", sqlType: "VARCHAR", str: func(r *ingest.Record) (string, bool) { return nonEmpty(r.Event.City) }},
	{name: "latitude", sqlType: "DOUBLE", f64: func(r *ingest.Record) (float64, bool) { return r.Event.Latitude, r.Event.HasLatLong }},
	{name: "longitude", sqlType: "DOUBLE", f64: func(r *ingest.Record) (float64, bool) { return r.Event.Longitude, r.Event.HasLatLong }},
	{name: "occurred_at", sqlType: "TIMESTAMP NOT NULL", ts: func(r *ingest.Record) time.Time {
		if r.Event.OccurredAt.IsZero() {
			return r.Event.ReceivedAt
		}
		return r.Event.OccurredAt
	}},
	{name: "created_at", sqlType: "TIMESTAMP NOT NULL", ts: func(r *ingest.Record) time.Time { return r.Event.ReceivedAt }},
	// Columns added after schema version 1 come last and are nullable (db.go adds them to
	// older databases with ALTER TABLE).
	{name: "book_pages", sqlType: "INTEGER", i32: func(r *ingest.Record) (int32, bool) { return r.Event.BookPages, r.Event.BookPages > 0 }},
}

// columnList is the event columns' names, comma-separated, in eventColumns order: inserts name
// their columns, so a table whose columns were added in another order is still filled right.
var columnList = func() string {
	names := make([]string, len(eventColumns))
	for i, c := range eventColumns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}()

// modeString is the tenant mode as stored: "l" (live) or "t" (test), like the storage keys.
func modeString(m byte) string {
	switch m {
	case 't':
		return "t"
	default:
		return "l"
	}
}

// eventSchema is the Arrow schema of a batch, column for column RecentTable.
var eventSchema = func() *arrow.Schema {
	fields := make([]arrow.Field, len(eventColumns))
	for i, c := range eventColumns {
		fields[i] = arrow.Field{Name: c.name, Type: c.arrowType(), Nullable: c.nullable()}
	}
	return arrow.NewSchema(fields, nil)
}()

// validUTF8 keeps a batch insertable whatever a string holds: DuckDB rejects invalid UTF-8,
// and one bad string must not block every later event behind it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// micros is t as microseconds since the Unix epoch (UTC). The zero time stores as the epoch.
func micros(t time.Time) arrow.Timestamp {
	if t.IsZero() {
		return 0
	}
	return arrow.Timestamp(t.UnixMicro())
}

// BuildRecord builds one Arrow record batch of recs in the event tables' column order. The caller
// releases it. Memory comes from mem (the consumer uses C memory: DuckDB reads the buffers
// after the cgo call that registered them returned).
func BuildRecord(mem memory.Allocator, recs []ingest.Record) arrow.RecordBatch {
	n := len(recs)
	cols := make([]arrow.Array, len(eventColumns))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, c := range eventColumns {
		switch {
		case c.i64 != nil:
			b := array.NewInt64Builder(mem)
			b.Reserve(n)
			for j := range recs {
				if v, ok := c.i64(&recs[j]); ok {
					b.UnsafeAppend(v)
				} else {
					b.UnsafeAppendBoolToBitmap(false)
				}
			}
			cols[i] = b.NewArray()
			b.Release()
		case c.i32 != nil:
			b := array.NewInt32Builder(mem)
			b.Reserve(n)
			for j := range recs {
				if v, ok := c.i32(&recs[j]); ok {
					b.UnsafeAppend(v)
				} else {
					b.UnsafeAppendBoolToBitmap(false)
				}
			}
			cols[i] = b.NewArray()
			b.Release()
		case c.f64 != nil:
			b := array.NewFloat64Builder(mem)
			b.Reserve(n)
			for j := range recs {
				if v, ok := c.f64(&recs[j]); ok {
					b.UnsafeAppend(v)
				} else {
					b.UnsafeAppendBoolToBitmap(false)
				}
			}
			cols[i] = b.NewArray()
			b.Release()
		case c.str != nil:
			b := array.NewStringBuilder(mem)
			b.Reserve(n)
			size := 0
			for j := range recs {
				s, _ := c.str(&recs[j])
				size += len(s)
			}
			b.ReserveData(size)
			for j := range recs {
				if s, ok := c.str(&recs[j]); ok {
					b.Append(validUTF8(s))
				} else {
					b.AppendNull()
				}
			}
			cols[i] = b.NewArray()
			b.Release()
		default:
			b := array.NewTimestampBuilder(mem, tsType)
			b.Reserve(n)
			for j := range recs {
				b.UnsafeAppend(micros(c.ts(&recs[j])))
			}
			cols[i] = b.NewArray()
			b.Release()
		}
	}
	return array.NewRecordBatch(eventSchema, cols, int64(n))
}
