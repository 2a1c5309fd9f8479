package coordinator

import (
	"time"

	"github.com/minibroker/minibroker/clock"
)

// Clock is the coordinator's only source of time. Session deadlines are
// computed from it, and only Expire compares them with it.
type Clock interface {
	Now() time.Time
}

// SystemClock and ManualClock are the two clocks of docs/design.md section 2,
// under the names it gives them; package clock holds them so that the
// coordinator itself never reads the wall clock.
type (
	SystemClock = clock.System
	ManualClock = clock.Manual
)

// NewManualClock returns a ManualClock that reads start and moves only
// forward, and only when advanced.
func NewManualClock(start time.Time) *ManualClock { return clock.NewManual(start) }
