package compare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/tools/lab"
)

// staleHeartbeat: after a rebalance both members took part in, the first
// heartbeats under its generation from before it.
func staleHeartbeat(ctx context.Context, s *Script) (string, error) {
	p, err := s.twoMembers(ctx)
	if err != nil {
		return "", err
	}
	return codeName(p.first.Heartbeat(ctx, p.oldGeneration))
}

// heartbeatWhileAnotherJoins is what the first member's heartbeat answers
// once the second member's join has reached the broker: Kafka is holding
// that join at its barrier; minibroker has already completed it.
func heartbeatWhileAnotherJoins(ctx context.Context, s *Script) (string, error) {
	p, err := s.twoMembers(ctx)
	if err != nil {
		return "", err
	}
	return lab.CodeName(p.notice), nil
}

// heartbeatUnknownMember: a member id the group never saw heartbeats under
// the group's current generation.
func heartbeatUnknownMember(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	return codeName(m.HeartbeatAs(ctx, "compare-ghost", m.Generation))
}

// heartbeatCheckOrder: an unknown member id with a wrong generation. The
// answer shows which check runs first.
func heartbeatCheckOrder(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	return codeName(m.HeartbeatAs(ctx, "compare-ghost", m.Generation+5))
}

// leaveUnknownMember: a LeaveGroup (v5, batch form) naming an id the group
// never saw; the answer is that member's code.
func leaveUnknownMember(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	top, codes, err := m.Leave(ctx, "compare-ghost")
	if err != nil {
		return "", err
	}
	if top != 0 || len(codes) != 1 {
		return "", fmt.Errorf("LeaveGroup answered %s with %d member codes", lab.CodeName(top), len(codes))
	}
	return lab.CodeName(codes[0]), nil
}

