package records

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRetentionBytes writes batches of b bytes into segments of exactly
// three batches with RetentionBytes 6b+1: whole oldest segments go while
// at least 6b+1 bytes would remain, the active one never, and the log
// start offset moves to the first segment left, also after a reopen.
func TestRetentionBytes(t *testing.T) {
	t.Parallel()
	one := build(t, spec{value: 350})
	b := int64(len(one))
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = 3 * b
	cfg.RetentionBytes = 6*b + 1
	l, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	dir := filepath.Join(cfg.Dir, "t-0")
	write := func(n int) {
		for range n {
			produce(t, l, "t", 0, build(t, spec{value: 350}))
		}
	}
	write(9) // segments 0, 3, 6: 9b
	require.Equal(t, []string{segmentName(0), segmentName(3), segmentName(6)}, segmentFiles(t, dir))
	write(1) // segment 9 starts: 10b - 3b >= 6b+1, so segment 0 goes
	start, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{3, 10}, [2]int64{start, hw})
	require.Equal(t, []string{segmentName(3), segmentName(6), segmentName(9)}, segmentFiles(t, dir))
	write(2) // 9b: 9b - 3b < 6b+1, nothing goes
	start, _, err = l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(3), start)
	write(3) // segment 12: 12b - 3b >= 6b+1, segment 3 goes
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, PartitionStats{LogStartOffset: 6, HighWatermark: 15, LastStableOffset: 15, LogEndOffset: 15, Bytes: 9 * b, Segments: 3}, st)
	require.Equal(t, []string{segmentName(6), segmentName(9), segmentName(12)}, segmentFiles(t, dir))
	require.Equal(t, int64(2), l.Stats().SegmentsDeleted)
	require.NoError(t, l.Close())

	l = open(t, testConfig(t, cfg.Dir))
	start, hw, err = l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{6, 15}, [2]int64{start, hw})
}

// TestRetentionNeverDeletesActive keeps a single segment however small
// the retention, and deletes nothing with the default (unlimited).
func TestRetentionNeverDeletesActive(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "")
	cfg.RetentionBytes = 1
	l := openWith(t, cfg, 1)
	for range 5 {
		produce(t, l, "t", 0, build(t, spec{value: 500}))
	}
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, 1, st.Segments)
	require.Equal(t, int64(0), st.LogStartOffset)

	cfg = testConfig(t, "")
	cfg.SegmentBytes = MinSegmentBytes
	l = openWith(t, cfg, 1)
	for range 20 {
		produce(t, l, "t", 0, build(t, spec{value: 500}))
	}
	st, err = l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, 20, st.Segments)
	require.Zero(t, l.Stats().SegmentsDeleted)
}
