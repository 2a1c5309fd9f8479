package coordinator

import (
	"context"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/minibroker/minibroker/assignor"
)

// State is a group's place in the chapter's state machine.
type State int8

// The group states. Dead is never stored: it is how the wire describes a
// group that does not exist. Reconciling is a consumer (KIP-848) group's:
// some member's epoch lags the group epoch (consumer.go); a classic group
// is never in it, and a consumer group never in PreparingRebalance once a
// heartbeat returns.
const (
	Empty State = iota
	PreparingRebalance
	Stable
	Dead
	Reconciling
)

// String returns Kafka's name for the state, as DescribeGroups,
// ListGroups and ConsumerGroupDescribe spell it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case Stable:
		return "Stable"
	case Reconciling:
		return "Reconciling"
	default:
		return "Dead"
	}
}

// GroupType is the protocol a group's members speak (KIP-848's group
// types, as ListGroups v5 names them). A group is of one type at a time;
// an Empty group takes the type of its next join.
type GroupType int8

// The group types.
const (
	// ClassicGroup members join with JoinGroup and SyncGroup and renew
	// their sessions with Heartbeat: the chapter's protocol.
	ClassicGroup GroupType = iota
	// ConsumerGroup members speak ConsumerGroupHeartbeat (KIP-848): the
	// broker assigns, the group epoch plays the generation.
	ConsumerGroup
)

// String returns Kafka's name for the type: "classic" or "consumer".
func (t GroupType) String() string {
	if t == ConsumerGroup {
		return "consumer"
	}
	return "classic"
}

// Protocol is one entry of a JoinGroup's protocol list: the assignor name a
// client offers, its opaque metadata, and the topics that metadata
// subscribes to (decoded by the caller).
type Protocol struct {
	Name     string
	Metadata []byte
	Topics   []string
}

// group is one consumer group. All fields are guarded by Coordinator.mu.
type group struct {
	id  string
	typ GroupType
	// generation is the classic generation, or a consumer group's group
	// epoch: one counter, which carries on when an Empty group changes
	// type (Kafka's ConsumerGroup.fromClassicGroup starts the group epoch
	// at the classic generation too).
	generation int32
	state      State
	members    map[string]*member
	pending    map[string]time.Time // member ids handed out by MEMBER_ID_REQUIRED -> deadline
	protocol   string               // chosen by vote; "" when no member sent protocols
	leader     string
	// assignment is the classic assignment, or a consumer group's target
	// assignment at the group epoch.
	assignment map[string][]assignor.TopicPartition
	// owner maps each partition to the member that owns it: in a classic
	// group its assignee, in a consumer group the member whose current
	// assignment holds it (the one the commit ownership check trusts).
	owner map[assignor.TopicPartition]string
	// Consumer groups only: the server assignor the last target was
	// computed with, and the partition count of every subscribed topic
	// it saw (0 for a topic the catalog lacked), so a heartbeat can tell
	// that a topic has since appeared.
	assignor    string
	topicCounts map[string]int32
	// grants counts, per partition, the times a consumer group's
	// heartbeat handed it to a member that did not hold it (catchUp):
	// a member told of a partition at one count, that finds another
	// count when its target gives the partition back, knows another
	// member held it in between (consumer_revoke.go).
	grants map[assignor.TopicPartition]int64
	// emptySince is when the group was created or last lost its last
	// member (Kafka's currentStateTimestamp of an Empty group): what
	// offsets retention measures an Empty classic group from.
	emptySince time.Time
}

