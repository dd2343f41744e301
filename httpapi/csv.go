package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"flipbook/analytics"
)

// CSV of the exports (spec §4.5, docs/API.md "Exports"): RFC 4180 (fields separated by commas,
// records ended by CRLF, a field quoted, with its quotes doubled, only when it holds a comma, a
// quote, CR or LF), UTF-8 without a byte order mark, one header row. A value is written as the
// JSON operation shows it: strings as they are, numbers as JSON numbers, booleans true/false,
// timestamps as RFC 3339 UTC with microseconds, objects and arrays as compact JSON, and null
// as an empty field.

// csvBufferSize is the write buffer of an export: each full buffer goes out as one HTTP chunk.
const csvBufferSize = 64 << 10

// csvColumn is one column of an export: its header name, the SQL expression selected for it
// ("" selects the view's column of that name) and, when the value is not written by its Arrow
// type alone, the binder that writes it.
type csvColumn struct {
	name string
	sql  string
	bind cellBinder
}

// cellFunc appends row i's value of one column, CSV-escaped, to dst.
type cellFunc func(dst []byte, i int) []byte

// cellBinder makes the cellFunc of a column for one record batch's array.
type cellBinder func(a arrow.Array) (cellFunc, error)

// selectList is the select list of an export's columns, each aliased to its header name.
func selectList(cols []csvColumn) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		if c.sql != "" && c.sql != c.name {
			b.WriteString(c.sql + " AS ")
		}
		b.WriteString(c.name)
	}
	return b.String()
}

// csvHeader is the header row of an export.
func csvHeader(cols []csvColumn) []byte {
	var b []byte
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCSVString(b, c.name)
	}
	return append(b, '\r', '\n')
}

// csvSpecial marks the bytes that make a field need quotes.
var csvSpecial = [256]bool{',': true, '"': true, '\r': true, '\n': true}

// appendCSVString appends s as one CSV field.
func appendCSVString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if csvSpecial[s[i]] {
			return appendQuoted(dst, s)
		}
	}
	return append(dst, s...)
}

func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, '"')
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendTimestamp appends a time as TimeFormat (RFC 3339, UTC, microseconds).
func appendTimestamp(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, TimeFormat)
	}
	hour, min, sec := t.Clock()
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, min, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, sec, 2)
	dst = append(dst, '.')
	dst = appendDigits(dst, t.Nanosecond()/1000, 6)
	return append(dst, 'Z')
}

// timeCache writes microsecond timestamps as TimeFormat, formatting the date and time of day
// only when the second changes (an export's rows are in time order, so most rows share the
// second of the row before).
type timeCache struct {
	sec    int64
	prefix []byte // "YYYY-MM-DDTHH:MM:SS." of sec
}

func (c *timeCache) append(dst []byte, us int64) []byte {
	sec, frac := us/1e6, us%1e6
	if frac < 0 {
		sec, frac = sec-1, frac+1e6
	}
	if c.prefix == nil || sec != c.sec {
		t := time.Unix(sec, 0).UTC()
		if y := t.Year(); y < 0 || y > 9999 {
			return appendTimestamp(dst, time.UnixMicro(us))
		}
		c.sec = sec
		c.prefix = appendTimestamp(c.prefix[:0], t)
		c.prefix = c.prefix[:len(c.prefix)-len("000000Z")]
	}
	dst = append(dst, c.prefix...)
	dst = appendDigits(dst, int(frac), 6)
	return append(dst, 'Z')
}

// appendDigits appends v (≥ 0) zero-padded to width digits.
func appendDigits(dst []byte, v, width int) []byte {
	var b [8]byte
	for i := width - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, b[:width]...)
}

// stringValues is what the Arrow string arrays (utf8, large utf8, string view) share.
type stringValues interface {
	arrow.Array
	Value(i int) string
}

