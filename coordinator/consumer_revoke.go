package coordinator

// A partition that went to another member and came back (consumer
// protocol). A rebalance takes a partition from its owner's current
// assignment at once, and the owner learns it only at its next heartbeat
// (consumer.go). If in between another member was handed the partition,
// and a later target gives it back to the first owner, a heartbeat that
// moved the owner straight to the group epoch would hand it its old
// partition again: the client would see an assignment that never lost
// it, so kgo's GroupTransactSession would not abort the transaction it
// began on the records it fetched before, and would commit their offsets
// at the new epoch, which owns the partition, after the other member
// committed the same records (read_committed output twice). Kafka never
// gets there: a partition reaches its new owner only once the old owner
// has released it. So such a heartbeat is a revocation step first: it
// answers at the member's epoch with the assignment the member holds
// now, without the partition, which the client revokes (and aborts the
// transaction, whose offsets the ownership check refuses meanwhile); the
// member's next heartbeat moves it to the group epoch and gives the
// partition back.

import (
	"slices"

	"github.com/minibroker/minibroker/assignor"
)

// grant counts one hand-over of tp to a member that did not hold it.
// Called with mu held.
func (g *group) grant(tp assignor.TopicPartition) {
	if g.grants == nil {
		g.grants = map[assignor.TopicPartition]int64{}
	}
	g.grants[tp]++
}

// tell records what m's answer carries: its current assignment, each
// partition at its grant count. Called with mu held.
func (g *group) tell(m *member) {
	told := make(map[assignor.TopicPartition]int64, len(m.current))
	for _, tp := range m.current {
		told[tp] = g.grants[tp]
	}
	m.told = told
}

// revokeFirst reports whether m's heartbeat must answer with its current
// assignment at its own epoch before it moves to the group epoch: the
// target gives m back a partition it was last told it held, that has
// left its current assignment and been handed to another member since.
// Called with mu held.
func revokeFirst(g *group, m *member) bool {
	for _, tp := range g.assignment[m.id] {
		n, ok := m.told[tp]
		if !ok || n == g.grants[tp] {
			continue
		}
		if _, held := slices.BinarySearchFunc(m.current, tp, assignor.TopicPartition.Compare); !held {
			return true
		}
	}
	return false
}
