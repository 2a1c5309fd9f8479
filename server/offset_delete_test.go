package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
)

// offsetDeleteRequest names partitions of one topic.
func offsetDeleteRequest(group, topic string, partitions ...int32) *kmsg.OffsetDeleteRequest {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	rt := kmsg.OffsetDeleteRequestTopic{Topic: topic}
	for _, p := range partitions {
		rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p})
	}
	req.Topics = []kmsg.OffsetDeleteRequestTopic{rt}
	return req
}

// TestOffsetDeleteCodes: partitions of a subscribed topic are
// GROUP_SUBSCRIBED_TO_TOPIC, unknown ones UNKNOWN_TOPIC_OR_PARTITION, the
// rest NONE and deleted; every partition is answered in request order.
func TestOffsetDeleteCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.join("c", "g", "", "orders")
	require.NoError(t, e.coord.CommitDirect("g", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 4}, {Topic: "payments", Partition: 0, Offset: 2}}))
	req := offsetDeleteRequest("g", "orders", 0, 9)
	req.Topics = append(req.Topics,
		kmsg.OffsetDeleteRequestTopic{Topic: "payments", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		kmsg.OffsetDeleteRequestTopic{Topic: "nope", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
	resp := call[*kmsg.OffsetDeleteResponse](e, "c", req)
	assert.Zero(t, resp.ErrorCode)
	assert.Equal(t, []kmsg.OffsetDeleteResponseTopic{
		{Topic: "orders", Partitions: []kmsg.OffsetDeleteResponseTopicPartition{
			{Partition: 0, ErrorCode: kerr.GroupSubscribedToTopic.Code}, {Partition: 9, ErrorCode: kerr.UnknownTopicOrPartition.Code}}},
		{Topic: "payments", Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{Partition: 0}}},
		{Topic: "nope", Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{Partition: 0, ErrorCode: kerr.UnknownTopicOrPartition.Code}}},
	}, resp.Topics)
	committed := e.coord.Committed("g")
	require.Len(t, committed, 1)
	assert.Equal(t, "orders", committed[0].Topic)
}

// TestOffsetDeleteGroupCodes: a group-level code answers alone.
func TestOffsetDeleteGroupCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		group string
		code  int16
	}{
		{"", kerr.InvalidGroupID.Code},
		{"nope", kerr.GroupIDNotFound.Code},
	} {
		resp := call[*kmsg.OffsetDeleteResponse](e, "c", offsetDeleteRequest(tc.group, "orders", 0))
		assert.Equal(t, tc.code, resp.ErrorCode, "%q", tc.group)
		assert.Empty(t, resp.Topics)
	}
}
