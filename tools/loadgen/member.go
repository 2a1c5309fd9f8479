package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request versions: the newest each server under test supports without
// topic ids (KIP-516) or KIP-848.
const (
	joinVersion      = 9
	syncVersion      = 5
	heartbeatVersion = 4
	leaveVersion     = 5
	commitVersion    = 8
	fetchVersion     = 8
)

// ProtocolName is the assignor name every load generator member offers.
const ProtocolName = "roundrobin"

// Member is one group member the load generator created.
type Member struct {
	Group      string
	ID         string
	Generation int32
	Partitions []int32 // of the scenario's topic, from SyncGroup
	offset     int64   // the last offset committed
	next       int     // index of the next partition to commit
}

// groupSpec is what every join of a scenario sends.
type groupSpec struct {
	topic      string
	partitions int32
	session    time.Duration
	metadata   []byte // ConsumerMemberMetadata subscribing to topic
}

func newGroupSpec(sc *Scenario) *groupSpec {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{sc.Topic}
	return &groupSpec{
		topic: sc.Topic, partitions: int32(sc.Partitions),
		session: sc.SessionTimeout, metadata: meta.AppendTo(nil),
	}
}

func (g *groupSpec) join(group, memberID string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = joinVersion
	req.Group = group
	req.SessionTimeoutMillis = int32(g.session.Milliseconds())
	// A join barrier (kfake) waits this long for a member that never
	// re-joins; Kafka clients default to 60 s, a bench wants less.
	req.RebalanceTimeoutMillis = 10_000
	req.MemberID = memberID
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: ProtocolName, Metadata: g.metadata}}
	return req
}

// sync builds a SyncGroup; the leader (members != nil) sends a round-robin
// plan, as a Kafka client leader would. minibroker ignores it; kfake
// hands it out.
func (g *groupSpec) sync(group, memberID string, generation int32, members []kmsg.JoinGroupResponseMember) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = syncVersion
	req.Group = group
	req.MemberID = memberID
	req.Generation = generation
	protocolType, protocol := "consumer", ProtocolName
	req.ProtocolType, req.Protocol = &protocolType, &protocol
	if len(members) == 0 {
		return req
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.MemberID
	}
	slices.Sort(ids)
	parts := make(map[string][]int32, len(ids))
	for p := range g.partitions {
		id := ids[int(p)%len(ids)]
		parts[id] = append(parts[id], p)
	}
	for _, id := range ids {
		a := kmsg.NewConsumerMemberAssignment()
		if len(parts[id]) > 0 {
			a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: g.topic, Partitions: parts[id]}}
		}
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a.AppendTo(nil)})
	}
	return req
}

func heartbeatRequest(m *Member) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = heartbeatVersion
	req.Group, req.MemberID, req.Generation = m.Group, m.ID, m.Generation
	return req
}

func leaveRequest(group, memberID string) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = leaveVersion
	req.Group = group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: memberID}}
	return req
}

// commitRequest commits the member's next offset to its next partition.
func (g *groupSpec) commitRequest(m *Member) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = commitVersion
	req.Group, req.MemberID, req.Generation = m.Group, m.ID, m.Generation
	p := int32(0)
	if len(m.Partitions) > 0 {
		p = m.Partitions[m.next%len(m.Partitions)]
		m.next++
	}
	m.offset++
	req.Topics = []kmsg.OffsetCommitRequestTopic{{
		Topic:      g.topic,
		Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: p, Offset: m.offset, LeaderEpoch: -1}},
	}}
	return req
}

// fetchRequest fetches the committed offset of the member's first
// partition.
func (g *groupSpec) fetchRequest(m *Member) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = fetchVersion
	p := int32(0)
	if len(m.Partitions) > 0 {
		p = m.Partitions[0]
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{{
		Group:  m.Group,
		Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: g.topic, Partitions: []int32{p}}},
	}}
	return req
}

