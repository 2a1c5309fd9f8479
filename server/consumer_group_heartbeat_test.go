package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// heartbeatParts flattens an assignment to topic name -> partitions,
// resolving each topic id through the catalog.
func heartbeatParts(t *testing.T, e *env, a *kmsg.ConsumerGroupHeartbeatResponseAssignment) map[string][]int32 {
	t.Helper()
	require.NotNil(t, a, "the response carries the assignment")
	out := map[string][]int32{}
	for _, at := range a.Topics {
		topic, ok := e.cat.ByID(at.TopicID)
		require.True(t, ok, "topic id %x is the catalog's", at.TopicID)
		out[topic.Name] = at.Partitions
	}
	return out
}

func TestConsumerGroupHeartbeatJoinAssignsByTopicID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := e.consumerJoin("g", "member-a", "orders", "payments")
	require.NotNil(t, resp.MemberID)
	assert.Equal(t, "member-a", *resp.MemberID, "v1: the client's id")
	assert.Equal(t, int32(1), resp.MemberEpoch)
	assert.Equal(t, int32(5000), resp.HeartbeatIntervalMillis, "the broker's interval")
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}, "payments": {0}}, heartbeatParts(t, e, resp.Assignment))
	orders, _ := e.cat.Lookup("orders")
	assert.Equal(t, [16]byte(orders.ID), resp.Assignment.Topics[0].TopicID, "sorted by topic name")

	req := consumerHeartbeatRequest(0, "g", "", 0, "orders")
	resp = call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, "kgo-000001", *resp.MemberID, "v0: the broker's id")
	assert.Equal(t, int32(2), resp.MemberEpoch)
	assert.Equal(t, map[string][]int32{"orders": {0, 2}}, heartbeatParts(t, e, resp.Assignment), "kgo-000001 sorts before member-a")
}

// TestConsumerGroupHeartbeatShapeChecks: Kafka 4's request checks, in its
// order, each INVALID_REQUEST before any group changes.
func TestConsumerGroupHeartbeatShapeChecks(t *testing.T) {
	t.Parallel()
	join := func(mod func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatRequest {
		req := consumerHeartbeatRequest(1, "g", "m", 0, "orders")
		mod(req)
		return req
	}
	cases := []struct {
		name string
		req  *kmsg.ConsumerGroupHeartbeatRequest
		msg  string
	}{
		{"v1 needs the client's member id", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }), "MemberId can't be empty."},
		{"a heartbeat needs a member id", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Version, r.MemberID, r.MemberEpoch = 0, " ", 3 }), "MemberId can't be empty."},
		{"the member id is checked before the group", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.Group = "", "" }), "MemberId can't be empty."},
		{"a group id", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "  " }), "GroupId can't be empty."},
		{"no empty instance id", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") }), "InstanceId can't be empty."},
		{"no empty rack id", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("") }), "RackId can't be empty."},
		{"a join has a rebalance timeout", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }), "RebalanceTimeoutMs must be provided in first request."},
		{"a join owns nothing", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		}), "TopicPartitions must be empty when (re-)joining."},
		{"a join says it owns nothing", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }), "TopicPartitions must be empty when (re-)joining."},
		{"a join subscribes", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }), "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"a static leave names its instance", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }), "InstanceId can't be null."},
		{"no epoch below -2", join(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }), "MemberEpoch is invalid."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, obs := newObservedEnv(t)
			resp := call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", tc.req)
			assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode)
			require.NotNil(t, resp.ErrorMessage)
			assert.Equal(t, "INVALID_REQUEST: "+kerr.InvalidRequest.Description+": "+tc.msg, *resp.ErrorMessage)
			assert.Nil(t, resp.MemberID)
			assert.Nil(t, resp.Assignment)
			_, ok := e.coord.Describe("g")
			assert.False(t, ok, "no group was made")
			assert.Empty(t, obs.snapshot().fenced, "a malformed request is no fencing")
		})
	}
}

// TestConsumerGroupHeartbeatEmptyRegexIsNone: librdkafka's join carries
// topic names and an empty (not null) SubscribedTopicRegex; as in Kafka
// the empty regex subscribes to nothing and the names stand.
func TestConsumerGroupHeartbeatEmptyRegexIsNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := consumerHeartbeatRequest(1, "g", "rdkafka-a", 0, "orders")
	req.SubscribedTopicRegex = kmsg.StringPtr("")
	resp := call[*kmsg.ConsumerGroupHeartbeatResponse](e, "rdkafka", req)
	require.Zero(t, resp.ErrorCode, "%v", resp.ErrorMessage)
	assert.Equal(t, int32(1), resp.MemberEpoch)
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, heartbeatParts(t, e, resp.Assignment))
}

