package records

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// allocConfig is a Log on an allocating memFS under "data": segments of
// 8 KiB allocated ahead in chunks of 4 KiB, so that a few 1,100-byte
// batches cross chunks and the segment's end.
func allocConfig(t *testing.T) (Config, *memFS, *testLogger) {
	t.Helper()
	m := newMemFS()
	m.allocates = true
	cfg := testConfig(t, "data")
	logger, logs := newTestLogger(t)
	cfg.Logger, cfg.fs, cfg.SegmentBytes, cfg.preallocBytes = logger, m, 8192, 4096
	return cfg, m, logs
}

// batch1100 is the i-th batch of 1,100 bytes the tests of this file
// append, as a client sends it.
func batch1100(t *testing.T, i int) []byte {
	t.Helper()
	raw := build(t, spec{value: 1028, firstTS: testNowMs + int64(i)})
	require.Len(t, raw, 1100)
	return raw
}

// stored1100 is batch1100 as stored at offset i.
func stored1100(t *testing.T, i int) []byte { return withBase(batch1100(t, i), int64(i)) }

// memLen is the length of a memFS file.
func memLen(t *testing.T, m *memFS, path string) int {
	t.Helper()
	data, err := m.ReadFile(path)
	require.NoError(t, err)
	return len(data)
}

// memBytes is a memFS file's contents.
func memBytes(t *testing.T, m *memFS, path string) []byte {
	t.Helper()
	data, err := m.ReadFile(path)
	require.NoError(t, err)
	return data
}

var (
	seg0 = filepath.Join("data", "t-0", segmentName(0))
	seg7 = filepath.Join("data", "t-0", segmentName(7))
)

// TestAllocateAhead appends 1,100-byte batches to segments of 8 KiB
// allocated 4 KiB ahead: the file grows a chunk past the write that needs
// room, never past segment.bytes; the roll truncates the sealed segment
// to its seven batches; reads stop at the data's end, never in the
// zeros; Close leaves the active segment exactly its batch.
func TestAllocateAhead(t *testing.T) {
	t.Parallel()
	cfg, m, _ := allocConfig(t)
	l := openWith(t, cfg, 1)
	var want [][]byte
	var lens []int
	for i := range 7 {
		a := produce(t, l, "t", 0, batch1100(t, i))
		require.Equal(t, int64(i), a.BaseOffset)
		want = append(want, stored1100(t, i))
		lens = append(lens, memLen(t, m, seg0))
	}
	// 1100+4096; then 5500+min(4096, 8192-5500): the segment's end.
	require.Equal(t, []int{5196, 5196, 5196, 5196, 8192, 8192, 8192}, lens)

	produce(t, l, "t", 0, batch1100(t, 7)) // 7700+1100 > 8192: rolls
	want = append(want, stored1100(t, 7))
	require.Equal(t, bytes.Join(want[:7], nil), memBytes(t, m, seg0), "sealed: its batches, no zeros")
	require.Equal(t, 1100+4096, memLen(t, m, seg7))
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(8800), st.Bytes)
	require.Equal(t, int64(8), st.HighWatermark)

	res, err := l.Read("t", 0, 7, 1<<20, true, nil)
	require.NoError(t, err)
	require.Equal(t, want[7], res.Records, "the last batch and nothing of the zeros after it")
	res, err = l.Read("t", 0, 8, 1<<20, true, nil)
	require.NoError(t, err)
	require.Empty(t, res.Records, "nothing at the log end")
	require.Equal(t, int64(1100), l.Readable("t", 0, 7))
	require.Zero(t, l.Readable("t", 0, 8))
	require.Equal(t, want, readAll(t, l, "t", 0))

	require.NoError(t, l.Close())
	require.Equal(t, want[7], memBytes(t, m, seg7), "Close cut the space allocated ahead")
	require.Equal(t, bytes.Join(want[:7], nil), memBytes(t, m, seg0))
}