// memberIDRequired: a JoinGroup v9 without a member id, then one with the
// id it was given (KIP-394), into a new group.
func memberIDRequired(ctx context.Context, s *Script) (string, error) {
	m, err := s.member(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	first, err := m.JoinOnce(ctx)
	if err != nil {
		return "", err
	}
	if m.ID == "" {
		return "", errors.New("no member id handed out")
	}
	second, err := m.JoinOnce(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, then %s at generation %d", lab.CodeName(first), lab.CodeName(second), m.Generation), nil
}

// unchangedRejoin: in a stable group of two, the member that does not
// lead re-joins with the same subscription and syncs again.
func unchangedRejoin(ctx context.Context, s *Script) (string, error) {
	p, err := s.twoMembers(ctx)
	if err != nil {
		return "", err
	}
	_, follower := p.leader()
	return rejoinDelta(ctx, follower, true)
}

// unchangedRejoinLeader: the only member, which leads its group, re-joins
// with the same subscription.
func unchangedRejoinLeader(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	return rejoinDelta(ctx, m, false)
}

// rejoinDelta re-joins m, syncs, and reports the code and the generation
// change, and whether the assignment is unchanged.
func rejoinDelta(ctx context.Context, m *lab.Member, sameAssignment bool) (string, error) {
	before, assigned := m.Generation, slices.Clone(m.Assigned)
	code, err := m.JoinOnce(ctx)
	if err != nil {
		return "", err
	}
	answer := fmt.Sprintf("%s, generation %+d", lab.CodeName(code), m.Generation-before)
	if err := want(m.Sync(ctx))("SyncGroup", 0); err != nil {
		return "", err
	}
	if sameAssignment {
		if !slices.Equal(assigned, m.Assigned) {
			return answer + ", new assignment", nil
		}
		answer += ", same assignment"
	}
	return answer, nil
}

// changedRejoin: in a stable group of two, the member that does not lead
// re-joins subscribed to one more topic; the leader learns of it from its
// heartbeat and re-joins.
func changedRejoin(ctx context.Context, s *Script) (string, error) {
	p, err := s.twoMembers(ctx)
	if err != nil {
		return "", err
	}
	leader, follower := p.leader()
	before := follower.Generation
	follower.SetTopics(s.topic("orders"), s.topic("payments"))
	joined := async(func() (int16, error) { return follower.JoinOnce(ctx) })
	if _, err := awaitRebalance(ctx, leader); err != nil {
		abandon(follower, joined)
		return "", err
	}
	if err := want(leader.JoinOnce(ctx))("leader re-join", 0); err != nil {
		abandon(follower, joined)
		return "", err
	}
	code, err := (<-joined).get()
	if err != nil {
		return "", err
	}
	if err := syncAll(ctx, leader, follower); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, generation %+d", lab.CodeName(code), follower.Generation-before), nil
}

// unknownTopicSubscription: a member subscribes to a topic the broker does
// not have.
func unknownTopicSubscription(ctx context.Context, s *Script) (string, error) {
	m, err := s.member(ctx, "no-such-topic")
	if err != nil {
		return "", err
	}
	return codeName(m.Join(ctx))
}

// invalidSessionTimeout: a join asking for a 1 ms session, below both
// brokers' minimum (10 ms here).
func invalidSessionTimeout(ctx context.Context, s *Script) (string, error) {
	m, err := s.memberWith(ctx, lab.MemberConfig{Topics: []string{s.topic("orders")}, SessionTimeout: time.Millisecond})
	if err != nil {
		return "", err
	}
	return codeName(m.Join(ctx))
}

// sessionExpiry: a member joins with a short session and never heartbeats.
// The script describes the group at once, then until it changes, and
// checks that the member did not go before its session timeout.
func sessionExpiry(ctx context.Context, s *Script) (string, error) {
	m, err := s.memberWith(ctx, lab.MemberConfig{Topics: []string{s.topic("orders")}, SessionTimeout: sessionExpiryTimeout})
	if err != nil {
		return "", err
	}
	start := time.Now()
	if err := want(m.Join(ctx))("JoinGroup", 0); err != nil {
		return "", err
	}
	if err := want(m.Sync(ctx))("SyncGroup", 0); err != nil {
		return "", err
	}
	_, first, _, err := m.Describe(ctx)
	if err != nil {
		return "", err
	}
	state := first
	for state == first {
		if err := pause(ctx); err != nil {
			return fmt.Sprintf("%s until the scenario's deadline", first), nil
		}
		if _, state, _, err = m.Describe(ctx); err != nil {
			if ctx.Err() != nil {
				return fmt.Sprintf("%s until the scenario's deadline", first), nil
			}
			return "", err
		}
	}
	when := "after"
	if time.Since(start) < sessionExpiryTimeout {
		when = "before"
	}
	m.ID = "" // gone: nothing to leave
	return fmt.Sprintf("%s, then %s %s the session timeout", first, state, when), nil
}

// leaderPlanIgnored: the leader's plan gives the leader every partition.
// A broker that follows the leader's plan leaves the other member nothing.
func leaderPlanIgnored(ctx context.Context, s *Script) (string, error) {
	greedy := func(leader string, subs map[string][]string) map[string][]assignor.TopicPartition {
		plan := map[string][]assignor.TopicPartition{}
		for p := range Topics()["orders"] {
			plan[leader] = append(plan[leader], lab.TP(s.topic("orders"), p))
		}
		return plan
	}
	p, err := s.twoMembersWith(ctx, lab.MemberConfig{Topics: []string{s.topic("orders")}, Planner: greedy})
	if err != nil {
		return "", err
	}
	leader, follower := p.leader()
	return fmt.Sprintf("leader %d partitions, other member %d", len(leader.Assigned), len(follower.Assigned)), nil
}

// groupStates: the states DescribeGroups and ListGroups report for a group
// with a member, for the same group once its member has left, and for a
// group nobody joined.
func groupStates(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	_, described, _, err := m.Describe(ctx)
	if err != nil {
		return "", err
	}
	listed, err := listedState(ctx, s.addr, s.group)
	if err != nil {
		return "", err
	}
	if _, _, err := m.Leave(ctx); err != nil {
		return "", err
	}
	_, empty, _, err := m.Describe(ctx)
	if err != nil {
		return "", err
	}
	unknown, err := s.memberWith(ctx, lab.MemberConfig{Group: s.group + "-nobody"})
	if err != nil {
		return "", err
	}
	_, dead, _, err := unknown.Describe(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (listed %s); after leave %s; unknown group %s", described, listed, empty, dead), nil
}

// joinUnknownMemberID: a JoinGroup naming a member id the group never
// handed out, into a group with a member.
func joinUnknownMemberID(ctx context.Context, s *Script) (string, error) {
	if _, err := s.joined(ctx, s.topic("orders")); err != nil {
		return "", err
	}
	m, err := s.member(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	m.ID = "compare-ghost"
	code, err := m.JoinOnce(ctx)
	m.ID = "" // never a member: nothing to leave
	return codeName(code, err)
}

// staticMember: a first JoinGroup v9 with a group instance id (KIP-345)
// and no member id.
func staticMember(ctx context.Context, s *Script) (string, error) {
	m, err := s.memberWith(ctx, lab.MemberConfig{Topics: []string{s.topic("orders")}, InstanceID: "compare-static"})
	if err != nil {
		return "", err
	}
	return codeName(m.JoinOnce(ctx))
}

// syncWrongProtocol: a SyncGroup v5 naming a protocol other than the one
// the group chose.
func syncWrongProtocol(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	m.Protocol = "range"
	return codeName(m.Sync(ctx))
}
