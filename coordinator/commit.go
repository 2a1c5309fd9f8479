package coordinator

import (
	"fmt"
	"slices"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/offsets"
)

// Commit stores a group member's offsets (the chapter's
// GroupCoordinator.commit). Checks run in the chapter's order, and the
// commit is all-or-nothing: an unknown group (ErrUnknownMemberID), a group
// that is not Stable (ErrRebalanceInProgress), a generation other than the
// current one (ErrIllegalGeneration), an unknown member
// (ErrUnknownMemberID), any partition not assigned to the member, existing
// or not (ErrNotPartitionOwner), an offset below -2 (offsets.ErrNegativeOffset:
// -1 and -2, the reset sentinels a client commits when it resets, are
// stored as Kafka stores them) or metadata over Config.MaxMetadataBytes
// (offsets.ErrMetadataTooLarge) stores nothing. A consumer (KIP-848) group has rules of its own: see
// CommitMember.
//
// The commit is validated and ordered under the coordinator's lock and
// made durable after it is released; Commit returns once the store reports
// it durable. A commit does not renew the member's session.
//
// Before all that, an over-long or non-text group id is ErrInvalidGroupID
// (the empty group id is allowed, as Kafka allows it in OffsetCommit) and
// an over-long or non-text member id ErrInvalidMemberID.
func (c *Coordinator) Commit(group, memberID string, generation int32, entries []offsets.Entry) error {
	return c.CommitMember(CommitRequest{Group: group, MemberID: memberID, Generation: generation, Entries: entries})
}

// CommitRequest is one group member's OffsetCommit.
type CommitRequest struct {
	Group    string
	MemberID string
	// Generation is the classic generation, or a consumer-protocol
	// member's epoch (OffsetCommit v9 carries it in the same field).
	Generation int32
	Entries    []offsets.Entry
	// NoMemberEpoch marks a request whose version cannot carry a member
	// epoch (OffsetCommit before v9): a consumer-protocol member's commit
	// is then ErrUnsupportedVersion.
	NoMemberEpoch bool
	// InstanceID is the group instance id a static member names
	// (OffsetCommit v7+): in a classic group, identity is checked first
	// (ErrFencedInstanceID, static.go).
	InstanceID string
}

// CommitMember is Commit with the request's version taken into account.
// A classic group applies Commit's rules. A consumer (KIP-848) group
// applies Kafka's ConsumerGroup.validateOffsetCommit, then the chapter's
// ownership check: an unknown member is ErrUnknownMemberID, a request
// that cannot carry a member epoch ErrUnsupportedVersion, an epoch other
// than the member's current one ErrStaleMemberEpoch (exact, as Kafka up to
// 4.2), and a partition outside the member's current assignment
// ErrNotPartitionOwner. A consumer group never refuses a commit for its
// state: a Reconciling group's members commit at their own epochs.
func (c *Coordinator) CommitMember(req CommitRequest) error {
	if err := c.checkGroupID(req.Group); err != nil {
		return err
	}
	if err := c.checkMemberID(req.MemberID); err != nil {
		return err
	}
	// What depends on the request alone runs before mu: the offsets rules
	// (reported only after the fencing check, in the chapter's order) and
	// the copy the store is given. Under mu: the fence, the commit time
	// and the place in the order.
	entriesErr := c.validateEntries(req.Entries)
	var stamped []offsets.Entry
	if entriesErr == nil && len(req.Entries) > 0 {
		stamped = slices.Clone(req.Entries)
	}
	c.mu.Lock()
	wait, err := c.enqueueGroupCommit(req, entriesErr, stamped)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return wait()
}

// enqueueGroupCommit fences req and orders stamped, its entries' copy
// (nil when there are none or entriesErr refused them). Called with mu
// held.
func (c *Coordinator) enqueueGroupCommit(req CommitRequest, entriesErr error, stamped []offsets.Entry) (func() error, error) {
	if err := c.validateCommit(req); err != nil {
		return nil, err
	}
	if entriesErr != nil {
		return nil, entriesErr
	}
	if len(stamped) == 0 {
		return func() error { return nil }, nil
	}
	now := c.clock.Now().UnixMilli()
	for i := range stamped {
		stamped[i].CommitTimestampMs = now
	}
	return c.track(req.Group, c.store.Enqueue(req.Group, stamped)), nil
}

