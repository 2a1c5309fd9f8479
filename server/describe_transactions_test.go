package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeTransactions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pid, epoch := e.txnInit("tx")
	require.Equal(t, []int16{0, 0}, e.txnAdd("tx", pid, epoch, "orders", 3, 0))
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"nope", "tx"}
	resp := call[*kmsg.DescribeTransactionsResponse](e, "p", req)
	require.Len(t, resp.TransactionStates, 2)
	unknown := resp.TransactionStates[0]
	require.Equal(t, "nope", unknown.TransactionalID)
	require.Equal(t, kerr.TransactionalIDNotFound.Code, unknown.ErrorCode)
	st := resp.TransactionStates[1]
	require.Zero(t, st.ErrorCode)
	require.Equal(t, "tx", st.TransactionalID)
	require.Equal(t, "Ongoing", st.State)
	require.Equal(t, [2]int64{pid, int64(epoch)}, [2]int64{st.ProducerID, int64(st.ProducerEpoch)})
	require.Equal(t, int32(60000), st.TimeoutMillis)
	require.Positive(t, st.StartTimestamp)
	require.Equal(t, []kmsg.DescribeTransactionsResponseTransactionStateTopic{{Topic: "orders", Partitions: []int32{0, 3}}}, st.Topics)
}
