package integration

// The KIP-848 consumer protocol over real sockets with raw kmsg requests,
// pinning every code (docs/design.md section 9).

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestK848WireLaggingMemberGetsWholeAssignmentAtItsHeartbeat: the chapter's
// rebalance lab over the consumer protocol. The second join bumps the
// group epoch and computes the whole target; the first member's next
// heartbeat, even a keepalive, moves it to the new epoch with its whole new
// assignment; nothing is revoked first.
func TestK848WireLaggingMemberGetsWholeAssignmentAtItsHeartbeat(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "k848")
	ids := k848TopicIDs(t, c)

	first := k848Join(t, c, "lab", "member-1", "uniform", "orders")
	assert.Equal(t, "member-1", *first.MemberID)
	assert.Equal(t, int32(1), first.MemberEpoch)
	assert.Equal(t, int32(5000), first.HeartbeatIntervalMillis, "the broker's default, Kafka's")
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, k848Parts(t, ids, first.Assignment))

	second := k848Join(t, c, "lab", "member-2", "uniform", "orders")
	assert.Equal(t, int32(2), second.MemberEpoch)
	assert.Equal(t, map[string][]int32{"orders": {1, 3}}, k848Parts(t, ids, second.Assignment), "at once: no revocation step")

	resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("lab", "member-1", 1))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(2), resp.MemberEpoch)
	assert.Equal(t, map[string][]int32{"orders": {0, 2}}, k848Parts(t, ids, resp.Assignment))

	resp = wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("lab", "member-1", 2))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(2), resp.MemberEpoch)
	assert.Nil(t, resp.Assignment, "a keepalive at an unchanged epoch gets no assignment")

	resp = wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Leave("lab", "member-2"))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(-1), resp.MemberEpoch)
	resp = wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("lab", "member-1", 2))
	assert.Equal(t, int32(3), resp.MemberEpoch)
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, k848Parts(t, ids, resp.Assignment))
}

// TestK848WireHeartbeatCodes pins every ConsumerGroupHeartbeat rejection.
func TestK848WireHeartbeatCodes(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "k848")
	k848Join(t, c, "g", "a", "range", "orders")
	k848Join(t, c, "g", "b", "range", "orders") // a lags at epoch 1, the group is at 2

	classic := kmsg.NewPtrJoinGroupRequest()
	classic.Version, classic.Group, classic.ProtocolType = 3, "classic", "consumer"
	classic.SessionTimeoutMillis, classic.RebalanceTimeoutMillis = 10000, 10000
	meta := kmsg.ConsumerMemberMetadata{Topics: []string{"orders"}}
	classic.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	require.Zero(t, wiretest.Do[*kmsg.JoinGroupResponse](t, c, classic).ErrorCode)

	unsupported := k848Heartbeat(1, "g", "c", 0, "cooperative-sticky", "orders")
	noMemberID := k848Heartbeat(1, "g", "", 0, "range", "orders")
	regex := k848Heartbeat(1, "g", "c", 0, "range")
	regex.SubscribedTopicNames, regex.SubscribedTopicRegex = nil, kmsg.StringPtr("ord(")
	cases := []struct {
		name string
		req  *kmsg.ConsumerGroupHeartbeatRequest
		want *kerr.Error
	}{
		{"the group epoch, ahead of a's", k848Keepalive("g", "a", 2), kerr.FencedMemberEpoch},
		{"an epoch behind b's", k848Keepalive("g", "b", 1), kerr.FencedMemberEpoch},
		{"an epoch ahead of everyone's", k848Keepalive("g", "b", 9), kerr.FencedMemberEpoch},
		{"an unknown member", k848Keepalive("g", "z", 2), kerr.UnknownMemberID},
		{"an unknown group", k848Keepalive("nope", "a", 1), kerr.UnknownMemberID},
		{"an assignor other than uniform and range", unsupported, kerr.UnsupportedAssignor},
		{"a classic group with members", k848Heartbeat(1, "classic", "c", 0, "range", "orders"), kerr.GroupIDNotFound},
		{"v1 without the client's member id", noMemberID, kerr.InvalidRequest},
		{"a regex that does not compile", regex, kerr.InvalidRegularExpression},
	}
	for _, tc := range cases {
		resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, tc.req)
		assert.Equal(t, tc.want.Code, resp.ErrorCode, "%s: %v", tc.name, resp.ErrorMessage)
		assert.NotNil(t, resp.ErrorMessage, tc.name)
		assert.Nil(t, resp.Assignment, tc.name)
	}

	// Kafka accepts the previous epoch with a subset of the assignment (a
	// lost response); here only the member's current epoch is.
	resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "a", 1))
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, int32(2), resp.MemberEpoch)
	prev := k848Heartbeat(1, "g", "a", 1, "range", "orders")
	prev.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: k848TopicIDs(t, c)["orders"], Partitions: []int32{0}}}
	resp = wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, prev)
	assert.Equal(t, kerr.FencedMemberEpoch.Code, resp.ErrorCode, "no previous-epoch grace")

	// A classic join to the consumer group while it has members.
	classic.Group = "g"
	jr := wiretest.Do[*kmsg.JoinGroupResponse](t, c, classic)
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, jr.ErrorCode)
}

