package server

// OffsetFetch (key 9), versions 1-9.
//
// v1 fetches named partitions of one group; v2 adds a top-level error code
// and null topics meaning "every committed offset"; v5 leader epochs; v6 is
// flexible; v7 RequireStable: a partition for which an open transaction
// holds staged offsets (TxnOffsetCommit) answers UNSTABLE_OFFSET_COMMIT
// with offset -1, the others as usual, as Kafka does; v8 batches
// groups; v9 adds member id and epoch, ignored for classic groups as Kafka
// does. A partition with no commit, of an unknown group or an unknown
// topic, answers offset -1 with NONE, as Kafka's coordinator does.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
)

// fetchedPartition is one answered partition, shared by both layouts.
type fetchedPartition struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    *string
	code        int16 // UNSTABLE_OFFSET_COMMIT (stableOffsets, txn_offset_commit.go), else 0
}

// fetchedTopic is one answered topic.
type fetchedTopic struct {
	topic      string
	partitions []fetchedPartition
}

func (s *Server) handleOffsetFetch(r *request, req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		var topics map[string][]int32
		if req.Topics != nil || req.Version < 2 {
			topics = map[string][]int32{}
		}
		var order []string
		for _, t := range req.Topics {
			order = append(order, t.Topic)
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
		for _, ft := range s.stableOffsets(req.Group, req.RequireStable, order, topics) {
			rt := kmsg.OffsetFetchResponseTopic{Topic: ft.topic}
			for _, fp := range ft.partitions {
				rp := kmsg.OffsetFetchResponseTopicPartition{
					Partition: fp.partition, Offset: fp.offset, LeaderEpoch: fp.leaderEpoch, Metadata: fp.metadata,
				}
				r.setCode(&rp.ErrorCode, fp.code)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, g := range req.Groups {
		var topics map[string][]int32
		var order []string
		if g.Topics != nil {
			topics = map[string][]int32{}
			for _, t := range g.Topics {
				order = append(order, t.Topic)
				topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
			}
		}
		rg := kmsg.OffsetFetchResponseGroup{Group: g.Group}
		for _, ft := range s.stableOffsets(g.Group, req.RequireStable, order, topics) {
			rt := kmsg.OffsetFetchResponseGroupTopic{Topic: ft.topic}
			for _, fp := range ft.partitions {
				rp := kmsg.OffsetFetchResponseGroupTopicPartition{
					Partition: fp.partition, Offset: fp.offset, LeaderEpoch: fp.leaderEpoch, Metadata: fp.metadata,
				}
				r.setCode(&rp.ErrorCode, fp.code)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// fetchOffsets answers the requested partitions of group in request order,
// or, when topics is nil, every committed offset of the group.
func (s *Server) fetchOffsets(group string, order []string, topics map[string][]int32) []fetchedTopic {
	if topics == nil {
		var out []fetchedTopic
		for _, e := range s.coord.Committed(group) {
			if n := len(out); n == 0 || out[n-1].topic != e.Topic {
				out = append(out, fetchedTopic{topic: e.Topic})
			}
			out[len(out)-1].partitions = append(out[len(out)-1].partitions, fetched(e))
		}
		return out
	}
	// One lookup per named partition: the cost follows the request, not
	// the number of offsets the group holds.
	var out []fetchedTopic
	seen := map[string]bool{}
	for _, topic := range order {
		if seen[topic] {
			continue
		}
		seen[topic] = true
		ft := fetchedTopic{topic: topic}
		for _, p := range topics[topic] {
			e, ok := s.coord.CommittedOffset(group, topic, p)
			if !ok {
				e = offsets.Entry{Topic: topic, Partition: p, Offset: -1, LeaderEpoch: offsets.NoLeaderEpoch}
			}
			ft.partitions = append(ft.partitions, fetched(e))
		}
		out = append(out, ft)
	}
	return out
}

func fetched(e offsets.Entry) fetchedPartition {
	metadata := e.Metadata
	return fetchedPartition{partition: e.Partition, offset: e.Offset, leaderEpoch: e.LeaderEpoch, metadata: &metadata}
}
