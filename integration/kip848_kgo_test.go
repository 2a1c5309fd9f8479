package integration

// Stock kgo consumers on the KIP-848 protocol: kgo.ServerSideBalancer with
// a range balancer (kgo sends "range") or a sticky one (kgo sends
// "uniform", the chapter's round-robin here). Nothing is produced, so the
// consumers idle: they join, converge, heartbeat, commit chosen offsets
// and hand their partitions over, which is all the group protocol is.

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestK848KgoRangeConvergesCommitsAndTakesOverOnClose: three kgo consumers
// with a range balancer converge on Kafka's range assignment, stay at one
// epoch while they heartbeat, commit their own partitions (read back with
// kadm), and when one closes (a leave, epoch -1) the others take its
// partitions.
func TestK848KgoRangeConvergesCommitsAndTakesOverOnClose(t *testing.T) {
	t.Parallel()
	b := startBroker(t, k848RealClock)
	const group = "k848-range"
	members := []*k848Member{
		k848NewMember(t, b, group, "a", kgo.RangeBalancer(), "orders", "payments"),
		k848NewMember(t, b, group, "b", kgo.RangeBalancer(), "orders", "payments"),
		k848NewMember(t, b, group, "c", kgo.RangeBalancer(), "orders"),
	}
	v := k848AwaitConverged(t, b, group, members...)
	assert.Equal(t, coordinator.ConsumerGroup, v.Type)
	assert.Equal(t, coordinator.RangeAssignor, v.Assignor)
	subs, counts := k848Subscriptions(v)
	want := assignor.Range(subs, counts)
	for _, mv := range v.Members {
		assert.Equal(t, want[mv.MemberID], mv.Assignment, "Kafka's range for %s", mv.MemberID)
		assert.Equal(t, mv.Assignment, mv.TargetAssignment)
	}
	k848AssertStable(t, b, group, 3)

	committed := map[string]map[int32]int64{}
	for _, m := range members {
		for topic, ps := range k848CommitOwned(t, m) {
			if committed[topic] == nil {
				committed[topic] = map[int32]int64{}
			}
			maps.Copy(committed[topic], ps)
		}
	}
	assert.Equal(t, map[string]map[int32]int64{"orders": {0: 100, 1: 101, 2: 102, 3: 103}, "payments": {0: 100}}, committed)
	assert.Equal(t, committed, k848FetchCommitted(t, members[0].cl, group))

	closed := members[2]
	closedID, _ := closed.cl.GroupMetadata()
	closed.cl.Close()
	v = k848AwaitConverged(t, b, group, members[0], members[1])
	for _, mv := range v.Members {
		assert.NotEqual(t, closedID, mv.MemberID)
	}
	subs, counts = k848Subscriptions(v)
	want = assignor.Range(subs, counts)
	for _, mv := range v.Members {
		assert.Equal(t, want[mv.MemberID], mv.Assignment)
	}
	k848AssertStable(t, b, group, 3)
	k848CommitOwned(t, members[0])
	k848CommitOwned(t, members[1])
}

