package coordinator

import (
	"cmp"
	"slices"
)

// Expired names one member removed by Expire.
type Expired struct {
	Group    string
	MemberID string
}

// Expire is the chapter's explicit expiry step
// (GroupCoordinator.expire_members): it removes every member whose
// deadline is strictly before now (at the exact deadline a member is still
// alive), runs one rebalance per group that lost members, and returns the
// removed (group, member) pairs sorted. Pending member ids past their
// deadline are forgotten too, silently. Nothing expires anywhere else.
func (c *Coordinator) Expire() []Expired {
	c.mu.Lock()
	now := c.clock.Now()
	var expired []Expired
	var rs []Rebalance
	for _, g := range c.groups {
		for id, deadline := range g.pending {
			if now.After(deadline) {
				delete(g.pending, id)
			}
		}
		lost := false
		for id, m := range g.members {
			if now.After(m.deadline) {
				delete(g.members, id)
				expired = append(expired, Expired{Group: g.id, MemberID: id})
				lost = true
			}
		}
		if lost {
			rs = append(rs, c.rebalance(g))
		}
	}
	c.mu.Unlock()
	slices.SortFunc(rs, func(a, b Rebalance) int { return cmp.Compare(a.Group, b.Group) })
	c.report(rs...)
	slices.SortFunc(expired, func(a, b Expired) int {
		if r := cmp.Compare(a.Group, b.Group); r != 0 {
			return r
		}
		return cmp.Compare(a.MemberID, b.MemberID)
	})
	return expired
}
