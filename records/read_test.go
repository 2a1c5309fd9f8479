package records

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// readFixture is a log of ten batches of 3 records (offsets 0-29) in
// segments of about four batches.
func readFixture(t *testing.T) (*Log, [][]byte) {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = MinSegmentBytes
	l := openWith(t, cfg, 1)
	var stored [][]byte
	for range 10 {
		raw := build(t, spec{n: 3, value: 60})
		a := produce(t, l, "t", 0, raw)
		stored = append(stored, withBase(raw, a.BaseOffset))
	}
	return l, stored
}

// TestReadRules checks where a read starts and stops: the whole batch
// holding the offset, whole batches within maxBytes, the first batch even
// past maxBytes when asked (KIP-74), across segment boundaries, nothing at
// the high watermark, out of range below the start or past the high
// watermark.
func TestReadRules(t *testing.T) {
	t.Parallel()
	l, stored := readFixture(t)
	size := len(stored[0]) // every batch has the same size
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Greater(t, st.Segments, 2)
	join := func(i, j int) []byte { return bytes.Join(stored[i:j], nil) }
	cases := []struct {
		name       string
		offset     int64
		maxBytes   int32
		atLeastOne bool
		want       []byte
	}{
		{"first batch", 0, int32(size), false, join(0, 1)},
		{"middle of a batch returns it whole", 4, int32(size), false, join(1, 2)},
		{"last record of a batch", 5, int32(size), false, join(1, 2)},
		{"max bytes cut at whole batches", 0, int32(2*size + size/2), false, join(0, 2)},
		{"less than one batch", 0, int32(size - 1), false, nil},
		{"less than one batch, at least one", 0, int32(size - 1), true, join(0, 1)},
		{"zero bytes, at least one", 7, 0, true, join(2, 3)},
		{"across segment boundaries", 0, 1 << 20, false, join(0, 10)},
		{"from the middle to the end", 13, 1 << 20, true, join(4, 10)},
		{"last batch", 29, 1 << 20, false, join(9, 10)},
		{"at the high watermark", 30, 1 << 20, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := l.Read("t", 0, tc.offset, tc.maxBytes, tc.atLeastOne, nil)
			require.NoError(t, err)
			require.Equal(t, int64(30), res.HighWatermark)
			require.Equal(t, int64(0), res.LogStartOffset)
			if tc.want == nil {
				require.Empty(t, res.Records)
			} else {
				require.Equal(t, tc.want, res.Records)
			}
		})
	}
	for _, off := range []int64{-1, 31, 1000} {
		res, err := l.Read("t", 0, off, 100, true, nil)
		require.ErrorIs(t, err, ErrOffsetOutOfRange, "offset %d", off)
		require.Equal(t, int64(30), res.HighWatermark)
	}
}

// TestReadIntoBuffer checks that a read uses the caller's buffer when it
// is large enough and never grows it past maxBytes.
func TestReadIntoBuffer(t *testing.T) {
	l, stored := readFixture(t)
	buf := make([]byte, 0, 4096)
	res, err := l.Read("t", 0, 0, 4096, false, buf)
	require.NoError(t, err)
	require.Equal(t, &buf[:1][0], &res.Records[0], "read into buf")
	require.Equal(t, bytes.Join(stored, nil)[:len(res.Records)], res.Records)
	small := make([]byte, 0, 10)
	res, err = l.Read("t", 0, 0, int32(len(stored[0])), false, small)
	require.NoError(t, err)
	require.Equal(t, stored[0], res.Records)
	require.LessOrEqual(t, cap(res.Records), 2*len(stored[0]))
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := l.Read("t", 0, 12, 4096, false, buf); err != nil {
			t.Fatal(err)
		}
	})
	require.LessOrEqual(t, allocs, 1.0)
}

// TestReadBelowLogStart reads below the log start after retention.
func TestReadBelowLogStart(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = MinSegmentBytes
	cfg.RetentionBytes = MinSegmentBytes
	l := openWith(t, cfg, 1)
	for range 20 {
		produce(t, l, "t", 0, build(t, spec{n: 2, value: 100}))
	}
	start, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Greater(t, start, int64(0))
	res, err := l.Read("t", 0, start-1, 1<<20, true, nil)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	require.Equal(t, start, res.LogStartOffset)
	require.Equal(t, hw, res.HighWatermark)
	res, err = l.Read("t", 0, start, 1<<20, true, nil)
	require.NoError(t, err)
	h := parseHeader(res.Records)
	require.Equal(t, start, h.baseOffset)
}

