package records

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// txnBatch is a transactional batch of n records of producer pid.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	raw := build(t, spec{n: n, pid: pid, idem: true, epoch: epoch, seq: seq})
	put16(offAttributes, attrTransactional)(raw)
	return fixCRC(raw)
}

func marker(t testing.TB, l *Log, pid int64, epoch int16, commit bool) Appended {
	t.Helper()
	p, err := l.AppendMarker("t", 0, Marker{ProducerID: pid, ProducerEpoch: epoch, Commit: commit})
	require.NoError(t, err)
	a, err := p.Wait()
	require.NoError(t, err)
	return a
}

func readCommitted(t testing.TB, l *Log, offset int64) (ReadResult, []int64) {
	t.Helper()
	res, err := l.ReadCommittedAlloc("t", 0, offset, 1<<20, true, func(n int) []byte { return make([]byte, 0, n) })
	require.NoError(t, err)
	var bases []int64
	for b := res.Records; len(b) > 0; {
		h := parseHeader(b)
		bases = append(bases, h.baseOffset)
		b = b[h.size():]
	}
	return res, bases
}

func TestLastStableOffsetFollowsTransactions(t *testing.T) {
	l := openWith(t, testConfig(t, t.TempDir()), 1)
	produce(t, l, "t", 0, build(t, spec{n: 2}))     // 0-1 plain
	produce(t, l, "t", 0, txnBatch(t, 10, 0, 0, 3)) // 2-4 txn of 10
	produce(t, l, "t", 0, build(t, spec{n: 1}))     // 5 plain
	produce(t, l, "t", 0, txnBatch(t, 11, 0, 0, 2)) // 6-7 txn of 11
	lso, err := l.LastStableOffset("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), lso)
	res, bases := readCommitted(t, l, 0)
	require.Equal(t, []int64{0}, bases, "read_committed stops before the open transaction")
	require.Equal(t, int64(2), res.LastStableOffset)
	require.Equal(t, int64(8), res.HighWatermark)
	require.Empty(t, res.Aborted)
	_, bases = readCommitted(t, l, 2)
	require.Empty(t, bases, "at the LSO")

	require.Equal(t, int64(8), marker(t, l, 10, 0, false).BaseOffset) // abort 10 at 8
	lso, _ = l.LastStableOffset("t", 0)
	require.Equal(t, int64(6), lso, "the abort moves the LSO to the next open transaction")
	res, bases = readCommitted(t, l, 0)
	require.Equal(t, []int64{0, 2, 5}, bases)
	require.Equal(t, []AbortedTxn{{ProducerID: 10, FirstOffset: 2, LastOffset: 8}}, res.Aborted)

	require.Equal(t, int64(9), marker(t, l, 11, 0, true).BaseOffset) // commit 11 at 9
	res, bases = readCommitted(t, l, 6)
	require.Equal(t, []int64{6, 8, 9}, bases)
	require.Equal(t, int64(10), res.LastStableOffset)
	require.Equal(t, []AbortedTxn{{ProducerID: 10, FirstOffset: 2, LastOffset: 8}}, res.Aborted, "marker 8 is in the range read")
	res, _ = readCommitted(t, l, 9)
	require.Empty(t, res.Aborted)
	require.Empty(t, l.OpenTransactions())

	// read_uncommitted is unchanged: everything to the high watermark.
	require.Len(t, readAll(t, l, "t", 0), 6, "four batches of records and two markers")
}

func TestTransactionsRebuiltAtOpen(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	l := openWith(t, cfg, 1)
	produce(t, l, "t", 0, txnBatch(t, 20, 1, 0, 2)) // 0-1
	marker(t, l, 20, 1, false)                      // 2
	produce(t, l, "t", 0, txnBatch(t, 21, 0, 0, 1)) // 3, left open
	require.NoError(t, l.Close())

	l2 := open(t, cfg)
	lso, err := l2.LastStableOffset("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(3), lso)
	require.Equal(t, map[TopicPartition][]OpenTxn{{Topic: "t"}: {{ProducerID: 21, ProducerEpoch: 0, FirstOffset: 3}}}, l2.OpenTransactions())
	o, ok := l2.OpenTransaction("t", 0, 21)
	require.True(t, ok)
	require.Equal(t, OpenTxn{ProducerID: 21, ProducerEpoch: 0, FirstOffset: 3}, o)
	_, ok = l2.OpenTransaction("t", 0, 20)
	require.False(t, ok, "producer 20's transaction has its marker")
	_, ok = l2.OpenTransaction("t", 7, 21)
	require.False(t, ok, "no partition 7")
	res, _ := readCommitted(t, l2, 0)
	require.Equal(t, []AbortedTxn{{ProducerID: 20, FirstOffset: 0, LastOffset: 2}}, res.Aborted)

	// The producer's epoch came back from the marker: an older epoch is fenced.
	_, err = tryProduce(l2, "t", 0, txnBatch(t, 20, 0, 2, 1))
	require.ErrorIs(t, err, ErrInvalidProducerEpoch)
	_, err = l2.AppendMarker("t", 0, Marker{ProducerID: 20, ProducerEpoch: 0})
	require.ErrorIs(t, err, ErrInvalidProducerEpoch)
}

func TestMarkerEpochBumpRestartsSequences(t *testing.T) {
	l := openWith(t, testConfig(t, ""), 1)
	produce(t, l, "t", 0, txnBatch(t, 30, 0, 0, 2))
	marker(t, l, 30, 1, false) // the coordinator fenced epoch 0
	_, err := tryProduce(l, "t", 0, txnBatch(t, 30, 0, 2, 1))
	require.ErrorIs(t, err, ErrInvalidProducerEpoch)
	a := produce(t, l, "t", 0, txnBatch(t, 30, 1, 0, 1))
	require.Equal(t, int64(3), a.BaseOffset)
	_, err = tryProduce(l, "t", 0, txnBatch(t, 30, 1, 5, 1))
	require.ErrorIs(t, err, ErrOutOfOrderSequence)
}

func TestTransactionStateRollsBackWithAFailedSync(t *testing.T) {
	ffs := newFaultFS(osFS{})
	cfg := testConfig(t, t.TempDir())
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	produce(t, l, "t", 0, txnBatch(t, 40, 0, 0, 2)) // 0-1 open
	ffs.set(&ffs.sync, func(string) error { return errInjected })
	p, err := l.AppendMarker("t", 0, Marker{ProducerID: 40, Commit: false})
	require.NoError(t, err)
	_, err = p.Wait()
	require.ErrorIs(t, err, ErrStorage)
	ffs.set(&ffs.sync, nil)
	lso, _ := l.LastStableOffset("t", 0)
	require.Equal(t, int64(0), lso, "the marker that failed does not end the transaction")
	require.Equal(t, []OpenTxn{{ProducerID: 40, FirstOffset: 0}}, l.OpenTransactions()[TopicPartition{Topic: "t"}])
	res, _ := readCommitted(t, l, 0)
	require.Empty(t, res.Aborted)
	require.Equal(t, int64(2), marker(t, l, 40, 0, false).BaseOffset)
	res, _ = readCommitted(t, l, 0)
	require.Equal(t, []AbortedTxn{{ProducerID: 40, FirstOffset: 0, LastOffset: 2}}, res.Aborted)
}
