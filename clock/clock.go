// Package clock provides the two clocks the coordinator runs on: System,
// the real wall clock, and Manual, which moves only when told to. The
// chapter's labs and exercises run on a Manual clock so that session expiry
// happens at exact, repeatable instants.
//
// The coordinator declares the one method it needs (Now) and never reads
// the time any other way.
package clock

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// System reads the operating system's clock.
type System struct{}

// Now returns the current wall-clock time.
func (System) Now() time.Time { return time.Now() }

// ErrBackwards is returned when a Manual clock is asked to move back.
var ErrBackwards = errors.New("manual clock cannot move backwards")

// Manual is a clock that stands still until Advance moves it forward. It is
// safe for concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time // guarded by mu
}

// NewManual returns a Manual clock that reads start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start}
}

// Now returns the clock's current reading.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d and returns the new reading. A
// negative d is an error wrapping ErrBackwards and leaves the clock as it
// was; zero is allowed.
func (m *Manual) Advance(d time.Duration) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d < 0 {
		return m.now, fmt.Errorf("%w: advance by %v", ErrBackwards, d)
	}
	m.now = m.now.Add(d)
	return m.now, nil
}