// TestK848WireV0MemberIDs: v0 lets the broker make a joining member's id.
func TestK848WireV0MemberIDs(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "k848-client")
	resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Heartbeat(0, "g", "", 0, "uniform", "orders"))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, "k848-client-000001", *resp.MemberID, "the classic members' style: client id and sequence")
	resp = wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", *resp.MemberID, 1))
	assert.Zero(t, resp.ErrorCode)
}

// TestK848WireCommitCodes: a consumer-protocol member commits with
// OffsetCommit v9+, at exactly its current member epoch, and only
// partitions of its current assignment.
func TestK848WireCommitCodes(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "k848")
	k848Join(t, c, "g", "a", "uniform", "orders")
	k848Join(t, c, "g", "b", "uniform", "orders") // a keeps orders-0, orders-2 at epoch 1

	cases := []struct {
		name string
		req  *kmsg.OffsetCommitRequest
		want *kerr.Error
	}{
		{"OffsetCommit v8", commitRequest(8, "g", "a", 1, k848Orders(0, 2)...), kerr.UnsupportedVersion},
		{"OffsetCommit v2", commitRequest(2, "g", "a", 1, k848Orders(0)...), kerr.UnsupportedVersion},
		{"the group epoch is not a's", commitRequest(9, "g", "a", 2, k848Orders(0, 2)...), kerr.StaleMemberEpoch},
		{"an older epoch", commitRequest(9, "g", "b", 1, k848Orders(1)...), kerr.StaleMemberEpoch},
		{"a partition the new target moved away", commitRequest(9, "g", "a", 1, k848Orders(0, 1)...), kerr.RebalanceInProgress},
		{"another member's partition", commitRequest(9, "g", "b", 2, k848Orders(0)...), kerr.RebalanceInProgress},
		{"a partition that does not exist", commitRequest(9, "g", "b", 2, k848Orders(1, 9)...), kerr.RebalanceInProgress},
		{"an unknown member", commitRequest(9, "g", "z", 2, k848Orders(1)...), kerr.UnknownMemberID},
	}
	for _, tc := range cases {
		n := len(tc.req.Topics[0].Partitions)
		assert.Equal(t, repeat(tc.want.Code, n), wiretest.Commit(t, c, tc.req), tc.name)
	}
	all := k848Orders(0, 1, 2, 3)
	assert.Equal(t, map[string]int64{"orders-0": -1, "orders-1": -1, "orders-2": -1, "orders-3": -1},
		fetchOffsets(t, c, "g", all...), "a rejected commit stores nothing")

	assert.Equal(t, repeat(0, 2), wiretest.Commit(t, c, commitRequest(9, "g", "a", 1, k848Orders(0, 2)...)), "a lagging member commits what it keeps")
	assert.Equal(t, repeat(0, 2), wiretest.Commit(t, c, commitRequest(9, "g", "b", 2, k848Orders(1, 3)...)))
	resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "a", 1))
	require.Equal(t, int32(2), resp.MemberEpoch)
	assert.Equal(t, repeat(kerr.StaleMemberEpoch.Code, 1), wiretest.Commit(t, c, commitRequest(9, "g", "a", 1, k848Orders(0)...)), "its old epoch is stale now")
	assert.Equal(t, map[string]int64{"orders-0": 100, "orders-1": 101, "orders-2": 102, "orders-3": 103}, fetchOffsets(t, c, "g", all...))

	// The reset sentinels are stored as for a classic member; -3 is not.
	assert.Equal(t, repeat(kerr.OffsetOutOfRange.Code, 2), wiretest.Commit(t, c, commitRequest(9, "g", "b", 2, tp{"orders", 1, -2}, tp{"orders", 3, -3})))
	assert.Equal(t, repeat(0, 2), wiretest.Commit(t, c, commitRequest(9, "g", "b", 2, tp{"orders", 1, -2}, tp{"orders", 3, -1})))
	assert.Equal(t, map[string]int64{"orders-0": 100, "orders-1": -2, "orders-2": 102, "orders-3": -1}, fetchOffsets(t, c, "g", all...))
}

