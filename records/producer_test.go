package records

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// idem builds an idempotent batch of n records.
func idem(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	return build(t, spec{n: n, pid: pid, epoch: epoch, seq: seq, idem: true})
}

// TestDuplicateOfLastFive retries each of a producer's last five batches:
// each answers with its original offsets and stores nothing. A retry of
// the sixth batch back is no longer known: out of order, as in Kafka.
func TestDuplicateOfLastFive(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, t.TempDir()), 1)
	var batches [][]byte
	var offsets []Appended
	for i := range 6 {
		raw := idem(t, 3, 0, int32(2*i), 2)
		batches = append(batches, bytes.Clone(raw))
		offsets = append(offsets, produce(t, l, "t", 0, raw))
	}
	before := l.Stats()
	st0, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	for i := 1; i < 6; i++ {
		a := produce(t, l, "t", 0, bytes.Clone(batches[i]))
		want := offsets[i]
		want.Duplicate = true
		require.Equal(t, want, a, "retry of batch %d", i)
	}
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, st0, st, "nothing stored")
	require.Equal(t, before.BatchesAppended, l.Stats().BatchesAppended)
	require.Equal(t, int64(5), l.Stats().Duplicates)

	_, err = tryProduce(l, "t", 0, bytes.Clone(batches[0]))
	require.ErrorIs(t, err, ErrOutOfOrderSequence)
	require.Len(t, readAll(t, l, "t", 0), 6)
}

// TestSequenceRules checks Kafka's sequence and epoch rules
// (ProducerAppendInfo): gaps, epochs lower, higher, a new epoch's first
// sequence, producers with no state, and wrapping past MaxInt32.
func TestSequenceRules(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 1)
	produce(t, l, "t", 0, idem(t, 1, 2, 0, 3)) // seqs 0-2, offsets 0-2

	_, err := tryProduce(l, "t", 0, idem(t, 1, 2, 4, 1))
	require.ErrorIs(t, err, ErrOutOfOrderSequence, "gap")
	_, err = tryProduce(l, "t", 0, idem(t, 1, 2, 2, 1))
	require.ErrorIs(t, err, ErrOutOfOrderSequence, "overlap that is no duplicate")
	_, err = tryProduce(l, "t", 0, idem(t, 1, 1, 3, 1))
	require.ErrorIs(t, err, ErrInvalidProducerEpoch, "lower epoch")
	_, err = tryProduce(l, "t", 0, idem(t, 1, 1, 0, 3))
	require.ErrorIs(t, err, ErrInvalidProducerEpoch, "lower epoch, even with a retry's sequences")
	_, err = tryProduce(l, "t", 0, idem(t, 1, 3, 3, 1))
	require.ErrorIs(t, err, ErrOutOfOrderSequence, "a new epoch must start at 0")
	a := produce(t, l, "t", 0, idem(t, 1, 2, 3, 1))
	require.Equal(t, int64(3), a.BaseOffset, "in sequence")

	a = produce(t, l, "t", 0, idem(t, 1, 3, 0, 2))
	require.Equal(t, int64(4), a.BaseOffset, "new epoch at 0")
	_, err = tryProduce(l, "t", 0, idem(t, 1, 2, 4, 1))
	require.ErrorIs(t, err, ErrInvalidProducerEpoch, "the old epoch is fenced")

	a = produce(t, l, "t", 0, idem(t, 99, 0, 1234, 2))
	require.Equal(t, int64(6), a.BaseOffset, "no state: any sequence (KIP-360)")
	_, err = tryProduce(l, "t", 0, idem(t, 99, 0, 1237, 1))
	require.ErrorIs(t, err, ErrOutOfOrderSequence)
	produce(t, l, "t", 0, idem(t, 99, 0, 1236, 1))

	a = produce(t, l, "t", 0, idem(t, 5, 0, math.MaxInt32-1, 3)) // seqs MaxInt32-1, MaxInt32, 0
	require.Equal(t, int64(9), a.BaseOffset)
	_, err = tryProduce(l, "t", 0, idem(t, 5, 0, 0, 1))
	require.ErrorIs(t, err, ErrOutOfOrderSequence, "0 was the wrapped batch's last")
	a = produce(t, l, "t", 0, idem(t, 5, 0, 1, 1))
	require.Equal(t, int64(12), a.BaseOffset, "wrapped past MaxInt32")
	a = produce(t, l, "t", 0, idem(t, 5, 0, math.MaxInt32-1, 3))
	require.True(t, a.Duplicate, "the wrapped batch is still recognised")

	// Not idempotent: never a duplicate.
	raw := build(t, spec{n: 2})
	a1 := produce(t, l, "t", 0, bytes.Clone(raw))
	a2 := produce(t, l, "t", 0, bytes.Clone(raw))
	require.Equal(t, a1.LastOffset+1, a2.BaseOffset)
}