// TestCrashLeavesZeroTail copies the files of a running log, the newest
// segment still allocated ahead (what kill -9 leaves), and opens the
// copy: every acknowledged batch is there, the zeros are truncated with
// nothing cut, kept or warned about, and appends allocate again.
func TestCrashLeavesZeroTail(t *testing.T) {
	t.Parallel()
	cfg, m, _ := allocConfig(t)
	l := openWith(t, cfg, 1)
	var want [][]byte
	for i := range 10 {
		produce(t, l, "t", 0, batch1100(t, i))
		want = append(want, stored1100(t, i))
	}
	c := crashCopy(m)
	require.Equal(t, 1100+4096, memLen(t, c, seg7), "three batches and the space after them")

	cfg2, _, logs := allocConfig(t)
	cfg2.fs = c
	l2 := open(t, cfg2)
	require.Equal(t, want, readAll(t, l2, "t", 0))
	require.Equal(t, bytes.Join(want[7:], nil), memBytes(t, c, seg7), "the zeros truncated")
	require.Equal(t, bytes.Join(want[:7], nil), memBytes(t, c, seg0))
	require.Zero(t, l2.Stats().CutTails)
	require.Empty(t, logsAbout(logs, slog.LevelWarn, seg7))
	require.Empty(t, logs.find(slog.LevelError, ""))
	require.Len(t, logs.find(slog.LevelDebug, "space allocated ahead of the newest segment's batches truncated"), 1)
	names, err := c.ReadDir(filepath.Join("data", "t-0"))
	require.NoError(t, err)
	require.Equal(t, []dirEntry{{segmentName(0), kindFile}, {segmentName(7), kindFile}}, names, "no .cut file")

	a := produce(t, l2, "t", 0, batch1100(t, 10))
	require.Equal(t, int64(10), a.BaseOffset)
	require.Equal(t, 8192, memLen(t, c, seg7), "4400+min(4096, 8192-4400)")
}

// crashed is a crash copy of a log of ten 1,100-byte batches, its newest
// segment (base 7) holding three batches (3,300 bytes) and allocated to
// 5,196 bytes, with data written into the zeros from byte 3,300 on.
func crashed(t *testing.T, tail []byte) *memFS {
	t.Helper()
	cfg, m, _ := allocConfig(t)
	l := openWith(t, cfg, 1)
	for i := range 10 {
		produce(t, l, "t", 0, batch1100(t, i))
	}
	c := crashCopy(m)
	f, _, err := c.OpenFile(seg7, false)
	require.NoError(t, err)
	_, err = f.WriteAt(tail, 3300)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, 5196, memLen(t, c, seg7))
	return c
}

// TestTornBatchOverZeros writes a batch at the end of a crashed log's
// newest segment whose bytes from the sector boundary at 4096 on never
// reached the disk, so that it reads as zeros there, like the space
// allocated ahead after it: a torn tail, cut at Warn, the .cut file
// keeping the batch's own 1,572 bytes and not the zeros after them.
func TestTornBatchOverZeros(t *testing.T) {
	t.Parallel()
	b := withBase(build(t, spec{value: 1500}), 10)
	require.Len(t, b, 1572)
	c := crashed(t, b[:4096-3300])

	cfg, _, logs := allocConfig(t)
	cfg.fs = c
	l := open(t, cfg)
	require.Len(t, readAll(t, l, "t", 0), 10)
	require.Equal(t, 3300, memLen(t, c, seg7))
	warns := logs.find(slog.LevelWarn, "torn tail cut off the newest segment")
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], " from=3300 to=4872 bytes=1572 zeros=324 batches=3 next_offset=10 reason=stored crc")
	cut := memBytes(t, c, seg7+".cut-1")
	require.Equal(t, append(bytes.Clone(b[:796]), make([]byte, 1572-796)...), cut)
	require.Empty(t, logs.find(slog.LevelError, ""))
	require.Equal(t, int64(1), l.Stats().CutTails)
	a := produce(t, l, "t", 0, batch1100(t, 10))
	require.Equal(t, int64(10), a.BaseOffset)
}

