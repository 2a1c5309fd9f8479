package lab

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/wireclient"
)

// The request versions a Member sends: the newest that minibroker, kfake
// and Kafka 4 all serve without topic ids, which is what kgo sends to
// minibroker.
const (
	JoinGroupVersion      int16 = 9
	SyncGroupVersion      int16 = 5
	HeartbeatVersion      int16 = 4
	LeaveGroupVersion     int16 = 5
	OffsetCommitVersion   int16 = 9
	OffsetFetchVersion    int16 = 8
	DescribeGroupsVersion int16 = 5
)

// ProtocolName is the one assignor protocol a Member offers.
const ProtocolName = "roundrobin"

// MemberConfig describes one group member. Zero fields mean the default.
type MemberConfig struct {
	// Group is the group id. Required.
	Group string
	// ClientID goes in every request header; minibroker builds new member
	// ids from it ("<client-id>-000001"). Default "lab".
	ClientID string
	// Topics is the subscription, sent as a ConsumerMemberMetadata.
	Topics []string
	// InstanceID, when set, is sent as the group instance id (KIP-345,
	// static membership).
	InstanceID string
	// SessionTimeout default 30 s; RebalanceTimeout default 10 s (Kafka's
	// join barrier waits that long for members to re-join; minibroker has
	// no barrier and ignores it).
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// Plan, when not nil, is the topic catalog this member uses to compute
	// a round-robin plan whenever it is the group leader, and sends in its
	// SyncGroup, as a real Kafka client does. minibroker ignores the plan;
	// Kafka and kfake hand it out. When nil the leader sends no plan.
	Plan map[string]int32
	// Planner, when set, makes a leader send the plan it returns instead:
	// it gets the leader's id and each member's subscribed topics, and
	// returns each member's partitions. Scenarios use it to show whose plan a broker follows.
	Planner func(leader string, subscriptions map[string][]string) map[string][]assignor.TopicPartition
	// Trace receives one line per request sent and per response received.
	// Nil: silent.
	Trace io.Writer
}

// Member is one consumer-group member on its own connection, driven by
// hand: each method sends exactly one request and records what the answer
// tells the member. Its exported fields are its local view, which, as in
// the chapter, changes only when the member itself asks the broker.
//
// A Member is owned by one goroutine at a time.
type Member struct {
	// ID is the member id, "" until the broker hands one out.
	ID string
	// Generation, Leader and Protocol come from the last successful join.
	Generation int32
	Leader     string
	Protocol   string
	// Assigned is the assignment from the last successful SyncGroup.
	Assigned []assignor.TopicPartition

	cfg    MemberConfig
	conn   *wireclient.Client
	joined []kmsg.JoinGroupResponseMember // the member list a leader gets
}

// Dial connects a new member to addr. It has no id yet: Join asks for one.
func Dial(ctx context.Context, addr string, cfg MemberConfig) (*Member, error) {
	if cfg.Group == "" {
		return nil, fmt.Errorf("lab: MemberConfig.Group is required")
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "lab"
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 30 * time.Second
	}
	if cfg.RebalanceTimeout == 0 {
		cfg.RebalanceTimeout = 10 * time.Second
	}
	conn, err := wireclient.Dial(ctx, addr, cfg.ClientID)
	if err != nil {
		return nil, err
	}
	return &Member{cfg: cfg, conn: conn, Generation: -1}, nil
}

// Close closes the member's connection. It does not leave the group.
func (m *Member) Close() error { return m.conn.Close() }

