package server

// EndTxn (key 26), versions 0-3.
//
// Commits or aborts the producer's transaction. The answer goes out once
// the decision is durable in the transaction log and its markers are
// durable in every partition of the transaction and its staged offsets
// are applied (commit) or discarded (abort): an answered transaction is
// complete after any crash. v1 is v0; v2 answers PRODUCER_FENCED for a
// stale epoch where v0-1 answer INVALID_PRODUCER_EPOCH; v3 is flexible.
// v4 (KIP-890's TRANSACTION_ABORTABLE) and v5 (transaction.version 2) are
// not served, so clients add partitions themselves. Codes:
// INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE (no transaction begun,
// or the other decision already made), CONCURRENT_TRANSACTIONS (being
// completed), NONE for a retry of the decision made,
// KAFKA_STORAGE_ERROR (the completion is retried by the next EndTxn or
// the expiry step).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleEndTxn(r *request, req *kmsg.EndTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	err := s.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	r.setCode(&resp.ErrorCode, s.txnCode(err, req.Version))
	if err != nil {
		r.logger.Info("EndTxn refused", "transactional_id", req.TransactionalID, "commit", req.Commit, "err", err)
	}
	return resp
}
