package server

// OffsetDelete (key 47), version 0 (KIP-496).
//
// A group-level code answers alone, with no topics, as Kafka's
// OffsetDeleteRequest.getErrorResponse does: INVALID_GROUP_ID (the empty
// id too, as Kafka's GroupCoordinatorService.deleteOffsets),
// GROUP_ID_NOT_FOUND for a group with neither state nor committed
// offsets, KAFKA_STORAGE_ERROR when the disk refuses the removal.
// Otherwise every requested partition is answered, in request order:
// UNKNOWN_TOPIC_OR_PARTITION for one the catalog lacks,
// GROUP_SUBSCRIBED_TO_TOPIC for one of a topic some member subscribes to
// (its offset stays), NONE for the rest, whose offsets are deleted
// durably (OffsetMetadataManager.deleteOffsets). A group known only by
// its offsets that loses the last of them is deleted with them.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
)

func (s *Server) handleOffsetDelete(r *request, req *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	var keys []offsets.Key
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			keys = append(keys, offsets.Key{Topic: t.Topic, Partition: p.Partition})
		}
	}
	errs, err := s.coord.DeleteOffsets(req.Group, keys)
	if err != nil {
		r.setCode(&resp.ErrorCode, s.code(err))
		return resp
	}
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition}
			r.setCode(&rp.ErrorCode, s.code(errs[i]))
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
