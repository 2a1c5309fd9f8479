package lab

import (
	"context"

	"github.com/minibroker/minibroker/broker"
)

// DefaultTopics is the topic catalog of the labs' in-process broker: the
// chapter's orders topic with four partitions, and payments with one, as
// `make run` creates them.
func DefaultTopics() map[string]int32 {
	return map[string]int32{"orders": 4, "payments": 1}
}

// StartBroker starts the labs' in-process broker: in memory, on a manual
// clock that reads 0 and moves only when a lab advances it, with
// DefaultTopics. Close stops it.
func StartBroker(ctx context.Context) (*broker.Broker, error) {
	return broker.Start(ctx, broker.Config{ManualClock: true, Topics: DefaultTopics()})
}
