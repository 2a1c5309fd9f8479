package records

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGroupCommitSharesRounds holds partition 0's first sync while eight
// producers on four partitions append and wait. Partitions 1-3 do not
// wait for it: their appends become durable in rounds of their own while
// it is held. Partition 0's two appends gather behind the running sync,
// and one more sync of its file makes both durable once it is released.
func TestGroupCommitSharesRounds(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "")
	ffs := newFaultFS(newMemFS())
	cfg.fs = ffs
	l := openWith(t, cfg, 4)

	entered, release := make(chan struct{}, 1), make(chan struct{})
	var (
		once   sync.Once
		mu     sync.Mutex
		synced = map[string]int{} // syncs per partition directory
	)
	ffs.set(&ffs.sync, func(path string) error {
		dir := filepath.Base(filepath.Dir(path))
		mu.Lock()
		synced[dir]++
		mu.Unlock()
		if dir == "t-0" {
			once.Do(func() {
				entered <- struct{}{}
				<-release
			})
		}
		return nil
	})
	first, err := l.Append("t", 0, mustValidate(t, l, build(t, spec{})))
	require.NoError(t, err)
	first.Done()
	<-entered

	var wg sync.WaitGroup
	results := make([]Appended, 8)
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			results[i], errs[i] = tryProduce(l, "t", int32(i%4), build(t, spec{n: 2}))
		})
	}
	hw := func(p int32) int64 {
		_, hw, err := l.Offsets("t", p)
		require.NoError(t, err)
		return hw
	}
	eventually(t, func() bool { return hw(1) == 4 && hw(2) == 4 && hw(3) == 4 },
		"partitions 1-3 durable while partition 0's sync is held")
	eventually(t, func() bool { return l.Stats().BatchesAppended == 9 }, "eight appends written")
	require.Equal(t, int64(0), hw(0), "partition 0 waits for its own sync")
	close(release)
	_, err = first.Wait()
	require.NoError(t, err)
	wg.Wait()
	for i := range 8 {
		require.NoError(t, errs[i])
	}
	require.Equal(t, int64(5), hw(0))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, synced["t-0"], "the held sync, then one for both appends made behind it")
	for _, dir := range []string{"t-1", "t-2", "t-3"} {
		require.GreaterOrEqual(t, synced[dir], 1)
		require.LessOrEqual(t, synced[dir], 2, "%s: one sync per append at most", dir)
	}
	require.Less(t, l.Stats().Syncs, l.Stats().BatchesAppended)
}

// TestOneRoundPerRequest appends to four partitions and then waits, as a
// Produce handler does: the request costs exactly one flush round.
func TestOneRoundPerRequest(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, t.TempDir()), 4)
	var pending []*Pending
	for p := range int32(4) {
		pd, err := l.Append("t", p, mustValidate(t, l, build(t, spec{})))
		require.NoError(t, err)
		pending = append(pending, pd)
	}
	require.Zero(t, l.Stats().FlushRounds, "appends alone start no round")
	for _, pd := range pending {
		_, err := pd.Wait()
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), l.Stats().FlushRounds)
	require.Equal(t, int64(4), l.Stats().Syncs)
}

// TestFlushWithoutWait checks acks=0: appends nobody waits for become
// durable and visible after Flush.
func TestFlushWithoutWait(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 1)
	_, err := l.Append("t", 0, mustValidate(t, l, build(t, spec{n: 3})))
	require.NoError(t, err)
	w := l.Watch(WatchOffset{Topic: "t", Partition: 0, Offset: 0})
	defer w.Close()
	l.Flush()
	<-w.C()
	_, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(3), hw)
}

func mustValidate(t testing.TB, l *Log, raw []byte) Batch {
	t.Helper()
	b, err := l.Validate(raw)
	require.NoError(t, err)
	return b
}

