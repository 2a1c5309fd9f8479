package coordinator

// Static membership (KIP-345 for classic groups, KIP-848's instance ids
// for consumer groups; docs/design.md's member identity section).
//
// The chapter asks every member two questions: "who are you?" and "which
// assignment version are you acting under?". A group instance id answers
// the first across restarts: a member that comes back under the same
// instance id is the same member, so it takes its old assignment back
// without a new generation and nobody else's partitions move. The
// generation (or member epoch) still answers the second, and a request
// from the old incarnation (the zombie of the previous run) is fenced on
// identity before the chapter's checks run: FENCED_INSTANCE_ID.

import (
	"fmt"

	"github.com/minibroker/minibroker/assignor"
)

// checkInstanceID bounds a group instance id as a client id is bounded
// (Config.MaxIDBytes, text): a static member's id is the instance id plus
// "-<sequence>". The empty instance id means a dynamic member.
func (c *Coordinator) checkInstanceID(id string) error {
	if len(id) > c.maxIDBytes {
		return fmt.Errorf("%w: instance id of %d bytes, limit %d", ErrInvalidMemberID, len(id), c.maxIDBytes)
	}
	if !validText(id) {
		return fmt.Errorf("%w: instance id %q is not UTF-8 text without control characters", ErrInvalidMemberID, id)
	}
	return nil
}

// staticMember returns the member of g holding instanceID, nil if none
// does (or instanceID is empty). Called with mu held.
func (g *group) staticMember(instanceID string) *member {
	if instanceID == "" {
		return nil
	}
	for _, m := range g.members {
		if m.instanceID == instanceID {
			return m
		}
	}
	return nil
}

// checkIdentity is the first question, asked before the chapter's order
// (generation, membership, ownership): a request that names an instance
// id with a member id other than the one the instance holds now comes
// from an incarnation that was replaced, and is ErrFencedInstanceID (as
// Kafka's ClassicGroup.validateMember and
// GroupMetadataManager.throwIfInstanceIdIsFenced). An instance id no
// member holds says nothing here: the chapter's checks then answer
// (unknown member). Called with mu held.
func checkIdentity(g *group, memberID, instanceID string) error {
	if m := g.staticMember(instanceID); m != nil && m.id != memberID {
		return fmt.Errorf("%w: instance %q of group %q is member %q now, not %q", ErrFencedInstanceID, instanceID, g.id, m.id, memberID)
	}
	return nil
}

// replaceMember moves old's place in g (its assignment, the partitions it
// owns, the leadership) to the new member id newID: a static member's
// restart. The generation does not move. Called with mu held.
func (g *group) replaceMember(old *member, newID string) {
	delete(g.members, old.id)
	if parts, ok := g.assignment[old.id]; ok {
		delete(g.assignment, old.id)
		g.assignment[newID] = parts
	}
	for tp, owner := range g.owner {
		if owner == old.id {
			g.owner[tp] = newID
		}
	}
	if g.leader == old.id {
		g.leader = newID
	}
	old.id = newID
	g.members[newID] = old
}

// assignOrderKey is where a member sorts for the assignor and the leader
// choice: static members first, by instance id, then dynamic ones by
// member id, as Kafka's AbstractPartitionAssignor.MemberInfo compares
// them (KIP-345), so that a static member's new member id after a restart
// moves no partition.
func (m *member) assignOrderKey() string {
	if m.instanceID != "" {
		return "0" + m.instanceID
	}
	return "1" + m.id
}

// sortsBefore reports whether m sorts before o by assignOrderKey, without
// building the keys.
func (m *member) sortsBefore(o *member) bool {
	switch {
	case (m.instanceID != "") != (o.instanceID != ""):
		return m.instanceID != ""
	case m.instanceID != "":
		return m.instanceID < o.instanceID
	}
	return m.id < o.id
}

// firstInAssignOrder returns the member id that sorts first by
// assignOrderKey: the group leader. Called with mu held; g has members.
func (g *group) firstInAssignOrder() string {
	var first *member
	for _, m := range g.members {
		if first == nil || m.sortsBefore(first) {
			first = m
		}
	}
	return first.id
}

