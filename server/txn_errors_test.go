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
