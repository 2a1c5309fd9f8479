package txn

import (
	"maps"
	"slices"
	"time"
)

// Description is one transactional id as DescribeTransactions answers it
// (Kafka's TransactionMetadata): Found is false for an id the coordinator
// does not hold (TRANSACTIONAL_ID_NOT_FOUND).
type Description struct {
	TransactionalID string
	Found           bool
	ProducerID      int64
	Epoch           int16
	State           State
	Timeout         time.Duration
	// Started is when the last transaction began, zero if none has
	// (Kafka's txnStartTimestamp, -1 on the wire).
	Started time.Time
	// Partitions of the open or completing transaction, by topic, sorted.
	Partitions map[string][]int32
}

// Describe answers DescribeTransactions: one description per id asked,
// in the order asked.
func (c *Coordinator) Describe(ids []string) []Description {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Description, 0, len(ids))
	for _, id := range ids {
		t := c.txns[id]
		if t == nil {
			out = append(out, Description{TransactionalID: id})
			continue
		}
		d := Description{TransactionalID: id, Found: true, ProducerID: t.pid, Epoch: t.epoch, State: t.state,
			Timeout: t.timeout, Started: t.started, Partitions: map[string][]int32{}}
		for tp := range t.parts {
			d.Partitions[tp.Topic] = append(d.Partitions[tp.Topic], tp.Partition)
		}
		for _, ps := range d.Partitions {
			slices.Sort(ps)
		}
		out = append(out, d)
	}
	return out
}

// Listed is one transactional id as ListTransactions answers it.
type Listed struct {
	TransactionalID string
	ProducerID      int64
	State           State
}

// ListFilter is ListTransactions' filters: each one empty (or
// MinDuration negative) matches every id.
type ListFilter struct {
	// States are Kafka's state names (State.String); an id matches if its
	// state is one of them. Names that are no state match nothing and are
	// returned as unknown.
	States []string
	// ProducerIDs: an id matches if it holds one of them.
	ProducerIDs []int64
	// MinDuration: an id matches if its last transaction began more than
	// this long ago (or none has), Kafka's DurationFilter.
	MinDuration time.Duration
}

// List answers ListTransactions (Kafka's listTransactionStates): the
// ids that pass every filter, sorted, and the state names it does not
// know.
func (c *Coordinator) List(f ListFilter) (out []Listed, unknown []string) {
	states := map[State]bool{}
	for _, name := range f.States {
		if s, ok := stateByName(name); ok {
			states[s] = true
		} else {
			unknown = append(unknown, name)
		}
	}
	pids := map[int64]bool{}
	for _, p := range f.ProducerIDs {
		pids[p] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Clock.Now()
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		switch {
		case len(pids) > 0 && !pids[t.pid]:
		case len(f.States) > 0 && !states[t.state]:
		case f.MinDuration >= 0 && !t.started.IsZero() && now.Sub(t.started) <= f.MinDuration:
		default:
			out = append(out, Listed{TransactionalID: id, ProducerID: t.pid, State: t.state})
		}
	}
	return out, unknown
}

func stateByName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}
