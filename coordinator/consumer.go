package coordinator

// The KIP-848 consumer protocol over the chapter's coordinator (docs/design.md
// section 9). A consumer group's members speak one request,
// ConsumerGroupHeartbeat: epoch 0 joins, -1 leaves, any other epoch is a
// heartbeat at the member's current epoch.
//
// The group epoch plays the generation. Every membership or subscription
// change bumps it and computes the whole target assignment at once, on the
// chapter's synchronous rebalance path. A member's epoch moves to the
// group epoch at its own next heartbeat, whose answer carries its whole
// new assignment. Kafka instead reconciles one partition at a time: a
// partition moves to its new owner only after the old owner's heartbeat
// has released it (GroupMetadataManager.maybeReconcile,
// CurrentAssignmentBuilder), and member epochs advance one by one. Here
// there is no revocation step: a partition the new target gives to
// another member leaves the old owner's current assignment at once (the
// coordinator's authority, which the commit ownership check trusts), and
// the old owner learns it at its next heartbeat, as the chapter's member
// learns of a rebalance only at its refresh.

import (
	"fmt"
	"slices"
	"time"

	"github.com/minibroker/minibroker/assignor"
)

// Server assignor names (ConsumerGroupHeartbeat's ServerAssignor).
const (
	// UniformAssignor is Kafka's default server assignor; here it is the
	// chapter's round-robin (assignor.RoundRobin), as is the default.
	UniformAssignor = "uniform"
	// RangeAssignor is Kafka's range (assignor.Range).
	RangeAssignor = "range"
)

// Member epochs with a meaning of their own (ConsumerGroupHeartbeat).
const (
	// JoinEpoch joins the group, or re-joins it under the same id.
	JoinEpoch int32 = 0
	// LeaveEpoch leaves the group.
	LeaveEpoch int32 = -1
	// StaticLeaveEpoch is a static member's temporary leave (KIP-345
	// under KIP-848): it keeps its place and assignment until its session
	// ends, for a new incarnation to take over (consumer_static.go).
	StaticLeaveEpoch int32 = -2
)

// ConsumerHeartbeatRequest is one ConsumerGroupHeartbeat, in plain Go
// types: the topics are named, not identified.
type ConsumerHeartbeatRequest struct {
	Group    string
	MemberID string
	// MemberEpoch is JoinEpoch, LeaveEpoch, StaticLeaveEpoch, or the
	// member's current epoch.
	MemberEpoch int32
	ClientID    string
	ClientHost  string
	// InstanceID is a static member's group instance id, "" for a
	// dynamic member (consumer_static.go).
	InstanceID string
	// GenerateMemberID (ConsumerGroupHeartbeat v0): a join with an empty
	// MemberID gets an id from the broker, "<client-id>-<sequence>" as
	// classic members do. Without it (v1+, KIP-1082, where the client
	// makes its own id) an empty member id is ErrInvalidMemberID.
	GenerateMemberID bool
	// Topics is the subscription, by topic name. nil keeps the member's
	// (a heartbeat that repeats nothing); non-nil, even empty, replaces
	// it. A topic the catalog lacks is accepted and assigned nothing until
	// it exists, as Kafka does.
	Topics []string
	// Assignor is the server assignor the member asks for: nil keeps the
	// member's, "" is the server default (UniformAssignor).
	Assignor *string
	// Regex is a regex subscription (RE2 syntax, matching whole topic
	// names; consumer_regex.go), beside Topics: nil keeps the member's,
	// "" removes it. An invalid one is ErrInvalidRegularExpression.
	Regex *string
}

// ConsumerHeartbeatResult is what a ConsumerGroupHeartbeat tells the
// member.
type ConsumerHeartbeatResult struct {
	MemberID    string
	MemberEpoch int32
	// HeartbeatInterval is Config.ConsumerHeartbeatInterval.
	HeartbeatInterval time.Duration
	// Assignment is the member's whole assignment at MemberEpoch, sorted.
	Assignment []assignor.TopicPartition
	// Changed reports that this heartbeat joined the member or moved its
	// epoch or its assignment: the response must then carry Assignment
	// (Kafka sends it then, or when the request was a full one).
	Changed bool
}