// TestSyncFailureRollsBack fails the sync of one partition: every append
// of it not yet durable fails with ErrStorage, its file is cut back to the
// durable end, its producer state forgets the failed batches, and the
// next append continues at the durable end. The other partition of the
// same round is unaffected.
func TestSyncFailureRollsBack(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l := openWith(t, cfg, 2)
	a0 := build(t, spec{n: 2, pid: 9, seq: 0, idem: true})
	produce(t, l, "t", 0, a0)
	seg := filepath.Join(cfg.Dir, "t-0", "00000000000000000000.log")
	durable := int64(len(a0)) // the file is longer: space allocated ahead

	ffs.set(&ffs.sync, func(path string) error {
		if strings.Contains(path, "t-0") {
			return errInjected
		}
		return nil
	})
	b1 := build(t, spec{n: 3, pid: 9, seq: 2, idem: true})
	p1, err := l.Append("t", 0, mustValidate(t, l, bytes.Clone(b1)))
	require.NoError(t, err)
	p2, err := l.Append("t", 0, mustValidate(t, l, build(t, spec{n: 1})))
	require.NoError(t, err)
	other, err := l.Append("t", 1, mustValidate(t, l, build(t, spec{n: 4})))
	require.NoError(t, err)
	_, err = p1.Wait()
	require.ErrorIs(t, err, ErrStorage)
	require.ErrorIs(t, err, errInjected)
	_, err = p2.Wait()
	require.ErrorIs(t, err, ErrStorage)
	a, err := other.Wait()
	require.NoError(t, err)
	require.Equal(t, int64(0), a.BaseOffset)

	require.Equal(t, durable, fileSize(t, seg), "cut back to the durable end")
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, PartitionStats{HighWatermark: 2, LastStableOffset: 2, LogEndOffset: 2, Bytes: durable, Segments: 1, Producers: 1}, st)
	require.Equal(t, int64(1), l.Stats().StorageErrors)

	ffs.set(&ffs.sync, nil)
	// The retry of the failed batch is new, not a duplicate: the producer
	// state forgot it.
	r := produce(t, l, "t", 0, bytes.Clone(b1))
	require.Equal(t, Appended{BaseOffset: 2, LastOffset: 4}, r)
	r = produce(t, l, "t", 0, bytes.Clone(b1))
	require.Equal(t, Appended{BaseOffset: 2, LastOffset: 4, Duplicate: true}, r)
	require.Equal(t, [][]byte{withBase(a0, 0), withBase(b1, 2)}, readAll(t, l, "t", 0))
}

// TestWriteFailureRollsBack fails a write: that append fails at once, the
// append written before it and not durable fails too, the file is cut back
// and the next append continues at the durable end.
func TestWriteFailureRollsBack(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	produce(t, l, "t", 0, build(t, spec{n: 2}))
	seg := filepath.Join(cfg.Dir, "t-0", "00000000000000000000.log")
	durable := int64(len(build(t, spec{n: 2}))) // the file is longer: space allocated ahead

	before, err := l.Append("t", 0, mustValidate(t, l, build(t, spec{n: 1})))
	require.NoError(t, err)
	ffs.set(&ffs.write, func(string) error { return errInjected })
	_, err = l.Append("t", 0, mustValidate(t, l, build(t, spec{n: 5})))
	require.ErrorIs(t, err, ErrStorage)
	require.ErrorIs(t, err, errInjected)
	_, err = before.Wait()
	require.ErrorIs(t, err, ErrStorage)
	require.Equal(t, durable, fileSize(t, seg))

	ffs.set(&ffs.write, nil)
	a := produce(t, l, "t", 0, build(t, spec{n: 3}))
	require.Equal(t, int64(2), a.BaseOffset)
	require.Len(t, readAll(t, l, "t", 0), 2)
}

// TestWriteFailureDuringFlush fails a write while a flush round syncs the
// partition: the round's appends still succeed, the failed one fails, the
// partition refuses appends until the round ends and then continues after
// the round's appends.
func TestWriteFailureDuringFlush(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "")
	ffs := newFaultFS(newMemFS())
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	entered, release := make(chan struct{}), make(chan struct{})
	ffs.set(&ffs.sync, func(string) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	x, err := l.Append("t", 0, mustValidate(t, l, build(t, spec{n: 2})))
	require.NoError(t, err)
	x.Done()
	<-entered
	ffs.set(&ffs.write, func(string) error { return errInjected })
	_, err = l.Append("t", 0, mustValidate(t, l, build(t, spec{n: 5})))
	require.ErrorIs(t, err, ErrStorage)
	ffs.set(&ffs.write, nil)
	_, err = l.Append("t", 0, mustValidate(t, l, build(t, spec{})))
	require.ErrorIs(t, err, ErrStorage, "refused while the failed write waits for its rollback")
	ffs.set(&ffs.sync, nil)
	close(release)
	a, err := x.Wait()
	require.NoError(t, err)
	require.Equal(t, int64(0), a.BaseOffset)
	eventually(t, func() bool {
		_, err := tryProduce(l, "t", 0, build(t, spec{n: 1}))
		return err == nil
	}, "appends accepted after the rollback")
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(3), st.HighWatermark)
}

