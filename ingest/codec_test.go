package ingest

import (
	"testing"
	"time"

	"github.com/bytedance/sonic"
	"github.com/stretchr/testify/require"
)

func fullEvent() Event {
	return Event{
		Workspace: 1234567, Mode: 'l', BookID: "bk_3fA9xQ", SessionID: "sess-0123456789abcdef",
		Type: LeadFormSubmitted, ViewerID: 42, ViewerEmail: "reader@example.com", TrackedLinkID: -7,
		SourceHost: "blog.example.org", SourceType: "embed", PageNumber: 12, ActiveMs: 5200,
		URL: "https://example.com/x?y=ü", ExitReason: "closed", Reason: "domain", Metadata: `{"name":"Ada"}`,
		Country: "DE", Region: "BE", City: "Berlin", BookPages: 240,
		HasLatLong: true, Latitude: 52.52, Longitude: -13.405,
		OccurredAt: time.Date(2026, 11, 22, 10, 11, 12, 123456789, time.FixedZone("x", 3600)),
		ReceivedAt: time.Date(1969, 1, 2, 3, 4, 5, 6, time.UTC),
	}
}

// sampleEvent is a typical collector event (page_segment_completed of an anonymous reader).
func sampleEvent(ws int64, i int) Event {
	now := time.Now()
	return Event{
		Workspace: ws, Mode: 'l', BookID: "bk_3fA9xQzL", SessionID: "s-7f3c9a1e5b2d4c6f",
		Type: PageSegmentCompleted, SourceType: "direct", PageNumber: int32(i%500 + 1), ActiveMs: int64(i),
		Country: "DE", OccurredAt: now, ReceivedAt: now,
	}
}

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	for _, e := range []Event{fullEvent(), {}, sampleEvent(-1, 3), {Workspace: 1 << 62, OccurredAt: time.Unix(-1, 999999999)}} {
		var got Event
		require.NoError(t, decodeEvent(appendEvent(nil, &e), &got))
		require.True(t, e.OccurredAt.Equal(got.OccurredAt) && e.ReceivedAt.Equal(got.ReceivedAt), "times: %v %v", e, got)
		require.Equal(t, e.OccurredAt.IsZero(), got.OccurredAt.IsZero())
		got.OccurredAt, got.ReceivedAt = e.OccurredAt, e.ReceivedAt
		require.Equal(t, e, got)
	}
}

// A version 1 event (written before BookPages and coordinates existed) still decodes.
func TestCodecReadsVersion1(t *testing.T) {
	t.Parallel()
	e := fullEvent()
	b := appendEvent(nil, &e)
	tail := 2 + 1 + 16 // BookPages 240 (2-byte varint), flag, two float64
	v1 := append([]byte{1}, b[1:len(b)-tail]...)
	var got Event
	require.NoError(t, decodeEvent(v1, &got))
	require.Equal(t, e.City, got.City)
	require.True(t, e.ReceivedAt.Equal(got.ReceivedAt))
	require.Zero(t, got.BookPages)
	require.False(t, got.HasLatLong)
	require.Error(t, decodeEvent(append([]byte{1}, b[1:]...), &got), "v1 with v2 fields trailing")
}

func TestCodecRejectsCorrupt(t *testing.T) {
	t.Parallel()
	e := fullEvent()
	b := appendEvent(nil, &e)
	var got Event
	for n := 0; n < len(b); n++ { // every truncation
		require.Error(t, decodeEvent(b[:n], &got), "truncated at %d", n)
	}
	require.Error(t, decodeEvent(append(append([]byte(nil), b...), 0), &got), "trailing byte")
	bad := append([]byte(nil), b...)
	bad[0] = 99
	require.ErrorIs(t, decodeEvent(bad, &got), errCorrupt)
	bad = append([]byte(nil), b...)
	bad[len(bad)-17] = 2 // the coordinates flag
	require.ErrorIs(t, decodeEvent(bad, &got), errCorrupt)
}

// BenchmarkCodec compares the binary encoding with JSON (sonic), the alternative considered.
func BenchmarkCodec(b *testing.B) {
	e := sampleEvent(77, 5)
	bin := appendEvent(nil, &e)
	js, err := sonic.Marshal(&e)
	require.NoError(b, err)
	b.Run("binary/encode", func(b *testing.B) {
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = appendEvent(buf[:0], &e)
		}
		b.ReportMetric(float64(len(bin)), "bytes/event")
	})
	b.Run("sonic/encode", func(b *testing.B) {
		for b.Loop() {
			_, _ = sonic.Marshal(&e)
		}
		b.ReportMetric(float64(len(js)), "bytes/event")
	})
	b.Run("binary/decode", func(b *testing.B) {
		var out Event
		for b.Loop() {
			_ = decodeEvent(bin, &out)
		}
	})
	b.Run("sonic/decode", func(b *testing.B) {
		var out Event
		for b.Loop() {
			_ = sonic.Unmarshal(js, &out)
		}
	})
}