// dialPair dials the two members every lab starts with; closeBoth closes
// their connections.
func dialPair(ctx context.Context, addr string, cfg MemberConfig) (first, second *Member, closeBoth func(), err error) {
	first, err = Dial(ctx, addr, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	second, err = Dial(ctx, addr, cfg)
	if err != nil {
		first.Close()
		return nil, nil, nil, err
	}
	return first, second, func() { first.Close(); second.Close() }, nil
}

// Topics returns the member's subscription.
func (m *Member) Topics() []string { return slices.Clone(m.cfg.Topics) }

// SetTopics changes the subscription the next join sends.
func (m *Member) SetTopics(topics ...string) { m.cfg.Topics = slices.Clone(topics) }

func (m *Member) tracef(format string, args ...any) {
	if m.cfg.Trace != nil {
		fmt.Fprintf(m.cfg.Trace, format+"\n", args...)
	}
}

// Join joins the group the way a JoinGroup v4+ client does (KIP-394): a
// first join without a member id gets MEMBER_ID_REQUIRED and an id, and a
// second join with that id joins. A member that already has an id joins
// once. It returns the final answer's error code.
func (m *Member) Join(ctx context.Context) (int16, error) {
	code, err := m.JoinOnce(ctx)
	if err == nil && code == kerr.MemberIDRequired.Code {
		code, err = m.JoinOnce(ctx)
	}
	return code, err
}

// JoinOnce sends one JoinGroup with the member's current id (possibly
// empty). A MEMBER_ID_REQUIRED answer sets ID; a successful one sets ID,
// Generation, Leader and Protocol. Against a broker with a join barrier
// (Kafka, kfake) it returns only once the rebalance completes.
func (m *Member) JoinOnce(ctx context.Context) (int16, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = JoinGroupVersion
	req.Group = m.cfg.Group
	req.MemberID = m.ID
	req.SessionTimeoutMillis = int32(m.cfg.SessionTimeout / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(m.cfg.RebalanceTimeout / time.Millisecond)
	req.ProtocolType = "consumer"
	if m.cfg.InstanceID != "" {
		req.InstanceID = kmsg.StringPtr(m.cfg.InstanceID)
	}
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = slices.Clone(m.cfg.Topics)
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: ProtocolName, Metadata: meta.AppendTo(nil)}}
	m.tracef("  > JoinGroup v%d member=%s%s topics=%s session=%v", req.Version, quoteID(m.ID), m.instance(), list(m.cfg.Topics), m.cfg.SessionTimeout)

	resp, err := Request[*kmsg.JoinGroupResponse](ctx, m.conn, req)
	if err != nil {
		return 0, err
	}
	switch resp.ErrorCode {
	case 0:
		m.ID, m.Generation, m.Leader, m.joined = resp.MemberID, resp.Generation, resp.LeaderID, resp.Members
		m.Protocol = ""
		if resp.Protocol != nil {
			m.Protocol = *resp.Protocol
		}
		line := fmt.Sprintf("  < JoinGroup v%d NONE generation=%d member=%s leader=%s", resp.Version, resp.Generation, resp.MemberID, resp.LeaderID)
		if len(resp.Members) > 0 {
			ids := make([]string, len(resp.Members))
			for i, jm := range resp.Members {
				ids[i] = jm.MemberID
			}
			slices.Sort(ids)
			line += " members=" + list(ids)
		}
		m.tracef("%s", line)
	case kerr.MemberIDRequired.Code:
		m.ID = resp.MemberID
		m.tracef("  < JoinGroup v%d %s generation=%d member=%s", resp.Version, CodeName(resp.ErrorCode), resp.Generation, resp.MemberID)
	default:
		m.tracef("  < JoinGroup v%d %s generation=%d", resp.Version, CodeName(resp.ErrorCode), resp.Generation)
	}
	return resp.ErrorCode, nil
}

// Sync sends the SyncGroup of the member's current generation. A leader
// with a Plan catalog sends a round-robin plan for every member it was
// told of. A successful answer replaces Assigned.
func (m *Member) Sync(ctx context.Context) (int16, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = SyncGroupVersion
	req.Group = m.cfg.Group
	req.MemberID = m.ID
	req.Generation = m.Generation
	protocolType, protocolName := "consumer", m.Protocol
	req.ProtocolType, req.Protocol = &protocolType, &protocolName
	req.InstanceID = m.instanceID()
	planned := ""
	if (m.cfg.Plan != nil || m.cfg.Planner != nil) && m.ID == m.Leader && len(m.joined) > 0 {
		plan, err := m.plan()
		if err != nil {
			return 0, err
		}
		req.GroupAssignment = plan
		planned = fmt.Sprintf(" plan=%d members", len(plan))
	}
	m.tracef("  > SyncGroup v%d member=%s%s generation=%d%s", req.Version, m.ID, m.instance(), req.Generation, planned)

	resp, err := Request[*kmsg.SyncGroupResponse](ctx, m.conn, req)
	if err != nil {
		return 0, err
	}
	if resp.ErrorCode != 0 {
		m.tracef("  < SyncGroup v%d %s", resp.Version, CodeName(resp.ErrorCode))
		return resp.ErrorCode, nil
	}
	parts, err := protocol.DecodeAssignment(resp.MemberAssignment)
	if err != nil {
		return 0, err
	}
	m.Assigned = parts
	m.tracef("  < SyncGroup v%d NONE assigned=%s", resp.Version, compact(parts))
	return 0, nil
}

// plan computes the leader's plan from the members' metadata, the way a
// client-side assignor does.
func (m *Member) plan() ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	subs := make(map[string][]string, len(m.joined))
	for _, jm := range m.joined {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(jm.ProtocolMetadata); err != nil {
			return nil, fmt.Errorf("lab: metadata of member %s: %w", jm.MemberID, err)
		}
		subs[jm.MemberID] = meta.Topics
	}
	var assignment map[string][]assignor.TopicPartition
	if m.cfg.Planner != nil {
		assignment = m.cfg.Planner(m.ID, subs)
	} else {
		assignment = assignor.RoundRobin(subs, m.cfg.Plan)
	}
	ids := make([]string, 0, len(subs))
	for id := range subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(ids))
	for _, id := range ids {
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: protocol.EncodeAssignment(assignment[id])})
	}
	return out, nil
}

