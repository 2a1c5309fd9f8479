package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/txn"
)

// txnCode is code for the transaction APIs: a fenced producer is
// PRODUCER_FENCED from version 2 of AddPartitionsToTxn, AddOffsetsToTxn,
// EndTxn and TxnOffsetCommit on, INVALID_PRODUCER_EPOCH before it (the
// code those versions know), as Kafka answers.
func (s *Server) txnCode(err error, version int16) int16 {
	if version < 2 && errors.Is(err, txn.ErrFenced) && !errors.Is(err, txn.ErrProduceFenced) {
		return kerr.InvalidProducerEpoch.Code
	}
	return s.code(err)
}
