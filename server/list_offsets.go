package server

// ListOffsets (key 2), versions 0-7.
//
// Topics hold no records here, so every partition's earliest, latest and
// by-timestamp offset is 0. v0 answers a list of old-style offsets; v1
// a single offset and timestamp; v2 adds isolation level; v4 leader epochs;
// v6 is flexible; v7 (KIP-734) max-timestamp lookups. An unknown topic or
// partition gets UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleListOffsets(r *request, req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.ListOffsetsResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.ListOffsetsResponseTopicPartition{Partition: p.Partition, Timestamp: -1, Offset: 0, LeaderEpoch: 0}
			if !s.partitionExists(t.Topic, p.Partition) {
				r.setCode(&rp.ErrorCode, kerr.UnknownTopicOrPartition.Code)
				rp.Offset, rp.LeaderEpoch = -1, -1
			} else if req.Version == 0 {
				rp.OldStyleOffsets = []int64{0}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