// TestRollbackRemovesRolledSegment fails the sync of an append that rolled
// a new segment: the new segment's file goes with the rollback.
func TestRollbackRemovesRolledSegment(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = MinSegmentBytes
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	produce(t, l, "t", 0, build(t, spec{value: 900}))
	dir := filepath.Join(cfg.Dir, "t-0")
	require.Equal(t, []string{"00000000000000000000.log"}, segmentFiles(t, dir))
	ffs.set(&ffs.sync, func(string) error { return errInjected })
	_, err := tryProduce(l, "t", 0, build(t, spec{value: 900}))
	require.ErrorIs(t, err, ErrStorage)
	require.Equal(t, []string{"00000000000000000000.log"}, segmentFiles(t, dir))
	ffs.set(&ffs.sync, nil)
	a := produce(t, l, "t", 0, build(t, spec{value: 900}))
	require.Equal(t, int64(1), a.BaseOffset)
	require.Equal(t, []string{"00000000000000000000.log", "00000000000000000001.log"}, segmentFiles(t, dir))
}

// TestFailedRollbackBreaksPartition fails both the sync and the truncate
// that would take the failed append back: that partition refuses appends
// with ErrStorage until restart, the other keeps working, and a reopen
// recovers the partition.
func TestFailedRollbackBreaksPartition(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 2))
	produce(t, l, "t", 0, build(t, spec{}))
	isT0 := func(path string) error {
		if strings.Contains(path, "t-0") {
			return errInjected
		}
		return nil
	}
	ffs.set(&ffs.sync, isT0)
	ffs.set(&ffs.truncate, isT0)
	_, err = tryProduce(l, "t", 0, build(t, spec{n: 2}))
	require.ErrorIs(t, err, ErrStorage)
	_, err = tryProduce(l, "t", 0, build(t, spec{}))
	require.ErrorIs(t, err, ErrStorage)
	require.ErrorContains(t, err, "refuses appends until restart")
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.NotEmpty(t, st.Broken)
	produce(t, l, "t", 1, build(t, spec{}))
	ffs.set(&ffs.sync, nil)
	ffs.set(&ffs.truncate, nil)
	require.NoError(t, l.Close())

	// The failed append's bytes stayed in the file: a whole batch, so
	// recovery keeps it. Nobody was told it is durable, and it is now.
	l = open(t, testConfig(t, cfg.Dir))
	_, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(3), hw)
	a := produce(t, l, "t", 0, build(t, spec{}))
	require.Equal(t, int64(3), a.BaseOffset)
}

// TestCloseFlushes checks that Close makes appends nobody waited for
// durable, that later calls fail with ErrClosed, and that Close is
// idempotent.
func TestCloseFlushes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := Open(testConfig(t, dir))
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	p, err := l.Append("t", 0, mustValidate(t, l, build(t, spec{n: 4})))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	a, err := p.Wait()
	require.NoError(t, err)
	require.Equal(t, int64(3), a.LastOffset)
	require.NoError(t, l.Close())

	_, err = l.Append("t", 0, mustValidate(t, l, build(t, spec{})))
	require.ErrorIs(t, err, ErrClosed)
	_, err = l.Read("t", 0, 0, 100, true, nil)
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = l.InitProducerID()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, l.CreatePartitions("u", 1), ErrClosed)
	w := l.Watch(WatchOffset{Topic: "t", Partition: 0, Offset: 100})
	<-w.C()

	l = open(t, testConfig(t, dir))
	_, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(4), hw)
}

// TestRollbackReopensSealedSegment fails the write of an append that
// rolled a new segment: the rollback removes the new segment and makes
// the one it sealed (and closed) active again, open for appends.
func TestRollbackReopensSealedSegment(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = MinSegmentBytes
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	first := build(t, spec{value: 900})
	produce(t, l, "t", 0, first)
	dir := filepath.Join(cfg.Dir, "t-0")
	ffs.set(&ffs.write, func(path string) error {
		if strings.HasSuffix(path, "00000000000000000001.log") {
			return errInjected
		}
		return nil
	})
	_, err := tryProduce(l, "t", 0, build(t, spec{value: 900}))
	require.ErrorIs(t, err, ErrStorage)
	require.Equal(t, []string{"00000000000000000000.log"}, segmentFiles(t, dir))
	require.Equal(t, int64(1), ffs.openNow.Load(), "the sealed segment is open again, alone")
	ffs.set(&ffs.write, nil)
	second := build(t, spec{value: 900})
	a := produce(t, l, "t", 0, second)
	require.Equal(t, int64(1), a.BaseOffset)
	require.Equal(t, [][]byte{withBase(first, 0), withBase(second, 1)}, readAll(t, l, "t", 0))
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, 2, st.Segments)
	require.Equal(t, int64(1+sealedFilesOpen(l)), ffs.openNow.Load())
}

// sealedFilesOpen is how many sealed segments' files l's cache holds.
func sealedFilesOpen(l *Log) int { return l.files.open() }
