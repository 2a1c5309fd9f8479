package coordinator

import (
	"errors"
	"slices"

	"github.com/minibroker/minibroker/offsets"
)

// The reasons a topic change gives a new generation (TopicsChanged).
const (
	// ReasonTopicDeleted: a topic some member subscribes to was deleted.
	ReasonTopicDeleted Reason = "topic deleted"
	// ReasonPartitionsAdded: a topic some member subscribes to got more
	// partitions.
	ReasonPartitionsAdded Reason = "partitions added"
)

// TopicsChanged gives a new generation, for why, to exactly the groups
// with a member that subscribes to one of topics (by name, or by a regex
// of a consumer group that matched or now matches it), after the catalog
// has changed them: Kafka's rule for a metadata change, as the chapter's
// for a membership change. A member's subscription stays as the client
// sent it; the assignment, made from the catalog, skips a topic that no
// longer exists and covers partitions that were added. It returns the
// rebalances, sorted by group, which it also reports.
func (c *Coordinator) TopicsChanged(why Reason, topics ...string) []Rebalance {
	c.lockForChange()
	var out []Rebalance
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		g := c.groups[id]
		if len(g.members) == 0 {
			continue
		}
		affected := subscribesTo(g, topics)
		if g.typ == ConsumerGroup && c.rematch(g) {
			affected = true
		}
		if affected {
			out = append(out, c.rebalance(g, why))
		}
	}
	c.mu.Unlock()
	c.report(out...)
	return out
}

// subscribesTo reports whether a member of g subscribes to one of
// topics. Called with mu held.
func subscribesTo(g *group, topics []string) bool {
	for _, m := range g.members {
		for _, t := range m.subscription(g.protocol) {
			if slices.Contains(topics, t) {
				return true
			}
		}
	}
	return false
}

// DeleteTopicOffsets removes every group's committed offsets of topic,
// durably, after the topic was deleted: a topic created again under the
// name starts with none. A group known only by its offsets that loses
// the last of them is deleted with them. It returns how many groups had
// offsets of the topic.
func (c *Coordinator) DeleteTopicOffsets(topic string) (int, error) {
	c.mu.Lock()
	var waits []func() error
	var touched []string
	for _, group := range c.store.Groups() {
		var keys []offsets.Key
		for _, e := range c.store.Committed(group) {
			if e.Topic == topic {
				keys = append(keys, offsets.Key{Topic: e.Topic, Partition: e.Partition})
			}
		}
		if len(keys) > 0 {
			waits = append(waits, c.track(group, c.store.DeleteOffsets(group, keys)))
			touched = append(touched, group)
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, wait := range waits {
		errs = append(errs, wait())
	}
	if err := errors.Join(errs...); err != nil {
		return len(touched), err
	}
	var deleted []string
	for _, group := range touched {
		c.mu.Lock()
		_, stateful := c.groups[group]
		c.mu.Unlock()
		if !stateful && c.forgetIfGone(group) {
			deleted = append(deleted, group)
		}
	}
	c.reportDeleted("last offset deleted", deleted)
	return len(touched), nil
}
