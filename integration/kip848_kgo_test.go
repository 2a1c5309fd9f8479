package integration

// Stock kgo consumers on the KIP-848 protocol: kgo.ServerSideBalancer with
// a range balancer (kgo sends "range") or a sticky one (kgo sends
// "uniform", the chapter's round-robin here). minibroker holds no records
// yet, so the consumers idle: they join, converge, heartbeat, commit
// chosen offsets and hand their partitions over, which is all the group
// protocol is.

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	mbroker "github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

// k848KgoConfig is the broker of these tests: the real clock and its
// expiry ticker, and a 100 ms heartbeat so that a test sees many in a
// second. The session is long enough that a live member never expires
// under -race on two cores.
func k848KgoConfig() mbroker.Config {
	return mbroker.Config{ConsumerSessionTimeout: 3 * time.Second, ConsumerHeartbeatInterval: 100 * time.Millisecond}
}

// k848Member is one kgo consumer in a KIP-848 group and the assignment its
// callbacks report.
type k848Member struct {
	name string
	cl   *kgo.Client

	mu    sync.Mutex
	owned map[string][]int32 // guarded by mu; sorted partitions by topic
}

// k848NewMember starts a kgo consumer of topics in group with
// kgo.ServerSideBalancer and balancer; it is closed at cleanup.
func k848NewMember(t *testing.T, b *mbroker.Broker, group, name string, balancer kgo.GroupBalancer, topics ...string) *k848Member {
	t.Helper()
	m := &k848Member{name: name, owned: map[string][]int32{}}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(balancer),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, added map[string][]int32) { m.change(added, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) { m.change(lost, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) { m.change(lost, false) }),
		kgo.WithLogger(kgo.BasicLogger(t.Output(), kgo.LogLevelWarn, func() string { return name + " " })),
	)
	require.NoError(t, err)
	m.cl = cl
	t.Cleanup(cl.Close)
	return m
}

// change adds or removes partitions, as kgo's cooperative callbacks report
// them (the consumer protocol is always incremental on the client side).
func (m *k848Member) change(parts map[string][]int32, add bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for topic, ps := range parts {
		cur := m.owned[topic]
		if add {
			cur = append(cur, ps...)
		} else {
			cur = slices.DeleteFunc(cur, func(p int32) bool { return slices.Contains(ps, p) })
		}
		slices.Sort(cur)
		cur = slices.Compact(cur)
		if len(cur) == 0 {
			delete(m.owned, topic)
		} else {
			m.owned[topic] = cur
		}
	}
}

// assigned returns what the callbacks say the member owns.
func (m *k848Member) assigned() map[string][]int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]int32{}
	for topic, ps := range m.owned {
		out[topic] = slices.Clone(ps)
	}
	return out
}

// k848ByTopic groups sorted partitions by topic.
func k848ByTopic(parts []assignor.TopicPartition) map[string][]int32 {
	out := map[string][]int32{}
	for _, tp := range parts {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	return out
}

// k848Converged reports whether group is Stable with exactly members, each
// at the group epoch on both sides, and each member's callbacks agreeing
// with the coordinator's view of its assignment.
func k848Converged(b *mbroker.Broker, group string, members ...*k848Member) bool {
	v, ok := b.Coordinator().Describe(group)
	if !ok || v.State != coordinator.Stable || len(v.Members) != len(members) {
		return false
	}
	for _, m := range members {
		id, epoch := m.cl.GroupMetadata()
		i := slices.IndexFunc(v.Members, func(mv coordinator.MemberView) bool { return mv.MemberID == id })
		if i < 0 || epoch != v.Generation || v.Members[i].MemberEpoch != v.Generation {
			return false
		}
		if !maps.EqualFunc(m.assigned(), k848ByTopic(v.Members[i].Assignment), slices.Equal) {
			return false
		}
	}
	return true
}

// k848AwaitConverged waits until k848Converged holds and returns the view.
func k848AwaitConverged(t *testing.T, b *mbroker.Broker, group string, members ...*k848Member) coordinator.GroupView {
	t.Helper()
	k848Eventually(t, func() bool { return k848Converged(b, group, members...) }, "group %s never converged on %d members", group, len(members))
	v, _ := b.Coordinator().Describe(group)
	return v
}

// k848AssertStable checks that the converged group stays at its epoch, with
// the same members and assignment, while every member heartbeats beats
// more times (seen as its session deadline moving on).
func k848AssertStable(t *testing.T, b *mbroker.Broker, group string, beats int) {
	t.Helper()
	start, _ := b.Coordinator().Describe(group)
	deadlines := map[string]map[time.Time]bool{}
	k848Eventually(t, func() bool {
		v, _ := b.Coordinator().Describe(group)
		require.Equal(t, start.Generation, v.Generation, "the group epoch moved while the group was idle")
		require.Equal(t, coordinator.Stable, v.State)
		require.Len(t, v.Members, len(start.Members))
		done := true
		for i, m := range v.Members {
			require.Equal(t, start.Members[i].MemberID, m.MemberID)
			require.Equal(t, start.Members[i].Assignment, m.Assignment)
			if deadlines[m.MemberID] == nil {
				deadlines[m.MemberID] = map[time.Time]bool{}
			}
			deadlines[m.MemberID][m.Deadline] = true
			done = done && len(deadlines[m.MemberID]) > beats
		}
		return done
	}, "members of %s did not heartbeat %d times", group, beats)
}

// k848Subscriptions is the view's subscriptions and the partition counts of
// the chapter's topics, the input of the assignors.
func k848Subscriptions(v coordinator.GroupView) (map[string][]string, map[string]int32) {
	subs := map[string][]string{}
	for _, m := range v.Members {
		subs[m.MemberID] = m.Topics
	}
	return subs, k848Topics()
}

// k848CommitOwned commits offset 100+p of every partition p the member
// owns, with kgo's own member id and epoch, and requires every partition
// to succeed; it returns what it committed.
func k848CommitOwned(t *testing.T, m *k848Member) map[string]map[int32]int64 {
	t.Helper()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	want := map[string]map[int32]int64{}
	for topic, ps := range m.assigned() {
		offsets[topic], want[topic] = map[int32]kgo.EpochOffset{}, map[int32]int64{}
		for _, p := range ps {
			offsets[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: 100 + int64(p)}
			want[topic][p] = 100 + int64(p)
		}
	}
	var resp *kmsg.OffsetCommitResponse
	var err error
	ctx, cancel := context.WithTimeout(t.Context(), k848Wait)
	defer cancel()
	m.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, r *kmsg.OffsetCommitResponse, e error) {
		resp, err = r, e
	})
	require.NoError(t, err, "%s commits", m.name)
	n := 0
	for _, topic := range resp.Topics {
		for _, p := range topic.Partitions {
			assert.Zero(t, p.ErrorCode, "%s commits %s-%d", m.name, topic.Topic, p.Partition)
			n++
		}
	}
	for _, ps := range want {
		n -= len(ps)
	}
	assert.Zero(t, n, "the response names every partition")
	return want
}