// TestMemoryBounded writes 256 MiB of records to disk and reads them all
// back through a 1 MiB buffer: the live heap after a GC stays within
// 4 MiB of what it was before writing. Measured here: it grows by about
// 60 KiB (the batches are 1 MiB, so the sparse index has one entry per
// batch; TestIndexMemory measures the index of small batches). Skipped
// with -short.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 256 MiB")
	}
	cfg := testConfig(t, t.TempDir())
	l := openWith(t, cfg, 1)
	raw := build(t, spec{values: [][]byte{make([]byte, 256<<10), make([]byte, 256<<10), make([]byte, 256<<10), make([]byte, 200<<10)}})
	baseline := heapInUse()
	const total = 256 << 20
	var pending []*Pending
	for written := 0; written < total; written += len(raw) {
		setBaseOffset(raw, 0) // the last Append wrote its offset there
		b := mustValidate(t, l, raw)
		p, err := l.Append("t", 0, b)
		require.NoError(t, err)
		pending = append(pending, p)
		if len(pending) == 8 {
			for _, p := range pending {
				_, err := p.Wait()
				require.NoError(t, err)
			}
			pending = pending[:0]
		}
	}
	for _, p := range pending {
		_, err := p.Wait()
		require.NoError(t, err)
	}
	pending = nil
	buf := make([]byte, 0, 1<<20)
	_, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	var read int
	for off := int64(0); off < hw; {
		res, err := l.Read("t", 0, off, 1<<20, true, buf)
		require.NoError(t, err)
		for b := res.Records; len(b) > 0; {
			h := parseHeader(b)
			read += int(h.size())
			off = h.nextOffset()
			b = b[h.size():]
		}
	}
	require.GreaterOrEqual(t, read, total)
	grew := int64(heapInUse()) - int64(baseline)
	t.Logf("heap in use: %d KiB before, %d KiB after writing and reading %d MiB", baseline>>10, heapInUse()>>10, read>>20)
	require.Less(t, grew, int64(4<<20))
	runtime.KeepAlive(buf)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestReadable: the bound covers what Read returns from any offset, across
// segments, and nothing past the high watermark.
func TestReadable(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = MinSegmentBytes
	l := openWith(t, cfg, 1)
	for range 10 {
		produce(t, l, "t", 0, build(t, spec{n: 2, value: 200}))
	}
	_, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(20), hw)
	for offset := int64(0); offset < hw; offset++ {
		res, err := l.Read("t", 0, offset, 1<<20, true, nil)
		require.NoError(t, err)
		got := l.Readable("t", 0, offset)
		require.GreaterOrEqual(t, got, int64(len(res.Records)), "offset %d", offset)
		require.Less(t, got, int64(len(res.Records))+2*indexIntervalBytes, "offset %d: a tight bound", offset)
	}
	require.Zero(t, l.Readable("t", 0, hw))
	require.Zero(t, l.Readable("t", 0, hw+1))
	require.Zero(t, l.Readable("t", 7, 0))
	require.Equal(t, int32(DefaultMaxMessageBytes), l.MaxMessageBytes())
}

// TestReadAlloc reads what Read reads, into buffers from alloc, asked
// for the size of the read: not at all at the high watermark, once within
// a segment, and again (with the bytes so far copied over) for each next
// segment a read runs into.
func TestReadAlloc(t *testing.T) {
	t.Parallel()
	l, stored := readFixture(t)
	size := len(stored[0])
	var asked []int
	alloc := func(n int) []byte {
		asked = append(asked, n)
		return make([]byte, 0, n)
	}
	res, err := l.ReadAlloc("t", 0, 30, 1<<20, true, alloc)
	require.NoError(t, err)
	require.Empty(t, res.Records)
	require.Empty(t, asked, "nothing to read: no buffer")

	res, err = l.ReadAlloc("t", 0, 0, int32(2*size), false, alloc)
	require.NoError(t, err)
	require.Equal(t, bytes.Join(stored[0:2], nil), res.Records)
	require.Equal(t, []int{2 * size}, asked, "one buffer, the read's size")

	asked = nil
	res, err = l.ReadAlloc("t", 0, 0, 1<<20, false, alloc)
	require.NoError(t, err)
	require.Equal(t, bytes.Join(stored, nil), res.Records)
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Len(t, asked, st.Segments, "one buffer per segment read")
	require.Equal(t, len(res.Records), asked[len(asked)-1], "the last holds everything")
}

// TestReadCorruptBatch: a byte flipped in the record data of an older
// segment passes Open (older segments are walked by headers), and every
// read that reaches that batch fails with ErrCorruptMessage naming the
// file and byte; the batches before it are still served, the corruption
// is counted, and the Error line is not repeated per read.
func TestReadCorruptBatch(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 12, 1200)
	require.Greater(t, len(fx.segs), 2)
	// The second batch of the oldest segment: its last byte is record data.
	first := int64(len(fx.batches[0]))
	second := fx.batches[1]
	flipByte(t, fx.path(0), first+int64(len(second))-1)

	l, logs, err := fx.reopen(t)
	require.NoError(t, err)
	require.Empty(t, logs.find(slog.LevelError, ""), "Open does not look inside older batches")

	res, err := l.Read("t", 0, 0, 1<<20, true, nil)
	require.NoError(t, err)
	require.Equal(t, fx.batches[0], res.Records, "the batch before the damage is served alone")

	h := parseHeader(second)
	for range 3 {
		_, err = l.Read("t", 0, h.baseOffset, 1<<20, true, nil)
		require.ErrorIs(t, err, ErrCorruptMessage)
		require.ErrorContains(t, err, fmt.Sprintf("%s at byte %d: batch at offset %d has stored crc %d", fx.path(0), first, h.baseOffset, h.crc))
	}
	require.Equal(t, int64(3), l.Stats().CorruptReads)
	lines := logs.find(slog.LevelError, "corrupt batch in the log")
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], "file="+fx.path(0))

	// Past the damage, reads go on.
	third := parseHeader(fx.batches[2])
	res, err = l.Read("t", 0, third.baseOffset, 1<<20, false, nil)
	require.NoError(t, err)
	require.Equal(t, fx.batches[2], res.Records[:len(fx.batches[2])])
}

// BenchmarkChecksum is the CRC-32C a read computes over every batch it
// serves, over 1 MiB.
func BenchmarkChecksum(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		_ = checksum(buf)
	}
}