// ConsumerHeartbeat is the consumer protocol's one request: a join
// (JoinEpoch), a leave (LeaveEpoch or StaticLeaveEpoch) or a heartbeat at
// the member's current epoch.
//
// Before any group state: an over-long or non-text group, member or client
// id, an empty group id, or an empty member id unless GenerateMemberID
// lets a join have one made, is ErrInvalidGroupID, ErrInvalidMemberID or
// ErrInvalidClientID; an assignor other than "uniform", "range" or "" is
// ErrUnsupportedAssignor; a name that cannot be a topic is
// catalog.ErrInvalidTopic. Then the group's type: a classic group with
// members is ErrGroupIDNotFound; an Empty classic group becomes a consumer
// group at a join.
//
// A join adds the member, or re-joins a known one under its id. A new
// member, or a changed subscription or assignor, bumps the group epoch
// (rebalance); an unchanged re-join does not (docs/design.md section 4's
// refresh rule: kgo re-joins so after FENCED_MEMBER_EPOCH). Kafka
// accepts a known member's epoch 0 only when 0 is its previous epoch (a
// lost join response) and fences it otherwise
// (GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid); see
// docs/behavior-matrix.md. Either way the member leaves at the group epoch
// with its whole target assignment. A new member is also bounded by Config.MaxGroupSize and a
// new group by Config.MaxGroups.
//
// A leave removes the member and rebalances; an unknown member or group is
// a no-op, as the chapter's leave (Kafka: UNKNOWN_MEMBER_ID).
//
// A heartbeat from an unknown member (or to an unknown group, which the
// chapter collapses with it) is ErrUnknownMemberID; an epoch other than
// the member's current one is ErrFencedMemberEpoch. Otherwise the session
// is renewed (deadline = now + Config.ConsumerSessionTimeout), a changed
// subscription or assignor, or a subscribed topic that has appeared since
// the last target, rebalances, and a member whose epoch lags the group
// epoch moves to it and gets its whole new assignment.
func (c *Coordinator) ConsumerHeartbeat(req ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, error) {
	if err := c.checkConsumerHeartbeat(req); err != nil {
		return ConsumerHeartbeatResult{MemberID: req.MemberID}, err
	}
	c.lockForChange()
	res, reb, err := c.consumerHeartbeat(req)
	c.mu.Unlock()
	if reb != nil {
		c.report(*reb)
	}
	res.HeartbeatInterval = c.consumerInterval
	return res, err
}

// checkConsumerHeartbeat runs the checks that need no group state.
func (c *Coordinator) checkConsumerHeartbeat(req ConsumerHeartbeatRequest) error {
	if err := c.ValidateGroupID(req.Group); err != nil {
		return err
	}
	if req.MemberID == "" && (req.MemberEpoch != JoinEpoch || !req.GenerateMemberID) {
		return fmt.Errorf("%w: empty member id", ErrInvalidMemberID)
	}
	if err := c.checkJoinerIDs(req.MemberID, req.ClientID, req.InstanceID); err != nil {
		return err
	}
	if req.Assignor != nil {
		switch *req.Assignor {
		case "", UniformAssignor, RangeAssignor:
		default:
			return fmt.Errorf("%w: %q; supported: %s, %s", ErrUnsupportedAssignor, *req.Assignor, UniformAssignor, RangeAssignor)
		}
	}
	for _, t := range req.Topics {
		if err := checkTopicName(t); err != nil {
			return err
		}
	}
	if req.Regex != nil && *req.Regex != "" {
		if _, err := compileRegex(*req.Regex); err != nil {
			return err
		}
	}
	return nil
}

func (c *Coordinator) consumerHeartbeat(req ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, *Rebalance, error) {
	res := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	g := c.groups[req.Group]
	if g != nil && g.typ == ClassicGroup && len(g.members) > 0 {
		return res, nil, fmt.Errorf("%w: %q is a classic group with members", ErrGroupIDNotFound, req.Group)
	}
	takeover, err := c.consumerIdentity(g, req)
	if err != nil {
		return res, nil, err
	}
	switch req.MemberEpoch {
	case JoinEpoch:
		return c.consumerJoin(g, req, takeover)
	case StaticLeaveEpoch:
		res, err := c.consumerStaticLeave(g, req)
		return res, nil, err
	case LeaveEpoch:
		return res, c.consumerLeave(g, req.MemberID), nil
	}
	var m *member
	if g != nil && g.typ == ConsumerGroup {
		m = g.members[req.MemberID]
	}
	if m == nil {
		return res, nil, fmt.Errorf("%w: %q is not in consumer group %q", ErrUnknownMemberID, req.MemberID, req.Group)
	}
	if req.MemberEpoch != m.epoch {
		return res, nil, fmt.Errorf("%w: %d, member %q is at epoch %d (group epoch %d)",
			ErrFencedMemberEpoch, req.MemberEpoch, m.id, m.epoch, g.generation)
	}
	if req.Topics != nil {
		if err := c.checkGroupMetadata(g, &member{id: m.id, topics: req.Topics}); err != nil {
			return res, nil, err
		}
	}
	m.deadline = c.clock.Now().Add(m.sessionTimeout)
	var reb *Rebalance
	if resub, rematched := c.resubscribe(m, req), c.rematch(g); resub || rematched || c.topicsChanged(g) {
		r := c.rebalance(g, ReasonSubscription)
		reb = &r
	}
	changed := m.epoch != g.generation
	if changed {
		if !revokeFirst(g, m) {
			c.catchUp(g, m)
		}
		if reb != nil {
			reb.State = g.state
		}
	}
	return c.consumerResult(g, m, changed), reb, nil
}

