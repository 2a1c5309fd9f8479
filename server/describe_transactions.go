package server

// DescribeTransactions (key 65), version 0, as Kafka 3.x serves it (KIP-664).
//
// Describes each transactional id asked, in the order asked: its producer
// id and epoch, state (Kafka's names: Empty, Ongoing, PrepareCommit,
// PrepareAbort, CompleteCommit, CompleteAbort), timeout, the start of its
// last transaction (-1 if none began) and the partitions of the open one.
// An id the coordinator does not hold is TRANSACTIONAL_ID_NOT_FOUND.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/txn"
)

func (s *Server) handleDescribeTransactions(r *request, req *kmsg.DescribeTransactionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	described := s.txns.Describe(req.TransactionalIDs)
	if !r.reserve(describedTxnBytes(described)) {
		return resp
	}
	for _, d := range described {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = d.TransactionalID
		if !d.Found {
			r.setCode(&st.ErrorCode, kerr.TransactionalIDNotFound.Code)
			st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.ProducerID, st.ProducerEpoch, st.State = d.ProducerID, d.Epoch, d.State.String()
		st.TimeoutMillis = int32(d.Timeout.Milliseconds())
		st.StartTimestamp = -1
		if !d.Started.IsZero() {
			st.StartTimestamp = d.Started.UnixMilli()
		}
		for _, topic := range slices.Sorted(maps.Keys(d.Partitions)) {
			st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: topic, Partitions: d.Partitions[topic]})
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

// describedTxnBytes bounds the encoded answer for ds: the fixed fields,
// each id, each topic name and four bytes per partition.
func describedTxnBytes(ds []txn.Description) int64 {
	n := int64(16)
	for _, d := range ds {
		n += 48 + int64(len(d.TransactionalID))
		for topic, ps := range d.Partitions {
			n += 8 + int64(len(topic)) + 4*int64(len(ps))
		}
	}
	return n
}
