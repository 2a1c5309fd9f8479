package coordinator

import (
	"slices"
	"time"

	"github.com/minibroker/minibroker/assignor"
)

// GroupView is a read-only copy of one group, for DescribeGroups, the
// admin API and tests.
type GroupView struct {
	Group      string
	State      State
	Generation int32
	Protocol   string
	Leader     string
	Members    []MemberView // sorted by MemberID
}

// MemberView is a read-only copy of one member.
type MemberView struct {
	MemberID       string
	ClientID       string
	ClientHost     string
	SessionTimeout time.Duration
	Deadline       time.Time
	// Topics is the subscription under the group's chosen protocol.
	Topics []string
	// Metadata is the member's metadata for the chosen protocol.
	Metadata   []byte
	Assignment []assignor.TopicPartition
}

// GroupListing is one entry of Groups.
type GroupListing struct {
	Group string
	State State
}

// Describe returns a copy of group. A group that has only committed
// offsets (a manual-assignment group, or any group after a restart) is
// Empty at generation 0; ok is false only when neither exists.
func (c *Coordinator) Describe(group string) (view GroupView, ok bool) {
	c.mu.Lock()
	g := c.groups[group]
	if g != nil {
		view = c.view(g)
	}
	c.mu.Unlock()
	if g != nil {
		return view, true
	}
	if len(c.store.Committed(group)) > 0 {
		return GroupView{Group: group, State: Empty}, true
	}
	return GroupView{Group: group, State: Dead}, false
}

func (c *Coordinator) view(g *group) GroupView {
	v := GroupView{Group: g.id, State: g.state, Generation: g.generation, Protocol: g.protocol, Leader: g.leader}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		v.Members = append(v.Members, MemberView{
			MemberID:       id,
			ClientID:       m.clientID,
			ClientHost:     m.clientHost,
			SessionTimeout: m.sessionTimeout,
			Deadline:       m.deadline,
			Topics:         slices.Clone(m.subscription(g.protocol)),
			Metadata:       slices.Clone(m.metadata(g.protocol)),
			Assignment:     slices.Clone(g.assignment[id]),
		})
	}
	return v
}

// Groups lists every group, sorted by name: those with members or a
// history of them, and those known only by their committed offsets.
func (c *Coordinator) Groups() []GroupListing {
	c.mu.Lock()
	out := make([]GroupListing, 0, len(c.groups))
	for id, g := range c.groups {
		out = append(out, GroupListing{Group: id, State: g.state})
	}
	c.mu.Unlock()
	for _, id := range c.store.Groups() {
		if !slices.ContainsFunc(out, func(l GroupListing) bool { return l.Group == id }) {
			out = append(out, GroupListing{Group: id, State: Empty})
		}
	}
	slices.SortFunc(out, func(a, b GroupListing) int {
		switch {
		case a.Group < b.Group:
			return -1
		case a.Group > b.Group:
			return 1
		}
		return 0
	})
	return out
}
