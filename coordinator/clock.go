package coordinator

import "time"

// Clock is the coordinator's only source of time. package clock has the
// real one and a manual one for tests and labs.
type Clock interface {
	Now() time.Time
}
