package coordinator

import "fmt"

// What one member, and one group, may make the coordinator hold. A
// member's bytes are what it sent and the coordinator keeps and hands
// back: its protocols' names, metadata and subscribed topics (classic), or
// its subscribed topic names (consumer protocol). Without a bound, 64
// members with 1 MiB of metadata each make every leader's JoinGroup answer
// and every DescribeGroups 64 MiB, and a few concurrent DescribeGroups
// hold gigabytes (docs/reliability.md). Kafka has no such limits.
const (
	// DefaultMaxMemberMetadataBytes is Config.MaxMemberMetadataBytes's
	// default: far above a real consumer's (kgo's cooperative-sticky
	// metadata lists the partitions it owns: 4 bytes each).
	DefaultMaxMemberMetadataBytes = 1 << 20
	// DefaultMaxGroupMetadataBytes is Config.MaxGroupMetadataBytes's
	// default.
	DefaultMaxGroupMetadataBytes = 8 << 20
)

// metadataBytes is what m makes the coordinator hold, in bytes.
func (m *member) metadataBytes() int {
	n := len(m.regex)
	for _, t := range m.topics {
		n += len(t)
	}
	for _, p := range m.protocols {
		n += len(p.Name) + len(p.Metadata)
		for _, t := range p.Topics {
			n += len(t)
		}
	}
	return n
}

// checkMemberMetadata refuses a member that sends more than
// Config.MaxMemberMetadataBytes (ErrMemberMetadataTooLarge).
func (c *Coordinator) checkMemberMetadata(m *member) error {
	if n := m.metadataBytes(); n > c.maxMemberMetadata {
		return fmt.Errorf("%w: %d bytes of protocol metadata and subscriptions, limit %d", ErrMemberMetadataTooLarge, n, c.maxMemberMetadata)
	}
	return nil
}

// checkGroupMetadata refuses m in g when g's members, m in the place of
// the member of its id, would hold more than Config.MaxGroupMetadataBytes:
// the group is full, in bytes (ErrGroupMaxSizeReached). Called with mu
// held.
func (c *Coordinator) checkGroupMetadata(g *group, m *member) error {
	if err := c.checkMemberMetadata(m); err != nil {
		return err
	}
	total := m.metadataBytes()
	for id, other := range g.members {
		if id != m.id {
			total += other.metadataBytes()
		}
	}
	if total > c.maxGroupMetadata {
		return fmt.Errorf("%w: group %q would hold %d bytes of protocol metadata and subscriptions, limit %d",
			ErrGroupMaxSizeReached, g.id, total, c.maxGroupMetadata)
	}
	return nil
}

// DescribeBytes bounds the bytes of metadata, subscriptions and
// assignments that describing groups hands back: what a DescribeGroups or
// a leader's JoinGroup answer holds, for the server to reserve before it
// builds one. Unknown groups count nothing.
func (c *Coordinator) DescribeBytes(groups ...string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, id := range groups {
		g := c.groups[id]
		if g == nil {
			continue
		}
		for _, m := range g.members {
			// Ids, client id and host, and an assignment of at most
			// every subscribed partition (a topic name and 4 bytes each).
			n += int64(m.metadataBytes() + len(m.id) + len(m.clientID) + len(m.clientHost) + 64)
			n += int64(len(g.assignment[m.id])+len(m.current)) * 8
		}
	}
	return n
}
