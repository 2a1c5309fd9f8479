package integration

// A decided transaction always completes: a partition of the transaction
// deleted before EndTxn, and a TxnOffsetCommit for a new group once
// --max-groups is reached, neither leave the transactional id in
// PrepareCommit, in a running broker or across a kill -9.

import (
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// txnState is DescribeTransactions' state name for id.
func txnState(t *testing.T, c *wireclient.Client, id string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := wiretest.Do[*kmsg.DescribeTransactionsResponse](t, c, req)
	require.Len(t, resp.TransactionStates, 1)
	require.Equal(t, codeNone, resp.TransactionStates[0].ErrorCode)
	return resp.TransactionStates[0].State
}

// deleteTopic deletes topic by DeleteTopics v4, requiring NONE.
func deleteTopic(t *testing.T, c *wireclient.Client, topic string) {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TimeoutMillis, req.TopicNames = 4, 5000, []string{topic}
	resp := wiretest.Do[*kmsg.DeleteTopicsResponse](t, c, req)
	require.Len(t, resp.Topics, 1)
	require.Equal(t, codeNone, resp.Topics[0].ErrorCode)
}

// commitAfterTopicDeleted runs a transaction over payments-0 and
// doomed-0, deletes doomed, and commits: NONE, the commit marker in
// payments-0 only.
func commitAfterTopicDeleted(t *testing.T, c *wireclient.Client) {
	t.Helper()
	ensureTopic(t, c, "doomed", 1)
	p := mustInitTxn(t, c, "deleted")
	id := "deleted"
	require.Equal(t, []int16{codeNone}, addPartitions(t, c, 3, p, "payments", 0))
	require.Equal(t, []int16{codeNone}, addPartitions(t, c, 3, p, "doomed", 0))
	require.Equal(t, codeNone, produceTxn(t, c, &id, "payments", 0, txnBatch(p, 0, "kept")).ErrorCode)
	require.Equal(t, codeNone, produceTxn(t, c, &id, "doomed", 0, txnBatch(p, 0, "gone")).ErrorCode)
	deleteTopic(t, c, "doomed")
	require.Equal(t, codeNone, endTxn(t, c, 3, p, true), "the marker of the deleted partition is skipped")
	require.Equal(t, "CompleteCommit", txnState(t, c, "deleted"))
}

// commitPastTheGroupLimit fills --max-groups 1 with a direct commit to
// "full", then runs a transaction whose TxnOffsetCommit to a new group
// is refused with the limit's code when staged, and whose commit of
// "full"'s offset and payments-0's record completes.
func commitPastTheGroupLimit(t *testing.T, c *wireclient.Client) {
	t.Helper()
	require.Equal(t, []int16{codeNone}, commit(t, c, "full", "", -1, tp{"orders", 0, 3}))
	p := mustInitTxn(t, c, "limited")
	id := "limited"
	require.Equal(t, []int16{codeNone}, addPartitions(t, c, 3, p, "payments", 0))
	require.Equal(t, codeNone, produceTxn(t, c, &id, "payments", 0, txnBatch(p, 0, "kept")).ErrorCode)
	require.Equal(t, codeNone, addOffsets(t, c, 3, p, "new-group"))
	require.Equal(t, []int16{kerr.PolicyViolation.Code}, txnCommit(t, c, p, "new-group", "", -1, tp{"orders", 1, 5}),
		"the group limit answers where the offsets are staged")
	require.Equal(t, codeNone, addOffsets(t, c, 3, p, "full"))
	require.Equal(t, []int16{codeNone}, txnCommit(t, c, p, "full", "", -1, tp{"orders", 0, 9}))
	require.Equal(t, codeNone, endTxn(t, c, 3, p, true))
	require.Equal(t, "CompleteCommit", txnState(t, c, "limited"))
}

// checkCommitted checks what a completed transaction left: payments-0
// holds "kept" committed and nothing open, and full's offset is 9.
func checkCommitted(t *testing.T, c *wireclient.Client, group bool) {
	t.Helper()
	f := fetchCommitted(t, c, "payments", 0, 0)
	require.Equal(t, [2]int64{2, 2}, [2]int64{f.LastStableOffset, f.HighWatermark}, "the record and the commit marker; nothing open")
	require.Equal(t, []string{"kept"}, readCommittedValues(t, c, "payments", 0, 0))
	if group {
		require.Equal(t, map[string]int64{"orders-0": 9}, fetchOffsets(t, c, "full", tp{topic: "orders", partition: 0}))
	}
}

func TestWireTxnCompletesWhenItsTopicIsDeleted(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "wedge")
	commitAfterTopicDeleted(t, c)
	checkCommitted(t, c, false)
	_, err := b.Advance(100 * time.Millisecond)
	require.NoError(t, err)
	b.Expire()
	require.Equal(t, "CompleteCommit", txnState(t, c, "deleted"))
	require.Empty(t, b.Logs.AtLevel(slog.LevelError), "nothing left failing")
}

func TestWireTxnCompletesPastTheGroupLimit(t *testing.T) {
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxGroups = 1 })
	c := wiretest.Dial(t, b.Addr(), "wedge")
	commitPastTheGroupLimit(t, c)
	checkCommitted(t, c, true)
	_, err := b.Advance(100 * time.Millisecond)
	require.NoError(t, err)
	b.Expire()
	require.Equal(t, "CompleteCommit", txnState(t, c, "limited"))
	require.Empty(t, b.Logs.AtLevel(slog.LevelError))
}

// TestCrashKillAfterAWedgeStartsWithTheTransactionComplete: each of the
// two cases in a broker process, killed with SIGKILL once EndTxn is
// answered, starts again with the transaction complete.
func TestCrashKillAfterAWedgeStartsWithTheTransactionComplete(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		id    string
		args  []string
		run   func(*testing.T, *wireclient.Client)
		group bool
	}{
		{"topic deleted", "deleted", nil, commitAfterTopicDeleted, false},
		{"group limit", "limited", []string{"--max-groups", "1"}, commitPastTheGroupLimit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--data-dir", t.TempDir(), "--topic", "payments:1", "--topic", "orders:2"}, tc.args...)
			p := startProcess(t, args...)
			c := wiretest.Dial(t, p.Addr, "process-test")
			tc.run(t, c)
			require.Equal(t, -1, p.signal(t, syscall.SIGKILL, waitTimeout), "killed, not exited")

			p = startProcess(t, args...)
			c = wiretest.Dial(t, p.Addr, "process-test")
			require.Equal(t, "CompleteCommit", txnState(t, c, tc.id))
			checkCommitted(t, c, tc.group)
			require.Equal(t, 0, p.signal(t, syscall.SIGTERM, waitTimeout), "a clean stop")
			p = startProcess(t, args...)
			c = wiretest.Dial(t, p.Addr, "process-test")
			require.Equal(t, "CompleteCommit", txnState(t, c, tc.id), "and a start after a clean stop")
		})
	}
}
