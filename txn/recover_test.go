package txn

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

func TestRestartAbortsOpenTransactionsAndBumpsTheEpoch(t *testing.T) {
	f := newFixture(t, t.TempDir())
	a := f.init("a")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0), tp(1)}))
	require.NoError(t, f.produce(a, 0, 0, 2))
	done := f.init("done")
	require.NoError(t, f.c.AddPartitions("done", done.pid, done.epoch, []records.TopicPartition{tp(2)}))
	require.NoError(t, f.c.EndTxn("done", done.pid, done.epoch, true))
	f.reopen()

	require.Equal(t, []records.AbortedTxn{{ProducerID: a.pid, FirstOffset: 0, LastOffset: 2}}, f.aborted(0), "aborted at start-up")
	require.Equal(t, int64(3), f.lso(0))
	require.Equal(t, int64(0), f.hw(1), "no marker where the transaction wrote nothing")
	views := f.c.Views()
	require.Equal(t, "a", views[0].TransactionalID)
	require.Equal(t, a.epoch+1, views[0].Epoch, "every abort the broker starts bumps the epoch")
	require.Equal(t, CompleteAbort, views[0].State)
	require.Equal(t, CompleteCommit, views[1].State)
	require.NoError(t, f.c.EndTxn("done", done.pid, done.epoch, true), "a retry after the restart is still NONE")
	require.ErrorIs(t, f.produce(a, 0, 2, 1), ErrProduceFenced)
	again := f.init("a")
	require.Equal(t, a.pid, again.pid, "the producer id survives the restart")
	require.Equal(t, a.epoch+2, again.epoch)
}

func TestRestartCompletesADecisionLoggedBeforeTheCrash(t *testing.T) {
	f := newFixture(t, t.TempDir())
	a := f.init("a")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0), tp(1)}))
	require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "g"))
	require.NoError(t, f.produce(a, 0, 0, 1))
	require.NoError(t, f.produce(a, 1, 0, 1))
	// The crash came after the decision was logged and before any marker.
	staged := []offsets.Entry{{Topic: "in", Partition: 0, Offset: 5}}
	d := entry{Kind: kindEnd, ID: "a", PID: a.pid, Epoch: a.epoch, Commit: true,
		Partitions: []records.TopicPartition{tp(0), tp(1)}, Offsets: map[string][]offsets.Entry{"g": staged}}
	require.NoError(t, f.c.journal.append(d))
	f.reopen()
	require.Equal(t, int64(2), f.lso(0), "committed at start-up")
	require.Equal(t, int64(2), f.lso(1))
	require.Empty(t, f.aborted(0))
	require.Equal(t, staged, f.offs.get("g"), "the offsets logged with the decision are applied")
	require.Equal(t, CompleteCommit, f.c.Views()[0].State)
	require.Equal(t, a.epoch, f.c.Views()[0].Epoch, "a commit does not bump")
}

func TestRestartAbortsTransactionsNobodyOwns(t *testing.T) {
	f := newFixture(t, t.TempDir())
	a := f.init("a")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
	require.NoError(t, f.produce(a, 0, 0, 1))
	f.c.journal = &journal{} // the transaction log is lost: a journal in memory
	require.NoError(t, f.c.Close())
	require.NoError(t, f.log.Close())
	require.NoError(t, removeJournal(f.dir))
	log, err := records.Open(records.Config{Dir: f.dir + "/logs"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	f.log = log
	f.open()
	require.Equal(t, []records.AbortedTxn{{ProducerID: a.pid, FirstOffset: 0, LastOffset: 1}}, f.aborted(0))
	require.Empty(t, f.log.OpenTransactions())
	require.Equal(t, int64(1), f.c.Stats().Aborted)
}

// TestPowerLossAfterAnUnsyncedCommit: a one-partition commit was answered
// once its marker was durable, with nothing of it synced in the
// transaction log; the next transaction wrote a record and the power
// failed. The restart keeps the commit and aborts the second one.
func TestPowerLossAfterAnUnsyncedCommit(t *testing.T) {
	f := newFixture(t, t.TempDir())
	a := f.init("a")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
	require.NoError(t, f.produce(a, 0, 0, 2))                 // 0-1
	require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true)) // marker 2
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
	require.NoError(t, f.produce(a, 0, 2, 1)) // 3
	f.powerLoss()
	require.Equal(t, []records.AbortedTxn{{ProducerID: a.pid, FirstOffset: 3, LastOffset: 4}}, f.aborted(0), "only the open one")
	require.Equal(t, int64(5), f.lso(0))
	require.Equal(t, a.epoch+1, f.c.Views()[0].Epoch, "the broker's abort bumps the epoch")
	require.Equal(t, CompleteAbort, f.c.Views()[0].State)
}

// TestPowerLossKeepsALaterTransactionOutOfARetriedDecision: the decision
// of a two-partition commit was synced, its done record was not; the
// producer's next transaction wrote to the same partition. Completing the
// decision again at the restart must not commit the later transaction.
func TestPowerLossKeepsALaterTransactionOutOfARetriedDecision(t *testing.T) {
	f := newFixture(t, t.TempDir())
	a := f.init("a")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0), tp(1)}))
	require.NoError(t, f.produce(a, 0, 0, 1))                 // 0
	require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true)) // markers: 1 on partition 0, 0 on partition 1
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
	require.NoError(t, f.produce(a, 0, 1, 2)) // 2-3
	f.powerLoss()
	require.Equal(t, []records.AbortedTxn{{ProducerID: a.pid, FirstOffset: 2, LastOffset: 4}}, f.aborted(0),
		"the later transaction is aborted, not committed by the earlier decision's marker")
	require.Equal(t, int64(5), f.hw(0), "no second commit marker")
	require.Equal(t, int64(1), f.hw(1), "partition 1 already had its marker")
	require.Equal(t, int64(5), f.lso(0))
	require.Empty(t, f.log.OpenTransactions())
}