// bindByType writes a value by its Arrow type.
func bindByType(a arrow.Array) (cellFunc, error) {
	switch x := a.(type) {
	case *array.Int64:
		return func(dst []byte, i int) []byte {
			if x.IsNull(i) {
				return dst
			}
			return strconv.AppendInt(dst, x.Value(i), 10)
		}, nil
	case *array.Int32:
		return func(dst []byte, i int) []byte {
			if x.IsNull(i) {
				return dst
			}
			return strconv.AppendInt(dst, int64(x.Value(i)), 10)
		}, nil
	case *array.Float64:
		return func(dst []byte, i int) []byte {
			if x.IsNull(i) {
				return dst
			}
			return strconv.AppendFloat(dst, x.Value(i), 'f', -1, 64)
		}, nil
	case *array.Boolean:
		return func(dst []byte, i int) []byte {
			if x.IsNull(i) {
				return dst
			}
			return strconv.AppendBool(dst, x.Value(i))
		}, nil
	case *array.Timestamp:
		unit := x.DataType().(*arrow.TimestampType).Unit
		if unit != arrow.Microsecond { // DuckDB's TIMESTAMP is microseconds
			return func(dst []byte, i int) []byte {
				if x.IsNull(i) {
					return dst
				}
				return appendTimestamp(dst, x.Value(i).ToTime(unit))
			}, nil
		}
		var tc timeCache
		return func(dst []byte, i int) []byte {
			if x.IsNull(i) {
				return dst
			}
			return tc.append(dst, int64(x.Value(i)))
		}, nil
	case *array.Null:
		return func(dst []byte, _ int) []byte { return dst }, nil
	case stringValues:
		return func(dst []byte, i int) []byte {
			if x.IsNull(i) {
				return dst
			}
			return appendCSVString(dst, x.Value(i))
		}, nil
	}
	return nil, fmt.Errorf("csv: no writer for Arrow type %s", a.DataType())
}

// bindString wraps a string column's value through fn (raw → the text written, CSV-escaped
// here); null stays empty.
func bindString(fn func(raw string) string) cellBinder {
	return func(a arrow.Array) (cellFunc, error) {
		x, ok := a.(stringValues)
		if !ok {
			return nil, fmt.Errorf("csv: want a string column, got %s", a.DataType())
		}
		return func(dst []byte, i int) []byte {
			if x.IsNull(i) {
				return dst
			}
			return appendCSVString(dst, fn(x.Value(i)))
		}, nil
	}
}

// bindInt wraps a BIGINT column's value through fn (null: ok false).
func bindInt(fn func(v int64, ok bool) string) cellBinder {
	return func(a arrow.Array) (cellFunc, error) {
		x, ok := a.(*array.Int64)
		if !ok {
			return nil, fmt.Errorf("csv: want a BIGINT column, got %s", a.DataType())
		}
		return func(dst []byte, i int) []byte {
			if x.IsNull(i) {
				return appendCSVString(dst, fn(0, false))
			}
			return appendCSVString(dst, fn(x.Value(i), true))
		}, nil
	}
}

// constant writes the same text in every row (the SQL expression is NULL).
func constant(s string) cellBinder {
	return func(arrow.Array) (cellFunc, error) {
		v := appendCSVString(nil, s)
		return func(dst []byte, _ int) []byte { return append(dst, v...) }, nil
	}
}

// csvStream is an export's body: the header, then the rows of its export query as they are
// read, written through a 64 KB buffer. The first batch was read before the response was
// committed (so a failing query is a JSON error, not a broken file).
type csvStream struct {
	rows  *analytics.ExportRows
	cols  []csvColumn
	first bool // rows.Record() holds the first batch
}

// newCSVStream starts an export: it reads the first batch, so that errors come before the
// status is sent.
func newCSVStream(rows *analytics.ExportRows, cols []csvColumn) (*csvStream, error) {
	st := &csvStream{rows: rows, cols: cols}
	st.first = rows.Next()
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, err
	}
	return st, nil
}

// WriteTo writes the whole file. An error from w (the client went away) stops the export.
func (c *csvStream) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, csvBufferSize)
	if _, err := bw.Write(csvHeader(c.cols)); err != nil {
		return cw.n, err
	}
	cells := make([]cellFunc, len(c.cols))
	for ok := c.first; ok; ok = c.rows.Next() {
		rec := c.rows.Record()
		if int(rec.NumCols()) != len(c.cols) {
			return cw.n, fmt.Errorf("csv: the query returned %d columns for %d", rec.NumCols(), len(c.cols))
		}
		for j, col := range c.cols {
			bind := col.bind
			if bind == nil {
				bind = bindByType
			}
			f, err := bind(rec.Column(j))
			if err != nil {
				return cw.n, fmt.Errorf("column %s: %w", col.name, err)
			}
			cells[j] = f
		}
		if err := writeRows(bw, cells, int(rec.NumRows())); err != nil {
			return cw.n, err
		}
	}
	if err := c.rows.Err(); err != nil {
		return cw.n, err
	}
	err := bw.Flush()
	return cw.n, err
}

// writeRows writes n rows, each assembled in the writer's free buffer space.
func writeRows(bw *bufio.Writer, cells []cellFunc, n int) error {
	for i := 0; i < n; i++ {
		b := bw.AvailableBuffer()
		for j, cell := range cells {
			if j > 0 {
				b = append(b, ',')
			}
			b = cell(b, i)
		}
		b = append(b, '\r', '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Close ends the export (its connection goes back to the pool).
func (c *csvStream) Close() error { return c.rows.Close() }

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
