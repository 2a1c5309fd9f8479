package server

// Fetch (key 1), versions 4-12.
//
// Topics hold no records, so a fetch waits up to its MaxWaitMillis (capped
// by Config.MaxFetchWait, and cut short by shutdown) and answers every
// requested partition with no records, high watermark 0 and NONE, whatever
// the fetch offset: stock consumers then idle cleanly instead of resetting
// offsets. Kafka would answer OFFSET_OUT_OF_RANGE for an offset past the
// end. v7 adds fetch sessions (KIP-227): we answer session id 0, which
// tells clients to send full requests; v9 current leader epochs; v11 rack;
// v12 is flexible. Unknown topics or partitions get
// UNKNOWN_TOPIC_OR_PARTITION without waiting.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleFetch(r *request, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	unknown := false
	for _, t := range req.Topics {
		rt := kmsg.FetchResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 0, 0, 0
			if !s.partitionExists(t.Topic, p.Partition) {
				r.setCode(&rp.ErrorCode, kerr.UnknownTopicOrPartition.Code)
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				unknown = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !unknown {
		wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, s.maxFetchWait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
		}
	}
	return resp
}
