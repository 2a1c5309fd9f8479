package coordinator

// Deleting groups and committed offsets on request: Kafka's DeleteGroups
// (GroupCoordinatorShard.deleteGroups, GroupMetadataManager
// .validateDeleteGroup) and OffsetDelete (OffsetMetadataManager
// .deleteOffsets, with KafkaApis.handleOffsetDeleteRequest's topic
// checks), and what every deletion shares with the retention sweep
// (retention.go). The chapter never deletes a group; docs/design.md
// section 2 says when minibroker does.

import (
	"fmt"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/offsets"
)

// DeleteGroups deletes each group named that has no members, with its
// committed offsets, as Kafka's DeleteGroups does, and returns one error
// per name, in the order given (nil: deleted):
//
//   - an over-long or non-text id is ErrInvalidGroupID (the empty id
//     names a group like any other: OffsetCommit accepts it, and so does
//     Kafka's DeleteGroups);
//   - a group with neither state nor committed offsets, or one named a
//     second time, is ErrGroupIDNotFound;
//   - a group with members, classic or consumer (KIP-848), is
//     ErrNonEmptyGroup. Pending member ids (KIP-394) are not members:
//     Kafka's ClassicGroup.validateDeleteGroup looks only at the state,
//     which they do not change, so a group holding only them is deleted
//     and they are forgotten with it;
//   - a deletion the disk refuses is the store's error
//     (offsets.ErrStorage), and the group's offsets stay.
//
// A deleted group's state goes at once. The removal of its offsets is
// ordered under the lock with commits, as a commit is, and awaited after
// the lock is released: DeleteGroups returns once it is durable (a
// tombstone in the journal, so it holds across a restart). The group no
// longer counts against Config.MaxGroups; a later join or commit creates
// it anew.
func (c *Coordinator) DeleteGroups(groups ...string) []error {
	errs := make([]error, len(groups))
	waits := make([]func() error, len(groups))
	deleting := make(map[string]bool, len(groups))
	c.lockForChange()
	for i, id := range groups {
		if err := c.checkGroupID(id); err != nil {
			errs[i] = err
			continue
		}
		if g := c.groups[id]; g != nil && len(g.members) > 0 {
			errs[i] = fmt.Errorf("%w: group %q has %d members", ErrNonEmptyGroup, id, len(g.members))
			continue
		}
		if deleting[id] {
			errs[i] = fmt.Errorf("%w: %q, named twice", ErrGroupIDNotFound, id)
			continue
		}
		n, ok := c.exists(id)
		if !ok {
			c.forget(id) // counted, but nothing is left of it: a commit the disk refused
			errs[i] = fmt.Errorf("%w: %q", ErrGroupIDNotFound, id)
			continue
		}
		deleting[id] = true
		waits[i] = c.deleteGroup(id, n)
	}
	c.mu.Unlock()
	var deleted []string
	for i, wait := range waits {
		if wait == nil {
			continue
		}
		if errs[i] = wait(); errs[i] != nil {
			c.keepIfCommitted(groups[i])
			continue
		}
		deleted = append(deleted, groups[i])
	}
	c.reportDeleted("request", deleted)
	return errs
}