// TestConsumerGroupHeartbeatAssignmentWhenFullOrChanged: as Kafka, the
// response carries the assignment for a full request or when the member's
// epoch or assignment moved, and not for a keepalive that changes nothing.
func TestConsumerGroupHeartbeatAssignmentWhenFullOrChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.consumerJoin("g", "a", "orders")
	keepalive := func(member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest() // RebalanceTimeoutMillis -1, the rest null
		req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", member, epoch
		resp := call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req)
		require.Zero(t, resp.ErrorCode)
		return resp
	}
	resp := keepalive("a", 1)
	assert.Equal(t, int32(1), resp.MemberEpoch)
	assert.Nil(t, resp.Assignment, "nothing changed")

	full := consumerHeartbeatRequest(1, "g", "a", 1, "orders")
	full.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0, 1, 2, 3}}}
	resp = call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", full)
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, heartbeatParts(t, e, resp.Assignment), "a full request")

	e.consumerJoin("g", "b", "orders")
	resp = keepalive("a", 1)
	assert.Equal(t, int32(2), resp.MemberEpoch, "a moves to the group epoch")
	assert.Equal(t, map[string][]int32{"orders": {0, 2}}, heartbeatParts(t, e, resp.Assignment), "with its whole new assignment")
	assert.Nil(t, keepalive("a", 2).Assignment)
}

func TestConsumerGroupHeartbeatCodes(t *testing.T) {
	t.Parallel()
	e, obs := newObservedEnv(t)
	e.consumerJoin("g", "a", "orders")
	e.join("c", "classic", "", "orders")
	unsupported := consumerHeartbeatRequest(1, "g", "b", 0, "orders")
	unsupported.ServerAssignor = kmsg.StringPtr("cooperative-sticky")

	cases := []struct {
		name string
		req  *kmsg.ConsumerGroupHeartbeatRequest
		want *kerr.Error
	}{
		{"an epoch other than the member's", consumerHeartbeatRequest(1, "g", "a", 2, "orders"), kerr.FencedMemberEpoch},
		{"an unknown member", consumerHeartbeatRequest(1, "g", "z", 1, "orders"), kerr.UnknownMemberID},
		{"an unknown group", consumerHeartbeatRequest(1, "nope", "a", 1, "orders"), kerr.UnknownMemberID},
		{"an assignor other than uniform and range", unsupported, kerr.UnsupportedAssignor},
		{"a classic group with members", consumerHeartbeatRequest(1, "classic", "a", 0, "orders"), kerr.GroupIDNotFound},
		{"a name that cannot be a topic", consumerHeartbeatRequest(1, "g", "b", 0, "no/such"), kerr.InvalidTopicException},
	}
	for _, tc := range cases {
		resp := call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", tc.req)
		assert.Equal(t, tc.want.Code, resp.ErrorCode, tc.name)
		assert.NotNil(t, resp.ErrorMessage, tc.name)
		assert.Nil(t, resp.Assignment, tc.name)
	}
	fenced := obs.snapshot().fenced
	require.Len(t, fenced, 3, "FENCED_MEMBER_EPOCH and both UNKNOWN_MEMBER_IDs reach the observer")
	assert.Equal(t, FencingEvent{Group: "g", MemberID: "a", API: "ConsumerGroupHeartbeat", Generation: 2, Code: kerr.FencedMemberEpoch.Code, Reason: "stale member epoch"}, fenced[0])
	assert.Equal(t, kerr.UnknownMemberID.Code, fenced[1].Code)
	assert.Equal(t, kerr.UnknownMemberID.Code, fenced[2].Code)
	assert.Equal(t, "unknown member", fenced[2].Reason)
}

func TestConsumerGroupHeartbeatLeave(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.consumerJoin("g", "a", "orders")
	e.consumerJoin("g", "b", "orders")
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", "b", -1
	resp := call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, "b", *resp.MemberID)
	assert.Equal(t, int32(-1), resp.MemberEpoch)
	assert.Nil(t, resp.Assignment)
	v, _ := e.coord.Describe("g")
	assert.Equal(t, int32(3), v.Generation)
	require.Len(t, v.Members, 1)

	resp = call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req)
	assert.Zero(t, resp.ErrorCode, "a second leave is a no-op, as the chapter's")
}

func TestConsumerGroupHeartbeatStaticMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	static := func(member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := consumerHeartbeatRequest(1, "g", member, epoch, "orders")
		req.InstanceID = kmsg.StringPtr("a")
		return call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req)
	}
	resp := static("u1", 0)
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, int32(1), resp.MemberEpoch)
	assert.Equal(t, kerr.UnreleasedInstanceID.Code, static("u2", 0).ErrorCode, "u1 still holds the instance")

	resp = static("u1", -2)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(-2), resp.MemberEpoch)
	assert.Nil(t, resp.Assignment)

	resp = static("u2", 0)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(1), resp.MemberEpoch, "the takeover keeps the group epoch")
	require.NotNil(t, resp.Assignment)
	require.Len(t, resp.Assignment.Topics, 1)
	assert.Equal(t, []int32{0, 1, 2, 3}, resp.Assignment.Topics[0].Partitions)
	assert.Equal(t, kerr.FencedInstanceID.Code, static("u1", 1).ErrorCode, "the replaced member id")
}