// k848FetchCommitted reads the group's committed offsets back with kadm.
func k848FetchCommitted(t *testing.T, cl *kgo.Client, group string) map[string]map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), k848Wait)
	defer cancel()
	resps, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	require.NoError(t, err)
	out := map[string]map[int32]int64{}
	resps.Each(func(o kadm.OffsetResponse) {
		require.NoError(t, o.Err)
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.At
	})
	return out
}

// TestK848KgoRangeConvergesCommitsAndTakesOverOnClose: three kgo consumers
// with a range balancer converge on Kafka's range assignment, stay at one
// epoch while they heartbeat, commit their own partitions (read back with
// kadm), and when one closes (a leave, epoch -1) the others take its
// partitions.
func TestK848KgoRangeConvergesCommitsAndTakesOverOnClose(t *testing.T) {
	t.Parallel()
	b := k848Start(t, k848KgoConfig())
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
	b := k848Start(t, k848KgoConfig())
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
	k848Eventually(t, func() bool {
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
	ctx, cancel := context.WithTimeout(t.Context(), k848Wait)
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
	cfg := k848KgoConfig()
	cfg.ConsumerSessionTimeout = time.Second
	b := k848Start(t, cfg)
	const group = "k848-session"
	members := []*k848Member{
		k848NewMember(t, b, group, "a", kgo.RangeBalancer(), "orders"),
		k848NewMember(t, b, group, "b", kgo.RangeBalancer(), "orders"),
	}
	k848AwaitConverged(t, b, group, members...)

	c := k848Dial(t, b, "quiet")
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
	resp := k848Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive(group, "quiet", quiet.MemberEpoch))
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode, "its session ended")
}

// TestK848KgoClassicClientsStayClassic: advertising ConsumerGroupHeartbeat
// changes nothing for kgo consumers that do not ask for the consumer
// protocol: they join a classic group.
func TestK848KgoClassicClientsStayClassic(t *testing.T) {
	t.Parallel()
	b := k848Start(t, k848KgoConfig())
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("k848-classic"), kgo.ConsumeTopics("orders"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit())
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	k848Eventually(t, func() bool {
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
	b := k848Start(t, k848KgoConfig())
	const group = "k848-later"
	m := k848NewMember(t, b, group, "a", kgo.RangeBalancer(), "orders", "later")
	v := k848AwaitConverged(t, b, group, m)
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, m.assigned())
	assert.Equal(t, []string{"later", "orders"}, v.Members[0].Topics)

	require.NoError(t, b.CreateTopic("later", 2))
	k848Eventually(t, func() bool {
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
	b := k848Start(t, k848KgoConfig())
	const group = "k848-fenced"
	members := []*k848Member{
		k848NewMember(t, b, group, "a", kgo.RangeBalancer(), "orders"),
		k848NewMember(t, b, group, "b", kgo.RangeBalancer(), "orders"),
	}
	v := k848AwaitConverged(t, b, group, members...)
	id, epoch := members[0].cl.GroupMetadata()

	c := k848Dial(t, b, "impostor")
	resp := k848Join(t, c, group, id, "range", "orders", "payments")
	require.Equal(t, v.Generation+1, resp.MemberEpoch)

	k848Eventually(t, func() bool {
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
