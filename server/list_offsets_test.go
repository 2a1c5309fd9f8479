package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

func TestListOffsetsEmptyAndUnknown(t *testing.T) {
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

func TestListOffsets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := time.Now().UnixMilli()
	for i, ts := range []int64{now - 3000, now - 1000, now - 2000} {
		raw := records.EncodeBatch(records.BatchSpec{FirstTimestamp: ts, Records: []records.Record{{Value: []byte{byte(i)}}}})
		resp := call[*kmsg.ProduceResponse](e, "p", produceRequest(9, "orders", map[int32][]byte{3: raw}))
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}
	list := func(version int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = version, -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "orders", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 3, Timestamp: ts, MaxNumOffsets: 1}}}}
		return call[*kmsg.ListOffsetsResponse](e, "c", req).Topics[0].Partitions[0]
	}
	type got struct {
		code      int16
		offset    int64
		timestamp int64
	}
	g := func(p kmsg.ListOffsetsResponseTopicPartition) got { return got{p.ErrorCode, p.Offset, p.Timestamp} }
	assert.Equal(t, got{0, 0, -1}, g(list(7, -2)), "earliest")
	assert.Equal(t, got{0, 3, -1}, g(list(7, -1)), "latest: the high watermark")
	assert.Equal(t, got{0, 1, now - 1000}, g(list(7, -3)), "max timestamp")
	assert.Equal(t, got{0, 1, now - 1000}, g(list(7, now-1500)), "first record at or after the time")
	assert.Equal(t, got{0, 0, now - 3000}, g(list(7, 0)))
	assert.Equal(t, got{0, -1, -1}, g(list(7, now)), "no record that late")
	assert.Equal(t, kerr.InvalidRequest.Code, list(6, -3).ErrorCode, "max timestamp needs v7")
	assert.Equal(t, kerr.InvalidRequest.Code, list(7, -7).ErrorCode)
	assert.Equal(t, []int64{3}, list(0, -1).OldStyleOffsets)
}