// member is one group member. All fields are guarded by Coordinator.mu.
type member struct {
	id string
	// instanceID is a static member's group instance id (KIP-345), ""
	// for a dynamic member (static.go).
	instanceID     string
	clientID       string
	clientHost     string
	sessionTimeout time.Duration
	deadline       time.Time
	topics         []string   // the subscription when no protocols were sent
	protocols      []Protocol // in the client's order of preference
	// Consumer-group members only: a regex subscription (its pattern, the
	// compiled whole-name matcher, and the catalog topics it matched at
	// the last heartbeat, sorted; consumer_regex.go), the member epoch, the assignment the
	// member holds at it (sorted; what it was last handed, less what a
	// later target gave to others), and the server assignor it asked
	// for ("" for the server default).
	regex    string
	re       *regexp.Regexp
	matched  []string
	epoch    int32
	current  []assignor.TopicPartition
	assignor string
	// told is, for a consumer-group member, the grant count
	// (group.grants) of each partition of the assignment its last
	// answer carried: what the client believes it holds.
	told map[assignor.TopicPartition]int64
	// known is, for a classic member, the latest generation it was told
	// its assignment in (a SyncGroup, a refresh, a chapter join) or
	// heartbeated at without rejection: the assignment it believes it
	// holds. Below the group's generation, it still acts on an old one.
	known int32
}

func newGroup(id string) *group {
	return &group{
		id:      id,
		members: make(map[string]*member),
		pending: make(map[string]time.Time),
	}
}

// subscription returns the topics m subscribes to under protocol: that
// protocol's topics, or the plain topic list of a member that sent none.
func (m *member) subscription(protocol string) []string {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Topics
		}
	}
	if len(m.matched) > 0 { // a consumer-group member's regex
		return sortedSet(append(slices.Clone(m.topics), m.matched...))
	}
	return m.topics
}

// metadata returns m's metadata for protocol, nil if it has none.
func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// sortedMemberIDs returns the group's member ids in sorted order.
func (g *group) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Reason says why a generation started.
type Reason string

// The reasons a group rebalances.
const (
	// ReasonJoin: a member joined, or (the chapter's join) re-joined.
	ReasonJoin Reason = "join"
	// ReasonSubscription: a known member re-joined with another
	// subscription or other protocol names; in a consumer group, a
	// member's heartbeat changed its topics or its server assignor, or a
	// topic a member subscribes to has appeared in the catalog since the
	// last target assignment.
	ReasonSubscription Reason = "subscription change"
	// ReasonLeave: members left.
	ReasonLeave Reason = "leave"
	// ReasonExpiry: members' sessions ended in the expiry step, or one
	// was ended on request (ExpireMember).
	ReasonExpiry Reason = "expiry"
	// ReasonForced: an operator asked for a new generation
	// (ForceRebalance).
	ReasonForced Reason = "forced"
	// ReasonStaticRestart: a static member came back under its instance
	// id with a new member id and took its old place (static.go). It is
	// no rebalance: the generation does not move and no partition does.
	ReasonStaticRestart Reason = "static member restarted"
)

// Rebalance describes one completed rebalance: the group's new
// generation, why it started, its state (Stable, or Empty when no member
// is left), the sorted member ids and the assignment. For a consumer group
// the generation is the group epoch, the assignment the target, and the
// state Reconciling while members are still to catch up with it. A static
// member's restart is reported the same way with ReasonStaticRestart, at
// the generation the group already had, naming the member id replaced and
// the one that replaced it.
type Rebalance struct {
	Group      string
	Generation int32
	Reason     Reason
	State      State
	Members    []string
	Assignment map[string][]assignor.TopicPartition
	// Replaced and ReplacedBy: ReasonStaticRestart only.
	Replaced, ReplacedBy string
}

