package server

// ListTransactions (key 66), versions 0-1, as Kafka 3.x serves them
// (KIP-664; v1 adds KIP-994's duration filter). v2's transactional id
// pattern (Kafka 4.1) is not served.
//
// Lists every transactional id that passes the filters: a state among
// StateFilters (Kafka's names, exact; names that are no state are
// returned in UnknownStateFilters and match nothing), a producer id among
// ProducerIDFilters, and (v1) a last transaction begun more than
// DurationFilterMillis ago, or none begun; an empty filter, or a
// negative duration, passes everything. Sorted by transactional id.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/txn"
)

func (s *Server) handleListTransactions(r *request, req *kmsg.ListTransactionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.ListFilter{States: req.StateFilters, ProducerIDs: req.ProducerIDFilters, MinDuration: -1}
	if req.Version >= 1 && req.DurationFilterMillis >= 0 {
		f.MinDuration = time.Duration(req.DurationFilterMillis) * time.Millisecond
	}
	listed, unknown := s.txns.List(f)
	n := int64(16)
	for _, l := range listed {
		n += 24 + int64(len(l.TransactionalID))
	}
	if !r.reserve(n) {
		return resp
	}
	resp.UnknownStateFilters = unknown
	for _, l := range listed {
		resp.TransactionStates = append(resp.TransactionStates, kmsg.ListTransactionsResponseTransactionState{
			TransactionalID: l.TransactionalID, ProducerID: l.ProducerID, TransactionState: l.State.String()})
	}
	return resp
}
