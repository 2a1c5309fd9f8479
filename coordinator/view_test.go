package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDescribeCopiesGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.advance(5)
	req := wireJoin("g", "b", roundrobin("orders"))
	req.WireRules, req.RequireMemberID, req.ClientHost = false, false, "/127.0.0.1"
	_, err := f.c.Join(req)
	require.NoError(t, err)
	f.join("g", "a", "orders")

	v, ok := f.c.Describe("g")
	require.True(t, ok)
	require.Equal(t, GroupView{
		Group: "g", State: Stable, Generation: 2, Protocol: "roundrobin", Leader: "a",
		Members: []MemberView{
			{MemberID: "a", SessionTimeout: defaultSession, Deadline: time.UnixMilli(5).Add(defaultSession),
				Topics: []string{"orders"}, Assignment: tps("orders-0", "orders-2"), KnownGeneration: 2},
			// b was handed generation 1 and has not learned of 2 yet.
			{MemberID: "b", ClientID: "kgo", ClientHost: "/127.0.0.1", SessionTimeout: time.Second, Deadline: time.UnixMilli(1005),
				Topics: []string{"orders"}, Metadata: []byte("meta:orders"), Assignment: tps("orders-1", "orders-3"), KnownGeneration: 1},
		},
	}, v)

	v.Members[0].Assignment[0].Partition = 99
	again, _ := f.c.Describe("g")
	require.Equal(t, int32(0), again.Members[0].Assignment[0].Partition, "the view is a copy")
}

func TestDescribeUnknownAndOffsetsOnlyGroups(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	v, ok := f.c.Describe("nogroup")
	require.False(t, ok)
	require.Equal(t, Dead, v.State)

	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0")))
	v, ok = f.c.Describe("manual")
	require.True(t, ok)
	require.Equal(t, GroupView{Group: "manual", State: Empty}, v)
}

func TestGroupsListsMembersAndOffsetsOnlyGroupsSorted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("zeta", "a", "orders")
	f.join("alpha", "a", "orders")
	f.c.Leave("alpha", "a")
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0")))
	require.NoError(t, f.c.CommitDirect("zeta", entries("orders-1")))

	require.Equal(t, []GroupListing{
		{Group: "alpha", State: Empty},
		{Group: "manual", State: Empty},
		{Group: "zeta", State: Stable},
	}, f.c.Groups())
}

// TestDescribeConsumerGroup: the group epoch, the assignment epoch, the
// server assignor, and per member its epoch, client, subscription, current
// and target assignment (what ConsumerGroupDescribe answers).
func TestDescribeConsumerGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.advance(5)
	req := consumerReq("g", "b", JoinEpoch, "orders")
	req.Assignor = ptr(RangeAssignor)
	_, err := f.c.ConsumerHeartbeat(req)
	require.NoError(t, err)
	f.consumerJoin("g", "a", "payments", "orders")

	v, ok := f.c.Describe("g")
	require.True(t, ok)
	deadline := time.UnixMilli(5).Add(DefaultConsumerSessionTimeout)
	require.Equal(t, GroupView{
		Group: "g", Type: ConsumerGroup, State: Reconciling, Generation: 2, AssignmentEpoch: 2, Assignor: RangeAssignor,
		Members: []MemberView{
			{MemberID: "a", ClientID: "kgo", ClientHost: "127.0.0.1", SessionTimeout: DefaultConsumerSessionTimeout, Deadline: deadline,
				Topics: []string{"orders", "payments"}, MemberEpoch: 2, KnownGeneration: 2, Assignor: UniformAssignor,
				Assignment: tps("orders-0", "orders-1", "payments-0"), TargetAssignment: tps("orders-0", "orders-1", "payments-0")},
			{MemberID: "b", ClientID: "kgo", ClientHost: "127.0.0.1", SessionTimeout: DefaultConsumerSessionTimeout, Deadline: deadline,
				Topics: []string{"orders"}, MemberEpoch: 1, KnownGeneration: 1, Assignor: RangeAssignor,
				Assignment: tps("orders-2", "orders-3"), TargetAssignment: tps("orders-2", "orders-3")},
		},
	}, v)

	require.Equal(t, []GroupListing{{Group: "g", Type: ConsumerGroup, State: Reconciling}}, f.c.Groups())
	_, err = f.consumerBeat("g", "b", 1)
	require.NoError(t, err)
	require.Equal(t, []GroupListing{{Group: "g", Type: ConsumerGroup, State: Stable}}, f.c.Groups())
}

// TestKnownGenerationFollowsWhatTheMemberWasTold: a classic member knows a
// generation once a SyncGroup, a refresh or a heartbeat at it succeeds; a
// wire join alone teaches it nothing yet (its assignment comes with the
// SyncGroup). The chapter's stale local view, as the coordinator sees it.
func TestKnownGenerationFollowsWhatTheMemberWasTold(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	known := func(member string) int32 {
		v, _ := f.c.Describe("w")
		for _, m := range v.Members {
			if m.MemberID == member {
				return m.KnownGeneration
			}
		}
		t.Fatalf("no member %s", member)
		return 0
	}
	join := func(id string) JoinResult {
		req := wireJoin("w", id, roundrobin("orders"))
		req.RequireMemberID = false
		res, err := f.c.Join(req)
		require.NoError(t, err)
		return res
	}
	a := join("")
	require.Equal(t, int32(0), known(a.MemberID), "joined, not yet synced")
	_, err := f.c.Sync("w", a.MemberID, a.Generation, "")
	require.NoError(t, err)
	require.Equal(t, int32(1), known(a.MemberID))
	b := join("")
	require.Equal(t, int32(1), known(a.MemberID), "a still believes generation 1")
	require.ErrorIs(t, f.c.Heartbeat("w", a.MemberID, 1), ErrIllegalGeneration)
	require.Equal(t, int32(1), known(a.MemberID), "a rejected heartbeat teaches nothing")
	require.NoError(t, f.c.Heartbeat("w", a.MemberID, 2))
	require.Equal(t, int32(2), known(a.MemberID))
	_, _, err = f.c.Assignment("w", b.MemberID)
	require.NoError(t, err)
	require.Equal(t, int32(2), known(b.MemberID))
}
