package broker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// consume starts a kgo consumer of group on topics with clientID; it
// polls (which drives the join and the heartbeats) until the test ends.
func consume(t *testing.T, b *Broker, group, clientID string, topics ...string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.DisableAutoCommit(),
	)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !cl.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return cl
}

// TestWaitGroupStableWithKgo: two kgo consumers join; WaitGroupStable
// returns once both act on the same generation, with the group's state,
// generation, and each member's id, client id and assignment.
func TestWaitGroupStableWithKgo(t *testing.T) {
	t.Parallel()
	b := start(t, Config{Topics: map[string]int32{"orders": 4}})
	consume(t, b, "billing", "alpha", "orders")
	consume(t, b, "billing", "beta", "orders")
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	g, err := b.WaitGroupStable(ctx, "billing", 2)
	require.NoError(t, err)
	require.Equal(t, coordinator.Stable, g.State)
	require.Equal(t, int32(2), g.Generation, "two joins; the re-joins that follow are refreshes")
	require.True(t, g.Settled())
	require.Len(t, g.Members, 2)
	alpha, beta := g.Members[0], g.Members[1] // sorted by member id: "alpha-..." < "beta-..."
	require.Equal(t, "alpha", alpha.ClientID)
	require.Equal(t, "beta", beta.ClientID)
	require.True(t, strings.HasPrefix(alpha.MemberID, "alpha-"), alpha.MemberID)
	require.Equal(t, []assignor.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 2}}, alpha.Assignment)
	require.Equal(t, []assignor.TopicPartition{{Topic: "orders", Partition: 1}, {Topic: "orders", Partition: 3}}, beta.Assignment)
	for _, m := range g.Members {
		require.Equal(t, int32(2), m.KnownGeneration, "%s has learned the generation", m.MemberID)
		require.Equal(t, []string{"orders"}, m.Topics)
	}
}

// TestWaitGroupWakesOnChange: WaitGroup calls its predicate once, with
// nil for a group that does not exist, then once more for each change:
// the one join here; it returns the group the predicate accepted. It
// reads no group while nothing changes.
func TestWaitGroupWakesOnChange(t *testing.T) {
	t.Parallel()
	b := start(t, Config{ManualClock: true, Topics: map[string]int32{"orders": 4}})
	var calls atomic.Int32
	firstCall := make(chan *GroupInfo, 1)
	type result struct {
		g   *GroupInfo
		err error
	}
	got := make(chan result, 1)
	go func() {
		g, err := b.WaitGroup(t.Context(), "g", func(g *GroupInfo) bool {
			if calls.Add(1) == 1 {
				firstCall <- g
			}
			return g != nil && g.Generation == 1
		})
		got <- result{g, err}
	}()
	require.Nil(t, <-firstCall, "no group yet")
	require.Nil(t, b.Group("g"), "reading the groups wakes nobody")
	require.Equal(t, int32(1), calls.Load())

	c := wiretest.Dial(t, b.Addr(), "test")
	j := join(t, c, "g", "orders")
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, int32(2), calls.Load(), "one change, one more read")
	require.Equal(t, j.MemberID, r.g.Members[0].MemberID)
	require.Equal(t, "test", r.g.Members[0].ClientID)
}

// TestWaitGroupEndsWithItsContext: a wait whose context ends returns the
// last group it read and the context's error.
func TestWaitGroupEndsWithItsContext(t *testing.T) {
	t.Parallel()
	b := start(t, Config{ManualClock: true, Topics: map[string]int32{"orders": 4}})
	c := wiretest.Dial(t, b.Addr(), "test")
	join(t, c, "g", "orders")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	g, err := b.WaitGroupStable(ctx, "g", 2)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, g)
	require.Len(t, g.Members, 1)
}

// TestGroupReadsTheGroup: Group is nil for an unknown group, shows a
// group's members and its durable commits, and keeps showing a group
// that lost its members, Empty at its last generation.
func TestGroupReadsTheGroup(t *testing.T) {
	t.Parallel()
	b := start(t, Config{ManualClock: true, Topics: map[string]int32{"orders": 4}})
	require.Nil(t, b.Group("g"))
	c := wiretest.Dial(t, b.Addr(), "test")
	j := join(t, c, "g", "orders")
	require.Zero(t, commit(t, c, "g", j.MemberID, j.Generation, 2, 5))

	g := b.Group("g")
	require.NotNil(t, g)
	require.Equal(t, coordinator.Stable, g.State)
	require.Equal(t, int32(1), g.Generation)
	require.Len(t, g.Members, 1)
	require.Equal(t, j.MemberID, g.Members[0].MemberID)
	require.Equal(t, "test", g.Members[0].ClientID)
	require.Len(t, g.Members[0].Assignment, 4)
	require.Equal(t, []offsets.Entry{{Topic: "orders", Partition: 2, Offset: 5, LeaderEpoch: -1}}, g.Committed, "committed at the manual clock's 0")

	require.NoError(t, b.ExpireMember("g", j.MemberID))
	g = b.Group("g")
	require.Equal(t, coordinator.Empty, g.State)
	require.Equal(t, int32(2), g.Generation)
	require.Empty(t, g.Members)
	require.False(t, g.Settled(), "an Empty group is not Stable")
	require.Len(t, g.Committed, 1)
}

// TestSettledNeedsEveryMemberToLearn: a member that joined over the wire
// is not settled until its SyncGroup hands it the generation's
// assignment; a second member's join leaves the first one behind until
// it learns of the new generation too.
func TestSettledNeedsEveryMemberToLearn(t *testing.T) {
	t.Parallel()
	b := start(t, Config{ManualClock: true, Topics: map[string]int32{"orders": 4}})
	first, second := wiretest.Dial(t, b.Addr(), "first"), wiretest.Dial(t, b.Addr(), "second")
	sync := func(c *wireclient.Client, member string, generation int32) {
		t.Helper()
		resp := wiretest.Do[*kmsg.SyncGroupResponse](t, c, wiretest.SyncRequest(3, "g", member, generation))
		require.Zero(t, resp.ErrorCode)
	}
	j1 := join(t, first, "g", "orders")
	g := b.Group("g")
	require.Equal(t, coordinator.Stable, g.State, "the coordinator is Stable at once")
	require.False(t, g.Settled(), "the member has not had its assignment yet")
	sync(first, j1.MemberID, 1)
	require.True(t, b.Group("g").Settled())

	j2 := join(t, second, "g", "orders")
	sync(second, j2.MemberID, 2)
	g = b.Group("g")
	require.False(t, g.Settled(), "the first member acts on generation 1")
	require.Equal(t, int32(1), g.Members[0].KnownGeneration)
	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(t, first, "g", j1.MemberID, 1))
	rejoin := wiretest.Do[*kmsg.JoinGroupResponse](t, first, wiretest.JoinRequest(3, "g", j1.MemberID, 30*time.Second, "orders"))
	require.Zero(t, rejoin.ErrorCode)
	require.Equal(t, int32(2), rejoin.Generation, "an unchanged re-join is a refresh")
	sync(first, j1.MemberID, 2)
	require.True(t, b.Group("g").Settled())
}