// validateCommit is the one place a member's commit is fenced: the
// chapter's checks in the chapter's order for a classic group, the
// consumer-group rules for a KIP-848 one. OffsetCommit and
// TxnOffsetCommit (txn_commit.go) both run it. Called with mu held.
func (c *Coordinator) validateCommit(req CommitRequest) error {
	group, memberID, generation := req.Group, req.MemberID, req.Generation
	g := c.groups[group]
	if g == nil {
		return fmt.Errorf("%w: unknown group %q", ErrUnknownMemberID, group)
	}
	if g.typ == ConsumerGroup {
		return c.validateConsumerCommit(g, req)
	}
	if err := checkIdentity(g, memberID, req.InstanceID); err != nil {
		return err
	}
	if g.state != Stable {
		return fmt.Errorf("%w: group %q is %s", ErrRebalanceInProgress, group, g.state)
	}
	if generation != g.generation {
		return fmt.Errorf("%w: %d, group %q is at %d", ErrIllegalGeneration, generation, group, g.generation)
	}
	if _, ok := g.members[memberID]; !ok {
		return fmt.Errorf("%w: %q is not in group %q", ErrUnknownMemberID, memberID, group)
	}
	for _, e := range req.Entries {
		tp := assignor.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		if owner := g.owner[tp]; owner != memberID {
			return fmt.Errorf("%w: %q does not own %s in generation %d", ErrNotPartitionOwner, memberID, tp, g.generation)
		}
	}
	return nil
}

// validateConsumerCommit applies CommitMember's consumer-group rules.
// Called with mu held.
func (c *Coordinator) validateConsumerCommit(g *group, req CommitRequest) error {
	m := g.members[req.MemberID]
	if m == nil {
		return fmt.Errorf("%w: %q is not in consumer group %q", ErrUnknownMemberID, req.MemberID, g.id)
	}
	if req.NoMemberEpoch {
		return fmt.Errorf("%w: OffsetCommit v9 or later must be used by members of consumer group %q", ErrUnsupportedVersion, g.id)
	}
	if req.Generation != m.epoch {
		return fmt.Errorf("%w: %d, member %q is at epoch %d", ErrStaleMemberEpoch, req.Generation, m.id, m.epoch)
	}
	for _, e := range req.Entries {
		tp := assignor.TopicPartition{Topic: e.Topic, Partition: e.Partition}
		if owner := g.owner[tp]; owner != m.id {
			return fmt.Errorf("%w: %q does not own %s at member epoch %d", ErrNotPartitionOwner, m.id, tp, m.epoch)
		}
	}
	return nil
}

// CommitDirect stores offsets for a consumer with a manual assignment: no
// member, no generation, no fencing, as the chapter's Consumer.commit does
// for directly assigned consumers. Kafka accepts such commits only while
// the group is Empty; see docs/behavior-matrix.md. Every partition must
// exist (ErrUnknownTopic); offsets and metadata are checked as for Commit.
// All-or-nothing. The group id is checked as for Commit; a commit that
// would create a group beyond Config.MaxGroups is ErrTooManyGroups.
func (c *Coordinator) CommitDirect(group string, entries []offsets.Entry) error {
	if err := c.checkGroupID(group); err != nil {
		return err
	}
	c.mu.Lock()
	wait, err := c.enqueueDirectCommit(group, entries)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return wait()
}

func (c *Coordinator) enqueueDirectCommit(group string, entries []offsets.Entry) (func() error, error) {
	if err := c.validateDirect(entries); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return func() error { return nil }, nil
	}
	// After every other check, so a rejected commit admits no group. A
	// commit the disk then refuses leaves its group counted: the count
	// can only err on the safe side (and the retention sweep, or a
	// DeleteGroups answered GROUP_ID_NOT_FOUND, forgets it).
	if err := c.admitGroup(group); err != nil {
		return nil, err
	}
	if g := c.groups[group]; g == nil || len(g.members) == 0 {
		c.retainAt(group, c.clock.Now().Add(c.retention))
	}
	return c.track(group, c.store.Enqueue(group, c.stamp(entries))), nil
}

// validateDirect checks a commit that names no member: every partition
// must exist, and the entries must pass the offsets rules. Called with mu
// held.
func (c *Coordinator) validateDirect(entries []offsets.Entry) error {
	for _, e := range entries {
		if !catalog.HasPartition(c.topics, e.Topic, e.Partition) {
			return fmt.Errorf("%w: %s-%d", ErrUnknownTopic, e.Topic, e.Partition)
		}
	}
	return c.validateEntries(entries)
}

// stamp sets each entry's commit time to now, as Kafka records an
// offset's commit timestamp: what offsets retention measures from. The
// caller's slice is not changed.
func (c *Coordinator) stamp(entries []offsets.Entry) []offsets.Entry {
	now := c.clock.Now().UnixMilli()
	out := make([]offsets.Entry, len(entries))
	for i, e := range entries {
		e.CommitTimestampMs = now
		out[i] = e
	}
	return out
}

// validateEntries applies the offsets package's rules with the configured
// metadata limit, which may be below the store's.
func (c *Coordinator) validateEntries(entries []offsets.Entry) error {
	return offsets.Validate(entries, c.maxMetadata)
}

// Committed returns group's committed offsets, sorted by topic and
// partition (OffsetFetch). It reads the store, which holds only what is
// durable.
func (c *Coordinator) Committed(group string) []offsets.Entry {
	return c.store.Committed(group)
}

// CommittedOffset returns one partition's committed offset, without
// copying the rest of the group's (OffsetFetch of named partitions).
func (c *Coordinator) CommittedOffset(group, topic string, partition int32) (offsets.Entry, bool) {
	return c.store.Lookup(group, topic, partition)
}
