package testutil

import (
	"testing"
	"time"
)

// Eventually polls cond every few milliseconds until it reports "" (done)
// or timeout passes; then it fails t with the last reason cond gave. It is
// how tests wait for something another goroutine or process does, without
// a sleep that guesses how long it takes.
func Eventually(t testing.TB, timeout time.Duration, cond func() (why string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, why)
		}
		<-tick.C
	}
}

// Holds adapts a boolean condition to Eventually: why is reported while
// cond does not hold.
func Holds(cond func() bool, why string) func() string {
	return func() string {
		if cond() {
			return ""
		}
		return why
	}
}
