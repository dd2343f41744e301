package storage

import (
	"bytes"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestEscapeOrderedKeepsByteOrder(t *testing.T) {
	t.Parallel()
	// Hand-picked pairs: embedded 0x00, prefixes of each other, 0x01 and 0xff bytes.
	fixed := []string{
		"", "\x00", "\x00\x00", "\x00\x01", "\x00\xff", "\x01", "\x01\x00", "\xff", "\xff\x00",
		"a", "a\x00", "a\x00b", "a\x01", "ab", "abc", "ab\x00", "ab\x00\x00", "abd", "b",
	}
	// Random short strings over an alphabet made of the bytes the encoding treats specially.
	alphabet := []byte{0x00, 0x01, 0x02, 'a', 0xfe, 0xff}
	rng := rand.New(rand.NewSource(1))
	all := append([]string(nil), fixed...)
	for i := 0; i < 400; i++ {
		n := rng.Intn(6)
		b := make([]byte, n)
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		all = append(all, string(b))
	}
	suffixA, suffixB := u64(7), u64(3) // index keys append the book id: order must not depend on it
	for _, a := range all {
		ea := escapeOrdered(nil, a)
		for _, b := range all {
			eb := escapeOrdered(nil, b)
			want := sign(bytes.Compare([]byte(a), []byte(b)))
			require.Equalf(t, want, sign(bytes.Compare(ea, eb)), "escape order of %q vs %q", a, b)
			if want != 0 {
				require.Equalf(t, want, sign(bytes.Compare(cat(ea, suffixA), cat(eb, suffixB))),
					"escape order with id suffix of %q vs %q", a, b)
			} else {
				require.Equal(t, ea, eb)
			}
		}
	}
}

func TestEscapeOrderedIsPrefixFree(t *testing.T) {
	t.Parallel()
	// No encoding is a proper prefix of another: a key and its id suffix can be split.
	all := []string{"", "a", "a\x00", "a\x00\x01", "a\x01", "ab", "\x00", "\x00\x01", "\x00\xff"}
	for _, a := range all {
		for _, b := range all {
			if a == b {
				continue
			}
			ea, eb := escapeOrdered(nil, a), escapeOrdered(nil, b)
			require.Falsef(t, bytes.HasPrefix(eb, ea), "%q encoding is a prefix of %q's", a, b)
		}
	}
	// dst is appended to, not overwritten.
	require.Equal(t, []byte("pre"+"x\x00\xffy\x00\x01"), escapeOrdered([]byte("pre"), "x\x00y"))
}

func TestSortKeyNameIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	names := []string{"banana", "Apple", "cherry", "apple pie", "APPLE", "Banana split", "ÄRGER", "zebra", ""}
	books := make([]*Book, len(names))
	for i, n := range names {
		books[i] = &Book{ID: int64(i + 1), Name: n}
	}
	sorted := append([]*Book(nil), books...)
	sort.Slice(sorted, func(i, j int) bool {
		return bytes.Compare(sortKey(sorted[i], SortName), sortKey(sorted[j], SortName)) < 0
	})
	var got []string
	for _, b := range sorted {
		got = append(got, b.Name)
	}
	// "Apple" (id 2) and "APPLE" (id 5) fold equal and are ordered by id.
	require.Equal(t, []string{"", "Apple", "APPLE", "apple pie", "banana", "Banana split", "cherry", "zebra", "ÄRGER"}, got)

	// Same name in any case: only the id tells the keys apart.
	a := sortKey(&Book{ID: 1, Name: "Hello"}, SortName)
	b := sortKey(&Book{ID: 2, Name: "hELLO"}, SortName)
	require.Equal(t, a[:len(a)-8], b[:len(b)-8])
	require.Negative(t, bytes.Compare(a, b))
}

func TestSortKeyTimesAndStatus(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	early := &Book{ID: 9, CreatedAt: t0, UpdatedAt: t0.Add(time.Hour), Status: StatusPublish}
	late := &Book{ID: 1, CreatedAt: t0.Add(time.Nanosecond), UpdatedAt: t0, Status: StatusDraft}
	require.Negative(t, bytes.Compare(sortKey(early, SortCreated), sortKey(late, SortCreated)))
	require.Positive(t, bytes.Compare(sortKey(early, SortUpdated), sortKey(late, SortUpdated)))
	require.Positive(t, bytes.Compare(sortKey(early, SortStatus), sortKey(late, SortStatus)))
	// Every sort key ends with the book id.
	for _, s := range bookSorts {
		k := sortKey(early, s)
		require.Equal(t, uint64(9), beUint64(k[len(k)-8:]))
	}
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	require.Equal(t, []byte("ab"), prefixEnd([]byte("aa")))
	require.Equal(t, []byte{'a', 1}, prefixEnd([]byte{'a', 0}))
	require.Equal(t, []byte{'b'}, prefixEnd([]byte{'a', 0xff, 0xff}))
	require.Nil(t, prefixEnd([]byte{0xff, 0xff}))
	p := []byte("t/x/")
	end := prefixEnd(p)
	require.Negative(t, bytes.Compare(cat(p, []byte{0xff, 0xff, 0xff}), end))
	require.Equal(t, []byte("t/x/"), p, "prefixEnd must not modify its argument")
}

func TestTenantBytesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tn := range []Tenant{{1, ModeLive}, {1, ModeTest}, {1 << 40, ModeLive}, {0, ModeTest}} {
		got, ok := tenantFromBytes(tn.bytes())
		require.True(t, ok)
		require.Equal(t, tn, got)
	}
	_, ok := tenantFromBytes([]byte("short"))
	require.False(t, ok)
	bad := Tenant{Workspace: 1, Mode: ModeLive}.bytes()
	bad[8] = 'x'
	_, ok = tenantFromBytes(bad)
	require.False(t, ok)

	// Tenant prefixes never overlap: neither is a prefix of the other.
	a, b := Tenant{1, ModeLive}.prefix(), Tenant{1, ModeTest}.prefix()
	require.False(t, bytes.HasPrefix(a, b) || bytes.HasPrefix(b, a))
	c := Tenant{256, ModeLive}.prefix()
	require.False(t, bytes.HasPrefix(a, c) || bytes.HasPrefix(c, a))
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	m, ok := ParseMode("live")
	require.True(t, ok)
	require.Equal(t, ModeLive, m)
	require.Equal(t, "live", m.String())
	m, ok = ParseMode("test")
	require.True(t, ok)
	require.Equal(t, ModeTest, m)
	require.Equal(t, "test", m.String())
	_, ok = ParseMode("LIVE")
	require.False(t, ok)
}
