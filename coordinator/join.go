package coordinator

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/minibroker/minibroker/assignor"
)

// JoinRequest is one join. Chapter-style callers set Group, MemberID,
// Topics and SessionTimeout; the wire also sets the client's identity, its
// protocols and the wire rules.
type JoinRequest struct {
	Group    string
	MemberID string // "" asks for a new id (see RequireMemberID)
	// InstanceID is the group instance id of a static member (JoinGroup
	// v5+, KIP-345; static.go), "" for a dynamic one. A static member
	// with an empty MemberID joins at once, never ErrMemberIDRequired.
	InstanceID     string
	ClientID       string // prefix of new member ids; "member" when empty
	ClientHost     string
	SessionTimeout time.Duration
	// Topics is the subscription of a member that sends no Protocols.
	Topics []string
	// ProtocolType is the JoinGroup protocol type. Under WireRules it must
	// be ConsumerProtocolType, with at least one protocol.
	ProtocolType string
	// Protocols, when not empty, are the client's assignor protocols in
	// its order of preference; the subscription is the topic list of the
	// protocol the group's vote chooses.
	Protocols []Protocol
	// WireRules applies docs/design.md section 4 instead of the chapter's join:
	// a known member whose subscription and protocol names are unchanged
	// is refreshed (same generation, deadline renewed) instead of
	// rebalanced, and an unknown non-empty member id that was not handed
	// out by ErrMemberIDRequired is rejected with ErrUnknownMemberID.
	WireRules bool
	// RequireMemberID (JoinGroup v4+, KIP-394): a join with an empty
	// MemberID gets ErrMemberIDRequired and a pending id in the result,
	// valid for one session timeout, instead of joining at once.
	RequireMemberID bool
}

// ConsumerProtocolType is the only group protocol type the coordinator
// serves: Kafka consumers ("consumer"), not Connect or Streams groups.
const ConsumerProtocolType = "consumer"

// MemberMetadata is one member's id and its metadata for the chosen
// protocol, as the group leader receives them.
type MemberMetadata struct {
	MemberID string
	Metadata []byte
}

// JoinResult is what a join returns to the member.
type JoinResult struct {
	MemberID   string
	Generation int32
	Protocol   string // the chosen protocol; "" for chapter-style groups
	Leader     string
	// Rebalanced is false when the join was a refresh (WireRules).
	Rebalanced bool
	Assignment []assignor.TopicPartition
	// Members lists every member, sorted, for the leader only.
	Members []MemberMetadata
}

// Join adds or replaces a member and rebalances the group (the chapter's
// GroupCoordinator.join), with the wire's refresh and member-id rules when
// req asks for them. Checks run in docs/design.md's order: group id, session
// timeout, the format of the member and client ids, protocols, topics,
// then against the group: a consumer (KIP-848) group with members
// (ErrInconsistentGroupProtocol; an Empty one becomes classic), an unknown
// member id, the group count (ErrTooManyGroups) or the group's size
// (ErrGroupMaxSizeReached), and the protocol vote.
func (c *Coordinator) Join(req JoinRequest) (JoinResult, error) {
	c.lockForChange()
	res, reb, err := c.join(req)
	c.mu.Unlock()
	if reb != nil {
		c.report(*reb)
	}
	return res, err
}

