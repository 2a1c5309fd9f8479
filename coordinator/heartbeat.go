package coordinator

import "fmt"

// Heartbeat renews a member's session lease: its deadline becomes now plus
// its session timeout. Checks run in the chapter's order
// (GroupCoordinator.heartbeat): an unknown group is ErrUnknownMemberID, a
// generation other than the current one is ErrIllegalGeneration, and only
// then is an unknown member ErrUnknownMemberID. Kafka checks membership
// first; see docs/behavior-matrix.md. A heartbeat never expires anyone.
// A consumer (KIP-848) group has no classic members: ErrUnknownMemberID.
// Before all that, a group id that ValidateGroupID refuses is
// ErrInvalidGroupID and an over-long member id ErrInvalidMemberID.
func (c *Coordinator) Heartbeat(group, memberID string, generation int32) error {
	return c.HeartbeatInstance(group, memberID, "", generation)
}

// HeartbeatInstance is Heartbeat from a member that names its group
// instance id (Heartbeat v3+): the identity question comes first, right
// after the group's, and a member id the instance no longer holds is
// ErrFencedInstanceID (static.go); then the chapter's order.
func (c *Coordinator) HeartbeatInstance(group, memberID, instanceID string, generation int32) error {
	if err := c.checkIDs(group, memberID); err != nil {
		return err
	}
	c.lockForChange() // a heartbeat moves the member's known generation
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return fmt.Errorf("%w: unknown group %q", ErrUnknownMemberID, group)
	}
	if g.typ == ConsumerGroup {
		return fmt.Errorf("%w: %q is a consumer (KIP-848) group; %q is no classic member of it", ErrUnknownMemberID, group, memberID)
	}
	if err := checkIdentity(g, memberID, instanceID); err != nil {
		return err
	}
	if generation != g.generation {
		return fmt.Errorf("%w: %d, group %q is at %d", ErrIllegalGeneration, generation, group, g.generation)
	}
	m := g.members[memberID]
	if m == nil {
		return fmt.Errorf("%w: %q is not in group %q", ErrUnknownMemberID, memberID, group)
	}
	m.deadline = c.clock.Now().Add(m.sessionTimeout)
	m.known = g.generation
	return nil
}
