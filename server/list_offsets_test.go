package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestListOffsets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, v := range []int16{0, 1, 4, 7} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		req.Topics = []kmsg.ListOffsetsRequestTopic{
			{Topic: "orders", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 3, Timestamp: -2}, {Partition: 4, Timestamp: -1}}},
			{Topic: "nope", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}},
		}
		resp := call[*kmsg.ListOffsetsResponse](e, "c", req)
		require.Len(t, resp.Topics, 2, "v%d", v)
		ok := resp.Topics[0].Partitions[0]
		assert.Equal(t, int32(3), ok.Partition)
		assert.Zero(t, ok.ErrorCode, "v%d", v)
		assert.Equal(t, int64(0), ok.Offset, "v%d: no records, every offset is 0", v)
		assert.Equal(t, int64(-1), ok.Timestamp)
		if v == 0 {
			assert.Equal(t, []int64{0}, ok.OldStyleOffsets)
		}
		for _, bad := range []kmsg.ListOffsetsResponseTopicPartition{resp.Topics[0].Partitions[1], resp.Topics[1].Partitions[0]} {
			assert.Equal(t, kerr.UnknownTopicOrPartition.Code, bad.ErrorCode, "v%d", v)
			assert.Equal(t, int64(-1), bad.Offset)
			assert.Empty(t, bad.OldStyleOffsets)
		}
	}
}