func (c *Coordinator) join(req JoinRequest) (JoinResult, *Rebalance, error) {
	if err := c.validateJoin(req, c.priorTopics(req)); err != nil {
		return JoinResult{}, nil, err
	}
	g := c.groups[req.Group]
	if g != nil && g.typ == ConsumerGroup && len(g.members) > 0 {
		// As Kafka's GroupMetadataManager.classicGroupJoin does with its
		// consumer-group migration policy off.
		return JoinResult{}, nil, fmt.Errorf("%w: %q is a consumer (KIP-848) group with members", ErrInconsistentGroupProtocol, req.Group)
	}
	var m *member
	if g != nil {
		m = g.members[req.MemberID]
		if err := c.checkJoinIdentity(g, m, req); err != nil {
			return JoinResult{}, nil, err
		}
	}
	if m == nil && req.MemberID != "" && req.WireRules {
		if g == nil {
			return JoinResult{}, nil, fmt.Errorf("%w: %q in unknown group %q", ErrUnknownMemberID, req.MemberID, req.Group)
		}
		if _, ok := g.pending[req.MemberID]; !ok {
			return JoinResult{}, nil, fmt.Errorf("%w: %q in group %q", ErrUnknownMemberID, req.MemberID, req.Group)
		}
	}
	joining := &member{
		id:             req.MemberID,
		clientID:       req.ClientID,
		clientHost:     req.ClientHost,
		sessionTimeout: req.SessionTimeout,
		topics:         sortedSet(req.Topics),
		protocols:      cloneProtocols(req.Protocols),
		instanceID:     req.InstanceID,
	}
	if m != nil && joining.instanceID == "" {
		joining.instanceID = m.instanceID // a static member keeps its instance id
	}
	if err := c.checkMemberMetadata(joining); err != nil {
		return JoinResult{}, nil, err
	}
	if g == nil {
		if err := c.admitGroup(req.Group); err != nil {
			return JoinResult{}, nil, err
		}
		g = newGroup(req.Group)
		c.groups[req.Group] = g
		// Empty until a member joins: a join answered MEMBER_ID_REQUIRED
		// leaves it so.
		c.groupEmptied(g)
	} else {
		// Kafka checks the group's size before the protocols
		// (GroupMetadataManager.classicGroupJoinToClassicGroup).
		if g.staticMember(req.InstanceID) == nil { // a restart takes its old place
			if err := c.admitMember(g, req.MemberID); err != nil {
				return JoinResult{}, nil, err
			}
		}
		if err := c.checkGroupMetadata(g, joining); err != nil {
			return JoinResult{}, nil, err
		}
		if _, ok := vote(g.members, joining); !ok {
			return JoinResult{}, nil, fmt.Errorf("%w: group %q shares no protocol with this member", ErrInconsistentGroupProtocol, req.Group)
		}
	}
	if g.typ == ConsumerGroup { // Empty: it takes the type of this join
		g.typ = ClassicGroup
		g.assignor, g.topicCounts = "", nil
	}
	joining.deadline = c.clock.Now().Add(req.SessionTimeout)
	c.lowerExpireFloor(joining.deadline)
	switch {
	case req.MemberID == "" && req.InstanceID != "":
		if res, reb, ok := c.staticJoin(g, joining); ok {
			return res, reb, nil
		}
		joining.id = c.newMemberID(req.InstanceID)
	case req.MemberID == "":
		joining.id = c.newMemberID(req.ClientID)
		if req.RequireMemberID {
			g.pending[joining.id] = joining.deadline
			return JoinResult{MemberID: joining.id}, nil, fmt.Errorf("%w: join again with member id %q", ErrMemberIDRequired, joining.id)
		}
	}

	if m != nil && req.WireRules && g.state == Stable && sameSubscription(m, joining) {
		// An unchanged re-join is a refresh (docs/design.md section 4): real
		// clients re-join after being fenced, and a new generation here
		// would fence the other members in turn, forever.
		m.deadline = joining.deadline
		m.clientHost = joining.clientHost
		m.protocols = joining.protocols // same names and topics; metadata may differ
		return c.joinResult(g, m.id, false), nil, nil
	}
	why := ReasonJoin
	if m != nil && !sameSubscription(m, joining) {
		why = ReasonSubscription
	}
	delete(g.pending, joining.id)
	g.members[joining.id] = joining
	r := c.rebalance(g, why)
	if !req.WireRules { // the chapter's join hands the member its assignment
		joining.known = g.generation
	}
	return c.joinResult(g, joining.id, true), &r, nil
}

// priorTopics returns the topics the member req re-joins as (by member id,
// or a static member's instance id) subscribes to now, under any of its
// protocols: a topic deleted since stays in its subscription. Called with
// mu held.
func (c *Coordinator) priorTopics(req JoinRequest) map[string]bool {
	g := c.groups[req.Group]
	if g == nil {
		return nil
	}
	m := g.members[req.MemberID]
	if m == nil && req.InstanceID != "" {
		m = g.staticMember(req.InstanceID)
	}
	if m == nil {
		return nil
	}
	out := map[string]bool{}
	for _, t := range m.topics {
		out[t] = true
	}
	for _, p := range m.protocols {
		for _, t := range p.Topics {
			out[t] = true
		}
	}
	return out
}

