package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

func deleteRecordsRequest(version int16, topic string, offsets map[int32]int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = version
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for p := range int32(len(offsets) + 8) {
		if off, ok := offsets[p]; ok {
			rt.Partitions = append(rt.Partitions, kmsg.DeleteRecordsRequestTopicPartition{Partition: p, Offset: off})
		}
	}
	req.Topics = []kmsg.DeleteRecordsRequestTopic{rt}
	return req
}

// TestDeleteRecordsCodes sends raw DeleteRecords over a socket at every
// served version: NONE with the new low watermark, -1 for the high
// watermark, NONE and nothing changed below the log start,
// OFFSET_OUT_OF_RANGE past the high watermark and
// UNKNOWN_TOPIC_OR_PARTITION (low watermark -1 for both); a Fetch below
// the new log start is OFFSET_OUT_OF_RANGE.
func TestDeleteRecordsCodes(t *testing.T) {
	t.Parallel()
	for v := int16(0); v <= 2; v++ {
		e := newEnv(t)
		c := wiretest.Dial(t, e.serve(), "admin")
		e.produce("orders", 0, "a", "b", "c", "d")
		e.produce("orders", 1, "a", "b")
		e.produce("orders", 2, "a", "b", "c")

		resp := wiretest.Do[*kmsg.DeleteRecordsResponse](t, c, deleteRecordsRequest(v, "orders", map[int32]int64{0: 3, 1: -1, 2: 9, 7: 0}))
		got := map[int32][2]int64{}
		for _, p := range resp.Topics[0].Partitions {
			got[p.Partition] = [2]int64{int64(p.ErrorCode), p.LowWatermark}
		}
		require.Equal(t, map[int32][2]int64{
			0: {0, 3}, 1: {0, 2}, 2: {int64(kerr.OffsetOutOfRange.Code), -1}, 7: {int64(kerr.UnknownTopicOrPartition.Code), -1},
		}, got, "v%d", v)
		start, end, err := e.log.Offsets("orders", 2)
		require.NoError(t, err)
		require.Equal(t, [2]int64{0, 3}, [2]int64{start, end}, "a refused delete changes nothing")

		below := wiretest.Do[*kmsg.DeleteRecordsResponse](t, c, deleteRecordsRequest(v, "orders", map[int32]int64{0: 1}))
		require.Equal(t, int16(0), below.Topics[0].Partitions[0].ErrorCode, "below the log start: NONE")
		require.Equal(t, int64(3), below.Topics[0].Partitions[0].LowWatermark, "and nothing changes")

		fetch := wiretest.Do[*kmsg.FetchResponse](t, c, fetchRequest(11, 0, "orders", 2, 0))
		require.Equal(t, kerr.OffsetOutOfRange.Code, fetch.Topics[0].Partitions[0].ErrorCode)
		unknown := wiretest.Do[*kmsg.DeleteRecordsResponse](t, c, deleteRecordsRequest(v, "nope", map[int32]int64{0: 0}))
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, unknown.Topics[0].Partitions[0].ErrorCode)
	}
}
