package compare

// Scenarios of member identity: static membership (KIP-345) on the classic
// protocol, instance ids under KIP-848, and regex subscriptions
// (docs/design.md section 12). No scenario creates a topic while it runs:
// kfake moves every consumer group's epoch when one appears (see
// Prepare), which would disturb the scenarios beside it; a regex picking
// up a new topic is shown by integration's kgo test instead.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

// staticInstance is the group instance id of the static scenarios' member.
const staticInstance = "compare-static"

// staticRestarted joins a static member and then its restart (a new
// member with the same instance id and topics), and syncs the restart.
// It returns the first run, the restart, and the first run's generation
// and partitions.
func (s *Script) staticRestarted(ctx context.Context, topics ...string) (old, restarted *lab.Member, gen int32, parts string, err error) {
	cfg := lab.MemberConfig{Topics: []string{s.topic("orders")}, InstanceID: staticInstance}
	if old, err = s.joinedWith(ctx, cfg); err != nil {
		return nil, nil, 0, "", err
	}
	gen, parts = old.Generation, heldBy(old)
	cfg.Topics = topics
	if restarted, err = s.memberWith(ctx, cfg); err != nil {
		return nil, nil, 0, "", err
	}
	if err = want(restarted.Join(ctx))("JoinGroup of the restart", 0); err != nil {
		return nil, nil, 0, "", err
	}
	if err = want(restarted.Sync(ctx))("SyncGroup of the restart", 0); err != nil {
		return nil, nil, 0, "", err
	}
	return old, restarted, gen, parts, nil
}

// heldBy renders a classic member's partitions.
func heldBy(m *lab.Member) string { return parts(m.Assigned) }

