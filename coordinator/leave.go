package coordinator

// Leave removes the named members from group and rebalances once if any of
// them was a member (a batch leave is one rebalance). Unknown members and
// unknown groups are a no-op, as in the chapter (GroupCoordinator.leave is
// idempotent); Kafka answers UNKNOWN_MEMBER_ID instead. A pending member id
// is forgotten. It returns the ids that were members, in the order given.
// A consumer (KIP-848) group's members leave with ConsumerHeartbeat: a
// classic leave for one is a no-op (Kafka: UNKNOWN_MEMBER_ID).
func (c *Coordinator) Leave(group string, memberIDs ...string) []string {
	c.mu.Lock()
	g := c.groups[group]
	if g == nil || g.typ == ConsumerGroup {
		c.mu.Unlock()
		return nil
	}
	var left []string
	for _, id := range memberIDs {
		delete(g.pending, id)
		if _, ok := g.members[id]; ok {
			delete(g.members, id)
			left = append(left, id)
		}
	}
	if len(left) == 0 {
		c.mu.Unlock()
		return nil
	}
	r := c.rebalance(g, ReasonLeave)
	c.mu.Unlock()
	c.report(r)
	return left
}
