package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

func TestEndTxnCommitWritesMarkersAndOffsets(t *testing.T) {
	f := newFixture(t, t.TempDir())
	a := f.init("a")
	require.ErrorIs(t, f.c.EndTxn("a", a.pid, a.epoch, true), ErrInvalidTxnState, "nothing begun")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0), tp(1)}))
	require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "g"))
	require.NoError(t, f.produce(a, 0, 0, 3))
	f.offs.stage("g", a.pid, offsets.Entry{Topic: "in", Partition: 0, Offset: 42})
	require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true))
	require.Equal(t, int64(4), f.hw(0), "3 records and the commit marker")
	require.Equal(t, int64(1), f.hw(1), "a marker in a partition added but never written to")
	require.Equal(t, int64(4), f.lso(0))
	require.Empty(t, f.aborted(0))
	require.Equal(t, []offsets.Entry{{Topic: "in", Partition: 0, Offset: 42}}, f.offs.get("g"))
	require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true), "a retry")
	require.ErrorIs(t, f.c.EndTxn("a", a.pid, a.epoch, false), ErrInvalidTxnState)
	require.Equal(t, int64(1), f.c.Stats().Committed)
}

func TestEndTxnAbortDiscardsOffsets(t *testing.T) {
	f := newFixture(t, "")
	a := f.init("a")
	require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "g"))
	f.offs.stage("g", a.pid, offsets.Entry{Topic: "in", Partition: 0, Offset: 42})
	require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, false))
	require.Empty(t, f.offs.get("g"))
	require.Empty(t, f.offs.TxnStaged("g", a.pid))
}

func TestEndTxnFailureIsRetried(t *testing.T) {
	f := newFixture(t, "")
	a := f.init("a")
	require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "g"))
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(2)}))
	f.offs.stage("g", a.pid, offsets.Entry{Topic: "in", Partition: 1, Offset: 7})
	f.offs.fail = errInjected
	err := f.c.EndTxn("a", a.pid, a.epoch, true)
	require.ErrorIs(t, err, ErrStorage)
	require.Equal(t, PrepareCommit, f.c.Views()[0].State, "decided: it stays PrepareCommit")
	require.ErrorIs(t, f.c.AddPartitions("a", a.pid, a.epoch, nil), ErrConcurrentTransactions)
	_, _, err = f.c.InitProducerID("a", time.Minute, -1, -1)
	require.ErrorIs(t, err, ErrConcurrentTransactions)
	require.ErrorIs(t, f.c.EndTxn("a", a.pid, a.epoch, false), ErrConcurrentTransactions, "the other decision while prepared")
	f.offs.fail = nil
	require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true), "the retry completes it")
	require.Equal(t, CompleteCommit, f.c.Views()[0].State)
	require.Equal(t, []offsets.Entry{{Topic: "in", Partition: 1, Offset: 7}}, f.offs.get("g"))
	require.Equal(t, int64(2), f.hw(2), "the marker was written twice: once per attempt")

	// A failure the expiry step retries.
	require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "g"))
	f.offs.fail = errInjected
	require.ErrorIs(t, f.c.EndTxn("a", a.pid, a.epoch, false), ErrStorage)
	f.offs.fail = nil
	require.Empty(t, f.c.Expire())
	require.Equal(t, PrepareAbort, f.c.Views()[0].State, "the retry waits out its backoff")
	f.clock.Advance(retryBackoffMin)
	require.Empty(t, f.c.Expire())
	require.Equal(t, CompleteAbort, f.c.Views()[0].State)
}

func TestExpireAbortsTimedOutTransactions(t *testing.T) {
	f := newFixture(t, "")
	pid, epoch, err := f.c.InitProducerID("slow", time.Second, -1, -1)
	require.NoError(t, err)
	slow := producer{"slow", pid, epoch}
	fast := f.init("fast")
	require.NoError(t, f.c.AddPartitions("slow", slow.pid, slow.epoch, []records.TopicPartition{tp(0)}))
	require.NoError(t, f.produce(slow, 0, 0, 2))
	f.clock.Advance(500 * time.Millisecond)
	require.NoError(t, f.c.AddPartitions("fast", fast.pid, fast.epoch, []records.TopicPartition{tp(1)}))
	f.clock.Advance(500 * time.Millisecond)
	require.Empty(t, f.c.Expire(), "exactly the timeout is not past it")
	f.clock.Advance(time.Millisecond)
	require.Equal(t, []Expired{{TransactionalID: "slow", ProducerID: slow.pid, Epoch: slow.epoch + 1}}, f.c.Expire())
	require.Equal(t, []records.AbortedTxn{{ProducerID: slow.pid, FirstOffset: 0, LastOffset: 2}}, f.aborted(0))
	require.ErrorIs(t, f.c.EndTxn("slow", slow.pid, slow.epoch, true), ErrFenced, "the zombie is fenced")
	require.ErrorIs(t, f.produce(slow, 0, 2, 1), ErrProduceFenced)
	pid, epoch, err = f.c.InitProducerID("slow", time.Second, slow.pid, slow.epoch)
	require.NoError(t, err, "KIP-588: the fenced producer re-initializes from its last epoch")
	require.Equal(t, [2]int64{slow.pid, int64(slow.epoch) + 1}, [2]int64{pid, int64(epoch)},
		"the epoch the abort made, unbumped: the producer's epoch is the last one (prepareIncrementProducerEpoch)")
	st := f.c.Stats()
	require.Equal(t, Stats{Open: 1, Aborted: 1, TimedOut: 1}, st, "fast is still open (its minute is not over)")
}

// TestEndTxnSyncsTheLogOnlyWhereACrashNeedsIt pins which transaction log
// records wait for an fdatasync: the init; a decision only for a commit
// of several partitions or with offsets, and for an abort the broker
// starts; the done record only after offsets were applied.
func TestEndTxnSyncsTheLogOnlyWhereACrashNeedsIt(t *testing.T) {
	f := newFixture(t, t.TempDir())
	base := f.syncs()
	a := f.init("a")
	require.Equal(t, base+1, f.syncs(), "the init")
	step := func(what string, want int64, run func()) {
		t.Helper()
		before := f.syncs()
		run()
		require.Equal(t, want, f.syncs()-before, what)
	}
	step("one partition, no offsets: the marker decides", 0, func() {
		require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
		require.NoError(t, f.produce(a, 0, 0, 1))
		require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true))
	})
	step("a client's abort of two partitions", 0, func() {
		require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0), tp(1)}))
		require.NoError(t, f.produce(a, 0, 1, 1))
		require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, false))
	})
	step("two partitions: the decision", 1, func() {
		require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0), tp(1)}))
		require.NoError(t, f.produce(a, 1, 0, 1))
		require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true))
	})
	step("offsets: the decision and the done record", 2, func() {
		require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
		require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "g"))
		f.offs.stage("g", a.pid, offsets.Entry{Topic: "in", Partition: 0, Offset: 7})
		require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true))
	})
	step("a timeout's abort bumps the epoch: the decision", 1, func() {
		require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(2)}))
		f.clock.Advance(time.Minute + time.Millisecond)
		require.Len(t, f.c.Expire(), 1)
	})
	require.Equal(t, []offsets.Entry{{Topic: "in", Partition: 0, Offset: 7}}, f.offs.get("g"))
	require.Equal(t, int64(3), f.c.Stats().Committed)
}