// TestConsumerGroupHeartbeatStaticLeaveWithoutInstanceID: kgo's
// temporary leave names no instance id; from a static member it is that
// member's -2 (Kafka: INVALID_REQUEST), from a dynamic one INVALID_REQUEST.
func TestConsumerGroupHeartbeatStaticLeaveWithoutInstanceID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := consumerHeartbeatRequest(1, "g", "u1", 0, "orders")
	req.InstanceID = kmsg.StringPtr("a")
	require.Zero(t, call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req).ErrorCode)
	e.consumerJoin("g", "d", "orders")

	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "g", "u1", -2
	resp := call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", leave)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(-2), resp.MemberEpoch)
	v, _ := e.coord.Describe("g")
	assert.Equal(t, int32(-2), v.Members[1].MemberEpoch)

	leave = kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "g", "d", -2
	resp = call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", leave)
	assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode, "a dynamic member has no temporary leave")
}

func TestConsumerGroupHeartbeatRegex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	regex := func(pattern string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := consumerHeartbeatRequest(1, "g", "a", epoch)
		req.SubscribedTopicNames, req.SubscribedTopicRegex = nil, &pattern
		return call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req)
	}
	resp := regex("ord(", 0)
	assert.Equal(t, kerr.InvalidRegularExpression.Code, resp.ErrorCode)
	resp = regex("ord.*", 0)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(1), resp.MemberEpoch)
	require.Len(t, resp.Assignment.Topics, 1, "orders only")

	_, err := e.cat.Create("orders-eu", 2)
	require.NoError(t, err)
	keep := call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", &kmsg.ConsumerGroupHeartbeatRequest{Version: 1, Group: "g", MemberID: "a", MemberEpoch: 1, RebalanceTimeoutMillis: -1})
	require.Zero(t, keep.ErrorCode)
	assert.Equal(t, int32(2), keep.MemberEpoch, "the new matching topic is a new group epoch")
	require.NotNil(t, keep.Assignment)
	assert.Len(t, keep.Assignment.Topics, 2)

	desc := call[*kmsg.ConsumerGroupDescribeResponse](e, "kgo", &kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}})
	require.NotNil(t, desc.Groups[0].Members[0].SubscribedTopicRegex)
	assert.Equal(t, "ord.*", *desc.Groups[0].Members[0].SubscribedTopicRegex)
}

// TestConsumerHeartbeatRevokesRegainedPartitionFirst, over the wire: m2
// holds payments-0; m1 joins and is handed it (epoch 2), then leaves
// (epoch 3) and the target gives it back to m2. m2's keepalive at epoch
// 1 is answered at epoch 1 with an empty assignment, which the client
// revokes, and m2's TxnOffsetCommit of payments-0 at epoch 1 is refused
// (the ownership code, REBALANCE_IN_PROGRESS, which aborts kgo's
// transaction); the next keepalive moves m2 to epoch 3 with payments-0,
// where the commit is staged.
func TestConsumerHeartbeatRevokesRegainedPartitionFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "kgo")
	beat := func(member string, epoch int32, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := consumerHeartbeatRequest(1, "k", member, epoch, topics...)
		if epoch != 0 {
			req.SubscribedTopicNames, req.Topics, req.ServerAssignor = nil, nil, nil
		}
		resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, req)
		require.Zero(t, resp.ErrorCode, "heartbeat %s at %d", member, epoch)
		return resp
	}
	parts := func(resp *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
		require.NotNil(t, resp.Assignment)
		out := []int32{}
		for _, tp := range resp.Assignment.Topics {
			out = append(out, tp.Partitions...)
		}
		return out
	}
	a := beat("m2", 0, "payments")
	require.Equal(t, []int32{0}, parts(a))
	b := beat("m1", 0, "payments")
	require.Equal(t, [2]int32{2, 0}, [2]int32{b.MemberEpoch, parts(b)[0]})
	beat("m1", -1)

	pid, epoch := e.txnInit("tx")
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.Version, ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = 3, "tx", pid, epoch, "k"
	require.Zero(t, wiretest.Do[*kmsg.AddOffsetsToTxnResponse](t, c, ao).ErrorCode)
	commit := func(memberEpoch int32) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, "tx", pid, epoch
		req.Group, req.MemberID, req.Generation = "k", "m2", memberEpoch
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "payments", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 4, LeaderEpoch: -1}}}}
		return wiretest.Do[*kmsg.TxnOffsetCommitResponse](t, c, req).Topics[0].Partitions[0].ErrorCode
	}

	r := beat("m2", 1)
	require.Equal(t, int32(1), r.MemberEpoch, "the revocation step")
	require.Equal(t, []int32{}, parts(r))
	require.Equal(t, kerr.RebalanceInProgress.Code, commit(1))
	r = beat("m2", 1)
	require.Equal(t, int32(3), r.MemberEpoch)
	require.Equal(t, []int32{0}, parts(r))
	require.Equal(t, kerr.StaleMemberEpoch.Code, commit(1))
	require.Zero(t, commit(3))
}
