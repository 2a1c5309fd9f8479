package server

// AddPartitionsToTxn (key 24), versions 0-3.
//
// Adds partitions to the producer's transaction, beginning it if none is
// open; a transactional produce is accepted only for partitions added. v1
// is v0; v2 answers PRODUCER_FENCED for a stale epoch where v0-1 answer
// INVALID_PRODUCER_EPOCH; v3 is flexible. v4+ (KIP-890: batches of
// transactions, sent broker to broker) is not served. All or nothing: a
// partition that does not exist answers UNKNOWN_TOPIC_OR_PARTITION and
// every other OPERATION_NOT_ATTEMPTED, and nothing is added; a producer
// refused answers its code (INVALID_PRODUCER_ID_MAPPING, the fenced
// code, CONCURRENT_TRANSACTIONS) for every partition. A request bounds
// itself: it can name only partitions that exist.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

func (s *Server) handleAddPartitionsToTxn(r *request, req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var parts []records.TopicPartition
	missing := map[records.TopicPartition]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := records.TopicPartition{Topic: t.Topic, Partition: p}
			if !s.catalog.HasPartition(t.Topic, p) {
				missing[tp] = true
			}
			parts = append(parts, tp)
		}
	}
	var code int16
	if len(missing) == 0 {
		code = s.txnCode(s.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts), req.Version)
	}
	for _, t := range req.Topics {
		rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p}
			switch {
			case missing[records.TopicPartition{Topic: t.Topic, Partition: p}]:
				r.setCode(&rp.ErrorCode, kerr.UnknownTopicOrPartition.Code)
			case len(missing) > 0:
				r.setCode(&rp.ErrorCode, kerr.OperationNotAttempted.Code)
			default:
				r.setCode(&rp.ErrorCode, code)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