// assigned decodes a SyncGroup assignment: the partitions of topic.
func assigned(data []byte, topic string) []int32 {
	a := kmsg.NewConsumerMemberAssignment()
	if len(data) == 0 || a.ReadFrom(data) != nil {
		return nil
	}
	var out []int32
	for _, t := range a.Topics {
		if t.Topic == topic {
			out = append(out, t.Partitions...)
		}
	}
	return out
}

// errSetup wraps every failure to bring a group to a stable generation.
var errSetup = errors.New("loadgen: setup")

// stableGroup brings one group of len(conns) members, one per connection,
// to a generation that all of them hold, the way Kafka clients do: join
// (twice: MEMBER_ID_REQUIRED first), sync, then heartbeat until every
// member synced the same generation, re-joining whenever a heartbeat or
// sync says the group moved on. It works with a synchronous coordinator
// (each join is a rebalance; a stale member re-joins and refreshes) and
// with Kafka's join barrier (kfake parks joins until every member joined).
// Every non-zero code is counted in codes.
func stableGroup(ctx context.Context, conns []*Conn, group string, g *groupSpec, codes *Codes) ([]*Member, error) {
	k := len(conns)
	members := make([]*Member, k)
	var mu sync.Mutex
	synced := make([]int32, k) // generation each member last synced; 0 none
	stable := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, gen := range synced {
			if gen == 0 || gen != synced[0] {
				return false
			}
		}
		return true
	}
	errs := make(chan error, k)
	for i, c := range conns {
		go func() {
			m, err := joinUntilStable(ctx, c, group, g, codes, stable, func(gen int32) {
				mu.Lock()
				synced[i] = gen
				mu.Unlock()
			})
			members[i] = m
			errs <- err
		}()
	}
	var first error
	for range k {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return members, first
}

func joinUntilStable(ctx context.Context, c *Conn, group string, g *groupSpec, codes *Codes, stable func() bool, mark func(int32)) (*Member, error) {
	m := &Member{Group: group}
	resp, err := c.Do(g.join(group, ""))
	if err != nil {
		return nil, err
	}
	jr := resp.(*kmsg.JoinGroupResponse)
	codes.Add(jr.ErrorCode)
	joined := false
	switch jr.ErrorCode {
	case kerr.MemberIDRequired.Code:
		m.ID = jr.MemberID
	case 0: // a server that joins at once (JoinGroup v3 style, or the floor)
		m.ID, joined = jr.MemberID, true
	default:
		return nil, fmt.Errorf("%w: %s: first join: %s", errSetup, group, kerr.ErrorForCode(jr.ErrorCode))
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errSetup, group, err)
		}
		if !joined {
			resp, err := c.Do(g.join(group, m.ID))
			if err != nil {
				return nil, err
			}
			jr = resp.(*kmsg.JoinGroupResponse)
			if codes.Add(jr.ErrorCode); jr.ErrorCode != 0 {
				if jr.ErrorCode == kerr.RebalanceInProgress.Code {
					continue
				}
				return nil, fmt.Errorf("%w: %s: join: %s", errSetup, group, kerr.ErrorForCode(jr.ErrorCode))
			}
		}
		joined = false
		var leaderPlan []kmsg.JoinGroupResponseMember
		if jr.LeaderID == m.ID {
			leaderPlan = jr.Members
		}
		resp, err := c.Do(g.sync(group, m.ID, jr.Generation, leaderPlan))
		if err != nil {
			return nil, err
		}
		sr := resp.(*kmsg.SyncGroupResponse)
		if codes.Add(sr.ErrorCode); sr.ErrorCode != 0 {
			continue // the group moved on: join again
		}
		m.Generation = jr.Generation
		m.Partitions = assigned(sr.MemberAssignment, g.topic)
		mark(m.Generation)
		for !stable() {
			hb := heartbeatRequest(m)
			resp, err := c.Do(hb)
			if err != nil {
				return nil, err
			}
			if code := resp.(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
				codes.Add(code)
				mark(0)
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if stable() {
			return m, nil
		}
	}
}