// TestK848KgoStickyConvergesAndTakesOverOnExpiry: kgo's sticky balancer
// asks for "uniform", which is the chapter's round-robin here. Ending one
// member's session (ExpireMember) fences it: its next heartbeat is
// UNKNOWN_MEMBER_ID, it abandons its partitions and re-joins under a new
// member id, and the group converges again.
func TestK848KgoStickyConvergesAndTakesOverOnExpiry(t *testing.T) {
	t.Parallel()
	b := startBroker(t, k848RealClock)
	const group = "k848-sticky"
	members := []*k848Member{
		k848NewMember(t, b, group, "a", kgo.StickyBalancer(), "orders"),
		k848NewMember(t, b, group, "b", kgo.StickyBalancer(), "orders"),
		k848NewMember(t, b, group, "c", kgo.StickyBalancer(), "orders"),
	}
	v := k848AwaitConverged(t, b, group, members...)
	assert.Equal(t, coordinator.UniformAssignor, v.Assignor)
	subs, counts := k848Subscriptions(v)
	want := assignor.RoundRobin(subs, counts)
	for _, mv := range v.Members {
		assert.Equal(t, want[mv.MemberID], mv.Assignment, "the chapter's round-robin for %s", mv.MemberID)
	}
	k848AssertStable(t, b, group, 3)

	expiredID, _ := members[2].cl.GroupMetadata()
	require.NoError(t, b.ExpireMember(group, expiredID))
	eventually(t, func() bool {
		id, _ := members[2].cl.GroupMetadata()
		return id != expiredID && k848Converged(b, group, members...)
	}, "the expired member never came back under a new id")
	v, _ = b.Coordinator().Describe(group)
	for _, mv := range v.Members {
		assert.NotEqual(t, expiredID, mv.MemberID)
	}
	k848AssertStable(t, b, group, 3)
	for _, m := range members {
		k848CommitOwned(t, m)
	}
	assert.Len(t, k848FetchCommitted(t, members[0].cl, group)["orders"], 4)

	// kadm describes the group through ConsumerGroupDescribe, topics by name.
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	described, err := kadm.NewClient(members[0].cl).DescribeConsumerGroups(ctx, group)
	require.NoError(t, err)
	d := described[group]
	require.NoError(t, d.Err)
	assert.Equal(t, "Stable", d.State)
	assert.Equal(t, v.Generation, d.Epoch)
	assert.Equal(t, "uniform", d.AssignorName)
	require.Len(t, d.Members, 3)
	for _, dm := range d.Members {
		i := slices.IndexFunc(v.Members, func(mv coordinator.MemberView) bool { return mv.MemberID == dm.MemberID })
		require.GreaterOrEqual(t, i, 0)
		assert.Equal(t, v.Generation, dm.MemberEpoch)
		assert.Equal(t, k848ByTopic(v.Members[i].Assignment)["orders"], slices.Sorted(maps.Keys(dm.Assignment["orders"])))
	}
}

// TestK848KgoTakeOverWhenASessionEnds: with the real clock, a member that
// stops heartbeating (a raw member that joined and went quiet) is removed
// by the expiry ticker once its session (--consumer-session-timeout) has
// passed, and the kgo members take its partitions.
func TestK848KgoTakeOverWhenASessionEnds(t *testing.T) {
	t.Parallel()
	b := startBroker(t, k848RealClock, func(cfg *broker.Config) { cfg.ConsumerSessionTimeout = time.Second })
	const group = "k848-session"
	members := []*k848Member{
		k848NewMember(t, b, group, "a", kgo.RangeBalancer(), "orders"),
		k848NewMember(t, b, group, "b", kgo.RangeBalancer(), "orders"),
	}
	k848AwaitConverged(t, b, group, members...)

	c := wiretest.Dial(t, b.Addr(), "quiet")
	quiet := k848Join(t, c, group, "quiet", "range", "orders")
	require.Len(t, quiet.Assignment.Topics, 1)
	assert.NotEmpty(t, quiet.Assignment.Topics[0].Partitions, "range gives each of three members a share of orders(4)")
	v, _ := b.Coordinator().Describe(group)
	require.Len(t, v.Members, 3, "the join is synchronous")

	// Converged on the two kgo members alone: only once the quiet
	// member's session has ended.
	v = k848AwaitConverged(t, b, group, members...)
	for _, mv := range v.Members {
		assert.NotEqual(t, "quiet", mv.MemberID)
	}
	all := map[int32]bool{}
	for _, m := range members {
		for _, p := range m.assigned()["orders"] {
			all[p] = true
		}
	}
	assert.Len(t, all, 4, "the kgo members hold every partition again")
	resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive(group, "quiet", quiet.MemberEpoch))
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode, "its session ended")
}

