package testutil

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type fakeTB struct{ failed string }

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestEventually(t *testing.T) {
	t.Parallel()
	n := 0
	tb := &fakeTB{}
	Eventually(tb, time.Second, time.Millisecond, func() error {
		if n++; n < 3 {
			return fmt.Errorf("only %d calls", n)
		}
		return nil
	})
	if tb.failed != "" || n != 3 {
		t.Fatalf("failed %q after %d calls", tb.failed, n)
	}

	// The last error is reported.
	n = 0
	Eventually(tb, 20*time.Millisecond, time.Millisecond, func() error {
		n++
		return fmt.Errorf("call %d", n)
	})
	if !strings.Contains(tb.failed, fmt.Sprintf("call %d", n)) || n < 2 {
		t.Fatalf("reported %q after %d calls", tb.failed, n)
	}
	if err := Poll(5*time.Millisecond, time.Millisecond, func() error { return errors.New("never") }); err == nil || err.Error() != "never" {
		t.Fatalf("Poll: %v", err)
	}
}