// Heartbeat sends a heartbeat under generation.
func (m *Member) Heartbeat(ctx context.Context, generation int32) (int16, error) {
	return m.HeartbeatAs(ctx, m.ID, generation)
}

// HeartbeatAs sends a heartbeat naming any member id, for the scenarios
// that probe unknown members.
func (m *Member) HeartbeatAs(ctx context.Context, memberID string, generation int32) (int16, error) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = HeartbeatVersion
	req.Group = m.cfg.Group
	req.MemberID = memberID
	req.Generation = generation
	req.InstanceID = m.instanceID()
	m.tracef("  > Heartbeat v%d member=%s%s generation=%d", req.Version, quoteID(memberID), m.instance(), generation)
	resp, err := Request[*kmsg.HeartbeatResponse](ctx, m.conn, req)
	if err != nil {
		return 0, err
	}
	m.tracef("  < Heartbeat v%d %s", resp.Version, CodeName(resp.ErrorCode))
	return resp.ErrorCode, nil
}

// instanceID is the group instance id a static member names in its
// requests (JoinGroup, SyncGroup, Heartbeat, OffsetCommit), nil for a
// dynamic member.
func (m *Member) instanceID() *string {
	if m.cfg.InstanceID == "" {
		return nil
	}
	return kmsg.StringPtr(m.cfg.InstanceID)
}

// instance renders the instance id for a trace line: " instance=<id>",
// or nothing for a dynamic member.
func (m *Member) instance() string {
	if m.cfg.InstanceID == "" {
		return ""
	}
	return " instance=" + m.cfg.InstanceID
}

// Leave sends one LeaveGroup (v3+ batch form) for memberIDs, or for the
// member itself when none are given. It returns the top-level code and
// each named member's code, in request order.
func (m *Member) Leave(ctx context.Context, memberIDs ...string) (int16, []int16, error) {
	if len(memberIDs) == 0 {
		memberIDs = []string{m.ID}
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = LeaveGroupVersion
	req.Group = m.cfg.Group
	for _, id := range memberIDs {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = id
		req.Members = append(req.Members, lm)
	}
	m.tracef("  > LeaveGroup v%d members=%s", req.Version, list(memberIDs))
	resp, err := Request[*kmsg.LeaveGroupResponse](ctx, m.conn, req)
	if err != nil {
		return 0, nil, err
	}
	codes := make([]int16, len(resp.Members))
	line := fmt.Sprintf("  < LeaveGroup v%d %s", resp.Version, CodeName(resp.ErrorCode))
	for i, lm := range resp.Members {
		codes[i] = lm.ErrorCode
		line += fmt.Sprintf(" %s=%s", lm.MemberID, CodeName(lm.ErrorCode))
	}
	m.tracef("%s", line)
	return resp.ErrorCode, codes, nil
}

// Describe sends a DescribeGroups for the member's group and returns the
// group's error code, state and sorted member ids.
func (m *Member) Describe(ctx context.Context) (code int16, state string, members []string, err error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = DescribeGroupsVersion
	req.Groups = []string{m.cfg.Group}
	m.tracef("  > DescribeGroups v%d group=%s", req.Version, m.cfg.Group)
	resp, err := Request[*kmsg.DescribeGroupsResponse](ctx, m.conn, req)
	if err != nil {
		return 0, "", nil, err
	}
	if len(resp.Groups) != 1 {
		return 0, "", nil, fmt.Errorf("lab: DescribeGroups answered %d groups, want 1", len(resp.Groups))
	}
	g := resp.Groups[0]
	for _, gm := range g.Members {
		members = append(members, gm.MemberID)
	}
	slices.Sort(members)
	m.tracef("  < DescribeGroups v%d %s state=%s members=%s", resp.Version, CodeName(g.ErrorCode), g.State, list(members))
	return g.ErrorCode, g.State, members, nil
}

// Request sends req on conn and returns its response as the type the
// caller expects.
func Request[R kmsg.Response](ctx context.Context, conn *wireclient.Client, req kmsg.Request) (R, error) {
	var zero R
	resp, err := conn.Request(ctx, req)
	if err != nil {
		return zero, fmt.Errorf("lab: %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	typed, ok := resp.(R)
	if !ok {
		return zero, fmt.Errorf("lab: %s answered with %T", kmsg.NameForKey(req.Key()), resp)
	}
	return typed, nil
}
