package server

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
)

// describedParts flattens a described assignment to "topic:partitions",
// checking that each topic carries its catalog id beside its name.
func describedParts(t *testing.T, e *env, a kmsg.Assignment) map[string][]int32 {
	t.Helper()
	out := map[string][]int32{}
	for _, tp := range a.TopicPartitions {
		topic, ok := e.cat.Lookup(tp.Topic)
		require.True(t, ok, "topic %q", tp.Topic)
		assert.Equal(t, [16]byte(topic.ID), tp.TopicID, "topic %q by id and by name", tp.Topic)
		out[tp.Topic] = tp.Partitions
	}
	return out
}

func TestConsumerGroupDescribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.consumerJoin("kip848", "a", "orders", "payments")
	req := consumerHeartbeatRequest(1, "kip848", "b", 0, "orders")
	req.ServerAssignor = kmsg.StringPtr("range")
	require.Zero(t, call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req).ErrorCode)
	e.join("c", "classic", "", "orders")
	require.NoError(t, e.coord.CommitDirect("offsets-only", []offsets.Entry{{Topic: "orders", Offset: 1, LeaderEpoch: -1}}))

	for _, v := range []int16{0, 1} {
		dreq := kmsg.NewPtrConsumerGroupDescribeRequest()
		dreq.Version, dreq.Groups = v, []string{"kip848", "classic", "offsets-only", "nope"}
		resp := call[*kmsg.ConsumerGroupDescribeResponse](e, "c", dreq)
		require.Len(t, resp.Groups, 4)

		g := resp.Groups[0]
		assert.Zero(t, g.ErrorCode)
		assert.Equal(t, "kip848", g.Group)
		assert.Equal(t, "Reconciling", g.State, "a has yet to move to epoch 2")
		assert.Equal(t, int32(2), g.Epoch)
		assert.Equal(t, int32(2), g.AssignmentEpoch)
		assert.Equal(t, "range", g.AssignorName, "a tie between uniform and range goes to range")
		assert.Equal(t, int32(math.MinInt32), g.AuthorizedOperations)
		require.Len(t, g.Members, 2)

		a, b := g.Members[0], g.Members[1]
		assert.Equal(t, "a", a.MemberID)
		assert.Equal(t, int32(1), a.MemberEpoch)
		assert.Equal(t, "kgo", a.ClientID)
		assert.Equal(t, "/127.0.0.1", a.ClientHost)
		assert.Equal(t, []string{"orders", "payments"}, a.SubscribedTopics)
		assert.Nil(t, a.SubscribedTopicRegex)
		assert.Nil(t, a.InstanceID)
		assert.Equal(t, map[string][]int32{"orders": {0, 1}, "payments": {0}}, describedParts(t, e, a.Assignment),
			"current: what a keeps of its epoch-1 assignment")
		assert.Equal(t, map[string][]int32{"orders": {0, 1}, "payments": {0}}, describedParts(t, e, a.TargetAssignment))
		assert.Equal(t, int8(1), a.MemberType)

		assert.Equal(t, "b", b.MemberID)
		assert.Equal(t, int32(2), b.MemberEpoch)
		assert.Equal(t, map[string][]int32{"orders": {2, 3}}, describedParts(t, e, b.Assignment))
		assert.Equal(t, map[string][]int32{"orders": {2, 3}}, describedParts(t, e, b.TargetAssignment))

		for _, other := range resp.Groups[1:] {
			assert.Equal(t, kerr.GroupIDNotFound.Code, other.ErrorCode, "%s is not a consumer group", other.Group)
			require.NotNil(t, other.ErrorMessage)
			assert.Empty(t, other.Members)
		}
	}
}

// TestConsumerGroupDescribeTargetAheadOfCurrent: after a leave, the
// remaining member's target holds partitions it gets only at its next
// heartbeat; an Empty consumer group is described, with no members.
func TestConsumerGroupDescribeTargetAheadOfCurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.consumerJoin("g", "a", "orders")
	e.consumerJoin("g", "b", "orders")
	call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", consumerHeartbeatRequest(1, "g", "a", 1, "orders"))
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "g", "b", -1
	call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", leave)

	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version, req.Groups = 1, []string{"g"}
		return call[*kmsg.ConsumerGroupDescribeResponse](e, "c", req).Groups[0]
	}
	g := describe()
	assert.Equal(t, int32(3), g.Epoch)
	assert.Equal(t, "uniform", g.AssignorName)
	require.Len(t, g.Members, 1)
	assert.Equal(t, int32(2), g.Members[0].MemberEpoch)
	assert.Equal(t, map[string][]int32{"orders": {0, 2}}, describedParts(t, e, g.Members[0].Assignment))
	assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, describedParts(t, e, g.Members[0].TargetAssignment))

	leave.MemberID = "a"
	call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", leave)
	g = describe()
	assert.Zero(t, g.ErrorCode)
	assert.Equal(t, "Empty", g.State)
	assert.Equal(t, int32(4), g.Epoch)
	assert.Empty(t, g.Members)
}

func TestConsumerGroupDescribeInstanceIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := consumerHeartbeatRequest(1, "g", "u1", 0, "orders")
	req.InstanceID = kmsg.StringPtr("a")
	require.Zero(t, call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", req).ErrorCode)
	e.consumerJoin("g", "d", "orders")
	resp := call[*kmsg.ConsumerGroupDescribeResponse](e, "kgo", &kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}})
	require.Len(t, resp.Groups, 1)
	require.Len(t, resp.Groups[0].Members, 2)
	assert.Equal(t, "d", resp.Groups[0].Members[0].MemberID)
	assert.Nil(t, resp.Groups[0].Members[0].InstanceID)
	require.NotNil(t, resp.Groups[0].Members[1].InstanceID)
	assert.Equal(t, "a", *resp.Groups[0].Members[1].InstanceID)
}