// consumerJoin adds a member, or re-joins a known one. Called with mu
// held; g may be nil, or an Empty classic group, which becomes a consumer
// group here (only once every check has passed).
func (c *Coordinator) consumerJoin(g *group, req ConsumerHeartbeatRequest, takeover *member) (ConsumerHeartbeatResult, *Rebalance, error) {
	res := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	if err := c.checkMemberMetadata(&member{topics: req.Topics}); err != nil {
		return res, nil, err
	}
	if g == nil {
		if err := c.admitGroup(req.Group); err != nil {
			return res, nil, err
		}
		g = newGroup(req.Group)
		g.typ = ConsumerGroup
		g.emptySince = c.clock.Now()
		c.groups[req.Group] = g
	}
	var m *member
	if g.typ == ConsumerGroup && req.MemberID != "" {
		m = g.members[req.MemberID]
	}
	if m == nil && takeover == nil && g.typ == ConsumerGroup { // an Empty classic group admits anyone
		if err := c.admitMember(g, req.MemberID); err != nil {
			return res, nil, err
		}
	}
	if g.typ == ConsumerGroup {
		if err := c.checkGroupMetadata(g, &member{id: req.MemberID, topics: req.Topics}); err != nil {
			return res, nil, err
		}
	}
	if g.typ == ClassicGroup { // Empty: no member speaks the classic protocol
		g.typ = ConsumerGroup
		g.protocol, g.leader = "", ""
		clear(g.pending)
	}
	now := c.clock.Now()
	var reb *Rebalance
	replaced := ""
	if m == nil && takeover != nil {
		m, replaced = c.takeOver(g, takeover, req)
	}
	if m == nil {
		m = &member{id: req.MemberID, instanceID: req.InstanceID, sessionTimeout: c.consumerSession, topics: sortedSet(req.Topics)}
		if m.id == "" {
			m.id = c.newMemberID(req.ClientID)
		}
		if req.Assignor != nil {
			m.assignor = *req.Assignor
		}
		m.setRegex(req.Regex)
		g.members[m.id] = m
		c.rematch(g)
		r := c.rebalance(g, ReasonJoin)
		reb = &r
	} else if resub, rematched := c.resubscribe(m, req), c.rematch(g); resub || rematched || c.topicsChanged(g) {
		r := c.rebalance(g, ReasonSubscription)
		reb = &r
	}
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.deadline = now.Add(m.sessionTimeout)
	c.lowerExpireFloor(m.deadline)
	c.catchUp(g, m)
	if reb == nil && replaced != "" {
		r := staticRestart(g, replaced, m.id)
		reb = &r
	}
	if reb != nil {
		reb.State = g.state
	}
	return c.consumerResult(g, m, true), reb, nil
}

// consumerLeave removes a member and rebalances; an unknown member or
// group is a no-op. Called with mu held.
func (c *Coordinator) consumerLeave(g *group, memberID string) *Rebalance {
	if g == nil || g.typ != ConsumerGroup || g.members[memberID] == nil {
		return nil
	}
	delete(g.members, memberID)
	r := c.rebalance(g, ReasonLeave)
	return &r
}

// resubscribe applies the subscription and assignor a heartbeat carries
// and reports whether either changed. Called with mu held.
func (c *Coordinator) resubscribe(m *member, req ConsumerHeartbeatRequest) bool {
	changed := false
	if req.Topics != nil {
		if topics := sortedSet(req.Topics); !slices.Equal(topics, m.topics) {
			m.topics, changed = topics, true
		}
	}
	if req.Assignor != nil && *req.Assignor != m.assignor {
		m.assignor, changed = *req.Assignor, true
	}
	if m.setRegex(req.Regex) {
		changed = true
	}
	return changed
}

