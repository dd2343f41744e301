package httpapi

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int // writes
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Batched lines reach the writer within LogFlushEvery in few writes; a direct line goes out at
// once after what was pending (order kept); Close writes the rest, and lines after it go out at
// once.
func TestLogWriter(t *testing.T) {
	var out lockedBuffer
	l := newLogWriter(&out, time.Hour) // only a kick, a direct line or Close writes
	for i := 0; i < 100; i++ {
		_, err := fmt.Fprintf(l, "batched %d\n", i)
		require.NoError(t, err)
	}
	require.Empty(t, out.String(), "batched lines wait")
	_, err := l.Direct().Write([]byte("direct\n"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 101)
	require.Equal(t, "batched 0", lines[0])
	require.Equal(t, "batched 99", lines[99])
	require.Equal(t, "direct", lines[100])
	require.LessOrEqual(t, out.n, 2, "one write for the batch, one for the direct line")

	var timed lockedBuffer
	lt := NewLogWriter(&timed)
	_, _ = lt.Write([]byte("later\n"))
	require.Eventually(t, func() bool { return timed.String() == "later\n" },
		20*LogFlushEvery, LogFlushEvery/10, "a batched line goes out within LogFlushEvery")
	require.NoError(t, lt.Close())

	// A burst over the batch size wakes the flusher (and at 4× is written by the writer).
	line := strings.Repeat("x", 1023) + "\n"
	for i := 0; i < 5*logBatchBytes/len(line); i++ { // n lines
		_, _ = l.Write([]byte(line))
	}
	n := 5 * logBatchBytes / len(line)
	require.Eventually(t, func() bool { return strings.Count(out.String(), line) > n-logBatchBytes/len(line) },
		5*time.Second, time.Millisecond, "less than a batch stays pending")

	_, _ = l.Write([]byte("pending\n"))
	require.NoError(t, l.Close())
	require.True(t, strings.HasSuffix(out.String(), "pending\n"), "Close writes what is pending")
	_, _ = l.Write([]byte("after close\n"))
	require.True(t, strings.HasSuffix(out.String(), "after close\n"), "after Close lines go out at once")
	start := time.Now()
	require.NoError(t, l.Close(), "a second Close is harmless")
	require.Less(t, time.Since(start), time.Second)
}
