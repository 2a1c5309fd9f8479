package testutil

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records a Fatalf and stops the goroutine, as testing.T does.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestEventually(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	Eventually(t, 10*time.Second, func() string {
		if n.Add(1) < 3 {
			return "not yet"
		}
		return ""
	})
	if n.Load() != 3 {
		t.Fatalf("cond ran %d times, want 3", n.Load())
	}

	f := &fakeTB{}
	func() {
		defer func() { _ = recover() }()
		Eventually(f, 20*time.Millisecond, Holds(func() bool { return false }, "never"))
	}()
	if !strings.HasPrefix(f.failed, "not within") {
		t.Fatalf("a condition that never holds: Fatalf(%q)", f.failed)
	}
}
