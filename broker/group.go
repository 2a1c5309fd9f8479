package broker

import (
	"context"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
)

// GroupInfo is one group as the broker holds it at one moment: the
// coordinator's view (state, generation, protocol, leader, and every
// member with its id, instance id, client id and host, subscription,
// assignment and the generation it last learned) and the group's
// committed offsets. It is a copy: nothing in it changes afterwards.
type GroupInfo struct {
	coordinator.GroupView
	// Committed are the group's committed offsets as OffsetFetch answers
	// them, sorted by topic and partition: only what is durable.
	Committed []offsets.Entry
}

// Settled reports whether the group is Stable and every member has
// learned the current generation (KnownGeneration): a classic member by
// its SyncGroup, refresh or heartbeat at it (a JoinGroup alone hands it no
// assignment), a consumer-protocol member by its heartbeat at the group
// epoch. Every member then acts on the assignment the group shows. The
// coordinator is Stable the moment a join completes, before the other
// members have re-joined; Settled is what a test waits for: the
// rebalance is over for everyone.
func (g *GroupInfo) Settled() bool {
	if g.State != coordinator.Stable {
		return false
	}
	for _, m := range g.Members {
		if m.KnownGeneration != g.Generation {
			return false
		}
	}
	return true
}

// Group returns group as the broker holds it now, or nil when the broker
// knows no such group (no members ever, no committed offsets). A group
// known only by its committed offsets is Empty at generation 0.
func (b *Broker) Group(group string) *GroupInfo {
	view, ok := b.coord.Describe(group)
	if !ok {
		return nil
	}
	return &GroupInfo{GroupView: view, Committed: b.coord.Committed(group)}
}

// WaitGroup waits until fn returns true for group and returns the group
// it accepted. fn is called with nil while the broker knows no such
// group, so a test can wait for a group to appear or to go. It does not
// poll: the coordinator wakes it at every change to any group (a join,
// sync, heartbeat, leave, expiry, deletion, or a commit once durable),
// and it reads the group again. When ctx ends first it returns the last
// group it read and ctx's error. fn runs on the caller's goroutine.
func (b *Broker) WaitGroup(ctx context.Context, group string, fn func(*GroupInfo) bool) (*GroupInfo, error) {
	for {
		changed := b.coord.Changed() // before the read: no change after it is missed
		g := b.Group(group)
		if fn(g) {
			return g, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return g, ctx.Err()
		}
	}
}

// WaitGroupStable waits until group is Settled with members members (-1:
// any number) and returns it: the rebalance is over and every member has
// its assignment. A test calls it after starting its consumers, before it
// reads their assignments or fences one of them.
func (b *Broker) WaitGroupStable(ctx context.Context, group string, members int) (*GroupInfo, error) {
	return b.WaitGroup(ctx, group, func(g *GroupInfo) bool {
		return g != nil && g.Settled() && (members < 0 || len(g.Members) == members)
	})
}
