package records

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTimestampLookups checks ListOffsets by timestamp and max timestamp
// over compressed and uncompressed batches in several segments, with
// timestamps out of order inside batches and equal timestamps across
// them, before and after a reopen (the index rebuilt from the headers).
func TestTimestampLookups(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = MinSegmentBytes
	l, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	T := testNowMs
	produce(t, l, "t", 0, build(t, spec{n: 3, value: 300, tsDeltas: []int64{0, 5, 5}}))                    // 0-2
	produce(t, l, "t", 0, build(t, spec{n: 3, value: 300, codec: CodecZstd, tsDeltas: []int64{3, 10, 7}})) // 3-5
	produce(t, l, "t", 0, build(t, spec{n: 2, value: 300, codec: CodecSnappy, tsDeltas: []int64{10, 2}}))  // 6-7
	produce(t, l, "t", 0, build(t, spec{n: 1, value: 300, codec: CodecGzip, tsDeltas: []int64{1}}))        // 8
	check := func(l *Log) {
		for _, tc := range []struct{ ts, off, at int64 }{
			{T - 100, 0, T},
			{T, 0, T},
			{T + 1, 1, T + 5},
			{T + 5, 1, T + 5},
			{T + 6, 4, T + 10},
			{T + 8, 4, T + 10},
			{T + 10, 4, T + 10},
			{T + 11, -1, -1},
		} {
			off, at, err := l.OffsetForTime("t", 0, tc.ts)
			require.NoError(t, err)
			require.Equal(t, [2]int64{tc.off, tc.at}, [2]int64{off, at}, "timestamp %d", tc.ts-T)
		}
		off, at, err := l.MaxTimestamp("t", 0)
		require.NoError(t, err)
		require.Equal(t, [2]int64{4, T + 10}, [2]int64{off, at})
	}
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Greater(t, st.Segments, 1)
	check(l)
	require.NoError(t, l.Close())
	check(open(t, testConfig(t, cfg.Dir)))
}

// TestTimestampLookupsEmpty answers -1, -1 on an empty partition.
func TestTimestampLookupsEmpty(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 1)
	off, ts, err := l.OffsetForTime("t", 0, 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{-1, -1}, [2]int64{off, ts})
	off, ts, err = l.MaxTimestamp("t", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{-1, -1}, [2]int64{off, ts})
	start, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 0}, [2]int64{start, hw})
}

// TestTimestampLookupsUseTheIndex writes many small batches, so that the
// sparse index has many entries per segment, and compares every lookup
// with a brute-force answer.
func TestTimestampLookupsUseTheIndex(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "")
	cfg.SegmentBytes = 64 << 10
	l := openWith(t, cfg, 1)
	type rec struct{ off, ts int64 }
	var all []rec
	for i := range 1500 {
		ts := testNowMs - 100000 + int64(i*10) - int64(i%7)*15 // mostly rising, with dips
		a := produce(t, l, "t", 0, build(t, spec{n: 1, value: 40, firstTS: ts}))
		all = append(all, rec{a.BaseOffset, ts})
	}
	p := l.lookup("t", 0)
	p.mu.Lock()
	require.Greater(t, len(p.segments), 1)
	require.Greater(t, len(p.segments[0].index), 5)
	p.mu.Unlock()
	for q := testNowMs - 100100; q < testNowMs-100000+15100; q += 37 {
		want := rec{-1, -1}
		for _, r := range all {
			if r.ts >= q {
				want = r
				break
			}
		}
		off, ts, err := l.OffsetForTime("t", 0, q)
		require.NoError(t, err)
		require.Equal(t, want, rec{off, ts}, "lookup %d", q)
	}
}

// TestTimestampLookupPastTheDecompressionBound: a stored batch that would
// decompress past the bound in force (here, a lower MaxUncompressedBytes
// after a restart) is not decompressed whole: the lookup fails with
// ErrMessageTooLarge, which ListOffsets answers MESSAGE_TOO_LARGE.
func TestTimestampLookupPastTheDecompressionBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	l, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	produce(t, l, "t", 0, build(t, spec{values: [][]byte{make([]byte, 300<<10)}, codec: CodecZstd}))
	off, _, err := l.OffsetForTime("t", 0, testNowMs)
	require.NoError(t, err)
	require.Zero(t, off)
	require.NoError(t, l.Close())

	cfg.MaxUncompressedBytes = 64 << 10
	l, err = Open(cfg)
	require.NoError(t, err)
	defer l.Close()
	_, _, err = l.OffsetForTime("t", 0, testNowMs)
	require.ErrorIs(t, err, ErrMessageTooLarge)
}