// DeleteOffsets removes group's committed offsets of the partitions
// named, as Kafka's OffsetDelete does. A group-level error comes first and
// decides alone:
//
//   - an empty, over-long or non-text group id is ErrInvalidGroupID
//     (Kafka's GroupCoordinatorService.deleteOffsets refuses the empty
//     id, unlike DeleteGroups);
//   - a group with neither state nor committed offsets is
//     ErrGroupIDNotFound;
//   - a removal the disk refuses is the store's error, and nothing is
//     removed.
//
// Otherwise it returns one error per partition, in the order given (nil:
// its offset, if there was one, is gone):
//
//   - a partition the catalog lacks is ErrUnknownTopic;
//   - a partition of a topic some member of the group subscribes to is
//     ErrGroupSubscribedToTopic, and its offset stays. A group without
//     members subscribes to nothing, so any offset of an Empty group can
//     go.
//
// The removal is ordered and made durable as DeleteGroups's is. A group
// known only by its offsets that loses the last of them is deleted with
// them: nothing is left of it.
func (c *Coordinator) DeleteOffsets(group string, parts []offsets.Key) ([]error, error) {
	if err := c.ValidateGroupID(group); err != nil {
		return nil, err
	}
	c.lockForChange()
	g := c.groups[group]
	if _, ok := c.exists(group); !ok {
		c.forget(group)
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrGroupIDNotFound, group)
	}
	subscribed := map[string]bool{}
	if g != nil {
		for _, m := range g.members {
			for _, t := range m.subscription(g.protocol) {
				subscribed[t] = true
			}
		}
	}
	errs := make([]error, len(parts))
	var keys []offsets.Key
	for i, k := range parts {
		switch {
		case !catalog.HasPartition(c.topics, k.Topic, k.Partition):
			errs[i] = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, k.Topic, k.Partition)
		case subscribed[k.Topic]:
			errs[i] = fmt.Errorf("%w: a member of group %q subscribes to %q", ErrGroupSubscribedToTopic, group, k.Topic)
		default:
			keys = append(keys, k)
		}
	}
	wait := func() error { return nil }
	if len(keys) > 0 {
		wait = c.track(group, c.store.DeleteOffsets(group, keys))
	}
	c.mu.Unlock()
	if err := wait(); err != nil {
		return nil, err
	}
	if g == nil && len(keys) > 0 && c.forgetIfGone(group) {
		c.reportDeleted("last offset deleted", []string{group})
	}
	return errs, nil
}

// exists reports whether group has state, committed offsets or a commit
// on its way to the store, and how many committed offsets it has. Called
// with mu held.
func (c *Coordinator) exists(group string) (committed int, ok bool) {
	committed = len(c.store.Committed(group))
	return committed, committed > 0 || c.groups[group] != nil || c.inflight[group] > 0
}

// deleteGroup removes group's state and its place among the known
// groups, and orders the removal of its committed offsets (committed of
// them, as exists counted) unless it has none, nor any on the way. It
// returns the wait for the removal. Called with mu held.
func (c *Coordinator) deleteGroup(group string, committed int) func() error {
	delete(c.groups, group)
	c.forget(group)
	if committed == 0 && c.inflight[group] == 0 {
		return func() error { return nil }
	}
	return c.track(group, c.store.Delete(group))
}

// forget removes group from the known groups (MaxGroups counts them) and
// from the retention schedule. Called with mu held.
func (c *Coordinator) forget(group string) {
	delete(c.known, group)
	delete(c.retainDue, group)
}

// forgetIfGone forgets group if nothing is left of it: no state, no
// committed offsets, nothing on its way to the store. It reports whether
// it did.
func (c *Coordinator) forgetIfGone(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, known := c.known[group]; !known {
		return false
	}
	if _, ok := c.exists(group); ok {
		return false
	}
	c.forget(group)
	return true
}

// keepIfCommitted counts group as known again after a removal of its
// offsets failed: it still has them, so it is a group known by its
// offsets, counted even beyond MaxGroups, as groups loaded at start are.
func (c *Coordinator) keepIfCommitted(group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.store.Committed(group)) > 0 {
		c.known[group] = struct{}{}
		c.retainAt(group, c.clock.Now())
	}
}

// track counts a store operation on group as in flight until its wait
// returns: a group with a commit on its way is never forgotten. The
// returned wait must be called exactly once, without mu held. Called with
// mu held.
func (c *Coordinator) track(group string, wait func() error) func() error {
	c.inflight[group]++
	return func() error {
		err := wait()
		c.mu.Lock()
		if c.inflight[group]--; c.inflight[group] <= 0 {
			delete(c.inflight, group)
		}
		c.mu.Unlock()
		c.wake() // durable now: what Committed reads has changed
		return err
	}
}

// reportDeleted logs each deleted group and tells the observer. Called
// without mu held.
func (c *Coordinator) reportDeleted(why string, groups []string) {
	for _, g := range groups {
		c.logger.Info("group deleted", "group", g, "reason", why)
		if c.onDeleted != nil {
			c.onDeleted(g)
		}
	}
}