// TestK848WireConsumerGroupDescribe: epochs, the assignor, and per member
// its epoch, client, subscription, current and target assignment.
func TestK848WireConsumerGroupDescribe(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "k848")
	ids := k848TopicIDs(t, c)
	k848Join(t, c, "g", "a", "range", "orders")
	k848Join(t, c, "g", "b", "range", "orders", "payments")
	k848Join(t, c, "g", "c", "range", "orders")

	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version, req.Groups = 1, []string{"g", "nope"}
	resp := wiretest.Do[*kmsg.ConsumerGroupDescribeResponse](t, c, req)
	require.Len(t, resp.Groups, 2)
	g := resp.Groups[0]
	require.Zero(t, g.ErrorCode)
	assert.Equal(t, "Reconciling", g.State)
	assert.Equal(t, int32(3), g.Epoch)
	assert.Equal(t, int32(3), g.AssignmentEpoch)
	assert.Equal(t, "range", g.AssignorName)
	assert.Equal(t, kerr.GroupIDNotFound.Code, resp.Groups[1].ErrorCode)

	type member struct {
		epoch           int32
		topics          []string
		current, target map[string][]int32
	}
	flat := func(a kmsg.Assignment) map[string][]int32 {
		out := map[string][]int32{}
		for _, tp := range a.TopicPartitions {
			assert.Equal(t, ids[tp.Topic], tp.TopicID, "topic %s by name and id", tp.Topic)
			out[tp.Topic] = tp.Partitions
		}
		return out
	}
	got := map[string]member{}
	for _, m := range g.Members {
		assert.Equal(t, "k848", m.ClientID)
		assert.Contains(t, m.ClientHost, "127.0.0.1")
		got[m.MemberID] = member{m.MemberEpoch, m.SubscribedTopics, flat(m.Assignment), flat(m.TargetAssignment)}
	}
	assert.Equal(t, map[string]member{
		"a": {1, []string{"orders"}, map[string][]int32{"orders": {0, 1}}, map[string][]int32{"orders": {0, 1}}},
		"b": {2, []string{"orders", "payments"}, map[string][]int32{"orders": {2}, "payments": {0}}, map[string][]int32{"orders": {2}, "payments": {0}}},
		"c": {3, []string{"orders"}, map[string][]int32{"orders": {3}}, map[string][]int32{"orders": {3}}},
	}, got, "a holds what it keeps of epoch 1: range gave orders-2 and orders-3 to b and c")

	wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Leave("g", "c"))
	resp = wiretest.Do[*kmsg.ConsumerGroupDescribeResponse](t, c, req)
	for _, m := range resp.Groups[0].Members {
		if m.MemberID == "a" {
			assert.Equal(t, map[string][]int32{"orders": {0, 1}}, flat(m.Assignment))
			assert.Equal(t, map[string][]int32{"orders": {0, 1}}, flat(m.TargetAssignment))
		} else {
			assert.Equal(t, map[string][]int32{"orders": {2}, "payments": {0}}, flat(m.Assignment), "b holds its epoch-2 share")
			assert.Equal(t, map[string][]int32{"orders": {2, 3}, "payments": {0}}, flat(m.TargetAssignment), "the target is ahead of it")
		}
	}
}

