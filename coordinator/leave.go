package coordinator

import "slices"

// Leave removes the named members from group and rebalances once if any of
// them was a member (a batch leave is one rebalance). Unknown members and
// unknown groups are a no-op, as in the chapter (GroupCoordinator.leave is
// idempotent); Kafka answers UNKNOWN_MEMBER_ID instead. A pending member id
// is forgotten. It returns the ids that were members, in the order given.
// A consumer (KIP-848) group's members leave with ConsumerHeartbeat: a
// classic leave for one is a no-op (Kafka: UNKNOWN_MEMBER_ID). Members
// named by instance id leave with LeaveMembers (static.go).
func (c *Coordinator) Leave(group string, memberIDs ...string) []string {
	c.lockForChange()
	g := c.groups[group]
	if g == nil || g.typ == ConsumerGroup {
		c.mu.Unlock()
		return nil
	}
	var left []string
	for _, id := range memberIDs {
		if _, ok := g.members[id]; ok && !slices.Contains(left, id) {
			left = append(left, id)
		}
	}
	r, ok := c.leave(g, memberIDs)
	c.mu.Unlock()
	if ok {
		c.report(r)
	}
	return left
}

// leave removes the members of g named by ids, forgets pending ids among
// them, and rebalances once if any was a member; ok is false when none
// was. Called with mu held.
func (c *Coordinator) leave(g *group, ids []string) (r Rebalance, ok bool) {
	for _, id := range ids {
		delete(g.pending, id)
		if _, found := g.members[id]; found {
			delete(g.members, id)
			ok = true
		}
	}
	if !ok {
		return Rebalance{}, false
	}
	return c.rebalance(g, ReasonLeave), true
}