// consumerResult is m's view of itself. Called with mu held.
func (c *Coordinator) consumerResult(g *group, m *member, changed bool) ConsumerHeartbeatResult {
	g.tell(m)
	return ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, Assignment: slices.Clone(m.current), Changed: changed}
}

// rebalanceConsumer is rebalance for a consumer group: the group epoch
// moves on and the whole target assignment is computed at once, with the
// group's server assignor. Each member keeps, of its current assignment,
// only what the new target leaves it (the chapter has no revocation step;
// see the top of this file); partitions it gains wait for its next
// heartbeat. Called with mu held.
func (c *Coordinator) rebalanceConsumer(g *group, why Reason) Rebalance {
	g.state = PreparingRebalance
	g.generation++
	if len(g.members) == 0 {
		g.state = Empty
		g.assignment, g.owner, g.topicCounts, g.assignor, g.grants = nil, nil, nil, "", nil
		c.groupEmptied(g)
		return Rebalance{Group: g.id, Generation: g.generation, Reason: why, State: g.state}
	}
	subs := make(map[string][]string, len(g.members))
	g.topicCounts = make(map[string]int32)
	for id, m := range g.members {
		subs[id] = m.subscription("")
		for _, t := range subs[id] {
			g.topicCounts[t], _ = c.topics.Partitions(t)
		}
	}
	g.assignor = preferredAssignor(g.members)
	if g.assignor == RangeAssignor {
		g.assignment = g.assign(subs, g.topicCounts, assignor.Range)
	} else {
		g.assignment = g.assign(subs, g.topicCounts, assignor.RoundRobin)
	}
	g.owner = make(map[assignor.TopicPartition]string, len(g.owner))
	for id, m := range g.members {
		target := g.assignment[id]
		m.current = slices.DeleteFunc(m.current, func(tp assignor.TopicPartition) bool {
			_, found := slices.BinarySearchFunc(target, tp, assignor.TopicPartition.Compare)
			return !found
		})
		for _, tp := range m.current {
			g.owner[tp] = id
		}
	}
	g.updateConsumerState()
	return Rebalance{Group: g.id, Generation: g.generation, Reason: why, State: g.state,
		Members: g.sortedMemberIDs(), Assignment: g.assignment}
}

// catchUp moves m to the group epoch with its whole target assignment.
// Called with mu held.
func (c *Coordinator) catchUp(g *group, m *member) {
	m.epoch = g.generation
	old := m.current
	m.current = slices.Clone(g.assignment[m.id])
	for _, tp := range m.current {
		g.owner[tp] = m.id
		if _, held := slices.BinarySearchFunc(old, tp, assignor.TopicPartition.Compare); !held {
			g.grant(tp)
		}
	}
	g.updateConsumerState()
}

// updateConsumerState sets a consumer group's state as Kafka's
// ConsumerGroup.maybeUpdateGroupState does: Empty without members,
// Reconciling while any member's epoch lags the group epoch, else Stable.
// Kafka's Assigning (the target not yet computed for the group epoch) is
// never seen here: the target is computed with every epoch bump.
func (g *group) updateConsumerState() {
	g.state = Stable
	if len(g.members) == 0 {
		g.state = Empty
	}
	for _, m := range g.members {
		if m.epoch != g.generation && m.epoch != StaticLeaveEpoch { // a static member away keeps its state
			g.state = Reconciling
			break
		}
	}
}

// topicsChanged reports whether a topic the group subscribes to has a
// partition count other than the last target saw: a topic created since.
// Kafka notices the same through its periodic subscription-metadata
// refresh (GroupMetadataManager.consumerGroupHeartbeat). Called with mu
// held.
func (c *Coordinator) topicsChanged(g *group) bool {
	for t, n := range g.topicCounts {
		if now, _ := c.topics.Partitions(t); now != n {
			return true
		}
	}
	return false
}

// preferredAssignor is the server assignor the most members ask for, as
// Kafka's ModernGroup.computePreferredServerAssignor chooses it; a tie
// goes to the name that sorts first, and with no preference the default,
// UniformAssignor.
func preferredAssignor(members map[string]*member) string {
	votes := map[string]int{}
	for _, m := range members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best, chosen := 0, UniformAssignor
	for name, n := range votes {
		if n > best || n == best && name < chosen {
			best, chosen = n, name
		}
	}
	return chosen
}
