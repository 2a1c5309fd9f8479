package coordinator

import (
	"cmp"
	"slices"
	"time"

	"github.com/minibroker/minibroker/assignor"
)

// GroupView is a read-only copy of one group, for DescribeGroups,
// ConsumerGroupDescribe, the admin API and tests.
type GroupView struct {
	Group string
	// Type is the protocol the group's members speak.
	Type  GroupType
	State State
	// Generation is the classic generation, or a consumer group's group
	// epoch.
	Generation int32
	Protocol   string // classic groups only: the chosen protocol
	Leader     string // classic groups only
	// AssignmentEpoch is the epoch of a consumer group's target
	// assignment: always its group epoch, since the target is computed
	// with every bump (Kafka's can lag, in its Assigning state).
	AssignmentEpoch int32
	// Assignor is a consumer group's server assignor, UniformAssignor or
	// RangeAssignor.
	Assignor string
	Members  []MemberView // sorted by MemberID
}

// MemberView is a read-only copy of one member.
type MemberView struct {
	MemberID string
	// InstanceID is a static member's group instance id, "" for a
	// dynamic member.
	InstanceID     string
	ClientID       string
	ClientHost     string
	SessionTimeout time.Duration
	Deadline       time.Time
	// Topics is the subscription under the group's chosen protocol, or a
	// consumer-group member's subscribed topic names.
	Topics []string
	// Metadata is the member's metadata for the chosen protocol (classic
	// groups only). It is the coordinator's own copy, shared, not cloned:
	// the coordinator never changes it (a re-join stores new bytes), and
	// callers must not either. Describing a group of large members then
	// costs no copy of their metadata.
	Metadata []byte
	// Assignment is a classic member's partitions, or a consumer-group
	// member's current assignment: what it holds at MemberEpoch.
	Assignment []assignor.TopicPartition
	// KnownGeneration is the latest generation a classic member was told
	// its assignment in, or heartbeated at: what it believes it holds.
	// Below the group's Generation it still acts on an old assignment (the
	// chapter's stale local view) until it learns, at its next heartbeat
	// or join. For a consumer-group member it is its MemberEpoch.
	KnownGeneration int32
	// MemberEpoch, TargetAssignment and Assignor: consumer groups only.
	// TargetAssignment is the member's share of the target at the group
	// epoch, which it gets at its next heartbeat when its epoch lags;
	// Assignor is the server assignor it asked for ("" for none).
	MemberEpoch      int32
	TargetAssignment []assignor.TopicPartition
	Assignor         string
	// Regex is a consumer-group member's regex subscription ("" for
	// none) and Matched the topics it matched at the last heartbeat;
	// Topics then holds only the names the member sent.
	Regex   string
	Matched []string
}

// GroupListing is one entry of Groups.
type GroupListing struct {
	Group string
	Type  GroupType
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
	v := GroupView{Group: g.id, Type: g.typ, State: g.state, Generation: g.generation, Protocol: g.protocol, Leader: g.leader}
	if g.typ == ConsumerGroup {
		v.AssignmentEpoch, v.Assignor = g.generation, cmp.Or(g.assignor, UniformAssignor)
	}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		mv := MemberView{
			MemberID:        id,
			InstanceID:      m.instanceID,
			ClientID:        m.clientID,
			ClientHost:      m.clientHost,
			SessionTimeout:  m.sessionTimeout,
			Deadline:        m.deadline,
			Topics:          slices.Clone(m.subscription(g.protocol)),
			Metadata:        m.metadata(g.protocol),
			Assignment:      slices.Clone(g.assignment[id]),
			KnownGeneration: m.known,
		}
		if g.typ == ConsumerGroup {
			mv.KnownGeneration = m.epoch
			mv.Assignment = slices.Clone(m.current)
			mv.MemberEpoch = m.epoch
			mv.TargetAssignment = slices.Clone(g.assignment[id])
			mv.Assignor = m.assignor
			mv.Topics = slices.Clone(m.topics)
			mv.Regex, mv.Matched = m.regex, slices.Clone(m.matched)
		}
		v.Members = append(v.Members, mv)
	}
	return v
}

// Groups lists every group, sorted by name: those with members or a
// history of them, and those known only by their committed offsets.
func (c *Coordinator) Groups() []GroupListing {
	c.mu.Lock()
	out := make([]GroupListing, 0, len(c.groups))
	for id, g := range c.groups {
		out = append(out, GroupListing{Group: id, Type: g.typ, State: g.state})
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