// TestK848WireClassicAPIsOnConsumerGroup: ListGroups lists the group as
// type "consumer", Reconciling while a member lags; DescribeGroups answers
// Dead, as Kafka 4 does before v6; the classic Heartbeat does not know its
// members.
func TestK848WireClassicAPIsOnConsumerGroup(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "k848")
	k848Join(t, c, "g", "a", "uniform", "orders")
	k848Join(t, c, "g", "b", "uniform", "orders")

	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 5
	lr := wiretest.Do[*kmsg.ListGroupsResponse](t, c, list)
	require.Len(t, lr.Groups, 1)
	assert.Equal(t, kmsg.ListGroupsResponseGroup{Group: "g", ProtocolType: "consumer", GroupState: "Reconciling", GroupType: "consumer"}, lr.Groups[0])
	wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "a", 1))
	list.TypesFilter = []string{"consumer"}
	lr = wiretest.Do[*kmsg.ListGroupsResponse](t, c, list)
	require.Len(t, lr.Groups, 1)
	assert.Equal(t, "Stable", lr.Groups[0].GroupState)
	list.TypesFilter = []string{"classic"}
	assert.Empty(t, wiretest.Do[*kmsg.ListGroupsResponse](t, c, list).Groups)

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, []string{"g"}
	dr := wiretest.Do[*kmsg.DescribeGroupsResponse](t, c, dg)
	require.Len(t, dr.Groups, 1)
	assert.Equal(t, "Dead", dr.Groups[0].State)
	assert.Empty(t, dr.Groups[0].Members)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g", "a", 2
	assert.Equal(t, kerr.UnknownMemberID.Code, wiretest.Do[*kmsg.HeartbeatResponse](t, c, hb).ErrorCode)
}

// TestK848WireExpiry: consumer-group sessions are broker leases
// (--consumer-session-timeout), renewed by each heartbeat and ended only
// by the expiry step, strictly after the deadline.
func TestK848WireExpiry(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) {
		cfg.ConsumerSessionTimeout, cfg.ConsumerHeartbeatInterval = time.Second, 100*time.Millisecond
	})
	c := wiretest.Dial(t, b.Addr(), "k848")
	ids := k848TopicIDs(t, c)
	join := k848Join(t, c, "g", "a", "uniform", "orders")
	assert.Equal(t, int32(100), join.HeartbeatIntervalMillis)
	k848Join(t, c, "g", "b", "uniform", "orders")

	advance := func(d time.Duration) {
		_, err := b.Advance(d)
		require.NoError(t, err)
	}
	advance(600 * time.Millisecond)
	require.Zero(t, wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "b", 2)).ErrorCode)
	advance(400 * time.Millisecond)
	assert.Empty(t, b.Expire(), "at exactly the deadline nobody has expired")
	advance(time.Millisecond)
	expired := b.Expire()
	require.Len(t, expired, 1)
	assert.Equal(t, "a", expired[0].MemberID)

	resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "a", 1))
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode)
	resp = wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "b", 2))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(3), resp.MemberEpoch)
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, k848Parts(t, ids, resp.Assignment), "b takes over a's partitions")

	require.NoError(t, b.ExpireMember("g", "b"))
	resp = wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "b", 3))
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.ErrorCode, "ExpireMember fences on demand")
}