// staticRestart: a static member's restart with the same subscription.
func staticRestart(ctx context.Context, s *Script) (string, error) {
	old, restarted, gen, was, err := s.staticRestarted(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("generation %+d, same assignment %v, new member id %v",
		restarted.Generation-gen, heldBy(restarted) == was, restarted.ID != old.ID), nil
}

// staticRestartNewSubscription: a static member's restart with another
// subscription.
func staticRestartNewSubscription(ctx context.Context, s *Script) (string, error) {
	_, restarted, gen, _, err := s.staticRestarted(ctx, s.topic("orders"), s.topic("payments"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("generation %+d, assigned %s", restarted.Generation-gen, heldBy(restarted)), nil
}

// staticZombie: the replaced run of a static member heartbeats and
// commits naming its instance id, at the current generation; then it
// heartbeats at an older generation without the instance id.
func staticZombie(ctx context.Context, s *Script) (string, error) {
	old, _, gen, _, err := s.staticRestarted(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	hb, err := codeName(old.Heartbeat(ctx, gen))
	if err != nil {
		return "", err
	}
	codes, err := old.CommitAs(ctx, old.ID, gen, lab.PartitionOffset{TopicPartition: lab.TP(s.topic("orders"), 0), Offset: 5})
	if err != nil {
		return "", err
	}
	cm, _ := lab.OneCode(codes)
	anonymous, err := s.memberWith(ctx, lab.MemberConfig{Topics: []string{s.topic("orders")}})
	if err != nil {
		return "", err
	}
	stale, err := codeName(anonymous.HeartbeatAs(ctx, old.ID, gen-1))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("heartbeat %s, commit %s; without the instance id at an older generation %s", hb, lab.CodeName(cm), stale), nil
}

// staticLeaveUnknownInstance: a LeaveGroup v5 naming, by instance id
// alone, an instance no member holds, in a group with a member.
func staticLeaveUnknownInstance(ctx context.Context, s *Script) (string, error) {
	if _, err := s.joined(ctx, s.topic("orders")); err != nil {
		return "", err
	}
	c, err := s.raw(ctx)
	if err != nil {
		return "", err
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = lab.LeaveGroupVersion, s.group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.InstanceID = kmsg.StringPtr("compare-nobody")
	req.Members = append(req.Members, lm)
	resp, err := lab.Request[*kmsg.LeaveGroupResponse](ctx, c, req)
	if err != nil {
		return "", err
	}
	if len(resp.Members) != 1 {
		return fmt.Sprintf("%s with %d members", lab.CodeName(resp.ErrorCode), len(resp.Members)), nil
	}
	return fmt.Sprintf("%s, member %s", lab.CodeName(resp.ErrorCode), lab.CodeName(resp.Members[0].ErrorCode)), nil
}

// consumerStatic sends one ConsumerGroupHeartbeat v1 on c for the script's
// group: a join (epoch 0) with a subscription to orders, or any other
// epoch; instance is sent when not empty.
func (s *Script) consumerStatic(ctx context.Context, c *wireclient.Client, member, instance string, epoch int32) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = lab.ConsumerGroupHeartbeatVersion, s.group, member, epoch
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.SubscribedTopicNames = []string{s.topic("orders")}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.ConsumerGroupHeartbeatResponse), nil
}

// consumerStaticTakeover: a static consumer-protocol member leaves for a
// while (epoch -2, naming its instance id) and a new member id with the
// same instance id joins; then a third member id with the instance joins
// while the second holds it.
func consumerStaticTakeover(ctx context.Context, s *Script) (string, error) {
	c, err := s.raw(ctx)
	if err != nil {
		return "", err
	}
	first, err := s.consumerStatic(ctx, c, "compare-run-1", staticInstance, 0)
	if err != nil {
		return "", err
	}
	away, err := s.consumerStatic(ctx, c, "compare-run-1", staticInstance, -2)
	if err != nil {
		return "", err
	}
	second, err := s.consumerStatic(ctx, c, "compare-run-2", staticInstance, 0)
	if err != nil {
		return "", err
	}
	third, err := s.consumerStatic(ctx, c, "compare-run-3", staticInstance, 0)
	if err != nil {
		return "", err
	}
	defer func() { _, _ = s.consumerStatic(ctx, c, "compare-run-2", staticInstance, -1) }() // best effort
	return fmt.Sprintf("-2 %s epoch %d; takeover %s epoch %+d; live holder %s",
		lab.CodeName(away.ErrorCode), away.MemberEpoch, lab.CodeName(second.ErrorCode), second.MemberEpoch-first.MemberEpoch,
		lab.CodeName(third.ErrorCode)), nil
}

// consumerStaticLeaveWithoutInstance: a static consumer-protocol member
// sends epoch -2 without its instance id, as kgo's leave does.
func consumerStaticLeaveWithoutInstance(ctx context.Context, s *Script) (string, error) {
	c, err := s.raw(ctx)
	if err != nil {
		return "", err
	}
	if _, err := s.consumerStatic(ctx, c, "compare-run-1", staticInstance, 0); err != nil {
		return "", err
	}
	away, err := s.consumerStatic(ctx, c, "compare-run-1", "", -2)
	if err != nil {
		return "", err
	}
	_, _ = s.consumerStatic(ctx, c, "compare-run-1", staticInstance, -1) // best effort
	return fmt.Sprintf("%s epoch %d", lab.CodeName(away.ErrorCode), away.MemberEpoch), nil
}

// consumerInvalidRegex: a ConsumerGroupHeartbeat join subscribing with a
// regex that does not compile, then one with a regex that matches orders.
func consumerInvalidRegex(ctx context.Context, s *Script) (string, error) {
	c, err := s.raw(ctx)
	if err != nil {
		return "", err
	}
	join := func(pattern string) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID = lab.ConsumerGroupHeartbeatVersion, s.group, "compare-regex"
		req.RebalanceTimeoutMillis = 60000
		req.SubscribedTopicRegex = kmsg.StringPtr(pattern)
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return lab.Request[*kmsg.ConsumerGroupHeartbeatResponse](ctx, c, req)
	}
	bad, err := join("ord(")
	if err != nil {
		return "", err
	}
	good, err := join("ord.rs")
	if err != nil {
		return "", err
	}
	defer func() { _, _ = s.consumerStatic(ctx, c, "compare-regex", "", -1) }() // best effort
	n := 0
	if good.Assignment != nil {
		for _, t := range good.Assignment.Topics {
			n += len(t.Partitions)
		}
	}
	return fmt.Sprintf("%s; a valid one %s with %d partitions", lab.CodeName(bad.ErrorCode), lab.CodeName(good.ErrorCode), n), nil
}
