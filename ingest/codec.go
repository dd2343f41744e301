package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Binary encoding of an Event as stored in the embedded log (and sent as Kafka message values).
//
// It is a hand-written, versioned format because it is on the hot path of intake (encoded by
// every collector request) and of the consumer (decoded for every Arrow row): measured with
// BenchmarkCodec it encodes ~8x and decodes ~5x faster than JSON with sonic (98 vs 812 ns,
// 212 vs 1002 ns per typical event) and takes 98 instead of 235 bytes.
// Layout, all integers varints (signed: zig-zag), strings length-prefixed:
//
//	version byte (2)
//	Workspace, Mode byte, BookID, SessionID, Type,
//	ViewerID, ViewerEmail, TrackedLinkID, SourceHost, SourceType, PageNumber, ActiveMs,
//	URL, ExitReason, Reason, Metadata, Country, Region, City,
//	OccurredAt, ReceivedAt (each: Unix seconds, nanoseconds)
//	version 2 adds: BookPages, then a byte 0/1 (HasLatLong), then when 1 Latitude and
//	Longitude (IEEE 754 bits, 8 bytes little-endian each)
//
// Times decode in UTC (the instant is preserved, the location and monotonic reading are not).
// A new field means a new version byte; decodeEvent keeps reading every older version
// (version 1 events decode with BookPages 0 and no coordinates).
const codecVersion = 2

// errCorrupt is returned for a value that is not a valid encoded event.
var errCorrupt = errors.New("ingest: corrupt event encoding")

// appendEvent appends the encoding of e to b.
func appendEvent(b []byte, e *Event) []byte {
	b = append(b, codecVersion)
	b = binary.AppendVarint(b, e.Workspace)
	b = append(b, e.Mode)
	b = appendString(b, e.BookID)
	b = appendString(b, e.SessionID)
	b = appendString(b, e.Type)
	b = binary.AppendVarint(b, e.ViewerID)
	b = appendString(b, e.ViewerEmail)
	b = binary.AppendVarint(b, e.TrackedLinkID)
	b = appendString(b, e.SourceHost)
	b = appendString(b, e.SourceType)
	b = binary.AppendVarint(b, int64(e.PageNumber))
	b = binary.AppendVarint(b, e.ActiveMs)
	b = appendString(b, e.URL)
	b = appendString(b, e.ExitReason)
	b = appendString(b, e.Reason)
	b = appendString(b, e.Metadata)
	b = appendString(b, e.Country)
	b = appendString(b, e.Region)
	b = appendString(b, e.City)
	b = appendTime(b, e.OccurredAt)
	b = appendTime(b, e.ReceivedAt)
	b = binary.AppendVarint(b, int64(e.BookPages))
	if !e.HasLatLong {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Latitude))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Longitude))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// decodeEvent decodes an encoded event. The strings of the result do not alias v (they
// share one copy of it), so v may be reused afterwards.
func decodeEvent(v []byte, e *Event) error {
	if len(v) == 0 {
		return errCorrupt
	}
	version := v[0]
	if version < 1 || version > codecVersion {
		return fmt.Errorf("%w: unknown version %d", errCorrupt, version)
	}
	d := decoder{s: string(v), i: 1} // one allocation for every string of the event
	*e = Event{
		Workspace:     d.varint(),
		Mode:          d.byte(),
		BookID:        d.string(),
		SessionID:     d.string(),
		Type:          d.string(),
		ViewerID:      d.varint(),
		ViewerEmail:   d.string(),
		TrackedLinkID: d.varint(),
		SourceHost:    d.string(),
		SourceType:    d.string(),
		PageNumber:    int32(d.varint()),
		ActiveMs:      d.varint(),
		URL:           d.string(),
		ExitReason:    d.string(),
		Reason:        d.string(),
		Metadata:      d.string(),
		Country:       d.string(),
		Region:        d.string(),
		City:          d.string(),
		OccurredAt:    d.time(),
		ReceivedAt:    d.time(),
	}
	if version >= 2 {
		e.BookPages = int32(d.varint())
		switch d.byte() {
		case 0:
		case 1:
			e.HasLatLong = true
			e.Latitude = d.float64()
			e.Longitude = d.float64()
		default:
			d.bad = true
		}
	}
	if d.bad || d.i != len(d.s) {
		return errCorrupt
	}
	return nil
}

// decoder reads the fields of an encoded event; a read past the end sets bad and returns
// zero values, so decodeEvent checks once at the end.
type decoder struct {
	s   string
	i   int
	bad bool
}

func (d *decoder) uvarint() uint64 {
	var x uint64
	var shift uint
	for n := 0; n < binary.MaxVarintLen64; n++ {
		if d.i >= len(d.s) {
			d.bad = true
			return 0
		}
		c := d.s[d.i]
		d.i++
		if c < 0x80 {
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.bad = true
	return 0
}

func (d *decoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (d *decoder) byte() byte {
	if d.i >= len(d.s) {
		d.bad = true
		return 0
	}
	c := d.s[d.i]
	d.i++
	return c
}

func (d *decoder) float64() float64 {
	if len(d.s)-d.i < 8 {
		d.bad = true
		return 0
	}
	var u uint64
	for k := 7; k >= 0; k-- {
		u = u<<8 | uint64(d.s[d.i+k])
	}
	d.i += 8
	return math.Float64frombits(u)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.i) {
		d.bad = true
		return ""
	}
	s := d.s[d.i : d.i+int(n)]
	d.i += int(n)
	return s
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.bad = true
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
