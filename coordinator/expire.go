package coordinator

import (
	"cmp"
	"slices"
	"time"
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
	if !now.After(c.expireFloor) {
		c.mu.Unlock()
		return nil // every deadline is at or after the floor: nobody is past it
	}
	var expired []Expired
	var rs []Rebalance
	floor := time.Unix(1<<40, 0) // far future: the floor when no deadline is pending
	for _, g := range c.groups {
		for id, deadline := range g.pending {
			if now.After(deadline) {
				delete(g.pending, id)
			} else if deadline.Before(floor) {
				floor = deadline
			}
		}
		lost := false
		for id, m := range g.members {
			if now.After(m.deadline) {
				delete(g.members, id)
				expired = append(expired, Expired{Group: g.id, MemberID: id})
				lost = true
			} else if m.deadline.Before(floor) {
				floor = m.deadline
			}
		}
		if lost {
			rs = append(rs, c.rebalance(g))
		}
	}
	c.expireFloor = floor
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

// lowerExpireFloor keeps expireFloor at or below deadline. Called with mu
// held wherever a deadline is set.
func (c *Coordinator) lowerExpireFloor(deadline time.Time) {
	if deadline.Before(c.expireFloor) {
		c.expireFloor = deadline
	}
}
