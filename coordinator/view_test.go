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
				Topics: []string{"orders"}, Assignment: tps("orders-0", "orders-2")},
			{MemberID: "b", ClientID: "kgo", ClientHost: "/127.0.0.1", SessionTimeout: time.Second, Deadline: time.UnixMilli(1005),
				Topics: []string{"orders"}, Metadata: []byte("meta:orders"), Assignment: tps("orders-1", "orders-3")},
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
				Topics: []string{"orders", "payments"}, MemberEpoch: 2, Assignor: UniformAssignor,
				Assignment: tps("orders-0", "orders-1", "payments-0"), TargetAssignment: tps("orders-0", "orders-1", "payments-0")},
			{MemberID: "b", ClientID: "kgo", ClientHost: "127.0.0.1", SessionTimeout: DefaultConsumerSessionTimeout, Deadline: deadline,
				Topics: []string{"orders"}, MemberEpoch: 1, Assignor: RangeAssignor,
				Assignment: tps("orders-2", "orders-3"), TargetAssignment: tps("orders-2", "orders-3")},
		},
	}, v)

	require.Equal(t, []GroupListing{{Group: "g", Type: ConsumerGroup, State: Reconciling}}, f.c.Groups())
	_, err = f.consumerBeat("g", "b", 1)
	require.NoError(t, err)
	require.Equal(t, []GroupListing{{Group: "g", Type: ConsumerGroup, State: Stable}}, f.c.Groups())
}
