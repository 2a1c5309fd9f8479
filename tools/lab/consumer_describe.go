package lab

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
)

// ConsumerGroupView is what ConsumerGroupDescribe says of one consumer
// group: the coordinator's view, beside which a member's local view
// (ConsumerMember.Assigned) can be stale.
type ConsumerGroupView struct {
	Code            int16
	State           string
	Epoch           int32 // the group epoch
	AssignmentEpoch int32
	Assignor        string
	Members         []ConsumerMemberView // sorted by member id
}

// ConsumerMemberView is one member as ConsumerGroupDescribe shows it: its
// epoch, what the coordinator counts as its current assignment, and its
// share of the target.
type ConsumerMemberView struct {
	MemberID        string
	Epoch           int32
	Current, Target []assignor.TopicPartition
}

// Member returns the view of the member with id, and false when the group
// has none.
func (v ConsumerGroupView) Member(id string) (ConsumerMemberView, bool) {
	i := slices.IndexFunc(v.Members, func(mv ConsumerMemberView) bool { return mv.MemberID == id })
	if i < 0 {
		return ConsumerMemberView{}, false
	}
	return v.Members[i], true
}

// Describe sends a ConsumerGroupDescribe for the member's group. Topics
// are read by id (Kafka also names them; kfake does not).
func (m *ConsumerMember) Describe(ctx context.Context) (ConsumerGroupView, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = ConsumerGroupDescribeVersion
	req.Groups = []string{m.cfg.Group}
	m.tracef("  > ConsumerGroupDescribe v%d group=%s", req.Version, m.cfg.Group)
	resp, err := Request[*kmsg.ConsumerGroupDescribeResponse](ctx, m.conn, req)
	if err != nil {
		return ConsumerGroupView{}, err
	}
	if len(resp.Groups) != 1 {
		return ConsumerGroupView{}, fmt.Errorf("lab: ConsumerGroupDescribe answered %d groups, want 1", len(resp.Groups))
	}
	g := resp.Groups[0]
	v := ConsumerGroupView{Code: g.ErrorCode, State: g.State, Epoch: g.Epoch, AssignmentEpoch: g.AssignmentEpoch, Assignor: g.AssignorName}
	if g.ErrorCode != 0 {
		m.tracef("  < ConsumerGroupDescribe v%d %s", resp.Version, CodeName(g.ErrorCode))
		return v, nil
	}
	for _, gm := range g.Members {
		mv := ConsumerMemberView{MemberID: gm.MemberID, Epoch: gm.MemberEpoch}
		if mv.Current, err = m.assignmentByName(ctx, gm.Assignment); err != nil {
			return v, err
		}
		if mv.Target, err = m.assignmentByName(ctx, gm.TargetAssignment); err != nil {
			return v, err
		}
		v.Members = append(v.Members, mv)
	}
	slices.SortFunc(v.Members, func(a, b ConsumerMemberView) int { return strings.Compare(a.MemberID, b.MemberID) })
	m.tracef("  < ConsumerGroupDescribe v%d NONE state=%s epoch=%d assignment-epoch=%d assignor=%s",
		resp.Version, v.State, v.Epoch, v.AssignmentEpoch, v.Assignor)
	for _, mv := range v.Members {
		m.tracef("      %s epoch=%d current=%s target=%s", mv.MemberID, mv.Epoch, compact(mv.Current), compact(mv.Target))
	}
	return v, nil
}

// assignmentByName reads a ConsumerGroupDescribe assignment by topic id.
func (m *ConsumerMember) assignmentByName(ctx context.Context, a kmsg.Assignment) ([]assignor.TopicPartition, error) {
	topics := make([]kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic, len(a.TopicPartitions))
	for i, t := range a.TopicPartitions {
		topics[i] = kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: t.TopicID, Partitions: t.Partitions}
	}
	return m.byName(ctx, topics)
}
