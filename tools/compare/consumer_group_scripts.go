package compare

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

// raw opens a plain connection to the script's broker, closed by Close:
// for requests no lab member sends.
func (s *Script) raw(ctx context.Context) (*wireclient.Client, error) {
	c, err := wireclient.Dial(ctx, s.addr, "compare")
	if err != nil {
		return nil, err
	}
	s.conns = append(s.conns, c)
	return c, nil
}

// describeConsumerGroup sends one ConsumerGroupDescribe of the script's group
// on a raw connection of its own.
func (s *Script) describeConsumerGroup(ctx context.Context) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	c, err := s.raw(ctx)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version, req.Groups = lab.ConsumerGroupDescribeVersion, []string{s.group}
	resp, err := lab.Request[*kmsg.ConsumerGroupDescribeResponse](ctx, c, req)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("ConsumerGroupDescribe answered %d groups for 1", len(resp.Groups))
	}
	return resp.Groups[0], nil
}

// consumerUnknownGroup: a heartbeat (epoch 1) for a group nobody joined,
// then a ConsumerGroupDescribe of it. Kafka answers GROUP_ID_NOT_FOUND to
// both; minibroker collapses the group into the member, as the chapter
// does; kfake creates the group on the heartbeat.
func consumerUnknownGroup(ctx context.Context, s *Script) (string, error) {
	m, err := s.consumer(ctx, "member-1", "", s.topic("orders"))
	if err != nil {
		return "", err
	}
	hb, err := codeName(m.HeartbeatAt(ctx, 1))
	if err != nil {
		return "", err
	}
	g, err := s.describeConsumerGroup(ctx)
	if err != nil {
		return "", err
	}
	described := lab.CodeName(g.ErrorCode)
	if g.ErrorCode == 0 {
		described = fmt.Sprintf("%s with %d members", g.State, len(g.Members))
	}
	return fmt.Sprintf("heartbeat %s; then described: %s", hb, described), nil
}

// consumerLeaveUnknownMember: a leave (epoch -1) naming a member the group
// does not know, in a group with a member and in a group nobody joined.
func consumerLeaveUnknownMember(ctx context.Context, s *Script) (string, error) {
	if _, err := s.joinedConsumer(ctx, "member-1", "", s.topic("orders")); err != nil {
		return "", err
	}
	ghost, err := s.consumer(ctx, "ghost", "", s.topic("orders"))
	if err != nil {
		return "", err
	}
	known, err := codeName(ghost.Leave(ctx))
	if err != nil {
		return "", err
	}
	nowhere, err := lab.DialConsumer(ctx, s.addr, lab.ConsumerConfig{Group: s.group + "-nobody", MemberID: "ghost", ClientID: "compare"})
	if err != nil {
		return "", err
	}
	defer nowhere.Close()
	unknown, err := codeName(nowhere.Leave(ctx))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("known group %s; unknown group %s", known, unknown), nil
}

// consumerAssignors: a join asking for an assignor neither side has, then
// two members that ask for none: the assignor the group is described
// with, and how the default splits orders.
func consumerAssignors(ctx context.Context, s *Script) (string, error) {
	odd, err := s.consumer(ctx, "member-0", "cooperative-sticky", s.topic("orders"))
	if err != nil {
		return "", err
	}
	refused, err := codeName(odd.Join(ctx))
	if err != nil {
		return "", err
	}
	first, err := s.joinedConsumer(ctx, "member-1", "", s.topic("orders"))
	if err != nil {
		return "", err
	}
	if _, err := s.joinedConsumer(ctx, "member-2", "", s.topic("orders")); err != nil {
		return "", err
	}
	view, err := first.Describe(ctx)
	if err != nil {
		return "", err
	}
	if view.Code != 0 || len(view.Members) != 2 {
		return "", fmt.Errorf("ConsumerGroupDescribe answered %s with %d members", lab.CodeName(view.Code), len(view.Members))
	}
	split := make([]string, len(view.Members))
	for i, mv := range view.Members {
		split[i] = mv.MemberID + " " + parts(mv.Target)
	}
	return fmt.Sprintf("cooperative-sticky %s; default described as %q; it splits orders %s", refused, view.Assignor, strings.Join(split, ", ")), nil
}

// consumerDescribeTopicIDs: ConsumerGroupDescribe of a group of one
// member: its state and epochs, and how the assignment names its topic
// (by the id Metadata gives it, and by name or not).
func consumerDescribeTopicIDs(ctx context.Context, s *Script) (string, error) {
	m, err := s.joinedConsumer(ctx, "member-1", "", s.topic("orders"))
	if err != nil {
		return "", err
	}
	g, err := s.describeConsumerGroup(ctx)
	if err != nil {
		return "", err
	}
	if g.ErrorCode != 0 || len(g.Members) != 1 || len(g.Members[0].Assignment.TopicPartitions) != 1 {
		return "", fmt.Errorf("ConsumerGroupDescribe answered %s with %d members", lab.CodeName(g.ErrorCode), len(g.Members))
	}
	t := g.Members[0].Assignment.TopicPartitions[0]
	id, _ := m.TopicID(s.topic("orders"))
	naming := "by an id Metadata does not give"
	if t.TopicID == id {
		naming = "by its Metadata id"
	}
	switch t.Topic {
	case s.topic("orders"):
		naming += " and by name"
	case "":
		naming += ", no name"
	default:
		naming += ", named " + t.Topic
	}
	return fmt.Sprintf("%s at epoch %d (assignment epoch %d); orders %s", g.State, g.Epoch, g.AssignmentEpoch, naming), nil
}

// consumerRejoinKnownID: a member re-joins (epoch 0) under its own id with
// its subscription unchanged, as a client fenced with FENCED_MEMBER_EPOCH
// does.
func consumerRejoinKnownID(ctx context.Context, s *Script) (string, error) {
	m, err := s.joinedConsumer(ctx, "member-1", "", s.topic("orders"))
	if err != nil {
		return "", err
	}
	code, err := codeName(m.Join(ctx))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s at epoch %d with %s", code, m.Epoch, parts(m.Assigned)), nil
}

// consumerClassicGroup: a consumer-protocol join to a classic group with a
// member, and a classic JoinGroup to a consumer group with a member.
func consumerClassicGroup(ctx context.Context, s *Script) (string, error) {
	if _, err := s.joined(ctx, s.topic("orders")); err != nil {
		return "", err
	}
	toClassic, err := s.consumer(ctx, "member-1", "", s.topic("orders"))
	if err != nil {
		return "", err
	}
	intoClassic, err := codeName(toClassic.Join(ctx))
	if err != nil {
		return "", err
	}
	other := &Script{addr: s.addr, group: s.group + "-consumer", names: s.names}
	defer other.Close()
	if _, err := other.joinedConsumer(ctx, "member-1", "", s.topic("orders")); err != nil {
		return "", err
	}
	classic, err := other.member(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	code, err := classic.JoinOnce(ctx)
	if err != nil {
		return "", err
	}
	if code == kerr.MemberIDRequired.Code { // the group took the classic member's join
		code, err = classic.JoinOnce(ctx)
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("heartbeat join into a classic group %s; JoinGroup into a consumer group %s", intoClassic, lab.CodeName(code)), nil
}