// TestCorruptBatchOverZeros writes a whole batch with a flipped bit at the
// end of a crashed log's newest segment, before the zeros allocated
// ahead: not a torn write, so it is cut as corruption, logged at Error,
// and the .cut file holds the batch alone.
func TestCorruptBatchOverZeros(t *testing.T) {
	t.Parallel()
	b := withBase(build(t, spec{value: 1500}), 10)
	b[800] ^= 0x40
	c := crashed(t, b)

	cfg, _, logs := allocConfig(t)
	cfg.fs = c
	l := open(t, cfg)
	require.Len(t, readAll(t, l, "t", 0), 10)
	require.Equal(t, 3300, memLen(t, c, seg7))
	errs := logs.find(slog.LevelError, "corrupt batch cut off the newest segment")
	require.Len(t, errs, 1)
	require.Contains(t, errs[0], " from=3300 to=4872 bytes=1572 zeros=324 ")
	require.Equal(t, b, memBytes(t, c, seg7+".cut-1"))
	require.Empty(t, logs.find(slog.LevelWarn, "torn"))
}

// TestZerosAfterGoodBatch puts a sound batch after zeros in the newest
// segment: zeros inside the data are not space allocated ahead, so Open
// stops with ErrCorrupt and changes nothing.
func TestZerosAfterGoodBatch(t *testing.T) {
	t.Parallel()
	tail := append(make([]byte, 100), stored1100(t, 11)...)
	c := crashed(t, tail)
	before := memBytes(t, c, seg7)
	cfg, _, _ := allocConfig(t)
	cfg.fs = c
	_, err := Open(cfg)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, seg7+" at byte 3300: batch length 0 is less than a batch header, and a sound batch follows at byte 3400")
	require.Equal(t, before, memBytes(t, c, seg7))
}

// TestZerosOverAcknowledgedBatch zeroes the last batch of a cleanly
// closed log: the zeros are where the checkpoint says acknowledged
// records are, so Open refuses with ErrDataLoss instead of truncating
// them as space allocated ahead, and the file stays as it is.
func TestZerosOverAcknowledgedBatch(t *testing.T) {
	t.Parallel()
	cfg, m, _ := allocConfig(t)
	l := openWith(t, cfg, 1)
	for i := range 3 {
		produce(t, l, "t", 0, batch1100(t, i))
	}
	require.NoError(t, l.Close())
	f, _, err := m.OpenFile(seg0, false)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, 1100), 2200)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	before := memBytes(t, m, seg0)

	cfg2, _, _ := allocConfig(t)
	cfg2.fs = m
	_, err = Open(cfg2)
	require.ErrorIs(t, err, ErrDataLoss)
	require.ErrorContains(t, err, "partition t-0: "+seg0+" at byte 2200: zeros from there to the end of the file (1100 bytes), but offsets up to 3 were acknowledged")
	require.Equal(t, before, memBytes(t, m, seg0))
}

