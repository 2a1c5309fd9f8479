package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/txn"
)

func TestTxnCodeByVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fenced := fmt.Errorf("%w: epoch 1", txn.ErrFenced)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, e.srv.txnCode(fenced, 1))
	require.Equal(t, kerr.ProducerFenced.Code, e.srv.txnCode(fenced, 2))
	produce := fmt.Errorf("%w: %w", txn.ErrProduceFenced, fenced)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, e.srv.txnCode(produce, 9))
	require.Equal(t, kerr.ConcurrentTransactions.Code, e.srv.txnCode(txn.ErrConcurrentTransactions, 0))
	require.Equal(t, int16(0), e.srv.txnCode(nil, 0))
}

// txnSentinels is every exported Err* variable of package txn, with the
// code it answers; TestTxnErrorCodesCoverEverySentinel fails when txn
// declares one that is not listed.
var txnSentinels = map[string]struct {
	err  error
	code *kerr.Error
}{
	"txn.ErrInvalidTransactionalID":  {txn.ErrInvalidTransactionalID, kerr.InvalidRequest},
	"txn.ErrInvalidTimeout":          {txn.ErrInvalidTimeout, kerr.InvalidTransactionTimeout},
	"txn.ErrProducerIDMapping":       {txn.ErrProducerIDMapping, kerr.InvalidProducerIDMapping},
	"txn.ErrFenced":                  {txn.ErrFenced, kerr.ProducerFenced},
	"txn.ErrProduceFenced":           {txn.ErrProduceFenced, kerr.InvalidProducerEpoch},
	"txn.ErrInvalidTxnState":         {txn.ErrInvalidTxnState, kerr.InvalidTxnState},
	"txn.ErrConcurrentTransactions":  {txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
	"txn.ErrTooManyTransactionalIDs": {txn.ErrTooManyTransactionalIDs, kerr.PolicyViolation},
	"txn.ErrTooManyGroups":           {txn.ErrTooManyGroups, kerr.PolicyViolation},
	"txn.ErrStorage":                 {txn.ErrStorage, kerr.KafkaStorageError},
	"txn.ErrClosed":                  {txn.ErrClosed, kerr.CoordinatorNotAvailable},
}

func TestTxnErrorCodesCoverEverySentinel(t *testing.T) {
	t.Parallel()
	declared := declaredSentinels(t, "txn")
	require.Len(t, declared, len(txnSentinels))
	s := newEnv(t).srv
	for _, name := range declared {
		want, ok := txnSentinels[name]
		require.True(t, ok, "%s is a new sentinel: give it a code in errorCodes (errors.go) and list it here", name)
		require.Equal(t, want.code.Code, s.code(fmt.Errorf("context: %w", want.err)), name)
	}
}