// TestK848KgoClassicClientsStayClassic: advertising ConsumerGroupHeartbeat
// changes nothing for kgo consumers that do not ask for the consumer
// protocol: they join a classic group.
func TestK848KgoClassicClientsStayClassic(t *testing.T) {
	t.Parallel()
	b := startBroker(t, k848RealClock)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("k848-classic"), kgo.ConsumeTopics("orders"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit())
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	eventually(t, func() bool {
		v, ok := b.Coordinator().Describe("k848-classic")
		return ok && v.State == coordinator.Stable && len(v.Members) == 1
	}, "the classic member never joined")
	v, _ := b.Coordinator().Describe("k848-classic")
	assert.Equal(t, coordinator.ClassicGroup, v.Type)
	assert.Equal(t, "range", v.Protocol)
}

// TestK848KgoSubscriptionToATopicCreatedLater: kgo sends every topic it was
// told to consume in SubscribedTopicNames, found in Metadata or not. As
// Kafka, the broker accepts the subscription and assigns what exists; once
// the topic is created, the next heartbeat starts a new group epoch that
// assigns it too. (The chapter's join rejects unknown topics: kgo would
// then fail every join, and consume nothing, until the topic existed.)
func TestK848KgoSubscriptionToATopicCreatedLater(t *testing.T) {
	t.Parallel()
	b := startBroker(t, k848RealClock)
	const group = "k848-later"
	m := k848NewMember(t, b, group, "a", kgo.RangeBalancer(), "orders", "later")
	v := k848AwaitConverged(t, b, group, m)
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, m.assigned())
	assert.Equal(t, []string{"later", "orders"}, v.Members[0].Topics)

	require.NoError(t, b.CreateTopic("later", 2, nil))
	eventually(t, func() bool {
		return k848Converged(b, group, m) && len(m.assigned()["later"]) == 2
	}, "the new topic was never assigned")
	v, _ = b.Coordinator().Describe(group)
	assert.Greater(t, v.Generation, int32(1))
	assert.Equal(t, map[string][]int32{"later": {0, 1}, "orders": {0, 1, 2, 3}}, m.assigned())
}

// TestK848KgoRecoversFromFencedMemberEpoch: a heartbeat sent in a kgo
// member's name (epoch 0, another subscription) moves the member to a new
// epoch behind kgo's back, so kgo's next heartbeat carries a stale epoch
// and is fenced (FENCED_MEMBER_EPOCH, no previous-epoch grace). kgo
// abandons its partitions and re-joins with epoch 0 under the same member
// id, which minibroker takes as a re-join (section 4's refresh rule, or
// here a subscription change back): the group converges again.
func TestK848KgoRecoversFromFencedMemberEpoch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, k848RealClock)
	const group = "k848-fenced"
	members := []*k848Member{
		k848NewMember(t, b, group, "a", kgo.RangeBalancer(), "orders"),
		k848NewMember(t, b, group, "b", kgo.RangeBalancer(), "orders"),
	}
	v := k848AwaitConverged(t, b, group, members...)
	id, epoch := members[0].cl.GroupMetadata()

	c := wiretest.Dial(t, b.Addr(), "impostor")
	resp := k848Join(t, c, group, id, "range", "orders", "payments")
	require.Equal(t, v.Generation+1, resp.MemberEpoch)

	eventually(t, func() bool {
		now, _ := b.Coordinator().Describe(group)
		return now.Generation >= v.Generation+2 && k848Converged(b, group, members...)
	}, "kgo never re-joined after being fenced")
	again, newEpoch := members[0].cl.GroupMetadata()
	assert.Equal(t, id, again, "FENCED_MEMBER_EPOCH keeps the member id")
	assert.Greater(t, newEpoch, epoch)
	v, _ = b.Coordinator().Describe(group)
	for _, mv := range v.Members {
		assert.Equal(t, []string{"orders"}, mv.Topics, "kgo's own subscription again")
	}
}
