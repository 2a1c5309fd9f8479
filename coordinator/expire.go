package coordinator

import (
	"cmp"
	"fmt"
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
// Classic and consumer (KIP-848) groups expire in the same pass; a
// consumer group's rebalance bumps its group epoch. With
// Config.OffsetsRetention set, the same step expires committed offsets
// and deletes groups (retention.go); ExpireStep returns those too. The
// step logs what it removed ("member expired", with the group and the
// member, at Info): whoever runs it, the server's ticker, the admin API or
// the embedding broker, logs nothing of its own.
func (c *Coordinator) Expire() []Expired {
	return c.ExpireStep().Members
}

// ExpiryResult is what one expiry step removed.
type ExpiryResult struct {
	// Members are the members whose sessions ended, sorted by group and
	// member id.
	Members []Expired
	// Offsets are the groups offsets retention removed offsets from, or
	// deleted, sorted by group; none when retention is off.
	Offsets []ExpiredOffsets
}

// ExpireStep is Expire, returning what offsets retention removed as
// well. Members expire first, so a group that loses its last member in
// this step is Empty when retention looks at it.
func (c *Coordinator) ExpireStep() ExpiryResult {
	c.lockForChange()
	now := c.clock.Now()
	expired, rs := c.expireMembers(now)
	sweep := c.sweepRetention(now)
	c.mu.Unlock()
	slices.SortFunc(rs, func(a, b Rebalance) int { return cmp.Compare(a.Group, b.Group) })
	c.report(rs...)
	slices.SortFunc(expired, func(a, b Expired) int {
		if r := cmp.Compare(a.Group, b.Group); r != 0 {
			return r
		}
		return cmp.Compare(a.MemberID, b.MemberID)
	})
	for _, e := range expired {
		c.logExpired(e)
	}
	res := ExpiryResult{Members: expired, Offsets: c.finishSweep(sweep)}
	c.runExpireHooks()
	return res
}

// logExpired writes the one "member expired" line, for the expiry step and
// for ExpireMember (which adds by=request).
func (c *Coordinator) logExpired(e Expired, attrs ...any) {
	c.logger.Info("member expired", append([]any{"group", e.Group, "member", e.MemberID}, attrs...)...)
}

// expireMembers removes the members and pending ids whose deadlines are
// before now and rebalances each group that lost members. It returns at
// once while now has not passed expireFloor. Called with mu held.
func (c *Coordinator) expireMembers(now time.Time) ([]Expired, []Rebalance) {
	if !now.After(c.expireFloor) {
		return nil, nil // every deadline is at or after the floor: nobody is past it
	}
	var expired []Expired
	var rs []Rebalance
	floor := farFuture() // the floor when no deadline is pending
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
			rs = append(rs, c.rebalance(g, ReasonExpiry))
		}
	}
	c.expireFloor = floor
	return expired, rs
}

// lowerExpireFloor keeps expireFloor at or below deadline. Called with mu
// held wherever a deadline is set.
func (c *Coordinator) lowerExpireFloor(deadline time.Time) {
	if deadline.Before(c.expireFloor) {
		c.expireFloor = deadline
	}
}

// ExpireMember ends one member's session now, as the expiry step would
// once its deadline passed: the member is removed and its group
// rebalances (ReasonExpiry), so the member's next heartbeat or commit is
// fenced. It is how a test or an operator fences a live client on
// demand, whose heartbeats would otherwise renew its lease for ever.
// An unknown group or member is ErrUnknownMemberID.
func (c *Coordinator) ExpireMember(group, memberID string) error {
	c.lockForChange()
	g := c.groups[group]
	if g == nil || g.members[memberID] == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %q is not in group %q", ErrUnknownMemberID, memberID, group)
	}
	delete(g.members, memberID)
	r := c.rebalance(g, ReasonExpiry)
	c.mu.Unlock()
	c.logExpired(Expired{Group: group, MemberID: memberID}, "by", "request")
	c.report(r)
	return nil
}

// ForceRebalance starts a new generation of group with the same members
// (ReasonForced): every member's generation is stale at once, so each is
// fenced at its next heartbeat or commit and re-joins. A group with no
// members has nothing to rebalance: ErrUnknownGroup for an unknown
// group, nil and no new generation for an Empty one. A consumer (KIP-848)
// group's group epoch moves on instead: nobody is fenced, each member
// moves to the new epoch (with the same target, the assignors being
// deterministic) at its next heartbeat, and commits at its own epoch
// until then.
func (c *Coordinator) ForceRebalance(group string) error {
	c.lockForChange()
	g := c.groups[group]
	if g == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w %q", ErrUnknownGroup, group)
	}
	if len(g.members) == 0 {
		c.mu.Unlock()
		return nil
	}
	r := c.rebalance(g, ReasonForced)
	c.mu.Unlock()
	c.report(r)
	return nil
}
