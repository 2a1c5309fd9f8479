package server

// DeleteRecords (key 21), versions 0-2, all that Kafka 4 serves.
//
// v1 is v0 (throttling); v2 is flexible. Each partition's log start
// offset moves to the given offset (-1: the high watermark), durably
// (records.Log.DeleteRecords rewrites the checkpoint before the answer),
// and the answer's low watermark is the log start after it. An offset
// past the high watermark is OFFSET_OUT_OF_RANGE; one at or below the
// log start changes nothing and answers NONE with the current log start,
// as Kafka; a partition the broker does not have is
// UNKNOWN_TOPIC_OR_PARTITION. A failed answer's low watermark is -1, as
// Kafka's.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

func (s *Server) handleDeleteRecords(r *request, req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			start, err := s.log.DeleteRecords(t.Topic, p.Partition, p.Offset)
			if err != nil {
				if errors.Is(err, records.ErrStorage) {
					s.logger.Error("log start not saved", "topic", t.Topic, "partition", p.Partition, "err", err)
				}
				r.setCode(&rp.ErrorCode, s.code(err))
			} else {
				rp.LowWatermark = start
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
