package coordinator

import (
	"fmt"
	"slices"

	"github.com/minibroker/minibroker/assignor"
)

// Assignment is the chapter's refresh (GroupCoordinator.assignment): the
// group's current generation and the member's partitions. An unknown group
// or member gets ErrUnknownMemberID; a group that is not Stable gets
// ErrRebalanceInProgress. It changes nothing, not even the session.
func (c *Coordinator) Assignment(group, memberID string) (int32, []assignor.TopicPartition, error) {
	c.lockForChange() // a refresh moves the member's known generation
	defer c.mu.Unlock()
	g, err := c.knownMember(group, memberID)
	if err != nil {
		return 0, nil, err
	}
	if g.state != Stable {
		return 0, nil, fmt.Errorf("%w: group %q is %s", ErrRebalanceInProgress, group, g.state)
	}
	g.members[memberID].known = g.generation
	return g.generation, slices.Clone(g.assignment[memberID]), nil
}

// Sync answers a SyncGroup: the member's partitions in generation. It is
// the refresh with a generation check; the leader's plan plays no part,
// because the coordinator already assigned every partition at join. Ids
// are checked first, as for Heartbeat.
//
// protocol, when not empty, is the protocol name a SyncGroup v5 names; it
// must be the group's (ErrInconsistentGroupProtocol), checked after the
// generation as Kafka's GroupMetadataManager.validateSyncGroup does.
func (c *Coordinator) Sync(group, memberID string, generation int32, protocol string) ([]assignor.TopicPartition, error) {
	return c.SyncInstance(group, memberID, "", generation, protocol)
}

// SyncInstance is Sync from a member that names its group instance id
// (SyncGroup v3+): identity first, as HeartbeatInstance.
func (c *Coordinator) SyncInstance(group, memberID, instanceID string, generation int32, protocol string) ([]assignor.TopicPartition, error) {
	if err := c.checkIDs(group, memberID); err != nil {
		return nil, err
	}
	c.lockForChange()
	defer c.mu.Unlock()
	if g := c.groups[group]; g != nil && g.typ == ClassicGroup {
		if err := checkIdentity(g, memberID, instanceID); err != nil {
			return nil, err
		}
	}
	g, err := c.knownMember(group, memberID)
	if err != nil {
		return nil, err
	}
	if generation != g.generation {
		return nil, fmt.Errorf("%w: %d, group %q is at %d", ErrIllegalGeneration, generation, group, g.generation)
	}
	if protocol != "" && protocol != g.protocol {
		return nil, fmt.Errorf("%w: protocol %q, group %q uses %q", ErrInconsistentGroupProtocol, protocol, group, g.protocol)
	}
	if g.state != Stable {
		return nil, fmt.Errorf("%w: group %q is %s", ErrRebalanceInProgress, group, g.state)
	}
	g.members[memberID].known = g.generation
	return slices.Clone(g.assignment[memberID]), nil
}

// knownMember returns the group of a current classic member, or
// ErrUnknownMemberID for an unknown group or member, or a consumer group,
// whose members speak another protocol. Called with mu held.
func (c *Coordinator) knownMember(group, memberID string) (*group, error) {
	g := c.groups[group]
	if g == nil {
		return nil, fmt.Errorf("%w: unknown group %q", ErrUnknownMemberID, group)
	}
	if g.typ == ConsumerGroup {
		return nil, fmt.Errorf("%w: %q is a consumer (KIP-848) group; %q is no classic member of it", ErrUnknownMemberID, group, memberID)
	}
	if _, ok := g.members[memberID]; !ok {
		return nil, fmt.Errorf("%w: %q is not in group %q", ErrUnknownMemberID, memberID, group)
	}
	return g, nil
}
