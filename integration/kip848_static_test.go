package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// k848Static sends a full ConsumerGroupHeartbeat v1 of a static member
// with instance id instance, whatever its answer.
func k848Static(t *testing.T, c *wireclient.Client, group, member, instance string, epoch int32, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := k848Heartbeat(1, group, member, epoch, "uniform", topics...)
	req.InstanceID = &instance
	return wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, req)
}

// TestK848StaticTemporaryLeaveAndTakeover: epoch -2 answers -2 and keeps
// the member listed with its assignment; a new member id with the same
// instance id takes it over at epoch 0 without a new group epoch, the
// other member untouched; a second live holder is UNRELEASED_INSTANCE_ID;
// the replaced member id is FENCED_INSTANCE_ID when it names the instance,
// UNKNOWN_MEMBER_ID when it does not (and on OffsetCommit).
func TestK848StaticTemporaryLeaveAndTakeover(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "kgo")
	ids := k848TopicIDs(t, c)
	first := k848Static(t, c, "g", "run-1", "app-1", 0, "orders")
	require.Equal(t, codeNone, first.ErrorCode)
	other := k848Join(t, c, "g", "other", "uniform", "orders")
	require.Equal(t, int32(2), other.MemberEpoch)
	caught := k848Static(t, c, "g", "run-1", "app-1", 1, "orders")
	require.Equal(t, int32(2), caught.MemberEpoch)
	require.Equal(t, map[string][]int32{"orders": {0, 2}}, k848Parts(t, ids, caught.Assignment))
	require.Equal(t, map[string][]int32{"orders": {1, 3}}, k848Parts(t, ids, other.Assignment))

	assert.Equal(t, codeUnreleasedInstanceID, k848Static(t, c, "g", "run-2", "app-1", 0, "orders").ErrorCode)

	away := k848Static(t, c, "g", "run-1", "app-1", -2)
	require.Equal(t, codeNone, away.ErrorCode)
	assert.Equal(t, int32(-2), away.MemberEpoch)
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version, req.Groups = 1, []string{"g"}
	desc := wiretest.Do[*kmsg.ConsumerGroupDescribeResponse](t, c, req).Groups[0]
	assert.Equal(t, int32(2), desc.Epoch)
	require.Len(t, desc.Members, 2, "a member away is still listed")
	assert.Equal(t, "run-1", desc.Members[1].MemberID)
	require.NotNil(t, desc.Members[1].InstanceID)
	assert.Equal(t, "app-1", *desc.Members[1].InstanceID)
	assert.Equal(t, int32(-2), desc.Members[1].MemberEpoch)
	assert.Equal(t, []int32{0, 2}, desc.Members[1].Assignment.TopicPartitions[0].Partitions)

	second := k848Static(t, c, "g", "run-2", "app-1", 0, "orders")
	require.Equal(t, codeNone, second.ErrorCode)
	assert.Equal(t, int32(2), second.MemberEpoch, "no new group epoch")
	assert.Equal(t, map[string][]int32{"orders": {0, 2}}, k848Parts(t, ids, second.Assignment))
	keep := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "other", 2))
	assert.Equal(t, codeNone, keep.ErrorCode)
	assert.Equal(t, int32(2), keep.MemberEpoch)
	assert.Nil(t, keep.Assignment, "the other member's assignment did not move")

	assert.Equal(t, codeFencedInstanceID, k848Static(t, c, "g", "run-1", "app-1", 2).ErrorCode)
	assert.Equal(t, codeUnknownMemberID, wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("g", "run-1", 2)).ErrorCode)
	assert.Equal(t, repeat(codeUnknownMemberID, 1), wiretest.Commit(t, c, commitRequest(9, "g", "run-1", 2, k848Orders(0)...)))
	assert.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, commitRequest(9, "g", "run-2", 2, k848Orders(0)...)))
}
