package coordinator

// Static membership under KIP-848 (instance ids in ConsumerGroupHeartbeat),
// as Kafka 4's GroupMetadataManager handles them: a static member that
// heartbeats epoch -2 leaves for a while and keeps its place, its epoch
// answered as -2, its assignment held, until its session ends; a new member
// id joining (epoch 0) under the same instance id takes that place over
// without a new group epoch. An instance id still held by a live member is
// UNRELEASED_INSTANCE_ID; the member id it replaced is
// FENCED_INSTANCE_ID when it names the instance (UNKNOWN_MEMBER_ID when
// it does not, since that member id is gone).

import "fmt"

// consumerIdentity asks a ConsumerGroupHeartbeat the first question, before
// any epoch check, and changes nothing. A join (epoch 0) whose instance is
// held by another member id may take its place when that member left with
// StaticLeaveEpoch: takeover is that member (consumerJoin replaces it); a
// live one is ErrUnreleasedInstanceID. Any other request naming an instance
// must come from the member holding it: none is ErrUnknownMemberID (a
// leave of nobody is a no-op), another ErrFencedInstanceID; epoch -2
// without an instance id is ErrInvalidMemberID. Called with mu
// held; g may be nil or classic.
func (c *Coordinator) consumerIdentity(g *group, req ConsumerHeartbeatRequest) (takeover *member, err error) {
	if req.InstanceID == "" && req.MemberEpoch == StaticLeaveEpoch {
		return nil, fmt.Errorf("%w: epoch %d, a static member's leave, names no instance id", ErrInvalidMemberID, StaticLeaveEpoch)
	}
	if req.InstanceID == "" {
		return nil, nil
	}
	var m *member
	if g != nil && g.typ == ConsumerGroup {
		m = g.staticMember(req.InstanceID)
	}
	switch {
	case req.MemberEpoch == JoinEpoch && (m == nil || m.id == req.MemberID):
		return nil, nil
	case req.MemberEpoch == JoinEpoch && m.epoch != StaticLeaveEpoch:
		return nil, fmt.Errorf("%w: instance %q of group %q is held by live member %q", ErrUnreleasedInstanceID, req.InstanceID, g.id, m.id)
	case req.MemberEpoch == JoinEpoch:
		return m, nil
	case m == nil && req.MemberEpoch == LeaveEpoch:
		return nil, nil
	case m == nil:
		return nil, fmt.Errorf("%w: no member of group %q holds instance %q", ErrUnknownMemberID, req.Group, req.InstanceID)
	case m.id != req.MemberID:
		return nil, fmt.Errorf("%w: instance %q of group %q is member %q now, not %q", ErrFencedInstanceID, req.InstanceID, g.id, m.id, req.MemberID)
	}
	return nil, nil
}

// takeOver gives a new incarnation of a static member (a join with the
// instance id of a member at StaticLeaveEpoch) that member's place: its
// assignment, the partitions it owns, its subscription; its epoch starts
// at JoinEpoch, as Kafka's, and catchUp moves it to the group epoch.
// No new group epoch. It returns the member and the id it replaced.
// Called with mu held.
func (c *Coordinator) takeOver(g *group, old *member, req ConsumerHeartbeatRequest) (*member, string) {
	id := req.MemberID
	if id == "" { // v0: the broker makes the id
		id = c.newMemberID(req.ClientID)
	}
	replaced := old.id
	g.replaceMember(old, id)
	old.epoch = JoinEpoch
	return old, replaced
}

// consumerStaticLeave is StaticLeaveEpoch: the member stays, with its
// assignment and its session running (not renewed), at epoch -2, so that
// a new incarnation can take its place until the expiry step ends it.
// consumerIdentity has checked that the member holds the instance.
// Called with mu held.
func (c *Coordinator) consumerStaticLeave(g *group, req ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, error) {
	m := g.members[req.MemberID]
	m.epoch = StaticLeaveEpoch
	g.updateConsumerState()
	return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: StaticLeaveEpoch}, nil
}

// InstanceOf returns the group instance id member holds in group, "" for
// a dynamic member, an unknown one or an unknown group. kgo's temporary
// leave (epoch -2) names no instance id (kgo's leave848), which Kafka 4
// refuses; the server asks here whether the member id alone names a
// static member (docs/behavior-matrix.md).
func (c *Coordinator) InstanceOf(group, memberID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[group]; g != nil {
		if m := g.members[memberID]; m != nil {
			return m.instanceID
		}
	}
	return ""
}
