package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestListTransactions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pid, epoch := e.txnInit("open")
	require.Equal(t, []int16{0}, e.txnAdd("open", pid, epoch, "payments", 0))
	idle, _ := e.txnInit("idle")
	list := func(version int16, states []string, pids []int64, duration int64) *kmsg.ListTransactionsResponse {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis = version, states, pids, duration
		return call[*kmsg.ListTransactionsResponse](e, "p", req)
	}
	resp := list(0, nil, nil, -1)
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, []kmsg.ListTransactionsResponseTransactionState{
		{TransactionalID: "idle", ProducerID: idle, TransactionState: "Empty"},
		{TransactionalID: "open", ProducerID: pid, TransactionState: "Ongoing"},
	}, resp.TransactionStates)
	resp = list(1, []string{"Ongoing", "Sleeping"}, nil, -1)
	require.Equal(t, []string{"Sleeping"}, resp.UnknownStateFilters)
	require.Len(t, resp.TransactionStates, 1)
	require.Equal(t, "open", resp.TransactionStates[0].TransactionalID)
	resp = list(1, nil, []int64{idle}, -1)
	require.Len(t, resp.TransactionStates, 1)
	require.Equal(t, "idle", resp.TransactionStates[0].TransactionalID)
	resp = list(1, nil, nil, 3_600_000)
	require.Len(t, resp.TransactionStates, 1, "the open transaction is younger than an hour; idle never began one")
	require.Equal(t, "idle", resp.TransactionStates[0].TransactionalID)
}
