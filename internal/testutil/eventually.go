// Package testutil holds the helpers tests share. It is imported by tests only.
package testutil

import (
	"time"
)

// TB is the part of testing.TB Eventually uses (so a test can pass a *testing.T, *testing.B or
// *testing.F, and this package does not import testing into production binaries by accident).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually calls cond every `every` until it returns nil, and fails tb (naming cond's last
// error) when within has passed without that. It is the one way tests wait for something to
// happen: a fixed sleep either waits too long or, on a loaded machine, not long enough.
func Eventually(tb TB, within, every time.Duration, cond func() error) {
	tb.Helper()
	if err := Poll(within, every, cond); err != nil {
		tb.Fatalf("not within %s: %v", within, err)
	}
}

// Poll calls cond every `every` until it returns nil (Poll returns nil) or within has passed
// (Poll returns cond's last error). For a test that waits outside its own goroutine, where
// tb.Fatalf must not be called, or that decides what a timeout means itself.
func Poll(within, every time.Duration, cond func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(every)
	}
}
