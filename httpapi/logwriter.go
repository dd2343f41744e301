package httpapi

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// LogWriter puts the service's log lines on w (stderr) in batches: a write system call per
// request line was a quarter of the CPU of a cached GET /books/{book} (docs/OPERATIONS.md).
// Lines written through it (the request lines: Config.RequestLog) wait at most
// LogFlushEvery, or until logBatchBytes are pending; lines written through Direct (warnings,
// errors, start-up messages: Config.Logger) flush what is pending and go out at once, so the
// order of lines is kept and no line waits behind the batch. A kill -9 loses at most the last
// LogFlushEvery of request lines; Close writes what is pending.
type LogWriter struct {
	w      io.Writer
	mu     sync.Mutex // guards buf
	buf    []byte
	wmu    sync.Mutex // orders writes to w; guards spare
	spare  []byte
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	closed atomic.Bool
}

// LogFlushEvery is the longest a batched line waits.
const LogFlushEvery = 100 * time.Millisecond

// logBatchBytes wakes the flusher early; at 4× that a writer flushes itself (w is slower than
// the lines come: the writers wait rather than the buffer growing without bound).
const logBatchBytes = 64 << 10

// NewLogWriter starts a LogWriter on w; Close stops it.
func NewLogWriter(w io.Writer) *LogWriter { return newLogWriter(w, LogFlushEvery) }

func newLogWriter(w io.Writer, every time.Duration) *LogWriter {
	l := &LogWriter{w: w, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop(every)
	return l
}

// Write adds p (one whole line, as slog handlers write) to the batch.
func (l *LogWriter) Write(p []byte) (int, error) {
	if l.closed.Load() {
		return len(p), l.flush(p)
	}
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	n := len(l.buf)
	l.mu.Unlock()
	switch {
	case n >= 4*logBatchBytes:
		return len(p), l.flush(nil)
	case n >= logBatchBytes:
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// Direct is a writer whose lines go out at once, after what is pending.
func (l *LogWriter) Direct() io.Writer { return directWriter{l} }

type directWriter struct{ l *LogWriter }

func (d directWriter) Write(p []byte) (int, error) { return len(p), d.l.flush(p) }

// flush writes the pending batch, then extra, to w.
func (l *LogWriter) flush(extra []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	b := l.buf
	l.buf = l.spare[:0]
	l.mu.Unlock()
	var err error
	if len(b) > 0 {
		_, err = l.w.Write(b)
	}
	if len(extra) > 0 {
		if _, e := l.w.Write(extra); err == nil {
			err = e
		}
	}
	if cap(b) <= 4*logBatchBytes { // keep a buffer of the usual size, not a burst's
		l.spare = b[:0]
	} else {
		l.spare = nil
	}
	return err
}

func (l *LogWriter) loop(every time.Duration) {
	defer close(l.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			_ = l.flush(nil)
			return
		case <-t.C:
		case <-l.kick:
		}
		_ = l.flush(nil)
	}
}

// Close writes what is pending and stops the flusher; later lines go out at once.
func (l *LogWriter) Close() error {
	l.once.Do(func() { l.closed.Store(true); close(l.stop) })
	<-l.done
	return l.flush(nil)
}
