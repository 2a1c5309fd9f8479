package server

// AddOffsetsToTxn (key 25), versions 0-3.
//
// Adds a group to the producer's transaction, beginning the transaction
// if none is open, so that its TxnOffsetCommits are accepted. v1 is v0;
// v2 answers PRODUCER_FENCED for a stale epoch where v0-1 answer
// INVALID_PRODUCER_EPOCH; v3 is flexible. v4 (KIP-890's
// TRANSACTION_ABORTABLE) is not served. Codes: INVALID_PRODUCER_ID_MAPPING
// (unknown transactional id, or another producer id),
// CONCURRENT_TRANSACTIONS (the last transaction is being completed),
// INVALID_GROUP_ID (an over-long or non-text group id).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleAddOffsetsToTxn(r *request, req *kmsg.AddOffsetsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	err := s.coord.CheckGroupID(req.Group)
	if err == nil {
		err = s.txns.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	}
	r.setCode(&resp.ErrorCode, s.txnCode(err, req.Version))
	return resp
}