// TestProducerStateRebuiltAtOpen closes and reopens the log: the producer
// state comes back from the batch headers, so a retry is still a
// duplicate and a gap still out of order.
func TestProducerStateRebuiltAtOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := openAnyPID(testConfig(t, dir))
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	produce(t, l, "t", 0, idem(t, 4, 1, 0, 2))
	last := idem(t, 4, 1, 2, 3)
	orig := produce(t, l, "t", 0, bytes.Clone(last))
	require.NoError(t, l.Close())

	l = open(t, testConfig(t, dir))
	a := produce(t, l, "t", 0, bytes.Clone(last))
	require.Equal(t, Appended{BaseOffset: orig.BaseOffset, LastOffset: orig.LastOffset, Duplicate: true}, a)
	_, err = tryProduce(l, "t", 0, idem(t, 4, 1, 6, 1))
	require.ErrorIs(t, err, ErrOutOfOrderSequence)
	_, err = tryProduce(l, "t", 0, idem(t, 4, 0, 5, 1))
	require.ErrorIs(t, err, ErrInvalidProducerEpoch)
	a = produce(t, l, "t", 0, idem(t, 4, 1, 5, 1))
	require.Equal(t, int64(5), a.BaseOffset)
}

// TestDuplicateWaitsForOriginal retries a batch whose original is not
// durable yet: the retry's Pending completes when the original's does,
// with the original's offsets.
func TestDuplicateWaitsForOriginal(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "")
	ffs := newFaultFS(newMemFS())
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	produce(t, l, "t", 0, build(t, spec{n: 2}))
	entered, release := make(chan struct{}), make(chan struct{})
	ffs.set(&ffs.sync, func(string) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	raw := idem(t, 8, 0, 0, 2)
	orig, err := l.Append("t", 0, mustValidate(t, l, bytes.Clone(raw)))
	require.NoError(t, err)
	orig.Done()
	<-entered // the original's round is syncing
	inflight, err := l.Append("t", 0, mustValidate(t, l, bytes.Clone(raw)))
	require.NoError(t, err)
	next := idem(t, 8, 0, 2, 1)
	later, err := l.Append("t", 0, mustValidate(t, l, bytes.Clone(next)))
	require.NoError(t, err)
	open, err := l.Append("t", 0, mustValidate(t, l, bytes.Clone(next)))
	require.NoError(t, err)
	for _, p := range []*Pending{inflight, open} {
		select {
		case <-p.g.done:
			t.Fatal("duplicate done before its original")
		default:
		}
	}
	ffs.set(&ffs.sync, nil)
	close(release)
	a, err := inflight.Wait()
	require.NoError(t, err)
	require.Equal(t, Appended{BaseOffset: 2, LastOffset: 3, Duplicate: true}, a)
	a, err = later.Wait()
	require.NoError(t, err)
	require.Equal(t, Appended{BaseOffset: 4, LastOffset: 4}, a)
	a, err = open.Wait()
	require.NoError(t, err)
	require.Equal(t, Appended{BaseOffset: 4, LastOffset: 4, Duplicate: true}, a)
	require.Len(t, readAll(t, l, "t", 0), 3)
}

// TestProducerStateBounded checks MaxProducers: past it the least
// recently used producer is forgotten, and its next batch is accepted
// with any sequence, as for a producer never seen.
func TestProducerStateBounded(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "")
	cfg.MaxProducers = 2
	l := openWith(t, cfg, 1)
	produce(t, l, "t", 0, idem(t, 1, 0, 0, 1))
	produce(t, l, "t", 0, idem(t, 2, 0, 0, 1))
	produce(t, l, "t", 0, idem(t, 1, 0, 1, 1)) // 1 is now the most recent
	produce(t, l, "t", 0, idem(t, 3, 0, 0, 1)) // evicts 2
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, 2, st.Producers)
	_, err = tryProduce(l, "t", 0, idem(t, 1, 0, 5, 1))
	require.ErrorIs(t, err, ErrOutOfOrderSequence, "1 is remembered")
	a := produce(t, l, "t", 0, idem(t, 2, 0, 7, 1))
	require.False(t, a.Duplicate, "2 was forgotten: any sequence")
}

// TestProducerStateRollback checks the undo log directly: changes past an
// offset are taken back newest first, restoring evicted producers.
func TestProducerStateRollback(t *testing.T) {
	t.Parallel()
	ps := newProducerState(2)
	hdr := func(pid int64, epoch int16, seq int32, base int64) *header {
		return &header{producerID: pid, producerEpoch: epoch, baseSequence: seq, baseOffset: base}
	}
	ps.update(hdr(1, 0, 0, 0), true)
	ps.update(hdr(2, 0, 0, 1), true)
	ps.durable(2)
	require.Empty(t, ps.undo)
	ps.update(hdr(1, 1, 0, 2), true) // new epoch for 1
	ps.update(hdr(3, 0, 0, 3), true) // evicts 2
	require.Len(t, ps.m, 2)
	require.NotContains(t, ps.m, int64(2))
	ps.rollback(2)
	require.Len(t, ps.m, 2)
	require.Equal(t, int16(0), ps.m[1].epoch)
	require.Equal(t, int64(0), ps.m[1].last().baseOffset)
	require.Contains(t, ps.m, int64(2))
	require.NotContains(t, ps.m, int64(3))
	require.Empty(t, ps.undo)
	// The list is whole again: undone newest first, 1 was restored last
	// and is the most recent, so 2 is the one evicted next.
	ps.update(hdr(4, 0, 0, 2), false)
	require.Len(t, ps.m, 2)
	require.Contains(t, ps.m, int64(1))
	require.NotContains(t, ps.m, int64(2))
}
