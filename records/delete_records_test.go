package records

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeleteRecords moves the log start into the middle of a segment and
// then past whole segments: reads and lookups below it are
// ErrOffsetOutOfRange, the whole segments below it are deleted, an offset
// at or below it changes nothing, one past the high watermark is refused,
// -1 means the high watermark, and a reopen keeps the log start from the
// checkpoint.
func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	one := build(t, spec{value: 350})
	b := int64(len(one))
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = 3 * b
	l, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	dir := filepath.Join(cfg.Dir, "t-0")
	for range 8 {
		produce(t, l, "t", 0, build(t, spec{value: 350})) // segments 0, 3, 6
	}

	start, err := l.DeleteRecords("t", 0, 2)
	require.NoError(t, err)
	require.Equal(t, int64(2), start)
	require.Equal(t, []string{segmentName(0), segmentName(3), segmentName(6)}, segmentFiles(t, dir), "segment 0 holds offset 2: kept")
	_, err = l.Read("t", 0, 1, 1<<20, true, nil)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	res, err := l.Read("t", 0, 2, 1<<20, false, nil)
	require.NoError(t, err)
	require.Equal(t, int64(2), res.LogStartOffset)
	require.Zero(t, l.Readable("t", 0, 1))
	off, _, err := l.OffsetForTime("t", 0, 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), off, "a timestamp lookup never lands below the log start")

	start, err = l.DeleteRecords("t", 0, 1)
	require.NoError(t, err)
	require.Equal(t, int64(2), start, "below the log start: nothing changes")
	_, err = l.DeleteRecords("t", 0, 9)
	require.ErrorIs(t, err, ErrOffsetOutOfRange, "past the high watermark")
	_, err = l.DeleteRecords("t", 0, -2)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	_, err = l.DeleteRecords("t", 1, 0)
	require.ErrorIs(t, err, ErrUnknownPartition)

	start, err = l.DeleteRecords("t", 0, 7)
	require.NoError(t, err)
	require.Equal(t, int64(7), start)
	require.Equal(t, []string{segmentName(6)}, segmentFiles(t, dir), "whole segments below 7 deleted")
	require.NoError(t, l.Close())

	l = openStrict(t, cfg)
	logStart, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{7, 8}, [2]int64{logStart, hw}, "the log start survives a restart")
	_, err = l.Read("t", 0, 6, 1<<20, true, nil)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	start, err = l.DeleteRecords("t", 0, -1)
	require.NoError(t, err)
	require.Equal(t, int64(8), start, "-1 is the high watermark")
	res, err = l.Read("t", 0, 8, 1<<20, true, nil)
	require.NoError(t, err)
	require.Empty(t, res.Records)
	require.Equal(t, int64(8), res.LogStartOffset)
}
