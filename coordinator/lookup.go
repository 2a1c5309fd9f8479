package coordinator

// Lookups by id, for callers that only need to know whether a group or a
// member exists now (the fault registry's warnings): cheaper than
// Describe, which copies the whole group.

import "slices"

// GroupExists reports whether group is known: a group with members or a
// history of them, or one known only by its committed offsets (what
// Describe reports with ok true).
func (c *Coordinator) GroupExists(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.groups[group]; ok {
		return true
	}
	_, ok := c.known[group]
	return ok
}

// MemberIDs returns the ids of group's members and of the member ids it
// handed out that have not joined yet (MEMBER_ID_REQUIRED), sorted; nil
// for an unknown group or one without members.
func (c *Coordinator) MemberIDs(group string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return nil
	}
	return g.memberAndPendingIDs()
}

// GroupsOfMember returns, sorted, the groups in which memberID is a
// member or a pending member id. It looks at every group.
func (c *Coordinator) GroupsOfMember(memberID string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, g := range c.groups {
		_, member := g.members[memberID]
		_, pending := g.pending[memberID]
		if member || pending {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// memberAndPendingIDs returns the ids of g's members and pending member
// ids, sorted.
func (g *group) memberAndPendingIDs() []string {
	if len(g.members)+len(g.pending) == 0 {
		return nil
	}
	ids := make([]string, 0, len(g.members)+len(g.pending))
	for id := range g.members {
		ids = append(ids, id)
	}
	for id := range g.pending {
		if _, ok := g.members[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