// TestSealedSegmentEndsInZeros: our rolls never leave zeros in a sealed
// segment, but zeros from a batch boundary to its end are space all the
// same when the next segment starts where its batches end: truncated,
// with a Warn. When they hide a batch (the next segment starts past
// them), Open stops with ErrCorrupt and the file stays as it is.
func TestSealedSegmentEndsInZeros(t *testing.T) {
	t.Parallel()
	closed := func(t *testing.T) (*memFS, [][]byte) {
		cfg, m, _ := allocConfig(t)
		l := openWith(t, cfg, 1)
		var want [][]byte
		for i := range 10 {
			produce(t, l, "t", 0, batch1100(t, i))
			want = append(want, stored1100(t, i))
		}
		require.NoError(t, l.Close())
		require.Equal(t, 7700, memLen(t, m, seg0))
		return m, want
	}
	reopen := func(t *testing.T, m *memFS) (*Log, *testLogger, error) {
		cfg, _, logs := allocConfig(t)
		cfg.fs = m
		l, err := openAnyPID(cfg)
		if err == nil {
			t.Cleanup(func() { _ = l.Close() })
		}
		return l, logs, err
	}
	t.Run("space", func(t *testing.T) {
		t.Parallel()
		m, want := closed(t)
		f, _, err := m.OpenFile(seg0, false)
		require.NoError(t, err)
		_, err = f.WriteAt(make([]byte, 500), 7700)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		l, logs, err := reopen(t, m)
		require.NoError(t, err)
		require.Equal(t, want, readAll(t, l, "t", 0))
		require.Equal(t, bytes.Join(want[:7], nil), memBytes(t, m, seg0))
		warns := logs.find(slog.LevelWarn, "zeros truncated off the end of a sealed segment")
		require.Len(t, warns, 1)
		require.Contains(t, warns[0], "file="+seg0+" from=7700 to=8200 bytes=500")
		require.Zero(t, l.Stats().CutTails)
	})
	t.Run("hiding a batch", func(t *testing.T) {
		t.Parallel()
		m, _ := closed(t)
		f, _, err := m.OpenFile(seg0, false)
		require.NoError(t, err)
		_, err = f.WriteAt(make([]byte, 1100), 6600) // the seventh batch
		require.NoError(t, err)
		require.NoError(t, f.Close())
		before := memBytes(t, m, seg0)
		_, _, err = reopen(t, m)
		require.ErrorIs(t, err, ErrCorrupt)
		require.ErrorContains(t, err, seg0+" at byte 6600: batch length 0")
		require.Equal(t, before, memBytes(t, m, seg0))
	})
}

// TestAllocateFailsAppendsPlainly fails every Allocate with ENOSPC: every
// append succeeds, the files grow by their writes alone, and the failure
// is logged once at Debug for the Log, not per segment. A file system
// without allocation (memFS by default) logs nothing.
func TestAllocateFailsAppendsPlainly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		fail   bool
		debugs int
	}{{"ENOSPC", true, 1}, {"unsupported", false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, m, logs := allocConfig(t)
			ffs := newFaultFS(m)
			cfg.fs = ffs
			if tc.fail {
				ffs.set(&ffs.allocate, func(string) error { return syscall.ENOSPC })
			} else {
				m.allocates = false
			}
			l := openWith(t, cfg, 1)
			for i := range 10 {
				produce(t, l, "t", 0, batch1100(t, i))
			}
			require.Equal(t, 7700, memLen(t, m, seg0))
			require.Equal(t, 3300, memLen(t, m, seg7))
			require.Len(t, logs.find(slog.LevelDebug, "cannot allocate segment space ahead; appending plainly"), tc.debugs)
		})
	}
}

// TestRollbackDropsAllocation fails a flush after an append: the rollback
// cuts the file back to the durable batch, the space allocated ahead with
// it, and the next append allocates again from there.
func TestRollbackDropsAllocation(t *testing.T) {
	t.Parallel()
	cfg, m, _ := allocConfig(t)
	cfg.SegmentBytes = DefaultSegmentBytes
	ffs := newFaultFS(m)
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	produce(t, l, "t", 0, batch1100(t, 0))
	require.Equal(t, 1100+4096, memLen(t, m, seg0))

	ffs.set(&ffs.sync, func(string) error { return errInjected })
	_, err := tryProduce(l, "t", 0, batch1100(t, 1))
	require.ErrorIs(t, err, ErrStorage)
	require.Equal(t, stored1100(t, 0), memBytes(t, m, seg0), "cut back to the durable batch, zeros and all")

	ffs.set(&ffs.sync, nil)
	a := produce(t, l, "t", 0, batch1100(t, 1))
	require.Equal(t, int64(1), a.BaseOffset)
	require.Equal(t, 2200+4096, memLen(t, m, seg0), "allocated again from the durable end")
	require.NoError(t, l.Close())
	require.Equal(t, append(stored1100(t, 0), stored1100(t, 1)...), memBytes(t, m, seg0))
}
