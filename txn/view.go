package txn

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/minibroker/minibroker/records"
)

// View is one transactional id as the admin API shows it.
type View struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	State           State
	Timeout         time.Duration
	// Partitions and Groups are those of the open (or completing)
	// transaction, sorted.
	Partitions []records.TopicPartition
	Groups     []string
	// Started is when the open transaction began (zero if none); Updated
	// when the id last changed.
	Started time.Time
	Updated time.Time
}

// Views returns every transactional id, sorted.
func (c *Coordinator) Views() []View {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]View, 0, len(c.txns))
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		v := View{TransactionalID: id, ProducerID: t.pid, Epoch: t.epoch, State: t.state, Timeout: t.timeout,
			Groups: slices.Sorted(maps.Keys(t.groups)), Updated: t.updated}
		v.Partitions = slices.SortedFunc(maps.Keys(t.parts), func(a, b records.TopicPartition) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return int(a.Partition - b.Partition)
		})
		if v.Partitions == nil {
			v.Partitions = []records.TopicPartition{}
		}
		if v.Groups == nil {
			v.Groups = []string{}
		}
		if t.state == Ongoing || t.state == PrepareCommit || t.state == PrepareAbort {
			v.Started = t.started
		}
		out = append(out, v)
	}
	return out
}

// Stats returns the coordinator's counters.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.LogSyncs, s.LogRewrites = c.journal.counts()
	for _, t := range c.txns {
		if t.state == Ongoing {
			s.Open++
		}
	}
	return s
}