// assign runs an assignor over subs (member id to topics) with every
// member under its assignOrderKey, and returns the assignment by member
// id. Called with mu held.
func (g *group) assign(subs map[string][]string, counts map[string]int32,
	fn func(map[string][]string, map[string]int32) map[string][]assignor.TopicPartition) map[string][]assignor.TopicPartition {
	static := false
	for _, m := range g.members {
		static = static || m.instanceID != ""
	}
	if !static { // member ids sort as their keys do
		return fn(subs, counts)
	}
	keyed := make(map[string][]string, len(subs))
	ids := make(map[string]string, len(subs))
	for id, topics := range subs {
		k := g.members[id].assignOrderKey()
		keyed[k], ids[k] = topics, id
	}
	out := make(map[string][]assignor.TopicPartition, len(subs))
	for k, parts := range fn(keyed, counts) {
		out[ids[k]] = parts
	}
	return out
}

// StaticRestart is what a static member's restart reports through
// Config.OnRebalance: a Rebalance with ReasonStaticRestart at the
// group's unchanged generation, naming the old and the new member id.
func staticRestart(g *group, oldID, newID string) Rebalance {
	return Rebalance{Group: g.id, Generation: g.generation, Reason: ReasonStaticRestart, State: g.state,
		Members: g.sortedMemberIDs(), Assignment: g.assignment, Replaced: oldID, ReplacedBy: newID}
}

// staticJoin is a classic JoinGroup with an instance id and an empty
// member id (KIP-345): the member joins at once, never
// ErrMemberIDRequired, under a new id "<instance id>-<sequence>". When
// the instance is already a member and asks for the same subscription,
// it is that member restarted: it takes the old member's place, its
// assignment and the leadership if it had it, and the generation stays
// (ReasonStaticRestart); the old member id is fenced from then on
// (checkIdentity). Another subscription is a new generation
// (ReasonSubscription), as for any member (Kafka keeps the old
// generation while Stable and rebalances only if the leader's
// subscription changed: docs/behavior-matrix.md). ok is false when the
// instance is not a member: the caller joins it as a new member. Called
// with mu held.
func (c *Coordinator) staticJoin(g *group, joining *member) (res JoinResult, reb *Rebalance, ok bool) {
	old := g.staticMember(joining.instanceID)
	if old == nil {
		return JoinResult{}, nil, false
	}
	joining.id = c.newMemberID(joining.instanceID)
	if g.state != Stable || !sameSubscription(old, joining) {
		delete(g.members, old.id)
		g.members[joining.id] = joining
		r := c.rebalance(g, ReasonSubscription)
		return c.joinResult(g, joining.id, true), &r, true
	}
	oldID := old.id
	g.replaceMember(old, joining.id)
	old.clientID, old.clientHost = joining.clientID, joining.clientHost
	old.sessionTimeout, old.deadline = joining.sessionTimeout, joining.deadline
	old.protocols = joining.protocols // same names and topics; metadata may differ
	old.known = 0                     // the new incarnation has been told nothing yet
	r := staticRestart(g, oldID, joining.id)
	return c.joinResult(g, joining.id, false), &r, true
}

// LeaveMember names one member of a LeaveGroup v3+: by member id, by
// instance id, or both.
type LeaveMember struct {
	MemberID   string
	InstanceID string
}

// LeaveMembers is Leave for a LeaveGroup v3+ batch, whose members may be
// named by instance id (KIP-345): an empty member id with an instance id
// is the member holding that instance; a member id that is not the
// instance's current one is ErrFencedInstanceID for that entry, which
// leaves nothing. The members found leave in one rebalance, as Leave's.
// It returns, per entry in the order given, the member id that left ("" if
// none) and the entry's error.
func (c *Coordinator) LeaveMembers(group string, ms []LeaveMember) (left []string, errs []error) {
	left, errs = make([]string, len(ms)), make([]error, len(ms))
	c.lockForChange()
	g := c.groups[group]
	if g == nil || g.typ == ConsumerGroup {
		c.mu.Unlock()
		return left, errs
	}
	ids := make([]string, 0, len(ms))
	for i, lm := range ms {
		id := lm.MemberID
		if m := g.staticMember(lm.InstanceID); m != nil && id == "" {
			id = m.id
		}
		if err := checkIdentity(g, id, lm.InstanceID); err != nil {
			errs[i] = err
			continue
		}
		m := g.members[id]
		if m != nil && lm.InstanceID != "" && m.instanceID != lm.InstanceID {
			continue // not that instance: unknown, a no-op as any unknown member's leave
		}
		if m != nil {
			left[i] = id
		}
		ids = append(ids, id)
	}
	r, ok := c.leave(g, ids)
	c.mu.Unlock()
	if ok {
		c.report(r)
	}
	return left, errs
}