// rebalance runs the chapter's transition: PreparingRebalance,
// generation+1, then the round-robin assignment and Stable, or Empty when
// no member is left. It is synchronous: nobody observes the preparing
// state, which exists so that refresh and commit can reject work when the
// group is not Stable. A consumer group takes the same path to its own
// end (rebalanceConsumer). Called with Coordinator.mu held; the caller
// reports the result after releasing it.
func (c *Coordinator) rebalance(g *group, why Reason) Rebalance {
	if g.typ == ConsumerGroup {
		return c.rebalanceConsumer(g, why)
	}
	g.state = PreparingRebalance
	g.generation++
	if len(g.members) == 0 {
		g.state = Empty
		g.protocol, g.leader = "", ""
		g.assignment, g.owner = nil, nil
		c.groupEmptied(g)
		return Rebalance{Group: g.id, Generation: g.generation, Reason: why, State: g.state}
	}
	g.protocol, _ = vote(g.members, nil)
	g.leader = g.firstInAssignOrder()
	subs := make(map[string][]string, len(g.members))
	for id, m := range g.members {
		subs[id] = m.subscription(g.protocol)
	}
	g.assignment = g.assign(subs, c.partitionCounts(subs), assignor.RoundRobin)
	g.owner = make(map[assignor.TopicPartition]string, len(g.owner))
	for id, parts := range g.assignment {
		for _, tp := range parts {
			g.owner[tp] = id
		}
	}
	g.state = Stable
	return Rebalance{Group: g.id, Generation: g.generation, Reason: why, State: g.state, Members: g.sortedMemberIDs(), Assignment: g.assignment}
}

// report logs rebalances and hands them to the observer. Called without
// Coordinator.mu held.
func (c *Coordinator) report(rs ...Rebalance) {
	logging := c.logger.Enabled(context.Background(), slog.LevelInfo)
	for _, r := range rs {
		if logging && r.Reason == ReasonStaticRestart {
			c.logger.Info("static member restarted", "group", r.Group, "generation", r.Generation,
				"member", r.ReplacedBy, "replaced", r.Replaced)
		} else if logging { // formatting a large group's assignment is not free
			c.logger.Info("rebalance complete", "group", r.Group, "generation", r.Generation, "reason", string(r.Reason),
				"state", r.State.String(), "members", r.Members, "assignment", formatAssignment(r))
		}
		if c.onRebalance != nil {
			c.onRebalance(r)
		}
	}
}

// formatAssignment renders an assignment as "member: t-0, t-1" strings.
func formatAssignment(r Rebalance) []string {
	out := make([]string, 0, len(r.Members))
	for _, id := range r.Members {
		parts := make([]string, 0, len(r.Assignment[id]))
		for _, tp := range r.Assignment[id] {
			parts = append(parts, tp.String())
		}
		out = append(out, id+": "+strings.Join(parts, ", "))
	}
	return out
}

// vote chooses the group protocol as Kafka's ClassicGroup.selectProtocol
// does: among the protocol names every member (and joining, if not nil)
// supports, each member votes for the first one in its own preference
// order, and the most votes win. Ties go to the name that sorts first, so
// the choice is deterministic. Members that sent no protocols (chapter-
// style joins) take no part. ok is false when protocol-bearing members
// share no name.
func vote(members map[string]*member, joining *member) (chosen string, ok bool) {
	var voters []*member
	for _, m := range members {
		if len(m.protocols) > 0 && (joining == nil || m.id != joining.id) {
			voters = append(voters, m)
		}
	}
	if joining != nil && len(joining.protocols) > 0 {
		voters = append(voters, joining)
	}
	if len(voters) == 0 {
		return "", true
	}
	candidates := map[string]int{}
	for _, p := range voters[0].protocols {
		candidates[p.Name] = 0
	}
	for _, m := range voters[1:] {
		supported := map[string]bool{}
		for _, p := range m.protocols {
			supported[p.Name] = true
		}
		for name := range candidates {
			if !supported[name] {
				delete(candidates, name)
			}
		}
	}
	if len(candidates) == 0 {
		return "", false
	}
	for _, m := range voters {
		for _, p := range m.protocols {
			if _, ok := candidates[p.Name]; ok {
				candidates[p.Name]++
				break
			}
		}
	}
	best := -1
	for name, votes := range candidates {
		if votes > best || (votes == best && name < chosen) {
			chosen, best = name, votes
		}
	}
	return chosen, true
}