// validateJoin runs the checks that need no group state beyond prior,
// the topics the re-joining member subscribes to already: one of those
// the catalog no longer has (a topic deleted) is kept, as the client
// sent it, and the assignment skips it (docs/design.md section 14); any
// other unknown topic is refused, as the chapter's join refuses it.
func (c *Coordinator) validateJoin(req JoinRequest, prior map[string]bool) error {
	if err := c.ValidateGroupID(req.Group); err != nil {
		return err
	}
	if req.SessionTimeout < c.minSession || req.SessionTimeout > c.maxSession {
		return fmt.Errorf("%w: %v is outside [%v, %v]", ErrInvalidSessionTimeout, req.SessionTimeout, c.minSession, c.maxSession)
	}
	if req.MemberID == "" && !req.WireRules {
		return fmt.Errorf("%w: empty member id", ErrInvalidMemberID)
	}
	if err := c.checkJoinerIDs(req.MemberID, req.ClientID, req.InstanceID); err != nil {
		return err
	}
	if req.WireRules && (req.ProtocolType != ConsumerProtocolType || len(req.Protocols) == 0) {
		return fmt.Errorf("%w: protocol type %q with %d protocols; want %q with at least one",
			ErrInconsistentGroupProtocol, req.ProtocolType, len(req.Protocols), ConsumerProtocolType)
	}
	check := func(t string) error {
		err := c.checkTopic(t)
		if errors.Is(err, ErrUnknownTopic) && prior[t] {
			return nil
		}
		return err
	}
	for _, t := range req.Topics {
		if err := check(t); err != nil {
			return err
		}
	}
	for _, p := range req.Protocols {
		if p.Name == "" {
			return fmt.Errorf("%w: empty protocol name", ErrInconsistentGroupProtocol)
		}
		for _, t := range p.Topics {
			if err := check(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinResult builds a member's view of its group. Called with mu held.
func (c *Coordinator) joinResult(g *group, id string, rebalanced bool) JoinResult {
	res := JoinResult{
		MemberID:   id,
		Generation: g.generation,
		Protocol:   g.protocol,
		Leader:     g.leader,
		Rebalanced: rebalanced,
		Assignment: slices.Clone(g.assignment[id]),
	}
	if id == g.leader {
		for _, mid := range g.sortedMemberIDs() {
			res.Members = append(res.Members, MemberMetadata{MemberID: mid, Metadata: g.members[mid].metadata(g.protocol)})
		}
	}
	return res
}

// SubscriptionChanged reports whether req, joined now, would change the
// group: true when req's member is unknown or its topics or protocol names
// differ from what the group holds. It changes nothing.
func (c *Coordinator) SubscriptionChanged(req JoinRequest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[req.Group]
	if g == nil {
		return true
	}
	m := g.members[req.MemberID]
	if m == nil {
		return true
	}
	return !sameSubscription(m, &member{topics: sortedSet(req.Topics), protocols: req.Protocols})
}

// sameSubscription compares what two joins of one member ask for: the plain
// topic set, the protocol names in order, and each protocol's topic set.
// Protocol metadata bytes beyond the topics (user data, owned partitions)
// are not compared: they change on every cooperative re-join.
func sameSubscription(a, b *member) bool {
	if !slices.Equal(a.topics, b.topics) || len(a.protocols) != len(b.protocols) {
		return false
	}
	for i := range a.protocols {
		if a.protocols[i].Name != b.protocols[i].Name ||
			!slices.Equal(sortedSet(a.protocols[i].Topics), sortedSet(b.protocols[i].Topics)) {
			return false
		}
	}
	return true
}

// sortedSet returns the distinct names of ts, sorted, in a new slice.
func sortedSet(ts []string) []string {
	out := slices.Clone(ts)
	slices.Sort(out)
	return slices.Compact(out)
}

func cloneProtocols(ps []Protocol) []Protocol {
	out := make([]Protocol, len(ps))
	for i, p := range ps {
		out[i] = Protocol{Name: p.Name, Metadata: slices.Clone(p.Metadata), Topics: sortedSet(p.Topics)}
	}
	return out
}

// checkJoinIdentity asks a join naming a member id the first question
// (static.go): a member id other than the instance's current one is
// ErrFencedInstanceID, and a known member that is not the instance named
// is ErrUnknownMemberID (Kafka's
// GroupMetadataManager.validateExistingMember). Called with mu held.
func (c *Coordinator) checkJoinIdentity(g *group, m *member, req JoinRequest) error {
	if req.MemberID == "" || req.InstanceID == "" || g.typ != ClassicGroup {
		return nil
	}
	if err := checkIdentity(g, req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if m != nil && m.instanceID != req.InstanceID {
		return fmt.Errorf("%w: %q is not instance %q of group %q", ErrUnknownMemberID, req.MemberID, req.InstanceID, g.id)
	}
	return nil
}
