package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEndTxn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pid, epoch := e.txnInit("tx")
	end := func(version int16, commit bool) int16 {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, "tx", pid, epoch, commit
		return call[*kmsg.EndTxnResponse](e, "p", req).ErrorCode
	}
	require.Equal(t, kerr.InvalidTxnState.Code, end(3, true), "no transaction begun")
	require.Equal(t, []int16{0}, e.txnAdd("tx", pid, epoch, "payments", 0))
	require.Equal(t, int16(0), end(0, false))
	require.Equal(t, int16(0), end(3, false), "a retry")
	require.Equal(t, kerr.InvalidTxnState.Code, end(3, true))
	_, hw, err := e.log.Offsets("payments", 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), hw, "the abort marker")
	require.Len(t, e.logs.Find("EndTxn refused"), 2)
}
